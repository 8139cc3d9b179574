module github.com/geoshard/geoshard

go 1.26.0

require (
	github.com/golang/geo v0.0.0-20260818125358-b200a1149890
	github.com/opensearch-project/opensearch-go/v4 v4.8.1
)

require github.com/google/go-units v0.0.0-20250612230646-eddd77f68220 // indirect
