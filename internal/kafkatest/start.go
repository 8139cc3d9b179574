package kafkatest

// TB is the part of testing.TB that Start needs. Start takes it rather
// than testing.TB so this package does not import "testing" and can be
// linked into a binary that embeds the broker.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// Start starts a cluster for a test and closes it when the test and its
// subtests finish. It fails the test at once if the cluster cannot start.
//
// Cleanups run last-registered first, so readers whose Close the test
// registers after Start are closed before the cluster.
func Start(t TB, opts ...Option) *Cluster {
	t.Helper()
	c, err := New(opts...)
	if err != nil {
		t.Fatalf("kafkatest.Start: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}
