package docscheck

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestDocs checks README.md and docs/*.md against the tree (see doc.go).
func TestDocs(t *testing.T) {
	tr := loadTree(t)
	pages := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(tr.root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range more {
		pages = append(pages, filepath.ToSlash(strings.TrimPrefix(p, tr.root+string(filepath.Separator))))
	}
	for _, rel := range pages {
		data, err := os.ReadFile(filepath.Join(tr.root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range tr.check(rel, string(data)) {
			t.Errorf("%s:%d: %s", rel, p.line, p.msg)
		}
	}
}

// TestChecksFail shows each check failing on a page written wrong on
// purpose.
func TestChecksFail(t *testing.T) {
	tr := loadTree(t)
	bad := "# A page\n" +
		"\n" +
		"Run `make no-such-target` first.\n" + // 3
		"See [a page](no-such-page.md), [a section](#no-such-section)\n" + // 4
		"and [another's](../README.md#no-such-heading).\n" + // 5
		"The file `pipeline/no-such-file.go` and `deploy/local/no-such.sh run`.\n" + // 6
		"\n" +
		"```sh\n" +
		"go run ./cmd/ingest --embedded \\\n" + // 9
		"    --no-such-flag\n" +
		"reshard plan --loads F --no-such-plan-flag   # and a comment\n" + // 11
		"ingest --from-index menu\n" + // 12: a reshard flag, not ingest's
		"```\n" +
		"\n" +
		"A flag alone: `--no-such-bare-flag`.\n" // 15
	want := []problem{
		{3, `make target "no-such-target"`},
		{4, `link "no-such-page.md"`},
		{4, `link "#no-such-section"`},
		{5, `link "../README.md#no-such-heading"`},
		{6, `path "pipeline/no-such-file.go"`},
		{6, `path "deploy/local/no-such.sh"`},
		{9, `ingest has no flag --no-such-flag`},
		{11, `reshard has no flag --no-such-plan-flag`},
		{12, `ingest has no flag --from-index`},
		{15, `no command has the flag --no-such-bare-flag`},
	}
	got := tr.check("docs/bad.md", bad)
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || (g.line == w.line && strings.Contains(g.msg, w.msg))
		}
		if !found {
			t.Errorf("line %d: no problem saying %s; got %v", w.line, w.msg, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d: %v", len(got), len(want), got)
	}
}

// TestChecksPass shows what the checks leave alone.
func TestChecksPass(t *testing.T) {
	tr := loadTree(t)
	good := "# A page — with `code`\n" +
		"\n" +
		"Make sure to make the index; `make test`, `make test-chaos CHAOS_SEED=N CHAOS_SCHEDULES=1`.\n" +
		"`kafka-topics.sh --create`, `go test -run '^$' ./pipeline/`, `out/next.json`, `.real/`,\n" +
		"`bin/suites`, `/tmp/x.json`, `http://127.0.0.1:9464/metrics`, `GET menu/_mapping`,\n" +
		"`ingest --dish-key\ndish`, `--opensearch-gzip`, `reshard plan [--queries F] [--json]`,\n" +
		"`deploy/RUNBOOK.md#<anchor>`, `./internal/osfake/...`, `testdata/maps/us-18.json`.\n" +
		"Links: [here](#a-page--with-code), [runbook](../deploy/RUNBOOK.md#alias-cutover),\n" +
		"[the site](https://www.geonames.org/), [the tree](../pipeline/).\n" +
		"\n" +
		"```sh\n" +
		"OPENSEARCH_PORT=39200 make real-up   # or plain `make real-up`\n" +
		"go run ./cmd/search --lat 37.77 --lng -122.42 --radius 15mi \\\n" +
		"       --diet vegan --json\n" +
		"go run ./internal/datagen/cmd/produce --events 40000 --partitions 6\n" +
		"kafka-consumer-groups.sh --bootstrap-server $BROKERS --describe --group geoshard-ingest\n" +
		"```\n"
	if got := tr.check("docs/good.md", good); len(got) > 0 {
		t.Errorf("problems on a right page: %v", got)
	}
}

func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"7. Complete — the point of no return": "7-complete--the-point-of-no-return",
		"Dish topics keyed by dish":            "dish-topics-keyed-by-dish",
		"`reshard` and its verbs":              "reshard-and-its-verbs",
		"The [map](map.md), measured":          "the-map-measured",
		"GeoshardIngestLagGrowing":             "geoshardingestlaggrowing",
		"**Bold** and under_score":             "bold-and-under_score",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

// problem is one thing a page says that the tree contradicts.
type problem struct {
	line int
	msg  string
}

func (p problem) String() string { return fmt.Sprintf("%d: %s", p.line, p.msg) }

// tree is what the pages are checked against.
type tree struct {
	root    string
	targets map[string]bool            // the Makefile's rules
	flags   map[string]map[string]bool // command → the flags it defines
	ignored []string                   // .gitignore's patterns of top-level names
}

// commands are the commands whose flags are checked.
var commands = []string{"ingest", "reshard", "search"}

func loadTree(t *testing.T) *tree {
	t.Helper()
	root := moduleRoot(t)
	tr := &tree{root: root, targets: makeTargets(t, root), flags: map[string]map[string]bool{}, ignored: ignored(t, root)}
	mod := modulePath(t, root)
	for _, c := range commands {
		fl, err := commandFlags(root, mod, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(fl) < 5 {
			t.Fatalf("cmd/%s: found only the flags %v: are they still defined with a FlagSet's methods?", c, fl)
		}
		tr.flags[c] = fl
	}
	return tr
}

// moduleRoot walks up from the working directory to the directory of go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

func modulePath(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod names no module")
	}
	return string(m[1])
}

// makeTargets reads the rules of the Makefile: "name:" at the start of a
// line, not a variable's ":=".
func makeTargets(t *testing.T, root string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	rule := regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.-]*(?:[ \t]+[A-Za-z0-9][A-Za-z0-9_.-]*)*)[ \t]*:(?:[^=]|$)`)
	targets := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := rule.FindStringSubmatch(line); m != nil {
			for _, name := range strings.Fields(m[1]) {
				targets[name] = true
			}
		}
	}
	if !targets["test"] {
		t.Fatalf("Makefile: no rule test among %v", targets)
	}
	return targets
}

// ignored reads the patterns of .gitignore that can match a top-level
// name (build outputs, the real engines' directories).
func ignored(t *testing.T, root string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, ".gitignore"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pats []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!") {
			continue
		}
		line = strings.Trim(line, "/")
		if !strings.Contains(line, "/") {
			pats = append(pats, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return pats
}

func (tr *tree) isIgnored(name string) bool {
	for _, p := range tr.ignored {
		if ok, _ := filepath.Match(p, name); ok {
			return true
		}
	}
	return false
}

// flagDefiners are flag.FlagSet's methods that define a flag: how many
// arguments they take and which one is the name. The count keeps out
// calls of the same name elsewhere (slog.String takes two).
var flagDefiners = map[string]struct{ args, name int }{
	"Bool": {3, 0}, "BoolVar": {4, 1}, "BoolFunc": {3, 0}, "Func": {3, 0},
	"Duration": {3, 0}, "DurationVar": {4, 1},
	"Float64": {3, 0}, "Float64Var": {4, 1},
	"Int": {3, 0}, "IntVar": {4, 1}, "Int64": {3, 0}, "Int64Var": {4, 1},
	"Uint": {3, 0}, "UintVar": {4, 1}, "Uint64": {3, 0}, "Uint64Var": {4, 1},
	"String": {3, 0}, "StringVar": {4, 1},
	"Var": {3, 1}, "TextVar": {4, 1},
}

// commandFlags collects the flags command cmd defines: the calls of
// flagDefiners with a literal name in cmd/<cmd> and in the packages of
// this module it imports, directly or not (internal/cli defines the
// OpenSearch flags). Test files are left out; -h and --help always work.
func commandFlags(root, mod, cmd string) (map[string]bool, error) {
	flags := map[string]bool{"h": true, "help": true}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	var visit func(dir string) error
	visit = func(dir string) error {
		if seen[dir] {
			return nil
		}
		seen[dir] = true
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				path, err := strconv.Unquote(imp.Path.Value)
				if err != nil || !strings.HasPrefix(path, mod+"/") {
					continue
				}
				if err := visit(filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(path, mod+"/")))); err != nil {
					return err
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				d, ok := flagDefiners[sel.Sel.Name]
				if !ok || len(call.Args) != d.args {
					return true
				}
				if lit, ok := call.Args[d.name].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						flags[s] = true
					}
				}
				return true
			})
		}
		return nil
	}
	return flags, visit(filepath.Join(root, "cmd", cmd))
}

// snippet is a piece of a page and the line it starts on.
type snippet struct {
	line int
	text string
}

// page is a Markdown page split into code and prose.
type page struct {
	code     []snippet // each line of a fenced block (a line ending in \ joined to the next), each inline code span
	prose    []snippet // each paragraph outside the blocks, its code spans blanked
	headings []string
}

var fenceRE = regexp.MustCompile("^(`{3,}|~{3,})")

func parsePage(text string) page {
	var pg page
	var para []snippet // the lines of the paragraph being read
	flush := func() {
		if len(para) > 0 {
			pg.readParagraph(para)
			para = nil
		}
	}
	lines := strings.Split(text, "\n")
	fence := ""
	for i := 0; i < len(lines); i++ {
		n, line := i+1, lines[i]
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
				continue
			}
			joined := trimmed
			for strings.HasSuffix(joined, `\`) && i+1 < len(lines) {
				i++
				joined = strings.TrimSuffix(joined, `\`) + " " + strings.TrimSpace(lines[i])
			}
			pg.code = append(pg.code, snippet{n, joined})
			continue
		}
		if m := fenceRE.FindString(trimmed); m != "" {
			flush()
			fence = m
			continue
		}
		if trimmed == "" {
			flush()
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			pg.headings = append(pg.headings, strings.TrimSpace(strings.Trim(trimmed, "#")))
		}
		para = append(para, snippet{n, line})
	}
	flush()
	return pg
}

// readParagraph takes the code spans out of a paragraph: each becomes a
// code snippet, and blanks in the prose, so that a link's text may hold
// code and a span may hold brackets.
func (pg *page) readParagraph(lines []snippet) {
	var b strings.Builder
	var lineAt []int // the page line of each byte of b
	for _, l := range lines {
		b.WriteString(l.text + "\n")
		for range len(l.text) + 1 {
			lineAt = append(lineAt, l.line)
		}
	}
	text := []byte(b.String())
	run := func(i int) int { // the length of the run of backticks at i
		j := i
		for j < len(text) && text[j] == '`' {
			j++
		}
		return j - i
	}
	for i := 0; i < len(text); {
		if text[i] != '`' {
			i++
			continue
		}
		n := run(i)
		end := -1
		for j := i + n; j < len(text) && end < 0; {
			switch m := run(j); {
			case m == n:
				end = j
			case m > 0:
				j += m
			default:
				j++
			}
		}
		if end < 0 { // no closing run: literal backticks
			i += n
			continue
		}
		span := strings.ReplaceAll(string(text[i+n:end]), "\n", " ")
		pg.code = append(pg.code, snippet{lineAt[i], strings.TrimSpace(span)})
		for k := i; k < end+n; k++ {
			if text[k] != '\n' {
				text[k] = ' '
			}
		}
		i = end + n
	}
	// One prose snippet per line, so that a problem names its line.
	for k, l := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		pg.prose = append(pg.prose, snippet{lines[k].line, l})
	}
}

// anchor is the anchor GitHub gives a heading: its text without markup,
// lower case, with every character but letters, digits, spaces, hyphens
// and underscores dropped and each space a hyphen.
func anchor(heading string) string {
	heading = linkRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// anchors are the anchors of a page's headings; a repeated heading gets
// -1, -2, … as on GitHub.
func anchors(pg page) map[string]bool {
	set := map[string]bool{}
	for _, h := range pg.headings {
		a := anchor(h)
		for k := 1; set[a]; k++ {
			a = fmt.Sprintf("%s-%d", anchor(h), k)
		}
		set[a] = true
	}
	return set
}

var (
	linkRE    = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)`)
	commandRE = regexp.MustCompile(`^(?:\.?/?(?:cmd|bin)/)?(ingest|reshard|search)$`)
	flagRE    = regexp.MustCompile(`^--([a-z0-9][a-z0-9.-]*)(?:=.*)?$`)
	targetRE  = regexp.MustCompile(`^[a-z][a-z0-9_.-]*$`)
)

// check returns what page rel (a path from the root) says that the tree
// contradicts.
func (tr *tree) check(rel, text string) []problem {
	pg := parsePage(text)
	var out []problem
	for _, s := range pg.code {
		for _, msg := range tr.checkCode(s.text) {
			out = append(out, problem{s.line, msg})
		}
	}
	for _, s := range pg.prose {
		for _, m := range linkRE.FindAllStringSubmatch(s.text, -1) {
			if msg := tr.checkLink(rel, pg, m[2]); msg != "" {
				out = append(out, problem{s.line, msg})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].line < out[j].line })
	return out
}

// checkLink checks a link's target: a relative path must exist, and an
// anchor must name a heading of the Markdown page it points into.
func (tr *tree) checkLink(rel string, pg page, target string) string {
	if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, frag, _ := strings.Cut(target, "#")
	if path != "" {
		full := filepath.Join(tr.root, filepath.Dir(filepath.FromSlash(rel)), filepath.FromSlash(path))
		if _, err := os.Stat(full); err != nil {
			return fmt.Sprintf("link %q: %s does not exist", target, path)
		}
		if frag == "" || !strings.HasSuffix(path, ".md") {
			return ""
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return fmt.Sprintf("link %q: %v", target, err)
		}
		pg = parsePage(string(data))
	}
	if frag != "" && !anchors(pg)[frag] {
		return fmt.Sprintf("link %q: no heading has the anchor #%s", target, frag)
	}
	return ""
}

// checkCode checks one line of a code block or one code span: its make
// targets, its commands' flags and its paths.
func (tr *tree) checkCode(code string) []string {
	var out []string
	for _, seg := range segments(strings.Fields(code)) {
		cmd := ""
		bare := len(seg) > 0 && strings.HasPrefix(trimToken(seg[0]), "--")
		for i, raw := range seg {
			tok := trimToken(raw)
			if m := commandRE.FindStringSubmatch(tok); m != nil {
				cmd, bare = m[1], false
				continue
			}
			if tok == "make" {
				out = append(out, tr.checkMake(seg[i+1:])...)
			}
			if m := flagRE.FindStringSubmatch(tok); m != nil {
				switch {
				case cmd != "" && !tr.flags[cmd][m[1]]:
					out = append(out, fmt.Sprintf("%s has no flag --%s", cmd, m[1]))
				case cmd == "" && bare && !tr.anyHas(m[1]):
					out = append(out, fmt.Sprintf("no command has the flag --%s (%s)", m[1], strings.Join(commands, ", ")))
				}
			}
		}
	}
	for _, p := range pathTokens(code) {
		if msg := tr.checkPath(p); msg != "" {
			out = append(out, msg)
		}
	}
	return out
}

// segments cuts a line's tokens into commands: at |, ||, &&, ; and at a
// comment (# or //), whose words are a segment of their own.
func segments(tokens []string) [][]string {
	var segs [][]string
	var cur []string
	for _, tok := range tokens {
		switch {
		case tok == "|" || tok == "||" || tok == "&&" || tok == ";":
			segs, cur = append(segs, cur), nil
		case strings.HasPrefix(tok, "#") || tok == "//":
			segs, cur = append(segs, cur), nil
			if rest := strings.TrimLeft(tok, "#/"); rest != "" {
				cur = append(cur, rest)
			}
		default:
			cur = append(cur, tok)
		}
	}
	return append(segs, cur)
}

// trimToken drops the brackets and punctuation a synopsis or a sentence
// puts around a token: [--json], (--workers), --alias,
func trimToken(tok string) string {
	tok = strings.TrimLeft(tok, "[(\"'")
	return strings.TrimRight(tok, "])\"',;:.")
}

func (tr *tree) anyHas(flag string) bool {
	for _, c := range commands {
		if tr.flags[c][flag] {
			return true
		}
	}
	return false
}

// checkMake checks the targets that follow "make": every word up to the
// first that cannot be one, past variables (X=1) and options (-j2).
func (tr *tree) checkMake(rest []string) []string {
	var out []string
	for _, raw := range rest {
		tok := trimToken(raw)
		if strings.Contains(tok, "=") || strings.HasPrefix(tok, "-") {
			continue
		}
		if !targetRE.MatchString(tok) {
			break
		}
		if !tr.targets[tok] {
			out = append(out, fmt.Sprintf("make target %q is not a rule of the Makefile", tok))
		}
	}
	return out
}

// pathTokens are the words of code that could be paths.
func pathTokens(code string) []string {
	words := strings.FieldsFunc(code, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune("()[]{}<>\"'`,;=|", r)
	})
	var out []string
	for _, w := range words {
		w = strings.TrimRight(w, ".:")
		w = strings.TrimPrefix(w, "./")
		w, _, _ = strings.Cut(w, "#")
		if w == "" || strings.HasPrefix(w, "/") || strings.HasPrefix(w, "~") || strings.Contains(w, "://") ||
			strings.ContainsAny(w, "*$%?…") || strings.Contains(w, "...") || !strings.Contains(w, "/") {
			continue
		}
		out = append(out, w)
	}
	return out
}

// checkPath checks a word that starts with a top-level directory of the
// tree (one .gitignore does not ignore): the whole path must exist.
func (tr *tree) checkPath(p string) string {
	top, _, _ := strings.Cut(p, "/")
	if top == "" || tr.isIgnored(top) {
		return ""
	}
	if fi, err := os.Stat(filepath.Join(tr.root, top)); err != nil || !fi.IsDir() {
		return ""
	}
	if _, err := os.Stat(filepath.Join(tr.root, filepath.FromSlash(p))); err != nil {
		return fmt.Sprintf("path %q does not exist", p)
	}
	return ""
}
