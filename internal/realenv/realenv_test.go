package realenv

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// keepLoaded restores, when t ends, everything load and the tests set:
// under the tag the tests after t read what the run's variables say.
func keepLoaded(t *testing.T) {
	tg, u, b, d, c, r, v := tagged, openSearchURLs, kafkaBrokers, postgresDSN, connectURL, required, openSearchVer
	t.Cleanup(func() {
		tagged, openSearchURLs, kafkaBrokers, postgresDSN, connectURL, required, openSearchVer = tg, u, b, d, c, r, v
	})
}

func TestLoad(t *testing.T) {
	keepLoaded(t)
	openSearchURLs, kafkaBrokers = nil, nil
	load(func(k string) string {
		return map[string]string{OpenSearchURLVar: " http://127.0.0.1:9200/ ", KafkaBrokersVar: "127.0.0.1:9092, 127.0.0.1:9094,"}[k]
	})
	if got := OpenSearchURL(); got != "http://127.0.0.1:9200" {
		t.Errorf("OpenSearchURL() = %q, want http://127.0.0.1:9200", got)
	}
	if got := strings.Join(KafkaBrokers(), ","); got != "127.0.0.1:9092,127.0.0.1:9094" {
		t.Errorf("KafkaBrokers() = %q, want 127.0.0.1:9092,127.0.0.1:9094", got)
	}
	if Nodes() != 1 || Brokers() != 2 {
		t.Errorf("Nodes(), Brokers() = %d, %d; want 1, 2", Nodes(), Brokers())
	}
}

// A cluster's every node and broker, comma-joined as real.sh env prints
// them, reach the clients; the first node is OpenSearchURL.
func TestLoadCluster(t *testing.T) {
	keepLoaded(t)
	load(func(k string) string {
		return map[string]string{
			OpenSearchURLVar: "http://127.0.0.1:29200/, http://127.0.0.1:29201 ,,http://127.0.0.1:29202",
			KafkaBrokersVar:  "127.0.0.1:29092,127.0.0.1:29094,127.0.0.1:29096",
		}[k]
	})
	want := []string{"http://127.0.0.1:29200", "http://127.0.0.1:29201", "http://127.0.0.1:29202"}
	if got := OpenSearchURLs(); !slices.Equal(got, want) {
		t.Errorf("OpenSearchURLs() = %q, want %q", got, want)
	}
	if got := OpenSearchURL(); got != want[0] {
		t.Errorf("OpenSearchURL() = %q, want %q", got, want[0])
	}
	if Nodes() != 3 || Brokers() != 3 {
		t.Errorf("Nodes(), Brokers() = %d, %d; want 3, 3", Nodes(), Brokers())
	}
	if got := IndexReplicas(); got != 1 {
		t.Errorf("IndexReplicas() on three nodes = %d, want 1", got)
	}
	u := OpenSearchURLs()
	u[0] = "changed"
	if OpenSearchURL() != want[0] {
		t.Error("OpenSearchURLs() returned the package's own slice")
	}
}

func TestTopicReplicas(t *testing.T) {
	for brokers, want := range map[int]int{0: 1, 1: 1, 2: 2, 3: 3, 5: 3} {
		if got := TopicReplicas(brokers); got != want {
			t.Errorf("TopicReplicas(%d) = %d, want %d", brokers, got, want)
		}
	}
}

// cdcT records what CDC did with a test: skipped it, failed it, or
// neither.
type cdcT struct {
	skipped, failed string
}

func (c *cdcT) Helper()           {}
func (c *cdcT) Skip(args ...any)  { c.skipped = fmt.Sprint(args...); runtime.Goexit() }
func (c *cdcT) Fatal(args ...any) { c.failed = fmt.Sprint(args...); runtime.Goexit() }

// cdc runs CDC on a cdcT in a goroutine of its own, since Skip and Fatal
// end theirs as testing.T's do.
func cdc() (c *cdcT, dsn, connect string) {
	c = &cdcT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		dsn, connect = CDC(c)
	}()
	<-done
	return c, dsn, connect
}

func TestCDC(t *testing.T) {
	keepLoaded(t)
	base := map[string]string{OpenSearchURLVar: "http://127.0.0.1:9200", KafkaBrokersVar: "127.0.0.1:9092"}
	for _, tc := range []struct {
		name        string
		tagged      bool
		vars        map[string]string
		wantDSN     string
		wantConnect string
		wantSkip    bool
		wantFail    string
	}{
		{name: "untagged", tagged: false, vars: map[string]string{PostgresDSNVar: "postgres://a", ConnectURLVar: "http://c"}, wantSkip: true},
		{name: "both set", tagged: true, vars: map[string]string{PostgresDSNVar: " postgres://a ", ConnectURLVar: "http://c/"}, wantDSN: "postgres://a", wantConnect: "http://c"},
		{name: "missing skips", tagged: true, vars: map[string]string{PostgresDSNVar: "postgres://a"}, wantSkip: true},
		{name: "missing fails when required", tagged: true, vars: map[string]string{ConnectURLVar: "http://c", RequireVar: "1"}, wantFail: PostgresDSNVar},
		{name: "missing skips on a cluster even when required", tagged: true, vars: map[string]string{
			OpenSearchURLVar: "http://127.0.0.1:29200,http://127.0.0.1:29201", KafkaBrokersVar: "127.0.0.1:29092,127.0.0.1:29094", RequireVar: "1"}, wantSkip: true},
		{name: "set on a cluster", tagged: true, vars: map[string]string{
			KafkaBrokersVar: "127.0.0.1:29092,127.0.0.1:29094", PostgresDSNVar: "postgres://a", ConnectURLVar: "http://c", RequireVar: "1"}, wantDSN: "postgres://a", wantConnect: "http://c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tagged, kafkaBrokers = tc.tagged, nil
			load(func(k string) string {
				if v, ok := tc.vars[k]; ok {
					return v
				}
				return base[k]
			})
			c, dsn, connect := cdc()
			if dsn != tc.wantDSN || connect != tc.wantConnect {
				t.Errorf("CDC() = %q, %q; want %q, %q", dsn, connect, tc.wantDSN, tc.wantConnect)
			}
			if (c.skipped != "") != tc.wantSkip {
				t.Errorf("CDC skipped = %q, want a skip: %v", c.skipped, tc.wantSkip)
			}
			if !strings.Contains(c.failed, tc.wantFail) || (tc.wantFail == "") != (c.failed == "") {
				t.Errorf("CDC failed = %q, want a failure naming %q", c.failed, tc.wantFail)
			}
		})
	}
}

func TestLoadMissingPanicsNamingBoth(t *testing.T) {
	keepLoaded(t)
	defer func() {
		msg, _ := recover().(string)
		for _, w := range []string{OpenSearchURLVar, KafkaBrokersVar, "make real-up"} {
			if !strings.Contains(msg, w) {
				t.Errorf("panic %q does not mention %s", msg, w)
			}
		}
	}()
	openSearchURLs, kafkaBrokers = nil, nil
	load(func(string) string { return "" })
	t.Error("load with no variables did not panic")
}

func TestUnique(t *testing.T) {
	if tagged {
		a, b := Unique("menu-events"), Unique("menu-events")
		if a == b || !strings.HasPrefix(a, "menu-events.") {
			t.Errorf("Unique = %q, %q; want two distinct names starting menu-events.", a, b)
		}
		return
	}
	if got := Unique("menu-events"); got != "menu-events" {
		t.Errorf("Unique(menu-events) = %q with the in-process engines, want it unchanged", got)
	}
}
