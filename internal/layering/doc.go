// Package layering keeps the packages' imports to the rules their doc.go
// states. Each package's doc.go ends its "# Boundaries" section with a
// block, indented with a tab in the doc comment:
//
//	imports: bulk router schema
//	never:   migrate internal github.com/segmentio/kafka-go
//
// imports: lists, by their paths within the module (pipeline/placement,
// internal/cli), the packages of this module that the package may import
// directly, or "none". Packages outside the module are not listed: the
// standard library and third-party imports are free unless never: names
// them.
//
// never: lists what the package must never reach, directly or
// transitively, or "none". An entry is a package of the standard library
// (net, log/slog), a path outside the module (github.com/twmb/franz-go),
// or a path within the module (migrate, internal); each matches that
// package and every package under it (net matches net/http,
// github.com/twmb/franz-go matches github.com/twmb/franz-go/pkg/kgo). The
// transitive imports are followed through this module's packages and
// third-party ones, not into the standard library, which imports itself
// freely (fmt imports os): "never: os" means that neither the package nor
// anything outside the standard library it depends on imports os.
//
// The rules concern non-test code with the default build tags; a test may
// import what it needs.
//
// Which packages must have the block: every package of the module that
// is not a command (package main) and is not under the top-level
// internal/ directory — the production packages, cmd/internal/serve
// included. A command is thin wiring whose imports are its own business;
// internal/ is test and demo machinery. A command or an internal package
// may still have a block, and then it is checked like any other.
//
// Its test (TestModule) loads the module with go list -deps -json and
// fails, naming the package, the import and the rule, when a package
// imports a package of the module its imports: does not list, reaches
// anything its never: names (with the chain of imports that reaches it),
// has a block that does not parse or names a package the module lacks,
// or is a production package without a block.
//
// # Boundaries
//
// The package is test machinery: it reads the go command's output and the
// doc comments, and imports no package of the module.
//
//	imports: none
//	never:   none
package layering
