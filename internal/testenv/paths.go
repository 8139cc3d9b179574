package testenv

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/geoshard/geoshard/router"
)

// Test data shared by the packages' tests, relative to the module root.
const (
	// MapUS18 is the 18-shard US map every test index starts under.
	MapUS18 = "testdata/maps/us-18.json"
	// MapUS18RNS576 is MapUS18 with other routing keys: the same cells,
	// other shards.
	MapUS18RNS576 = "testdata/maps/us-18-rns576.json"
	// MapUS24 is the 24-shard US map a reshard moves MapUS18 to.
	MapUS24 = "migrate/testdata/us-24.json"
	// LoadsUS is the per-cell load of the US, for the planner.
	LoadsUS = "testdata/loads/us.csv"
)

var (
	rootOnce sync.Once
	root     string
)

// Root returns the module root, the directory holding go.mod. It is
// found from this file's own path, which does not depend on the working
// directory (a test runs in its package's directory); when the binary
// was built with -trimpath, by walking up from the working directory.
func Root(t testing.TB) string {
	t.Helper()
	rootOnce.Do(func() {
		if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
			dir := filepath.Join(filepath.Dir(file), "..", "..")
			if isModuleRoot(dir) {
				root = filepath.Clean(dir)
				return
			}
		}
		dir, err := os.Getwd()
		if err != nil {
			return
		}
		for {
			if isModuleRoot(dir) {
				root = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				return
			}
			dir = parent
		}
	})
	if root == "" {
		t.Fatal("testenv: no go.mod above this file or the working directory")
	}
	return root
}

func isModuleRoot(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

// Path returns the path of rel, a slash-separated path relative to the
// module root (such as MapUS18).
func Path(t testing.TB, rel string) string {
	t.Helper()
	return filepath.Join(Root(t), filepath.FromSlash(rel))
}

// LoadMap reads and parses the map at rel, relative to the module root
// (MapUS18, MapUS24, …), failing the test if it cannot.
func LoadMap(t testing.TB, rel string) *router.Map {
	t.Helper()
	data, err := os.ReadFile(Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	m, err := router.Parse(data)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return m
}
