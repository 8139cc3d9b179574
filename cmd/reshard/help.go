package main

import (
	"flag"
	"io"

	"github.com/geoshard/geoshard/internal/cli"
)

// helps is what each verb's --help says before its flags: what the verb
// does and examples to copy. The flags' own lines list the values of
// enumerated flags.
var helps = map[string]cli.Help{
	"plan": {
		About: "Plan computes a geoshard map from the document load per cell: from a CSV file, or counted\n" +
			"in a live index (--from-index), which the plan is then compared with.",
		Examples: []string{
			"reshard plan --loads loads.csv --shards 18 --out map.json",
			"reshard plan --from-index menu --json   # compare with the live map",
		},
	},
	"route": {
		About:    "Route names the geoshard, the S2 cell and the routing key of a location under a map.",
		Examples: []string{"reshard route --map map.json --lat 37.7749 --lng -122.4194"},
	},
	"cover": {
		About:    "Cover lists the geoshards a search circle touches, and the routing string that searches them.",
		Examples: []string{"reshard cover --map map.json --lat 37.7749 --lng -122.4194 --radius 25mi"},
	},
	"eval": {
		About:    "Eval measures a map's balance (cv, max/mean) and the mean number of shards a search touches.",
		Examples: []string{"reshard eval --map map.json --loads loads.csv --queries queries.csv"},
	},
	"init": {
		About:    "Init creates the first index of an alias under a map, and points the alias at it.",
		Examples: []string{"reshard init --map map.json --index menu-v1 --alias menu"},
	},
	"create": {
		About: "Create (migration step 1) creates the new index under the new map (replicas 0, refresh off)\n" +
			"and records the migration. Ingest goes on writing only the old index.",
		Examples: []string{
			"reshard create --map new.json --alias menu",
			"reshard create --map new.json --target menu-v2 --replicas 1",
		},
	},
	"dual-writes": {
		About: "Dual-writes (migration step 2) has ingest write every change to both indexes, and waits\n" +
			"until every live ingest instance says it does.",
		Examples: []string{"reshard dual-writes --alias menu --ack-timeout 5m"},
	},
	"backfill": {
		About: "Backfill (migration step 3) copies the old index into the new one, one slice per source\n" +
			"shard, checkpointing each page: run it again to resume where it stopped. Several processes\n" +
			"may share the copy: each claims slices by a lease in the migration's state, takes over the\n" +
			"slices of one that dies once its lease expires, and returns when every slice is done.",
		Examples: []string{
			"reshard backfill --alias menu",
			"reshard backfill --alias menu --max-docs-per-second 5000   # spare a busy cluster",
			"reshard backfill --alias menu --slices 6 --worker-id backfill-0   # one of several workers sharing the copy",
		},
		After: "Words of the report, the log and reshard status: checkpointed, a document whose write is\n" +
			"acknowledged and recorded in its slice's checkpoint; copied, written to the new index;\n" +
			"stale, refused because the new index already held as new a version (a live write came first).\n" +
			"checkpointed = copied + stale.",
	},
	"verify": {
		About: "Verify (migration step 4) compares the two indexes range by range of the new map: counts,\n" +
			"and with --ids the document ids, which also finds duplicates. A pass allows cutover.",
		Examples: []string{
			"reshard verify --alias menu",
			"reshard verify --alias menu --ids --json   # name the missing, extra and duplicated ids",
		},
	},
	"repair": {
		About: "Repair copies the documents the last verify --ids found missing, deletes the extra ones and\n" +
			"the superseded copies of duplicates.",
		Examples: []string{
			"reshard repair --alias menu --dry-run   # print the requests, change nothing",
			"reshard repair --alias menu",
		},
	},
	"cutover": {
		About:    "Cutover (migration step 5) moves the alias to the new index, atomically. Dual writes go on.",
		Examples: []string{"reshard cutover --alias menu --dry-run", "reshard cutover --alias menu"},
	},
	"rollback": {
		About:    "Rollback moves the alias back to the old index after a cutover. Dual writes go on.",
		Examples: []string{"reshard rollback --alias menu --dry-run", "reshard rollback --alias menu"},
	},
	"complete": {
		About: "Complete ends the migration: ingest stops writing the old index. This is the point of no\n" +
			"return: rollback is refused after it.",
		Examples: []string{"reshard complete --alias menu", "reshard complete --alias menu --delete-old"},
	},
	"cancel": {
		About:    "Cancel abandons a migration before cutover: dual writes stop and the new index is deleted.",
		Examples: []string{"reshard cancel --alias menu"},
	},
	"run": {
		About: "Run takes the migration from its recorded phase through create, dual writes, backfill,\n" +
			"verify and cutover, stopping at the first step that fails (run it again to resume).",
		Examples: []string{"reshard run --map new.json --alias menu"},
	},
	"status": {
		About: "Status shows the alias's migration: its phase, the backfill's progress, the ingest\n" +
			"instances (what each is doing, or waits for) and the last verification.",
		Examples: []string{"reshard status --alias menu", "reshard status --alias menu --json"},
	},
}

// newFlags returns the flag set of a verb: parse errors are returned as
// one line, not printed, and --help prints to stdout what the verb does,
// synopsis, examples, the flags and anything after (helps[name]).
func newFlags(name, synopsis string, stdout io.Writer) *flag.FlagSet {
	h := helps[name]
	h.Usage = synopsis
	return cli.NewFlags("reshard "+name, h, stdout)
}
