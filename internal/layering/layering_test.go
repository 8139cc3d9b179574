package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestModule checks every package of the module against its doc.go's
// Boundaries block (see doc.go).
func TestModule(t *testing.T) {
	m := loadModule(t)
	if len(m.Packages) < 10 {
		t.Fatalf("loaded %d packages of %s, want the whole module", len(m.Packages), m.Path)
	}
	for _, msg := range Check(m) {
		t.Error(msg)
	}
}

// TestCheck shows each rule failing on a fake module.
func TestCheck(t *testing.T) {
	const mod = "example.com/m"
	block := func(imports, never string) string {
		return "Package x.\n\n# Boundaries\n\nProse.\n\n\timports: " + imports + "\n\tnever:   " + never + "\n"
	}
	m := Module{
		Path: mod,
		Packages: []Package{
			{Path: mod + "/router", Imports: []string{"fmt", "github.com/golang/geo/s2"}, Doc: block("none", "net os")},
			{Path: mod + "/bulk", Imports: []string{"net/http", mod + "/router"}, Doc: block("router", "pipeline github.com/segmentio/kafka-go")},
			{Path: mod + "/pipeline", Imports: []string{mod + "/bulk", mod + "/migrate", "github.com/segmentio/kafka-go"}, Doc: block("bulk router", "migrate")},
			{Path: mod + "/migrate", Imports: []string{mod + "/bulk", "github.com/x/kafkawrap"}, Doc: block("bulk", "pipeline github.com/segmentio/kafka-go")},
			{Path: mod + "/schema", Imports: []string{mod + "/router"}, Doc: "Package schema has no block.\n"},
			{Path: mod + "/search", Doc: block("nothing", "none")},
			{Path: mod + "/decode", Doc: "Package decode.\n\n# Boundaries\n\n\timports: none\n"},
			{Path: mod + "/cmd/tool", Main: true, Imports: []string{mod + "/pipeline"}},
			{Path: mod + "/internal/fake", Imports: []string{mod + "/pipeline"}},
		},
		Imports: map[string][]string{
			"github.com/golang/geo/s2":           {"fmt", "os/exec"},
			"github.com/x/kafkawrap":             {"github.com/segmentio/kafka-go/sasl"},
			"github.com/segmentio/kafka-go":      {"net"},
			"github.com/segmentio/kafka-go/sasl": {},
			"fmt":                                {"os"},
		},
		Std: map[string]bool{"fmt": true, "os": true, "os/exec": true, "net": true, "net/http": true},
	}
	got := Check(m)
	want := []string{
		"decode: doc.go's Boundaries block: never: missing (write none)",
		"migrate reaches github.com/segmentio/kafka-go/sasl (migrate → github.com/x/kafkawrap → github.com/segmentio/kafka-go/sasl), which its rule forbids (never: github.com/segmentio/kafka-go)",
		"pipeline imports migrate, which its rule does not allow (imports: bulk router)",
		"pipeline reaches migrate (pipeline → migrate), which its rule forbids (never: migrate)",
		"router reaches os/exec (router → github.com/golang/geo/s2 → os/exec), which its rule forbids (never: os)",
		"schema: doc.go has no Boundaries block (imports: and never: lines); every package outside internal/ that is not a command needs one",
		"search: imports: lists nothing, which is no package of the module",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Check =\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

func TestParseDoc(t *testing.T) {
	tests := []struct {
		name, doc string
		want      *Rules
		err       string
	}{
		{"no section", "Package x.\n", nil, ""},
		{"prose only", "# Boundaries\n\nIt imports nothing.\n", nil, ""},
		{"block", "# Boundaries\n\n\timports: a b/c\n\tnever:   d\n", &Rules{Imports: []string{"a", "b/c"}, Never: []string{"d"}}, ""},
		{"none", "# Boundaries\n\n\timports: none\n\tnever: none\n", &Rules{}, ""},
		{"in another section", "# Model\n\n\timports: a\n\tnever: b\n", nil, ""},
		{"not indented", "# Boundaries\n\nimports: a\nnever: b\n", nil, ""},
		{"twice", "# Boundaries\n\n\timports: a\n\timports: b\n\tnever: none\n", nil, "imports: given twice"},
		{"empty", "# Boundaries\n\n\timports:\n\tnever: none\n", nil, "imports: empty (write none)"},
		{"none and more", "# Boundaries\n\n\timports: none a\n\tnever: none\n", nil, "imports: none with other entries"},
		{"half", "# Boundaries\n\n\tnever: a\n", nil, "imports: missing (write none)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDoc(tt.doc)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("ParseDoc(%q) error = %v, want %s", tt.doc, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDoc(%q): %v", tt.doc, err)
			}
			if (got == nil) != (tt.want == nil) || got != nil && (!slices.Equal(got.Imports, tt.want.Imports) || !slices.Equal(got.Never, tt.want.Never)) {
				t.Errorf("ParseDoc(%q) = %+v, want %+v", tt.doc, got, tt.want)
			}
		})
	}
}

// listed is one package of go list -json's output.
type listed struct {
	ImportPath string
	Name       string
	Dir        string
	Standard   bool
	GoFiles    []string
	Imports    []string
	Module     *struct{ Path string }
}

// loadModule reads the module this test is in with go list.
func loadModule(t *testing.T) Module {
	t.Helper()
	mod := goCmd(t, "list", "-m", "-f", "{{.Path}}")
	m := Module{Path: strings.TrimSpace(string(mod)), Imports: map[string][]string{}, Std: map[string]bool{}}
	for _, s := range strings.Fields(string(goCmd(t, "list", "std"))) {
		m.Std[s] = true
	}
	dec := json.NewDecoder(bytes.NewReader(goCmd(t, "list", "-deps", "-json", m.Path+"/...")))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		m.Imports[p.ImportPath] = p.Imports
		if p.Standard || p.Module == nil || p.Module.Path != m.Path {
			continue
		}
		pkg := Package{Path: p.ImportPath, Main: p.Name == "main", Imports: p.Imports}
		if slices.Contains(p.GoFiles, "doc.go") {
			pkg.Doc = docComment(t, filepath.Join(p.Dir, "doc.go"))
		}
		m.Packages = append(m.Packages, pkg)
	}
	return m
}

func docComment(t *testing.T, path string) string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		return ""
	}
	return f.Doc.Text()
}

func goCmd(t *testing.T, args ...string) []byte {
	t.Helper()
	gobin := os.Getenv("GO")
	if gobin == "" {
		gobin = "go"
	}
	cmd := exec.Command(gobin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}
