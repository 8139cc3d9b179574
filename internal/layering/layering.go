package layering

import (
	"fmt"
	"slices"
	"strings"
)

// Rules is a package's Boundaries block.
type Rules struct {
	Imports []string // module-relative paths; empty for "none"
	Never   []string // as written; empty for "none"
}

// ParseDoc reads the block of a package's doc comment (its text, as
// go/ast's CommentGroup.Text gives it). It returns nil and no error when
// the comment has no block: no "imports:" or "never:" line in its
// "# Boundaries" section.
func ParseDoc(doc string) (*Rules, error) {
	in := false
	var r Rules
	var seen []string
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "# ") {
			in = strings.TrimSpace(line[2:]) == "Boundaries"
			continue
		}
		if !in || !strings.HasPrefix(line, "\t") {
			continue
		}
		key, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (key != "imports" && key != "never") {
			continue
		}
		if slices.Contains(seen, key) {
			return nil, fmt.Errorf("%s: given twice", key)
		}
		seen = append(seen, key)
		fields := strings.Fields(value)
		switch {
		case len(fields) == 0:
			return nil, fmt.Errorf("%s: empty (write none)", key)
		case slices.Contains(fields, "none") && len(fields) > 1:
			return nil, fmt.Errorf("%s: none with other entries", key)
		case fields[0] == "none":
			fields = nil
		}
		if key == "imports" {
			r.Imports = fields
		} else {
			r.Never = fields
		}
	}
	switch len(seen) {
	case 0:
		return nil, nil
	case 1:
		missing := "never"
		if seen[0] == "never" {
			missing = "imports"
		}
		return nil, fmt.Errorf("%s: missing (write none)", missing)
	}
	return &r, nil
}

// Package is one package of the module, as the check sees it.
type Package struct {
	Path    string   // import path
	Main    bool     // a command
	Imports []string // import paths of its non-test code
	Doc     string   // doc.go's package comment; "" without doc.go
}

// Module is what the check reads: the module's packages and the imports
// of every package they depend on.
type Module struct {
	Path     string
	Packages []Package           // the module's packages
	Imports  map[string][]string // every dependency's imports, by import path
	Std      map[string]bool     // the standard library's packages
}

// Check returns one message for each broken rule, sorted by package.
func Check(m Module) []string {
	var out []string
	own := map[string]bool{}
	for _, p := range m.Packages {
		own[p.Path] = true
	}
	for _, p := range m.Packages {
		name := m.rel(p.Path)
		r, err := ParseDoc(p.Doc)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: doc.go's Boundaries block: %v", name, err))
			continue
		}
		if r == nil {
			if m.production(p) {
				out = append(out, fmt.Sprintf("%s: doc.go has no Boundaries block (imports: and never: lines); every package outside internal/ that is not a command needs one", name))
			}
			continue
		}
		for _, i := range r.Imports {
			if !own[m.Path+"/"+i] {
				out = append(out, fmt.Sprintf("%s: imports: lists %s, which is no package of the module", name, i))
			}
		}
		for _, i := range p.Imports {
			if !m.inModule(i) || slices.Contains(r.Imports, m.rel(i)) {
				continue
			}
			out = append(out, fmt.Sprintf("%s imports %s, which its rule does not allow (imports: %s)", name, m.rel(i), list(r.Imports)))
		}
		chains := m.reach(p)
		for _, n := range r.Never {
			target := m.resolve(n)
			for _, c := range chains {
				last := c[len(c)-1]
				if last == target || strings.HasPrefix(last, target+"/") {
					out = append(out, fmt.Sprintf("%s reaches %s (%s), which its rule forbids (never: %s)", name, m.rel(last), m.chain(c), n))
					break
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// production reports whether p must have a block.
func (m Module) production(p Package) bool {
	rel := m.rel(p.Path)
	return !p.Main && rel != "internal" && !strings.HasPrefix(rel, "internal/")
}

// reach lists every package p reaches, each once with the shortest chain
// of imports from p to it, breadth first: p's imports, then theirs,
// following neither the standard library's own imports nor p itself.
func (m Module) reach(p Package) [][]string {
	var out [][]string
	seen := map[string]bool{p.Path: true}
	queue := [][]string{{p.Path}}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		last := c[len(c)-1]
		if len(c) > 1 {
			out = append(out, c)
			if m.std(last) {
				continue
			}
		}
		imports := p.Imports
		if len(c) > 1 {
			imports = m.Imports[last]
		}
		for _, i := range imports {
			if !seen[i] {
				seen[i] = true
				queue = append(queue, append(slices.Clip(c), i))
			}
		}
	}
	return out
}

// resolve turns a never: entry into an import path.
func (m Module) resolve(n string) string {
	first, _, _ := strings.Cut(n, "/")
	if m.std(n) || strings.Contains(first, ".") {
		return n
	}
	for s := range m.Std {
		if strings.HasPrefix(s, n+"/") {
			return n
		}
	}
	return m.Path + "/" + n
}

func (m Module) std(path string) bool { return m.Std[path] }

func (m Module) inModule(path string) bool {
	return path == m.Path || strings.HasPrefix(path, m.Path+"/")
}

// rel is path within the module, or path itself outside it.
func (m Module) rel(path string) string {
	if path == m.Path {
		return path[strings.LastIndex(path, "/")+1:]
	}
	return strings.TrimPrefix(path, m.Path+"/")
}

func (m Module) chain(c []string) string {
	parts := make([]string, len(c))
	for i, p := range c {
		parts[i] = m.rel(p)
	}
	return strings.Join(parts, " → ")
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}
