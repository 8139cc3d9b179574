// Package docscheck holds a test that keeps the documentation true to the
// tree: README.md and every docs/*.md page (CHANGELOG.md is history and
// may name what is gone).
//
// In the code of a page — fenced code blocks and inline code spans — it
// checks that:
//
//   - every make target after "make" is a rule of the Makefile;
//   - every --flag given to ingest, reshard or search (as "ingest",
//     "./cmd/ingest", "bin/ingest" and so on) is defined by that command:
//     its package under cmd/ or a package of this module it imports, read
//     with go/ast; a flag with no command before it (a code span such as
//     `--dish-key dish`) must be defined by one of the three; a flag after
//     any other command word (kafka-topics.sh --create) is not checked;
//   - every token that looks like a path of the repository — it holds a
//     "/" and starts with a top-level directory that exists and that
//     .gitignore does not ignore — names a file or directory that exists.
//
// In the prose of a page it checks that every relative link exists, and
// that an anchor (#section) names a heading of the page it points into,
// spelled as GitHub spells heading anchors.
//
// "make" in prose is not checked: it is also an English verb.
//
// The package has no code besides its test.
package docscheck
