// Package envflag lets a GEOSHARD_* environment variable set a flag, with
// the flag's own parsing: a value the flag would refuse on the command
// line is refused from the environment too, naming the variable, rather
// than silently falling back to the default.
//
// A flag names its variable at the end of its usage, in parentheses:
//
//	fs.IntVar(&n, "workers", 8, "bulk workers (GEOSHARD_WORKERS)")
//
// Apply sets every such flag whose variable is set and not empty, before
// the command line is parsed, so a flag given on the command line wins.
//
// # Boundaries
//
// envflag knows only package flag: it imports no other package of
// geoshard.
//
//	imports: none
//	never:   none
package envflag
