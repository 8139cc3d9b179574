//go:build realcluster

package osfake

import "os"

// With -tags realcluster the conformance tests run against the cluster at
// GEOSHARD_OPENSEARCH_URL (e.g. http://127.0.0.1:9200); tests that need the
// emulator itself (see needFake) are skipped.
func init() {
	realClusterURL = os.Getenv("GEOSHARD_OPENSEARCH_URL")
	if realClusterURL == "" {
		panic("realcluster tests need GEOSHARD_OPENSEARCH_URL")
	}
}
