// Package testenv is the test harness the packages' tests share: the
// path of the module's test data, the test maps, the OpenSearch cluster
// a test runs against (the emulator, or with -tags realcluster the real
// node of internal/realenv), and reading back what a test wrote: the
// documents of an index shard by shard, a topic's messages, committed
// offsets.
//
// Only test code imports it. It must not import pipeline, migrate or
// schema: their tests are in-package, and import it.
package testenv
