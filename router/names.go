package router

import "strconv"

// shardNames are assigned to shards in curve order: shard i of a planned
// map is named shardNames[i]. They are short, pronounceable and distinct in
// their first three letters, so a slow log reading "hermes,iris" is easy to
// say aloud. A plan of more shards than names continues with name2, name3, ….
var shardNames = [...]string{
	"ares", "bravo", "cosmo", "delta", "echo", "fable", "gemma", "hermes",
	"iris", "juno", "kilo", "luna", "mira", "nova", "orion", "pluto",
	"quill", "rhea", "sol", "terra", "umbra", "vega", "wren", "xeno",
	"yara", "zephyr", "atlas", "bolt", "cedar", "dune", "ember", "flint",
	"gale", "haze", "ivy", "jade", "koda", "lark", "maple", "nile",
	"oak", "pike", "quartz", "rune", "sage", "tide", "ursa", "vale",
	"willow", "yukon", "zinc", "amber", "birch", "coral", "dawn", "elm",
	"fern", "glen", "heath", "indigo", "jasper", "kestrel", "lotus", "moss",
}

// ShardName returns the planned name of shard i.
func ShardName(i int) string {
	n := len(shardNames)
	if i < n {
		return shardNames[i]
	}
	return shardNames[i%n] + strconv.Itoa(i/n+1)
}
