#!/usr/bin/env bash
# stress.sh ROUNDS CMD… — run CMD (a go test command) ROUNDS times while a
# busy loop holds every core, to shake out tests that pass only on an idle
# machine: a test that sleeps to prove something did not happen, or bounds
# a wall-clock duration, fails here. `make test-stress` calls it.
#
# One spinner per core (nproc) runs for the whole of the rounds; they are
# killed, by their PIDs, when the script exits or is interrupted. Each
# round's output is kept in a log under a directory of its own (printed at
# the end); the summary names each failing round's packages and tests.
#
# Exit status: 0 every round passed, 1 a round failed, 2 bad arguments.
set -uo pipefail

if (($# < 2)) || ! [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: $0 ROUNDS CMD…  (ROUNDS a positive integer, not ${1:-nothing})" >&2
	exit 2
fi
rounds=$1
shift

# Each background job gets a process group of its own, so that an
# interrupted round is ended whole (go, its compilers, the test binaries,
# tee) by one kill of its group, and the traps run at once: bash runs a
# trap as soon as the wait for a background job is interrupted, whereas a
# foreground command would first have to finish.
set -m
spinners=()
round=
stop() {
	if [[ -n "$round" ]]; then
		kill -TERM -- "-$round" 2>/dev/null
		wait "$round" 2>/dev/null
		round=
	fi
	((${#spinners[@]})) || return 0
	kill "${spinners[@]}" 2>/dev/null
	wait "${spinners[@]}" 2>/dev/null
	spinners=()
}
trap stop EXIT
trap 'echo "stress: interrupted" >&2; stop; exit 130' INT
trap 'echo "stress: terminated" >&2; stop; exit 143' TERM

cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
for ((i = 0; i < cores; i++)); do
	sh -c 'while :; do :; done' &
	spinners+=($!)
done
logs=$(mktemp -d "${TMPDIR:-/tmp}/geoshard-stress.XXXXXX")
echo "stress: $rounds round(s) of: $*"
echo "stress: $cores busy loop(s) hold every core (PIDs ${spinners[*]}); logs in $logs"

summary=()
failed=0
for ((r = 1; r <= rounds; r++)); do
	log=$logs/round-$r.log
	echo "stress: round $r/$rounds"
	start=$SECONDS
	("$@" 2>&1 | tee "$log"; exit "${PIPESTATUS[0]}") &
	round=$!
	wait "$round"
	status=$?
	round=
	took=$((SECONDS - start))s
	if ((status == 0)); then
		summary+=("round $r/$rounds: ok ($took)")
		continue
	fi
	failed=1
	# Failing packages are "FAIL<tab>path…" lines; failing tests, at any
	# depth of subtests, "--- FAIL: Name (…)" (a test that panicked too);
	# the tests still running when go test's -timeout struck are listed,
	# indented by two tabs, under "panic: test timed out…".
	pkgs=$(grep -E '^FAIL[[:space:]]+[^[:space:]]+' "$log" | awk '{print $2}' | sort -u | paste -sd' ' -)
	tests=$(grep -E -- '--- FAIL: ' "$log" | sed -E 's/^[[:space:]]*--- FAIL: ([^ ]+).*/\1/' | sort -u | paste -sd' ' -)
	hung=$(awk '/^panic: test timed out/ {on = 1; next} on && /^\t\t[^\t]/ {print $1; next} on && !/^\t/ {on = 0}' "$log" | sort -u | paste -sd' ' -)
	panics=$(grep -E '^panic: ' "$log" | sort -u | paste -sd';' -)
	line="round $r/$rounds: FAIL (exit $status, $took)"
	line+=$'\n'"    packages: ${pkgs:-none named}"
	line+=$'\n'"    tests:    ${tests:-none named}"
	[[ -n "$hung" ]] && line+=$'\n'"    timed out while running: $hung"
	[[ -n "$panics" ]] && line+=$'\n'"    panics:   $panics"
	summary+=("$line")
done

echo
echo "stress: summary ($cores busy loop(s); logs in $logs)"
printf '%s\n' "${summary[@]}"
exit $failed
