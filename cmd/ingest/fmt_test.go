package main

import "fmt"

func fmtV(v any) string { return fmt.Sprintf("%+v %#v", v, v) }
