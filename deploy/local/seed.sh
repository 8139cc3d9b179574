#!/usr/bin/env bash
# seed.sh — the seed benchmark (bin/benchrun seed) at each size of SIZES on
# one set of real engines of its own: an index of the planning workload's
# shape (US restaurants, about 85 dishes each) loaded from a backlog,
# changed while searches run, and resharded, phase by phase. `make
# bench-seed` calls it.
#
# A run is resumable: each size's state and reports live in
# $SEED_DIR/runs/SIZE, and running the script again continues every size
# from its last finished phase (a phase that stopped half-way starts
# again; the load resumes from the group's committed offsets). The
# engines' data stays in $SEED_DIR/engines between runs; `real.sh up`
# starts them again on it. SEED_DOWN=1 stops them and removes their data
# at the end (as real.sh down does); by default they keep running.
#
# Variables: SIZES (documents, "1000000 5000000 20000000 55000000"),
# PHASES ("load,live,reshard"), LIVE_FOR (10m), CHANGE_RATE (changes/s,
# 200), SEARCHES (1000), SEED_DIR (.real-seed), OPENSEARCH_HEAP (4g),
# OPENSEARCH_PORT (26200), KAFKA_PORT (26092), SEED_ARGS (more flags,
# bin/benchrun seed -h), DROP (1: delete each size's index and topics
# once its reshard is done, so that the next size has the disk). Live
# and reshard each need load done: PHASES=load,reshard skips live.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
read -r -a sizes <<<"${SIZES:-1000000 5000000 20000000 55000000}"
seed_dir=${SEED_DIR:-$repo/.real-seed}
case $seed_dir in /*) ;; *) seed_dir=$repo/$seed_dir ;; esac
mkdir -p "$seed_dir/runs"

export GEOSHARD_REAL_DIR=$seed_dir/engines OPENSEARCH_HEAP=${OPENSEARCH_HEAP:-4g} \
	OPENSEARCH_PORT=${OPENSEARCH_PORT:-26200} KAFKA_PORT=${KAFKA_PORT:-26092} \
	PG_PORT=${PG_PORT:-26432} CONNECT_PORT=${CONNECT_PORT:-26083}
go build -o bin/benchrun ./internal/benchrun/cmd/benchrun
drop=()
[[ "${DROP:-1}" == 1 ]] && drop=(-drop)
# Check every size's flags before anything starts.
for n in "${sizes[@]}"; do
	# shellcheck disable=SC2086
	bin/benchrun seed -check -docs "$n" -dir "$seed_dir/runs/$n" -phases "${PHASES:-load,live,reshard}" \
		-live-for "${LIVE_FOR:-10m}" -change-rate "${CHANGE_RATE:-200}" -searches "${SEARCHES:-1000}" ${SEED_ARGS:-}
done
"$here/real.sh" up >/dev/null
[[ "${SEED_DOWN:-}" == 1 ]] && trap '"$here/real.sh" down' EXIT
failed=()
for n in "${sizes[@]}"; do
	echo "seed: $(date -u +%FT%TZ) size $n" >&2
	mkdir -p "$seed_dir/runs/$n" # for tee, before benchrun makes it
	# shellcheck disable=SC2086
	bin/benchrun seed -docs "$n" -dir "$seed_dir/runs/$n" -phases "${PHASES:-load,live,reshard}" \
		-live-for "${LIVE_FOR:-10m}" -change-rate "${CHANGE_RATE:-200}" -searches "${SEARCHES:-1000}" \
		-opensearch "http://127.0.0.1:$OPENSEARCH_PORT" -brokers "127.0.0.1:$KAFKA_PORT" \
		-real-dir "$GEOSHARD_REAL_DIR" "${drop[@]}" ${SEED_ARGS:-} | tee -a "$seed_dir/runs/$n/report.txt" || failed+=("$n")
done
# A size that failed (an inexact phase, or one that could not run) fails
# the whole; the next sizes ran anyway.
if ((${#failed[@]})); then
	echo "seed: $(date -u +%FT%TZ) failed at sizes ${failed[*]} (reports in $seed_dir/runs)" >&2
	exit 1
fi
echo "seed: $(date -u +%FT%TZ) done (reports in $seed_dir/runs)" >&2
