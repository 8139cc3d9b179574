package realenv

import (
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	defer func(u string, b []string) { openSearchURL, kafkaBrokers = u, b }(openSearchURL, kafkaBrokers)
	openSearchURL, kafkaBrokers = "", nil
	load(func(k string) string {
		return map[string]string{OpenSearchURLVar: " http://127.0.0.1:9200/ ", KafkaBrokersVar: "127.0.0.1:9092, 127.0.0.1:9094,"}[k]
	})
	if got := OpenSearchURL(); got != "http://127.0.0.1:9200" {
		t.Errorf("OpenSearchURL() = %q, want http://127.0.0.1:9200", got)
	}
	if got := strings.Join(KafkaBrokers(), ","); got != "127.0.0.1:9092,127.0.0.1:9094" {
		t.Errorf("KafkaBrokers() = %q, want 127.0.0.1:9092,127.0.0.1:9094", got)
	}
}

func TestLoadMissingPanicsNamingBoth(t *testing.T) {
	defer func(u string, b []string) { openSearchURL, kafkaBrokers = u, b }(openSearchURL, kafkaBrokers)
	defer func() {
		msg, _ := recover().(string)
		for _, w := range []string{OpenSearchURLVar, KafkaBrokersVar, "make real-up"} {
			if !strings.Contains(msg, w) {
				t.Errorf("panic %q does not mention %s", msg, w)
			}
		}
	}()
	openSearchURL, kafkaBrokers = "", nil
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
