// Command callwalk measures how often a reader following a path through
// the code must go back to a file already read: the call walk count.
//
//	go run ./internal/callwalk [-dir .] [-v] -root 'pipeline.(*loop).handle' [-root ...]
//
// The walk is depth-first over the static calls of the module's non-test
// code (go/ssa: each call, go and defer instruction whose callee
// StaticCallee names, restricted to functions of a package of the module
// loaded from -dir). It starts at each -root in the order given, and
// visits each function once, its callees in source order (by the
// position of the call), so the count is deterministic. A root is named
// by its module-relative package path and its name as go/ssa prints it
// within its package: pipeline.(*loop).handle, router.Parse,
// pipeline.(*outbox[T]).run; a function of the module's root package is
// named by the last element of the module path.
//
// A function literal is part of the function it is written in: its calls
// are walked as that function's, in their place in the source, whether it
// is called there, started as a goroutine or passed on. A generic
// function is walked once, as written, whatever its type arguments.
// Interface and function-value calls are not static and are not followed.
//
// The count: every time the walk moves from a function in file A to a
// callee in another file B that it has been in before — so it has been in
// B and left it — that is one return. Entering a file for the first time
// is not a return, nor is coming back out of a call into the caller's
// file. Several roots share what has been visited, as one path: the walk
// of a root starts from the file of the root before it, so a later
// stage's root in a file already left counts; a root already visited
// from an earlier one is not walked again.
//
// It prints the count, and the numbers of functions and files visited;
// -v also prints each return (from file → to file, and the callee).
package main

import (
	"errors"
	"flag"
	"fmt"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

type rootFlags []string

func (r *rootFlags) String() string     { return strings.Join(*r, " ") }
func (r *rootFlags) Set(s string) error { *r = append(*r, s); return nil }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("callwalk", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var roots rootFlags
	dir := fs.String("dir", ".", "a directory of the module to load")
	verbose := fs.Bool("v", false, "print each return")
	fs.Var(&roots, "root", "a function to start from (repeatable, walked in order)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if len(roots) == 0 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "callwalk: give one or more -root and no arguments")
		return 2
	}
	m, err := load(*dir)
	if err != nil {
		fmt.Fprintln(stderr, "callwalk:", err)
		return 1
	}
	res, err := m.walk(roots)
	if err != nil {
		fmt.Fprintln(stderr, "callwalk:", err)
		return 1
	}
	if *verbose {
		for _, r := range res.Returns {
			fmt.Fprintf(stdout, "%s → %s  %s\n", r.From, r.To, r.Callee)
		}
	}
	fmt.Fprintf(stdout, "returns: %d\nfunctions: %d\nfiles: %d\n", len(res.Returns), res.Functions, res.Files)
	return 0
}

// module is the loaded, built program of one module.
type module struct {
	path  string // the module path
	dir   string // the module's root directory
	fset  *token.FileSet
	funcs map[string]*ssa.Function // by root name: pipeline.(*loop).handle
}

func load(dir string) (*module, error) {
	cfg := &packages.Config{
		Mode: packages.LoadAllSyntax | packages.NeedModule,
		Dir:  dir,
		Env:  append(os.Environ(), "GOWORK=off"),
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, err
	}
	if n := packages.PrintErrors(pkgs); n > 0 {
		return nil, fmt.Errorf("%d errors loading the packages of %s", n, dir)
	}
	var mod *packages.Module
	for _, p := range pkgs {
		if p.Module != nil && p.Module.Main {
			mod = p.Module
			break
		}
	}
	if mod == nil {
		return nil, errors.New("no package of the main module under " + dir)
	}
	prog, _ := ssautil.AllPackages(pkgs, 0)
	prog.Build()
	m := &module{path: mod.Path, dir: mod.Dir, fset: prog.Fset, funcs: map[string]*ssa.Function{}}
	for fn := range ssautil.AllFunctions(prog) {
		if fn.Synthetic != "" || fn.Parent() != nil || !m.owns(fn) || fn.Pos() == token.NoPos {
			continue
		}
		m.funcs[m.name(fn)] = fn
	}
	return m, nil
}

// owns reports whether fn is of a package of the module.
func (m *module) owns(fn *ssa.Function) bool {
	if fn.Pkg == nil {
		return false
	}
	p := fn.Pkg.Pkg.Path()
	return p == m.path || strings.HasPrefix(p, m.path+"/")
}

// name is fn's root name: its module-relative package path, a dot, and
// its name within its package.
func (m *module) name(fn *ssa.Function) string {
	p := fn.Pkg.Pkg.Path()
	rel := strings.TrimPrefix(p, m.path+"/")
	if p == m.path {
		rel = p[strings.LastIndex(p, "/")+1:]
	}
	return rel + "." + fn.RelString(fn.Pkg.Pkg)
}

// file is the module-relative file fn is written in.
func (m *module) file(fn *ssa.Function) string {
	name := m.fset.Position(fn.Pos()).Filename
	if rel, err := filepath.Rel(m.dir, name); err == nil {
		return filepath.ToSlash(rel)
	}
	return name
}

// A Return is one entry into a file already left.
type Return struct {
	From, To string // module-relative files
	Callee   string // the function entered, by root name
}

// Result is what a walk found.
type Result struct {
	Returns   []Return
	Functions int // functions visited
	Files     int // files visited
}

func (m *module) walk(roots []string) (Result, error) {
	w := walker{m: m, visited: map[*ssa.Function]bool{}, files: map[string]bool{}}
	var fns []*ssa.Function
	for _, r := range roots {
		fn, ok := m.funcs[r]
		if !ok {
			return Result{}, fmt.Errorf("no function %s in module %s", r, m.path)
		}
		fns = append(fns, fn)
	}
	from := ""
	for _, fn := range fns {
		if !w.visited[fn] {
			w.enter(from, fn)
		}
		from = m.file(fn)
	}
	return Result{Returns: w.returns, Functions: len(w.visited), Files: len(w.files)}, nil
}

type walker struct {
	m       *module
	visited map[*ssa.Function]bool
	files   map[string]bool // every file the walk has been in
	returns []Return
}

// enter moves the walk from file `from` into fn and walks fn's callees.
func (w *walker) enter(from string, fn *ssa.Function) {
	w.visited[fn] = true
	f := w.m.file(fn)
	if f != from && w.files[f] {
		w.returns = append(w.returns, Return{From: from, To: f, Callee: w.m.name(fn)})
	}
	w.files[f] = true
	for _, c := range w.callees(fn) {
		if !w.visited[c] {
			w.enter(f, c)
		}
	}
}

// callees lists the module's functions fn and its function literals call
// statically, in the order of the calls in the source, each once.
func (w *walker) callees(fn *ssa.Function) []*ssa.Function {
	type site struct {
		pos    token.Pos
		callee *ssa.Function
	}
	var sites []site
	seen := map[*ssa.Function]bool{} // synthetic wrappers already expanded
	var add func(pos token.Pos, c *ssa.Function)
	add = func(pos token.Pos, c *ssa.Function) {
		if c.Origin() != nil {
			c = c.Origin() // an instance of a generic function: walk the generic one
		}
		for c.Parent() != nil {
			c = c.Parent() // a function literal is part of its function
		}
		if c.Synthetic != "" {
			// A wrapper (a promoted method, a bound method, a thunk) has no
			// file: its calls stand for the call of it.
			if !seen[c] {
				seen[c] = true
				for _, s := range calls(c) {
					add(pos, s.callee)
				}
			}
			return
		}
		if w.m.owns(c) && c.Pos() != token.NoPos {
			sites = append(sites, site{pos, c})
		}
	}
	var body func(f *ssa.Function)
	body = func(f *ssa.Function) {
		for _, s := range calls(f) {
			add(s.pos, s.callee)
		}
		for _, a := range f.AnonFuncs {
			body(a)
		}
	}
	body(fn)
	sort.SliceStable(sites, func(i, j int) bool { return sites[i].pos < sites[j].pos })
	var out []*ssa.Function
	once := map[*ssa.Function]bool{fn: true}
	for _, s := range sites {
		if !once[s.callee] {
			once[s.callee] = true
			out = append(out, s.callee)
		}
	}
	return out
}

type call struct {
	pos    token.Pos
	callee *ssa.Function
}

// calls lists f's own static calls (not those of its function literals)
// with their positions; a call with no position of its own (an implicit
// one) takes the position of the instruction before it.
func calls(f *ssa.Function) []call {
	var out []call
	pos := f.Pos()
	for _, b := range f.Blocks {
		for _, in := range b.Instrs {
			if in.Pos() != token.NoPos {
				pos = in.Pos()
			}
			ci, ok := in.(ssa.CallInstruction)
			if !ok {
				continue
			}
			if c := ci.Common().StaticCallee(); c != nil {
				out = append(out, call{pos, c})
			}
		}
	}
	return out
}
