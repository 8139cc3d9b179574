module example.com/walk

go 1.26
