package testenv

import (
	"cmp"
	"log/slog"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/geoshard/geoshard/bulk"
)

// Logger logs at debug level to stderr when the environment variable
// envVar is set (E2E_TEST_LOG, PIPELINE_TEST_LOG), else nothing.
func Logger(envVar string) *slog.Logger {
	if os.Getenv(envVar) == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// BulkConfig is a bulk writer configuration with timings short enough
// for tests: 4 workers, a 5ms flush interval, retries from 20ms to 200ms.
func BulkConfig() bulk.Config {
	return bulk.Config{
		Workers:       4,
		FlushInterval: 5 * time.Millisecond,
		RetryInitial:  20 * time.Millisecond,
		RetryMax:      200 * time.Millisecond,
	}
}

// SortedKeys returns m's keys in order.
func SortedKeys[M ~map[K]V, K cmp.Ordered, V any](m M) []K {
	return slices.Sorted(maps.Keys(m))
}
