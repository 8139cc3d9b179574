#!/usr/bin/env bash
# versions.sh — ingest, the routed search and the reshard's copy measured on
# two OpenSearch versions side by side, in one run on one machine: both
# sets of engines up at once (each a node and a Kafka broker of its own, in
# a directory and on ports of its own, started by real.sh), then the same
# runs against each, the version that goes first alternating from round to
# round. `make bench-versions` calls it.
#
# Each round runs, for each version in turn:
#   ingest    bin/benchrun soak over EVENTS events (the stream of one seed,
#             produced to that version's broker): events/s over the whole
#             run, and CPU µs per event of ingest and of the node;
#   backfill  BenchmarkBackfillVsReindex's backfill at 4 slices, a source of
#             BACKFILL_DOCS documents copied to the 24-shard map: docs/s.
# Then, once per version (the benchmark itself alternates routed and
# every-shard searches in blocks): BenchmarkRoutedVsAllShards with
# SEARCH_RESTAURANTS restaurants of ten dishes and SEARCH_SEARCHES searches
# of each kind.
#
# Variables: VERSIONS ("3.9.0 2.19.6"), STAGES ("ingest backfill search",
# the stages to run, e.g. one again on engines kept up), ROUNDS (3), EVENTS (1000000),
# BACKFILL_DOCS (200000), SEARCH_RESTAURANTS (100000), SEARCH_SEARCHES
# (1000), OUT (where the logs and summary.txt go; .real-versions/out-TIME),
# KEEP=1 leaves the engines up at the end. The engines of version number i
# (from 0) live in .real-versions/VERSION, OpenSearch on 22200+1000i,
# Kafka on 22092+1000i.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
read -r -a versions <<<"${VERSIONS:-3.9.0 2.19.6}"
rounds=${ROUNDS:-3}
events=${EVENTS:-1000000}
backfill_docs=${BACKFILL_DOCS:-200000}
search_restaurants=${SEARCH_RESTAURANTS:-100000}
search_searches=${SEARCH_SEARCHES:-1000}
base=$repo/.real-versions
out=${OUT:-$base/out-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
summary=$out/summary.txt

log() { printf 'versions: %s\n' "$*" | tee -a "$summary" >&2; }

# engines I CMD… runs CMD with version I's engine variables set.
engines() {
	local i=$1
	shift
	GEOSHARD_REAL_DIR=$base/${versions[$i]} OPENSEARCH_VERSION=${versions[$i]} \
		OPENSEARCH_PORT=$((22200 + 1000 * i)) KAFKA_PORT=$((22092 + 1000 * i)) \
		PG_PORT=$((22432 + 1000 * i)) CONNECT_PORT=$((22083 + 1000 * i)) "$@"
}

# with_env I CMD… runs CMD with version I's engines' variables exported.
with_env() {
	local i=$1 line
	shift
	(
		while read -r line; do export "${line?}"; done < <(engines "$i" "$here/real.sh" env)
		export GEOSHARD_REAL_DIR=$base/${versions[$i]}
		"$@"
	)
}

down_all() {
	local i
	for i in "${!versions[@]}"; do
		engines "$i" "$here/real.sh" down || true
	done
}

# order R prints the versions' indexes in round R's order: as listed in
# odd rounds, reversed in even ones.
order() {
	local n=${#versions[@]} i
	for ((i = 0; i < n; i++)); do
		if (($1 % 2)); then echo "$i"; else echo $((n - 1 - i)); fi
	done
}

# field NAME FILE [FORMAT] prints the last number of JSON field NAME in
# FILE, in FORMAT (%.2f).
field() { grep -o "\"$1\":[-0-9.e+]*" "$2" | tail -1 | cut -d: -f2 | xargs -r printf "${3:-%.2f}"; }
stage() { [[ " ${STAGES:-ingest backfill search} " == *" $1 "* ]]; }
# metric NAME FILE prints the value of a benchmark's metric NAME in FILE.
metric() { awk -v m="$1" '{for (i = 2; i <= NF; i++) if ($i == m) v = $(i - 1)} END {print v}' "$2"; }

[[ "${KEEP:-}" == 1 ]] || trap down_all EXIT
for i in "${!versions[@]}"; do
	engines "$i" "$here/real.sh" up >/dev/null
done
go build -o bin/benchrun ./internal/benchrun/cmd/benchrun
go test -c -tags realcluster -o "$out/search.test" ./search/
go test -c -tags realcluster -o "$out/migrate.test" ./migrate/
log "$(date -u +%FT%TZ) commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted edits)'), versions ${versions[*]}, $rounds rounds, $events events"

for ((r = 1; r <= rounds; r++)); do
	for i in $(order "$r"); do
		stage ingest || break
		v=${versions[$i]}
		f=$out/ingest-r$r-$v.txt
		with_env "$i" bin/benchrun soak -events "$events" -src worktree \
			-opensearch "http://127.0.0.1:$((22200 + 1000 * i))" -brokers "127.0.0.1:$((22092 + 1000 * i))" \
			-real-dir "$base/$v" >"$f" 2>"$out/ingest-r$r-$v.log"
		log "round $r ingest  $v: $(field whole_run_events_per_s "$f" %.0f) events/s over $(field events "$f" %.0f) events, ingest CPU $(field ingest_cpu_seconds "$f") s, node CPU $(field opensearch_cpu_seconds "$f") s, docs $(field docs "$f" %.0f)"
	done
	for i in $(order "$r"); do
		stage backfill || break
		v=${versions[$i]}
		f=$out/backfill-r$r-$v.txt
		(cd migrate && with_env "$i" "$out/migrate.test" -test.run '^$' -test.bench 'BackfillVsReindex/slices=4/backfill' \
			-test.benchtime 1x -test.timeout 30m -reindex-bench-docs "$backfill_docs") >"$f" 2>&1
		log "round $r backfill $v: $(metric docs/s "$f") docs/s ($backfill_docs documents, 4 slices)"
	done
done
for i in $(order "$((rounds + 1))"); do
	stage search || break
	v=${versions[$i]}
	f=$out/search-$v.txt
	(cd search && with_env "$i" "$out/search.test" -test.run '^$' -test.bench RoutedVsAllShards -test.benchtime 1x \
		-test.timeout 60m -measure-restaurants "$search_restaurants" -measure-searches "$search_searches") >"$f" 2>&1
	log "search $v: routed p50 $(metric routed_p50_ms "$f") ms p99 $(metric routed_p99_ms "$f") ms, $(metric routed_cpu_ms/search "$f") ms node CPU/search, $(metric routed_shards/search "$f") shards; every shard p50 $(metric all_p50_ms "$f") ms p99 $(metric all_p99_ms "$f") ms, $(metric all_cpu_ms/search "$f") ms CPU/search; CPU every/routed $(metric cpu_all/routed "$f")"
done
log "done: $summary"
