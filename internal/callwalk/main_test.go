package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// The test module's comments give each move of the walk and whether it
// counts.
func TestWalk(t *testing.T) {
	m, err := load("testdata/walk")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		roots     []string
		returns   []Return
		functions int
		files     int
	}{
		{
			name:  "one root",
			roots: []string{"walk.Root"},
			returns: []Return{
				{"b.go", "a.go", "walk.a3"},
				{"c.go", "b.go", "walk.b3"},
				{"a.go", "b.go", "walk.b2"},
			},
			functions: 8, // Root b1 a3 a2 c1 b3 b2 sub.F
			files:     4,
		},
		{
			name:  "a chain of roots",
			roots: []string{"walk.Root", "walk.(*T).M", "walk.D"},
			returns: []Return{
				{"b.go", "a.go", "walk.a3"},
				{"c.go", "b.go", "walk.b3"},
				{"a.go", "b.go", "walk.b2"},
				{"a.go", "c.go", "walk.c2"},
				{"c.go", "sub/s.go", "sub.G"},
				{"a.go", "b.go", "walk.D"},
			},
			functions: 12,
			files:     4,
		},
		{
			name:      "a root in a file not yet visited",
			roots:     []string{"walk.c2"},
			functions: 2,
			files:     2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.walk(tt.roots)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Returns, tt.returns) {
				t.Errorf("walk(%v) returns = %v, want %v", tt.roots, got.Returns, tt.returns)
			}
			if got.Functions != tt.functions || got.Files != tt.files {
				t.Errorf("walk(%v) visited %d functions in %d files, want %d in %d", tt.roots, got.Functions, got.Files, tt.functions, tt.files)
			}
		})
	}
}

func TestRun(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"-dir", "testdata/walk", "-v", "-root", "walk.Root"}, &out, &errs); code != 0 {
		t.Fatalf("run = %d, stderr %s", code, errs.String())
	}
	want := "b.go → a.go  walk.a3\nc.go → b.go  walk.b3\na.go → b.go  walk.b2\nreturns: 3\nfunctions: 8\nfiles: 4\n"
	if out.String() != want {
		t.Errorf("run output:\n%s\nwant:\n%s", out.String(), want)
	}
	errs.Reset()
	if code := run([]string{"-dir", "testdata/walk", "-root", "walk.nothing"}, &out, &errs); code != 1 || !strings.Contains(errs.String(), "no function walk.nothing") {
		t.Errorf("run with an unknown root = %d, %q; want 1 and the root named", code, errs.String())
	}
}
