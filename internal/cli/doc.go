// Package cli holds what the commands share at their edge with the
// user: flag parsing, the OpenSearch connection flags and the check of
// the engine they reach (engine.go), whether output goes to a terminal,
// progress bars, and numbers as people read them.
//
// # Boundaries
//
// cli is shared by the commands (production code), so it keeps to what
// is at their edge: bulk's connection config and engine check, and
// envflag, and none of the packages that do the commands' work.
//
//	imports: bulk internal/envflag
//	never:   pipeline migrate search github.com/segmentio/kafka-go github.com/twmb/franz-go
package cli
