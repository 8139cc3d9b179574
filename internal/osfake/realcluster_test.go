//go:build realcluster

package osfake

import "github.com/geoshard/geoshard/internal/realenv"

// With -tags realcluster the conformance tests run against the cluster at
// GEOSHARD_OPENSEARCH_URL (e.g. http://127.0.0.1:9200; realenv requires
// it, and GEOSHARD_KAFKA_BROKERS); tests that need the emulator itself (see
// needFake) are skipped.
func init() {
	realClusterURL = realenv.OpenSearchURL()
}
