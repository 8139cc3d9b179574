#!/usr/bin/env bash
# real.sh up|down|status|env — a real single-node OpenSearch 2.19 and a real
# single KRaft Kafka 4.1 broker on loopback, from jars Maven takes from Maven
# Central (the poms beside this file). `make real-up` and `make real-down`
# call it.
#
#   up      fetch the jars (once), start both engines, return when both
#           answer: OpenSearch's cluster health yellow or green, and Kafka a
#           metadata request. Idempotent: what already runs is left alone.
#   down    stop exactly the processes up started (PID files), then remove
#           their data. Logs stay until the next up.
#   status  say what runs.
#   env     print the variables that point the real-engine suites at them.
#   run CMD…  run CMD with those variables set, the engines brought up first
#           and down afterwards (unless they already ran). Where Java 17+ or
#           Maven is missing it says so in one line and exits 0 without
#           running CMD, or 3 with GEOSHARD_REQUIRE_REAL=1 (CI).
#
# Variables: OPENSEARCH_PORT (9200), KAFKA_PORT (9092), GEOSHARD_REAL_DIR
# (the directory it owns: .real/ at the top of the repo), OPENSEARCH_HEAP
# (1g), KAFKA_HEAP (512m), REAL_UP_TIMEOUT (seconds to wait, 180), JAVA_HOME.
#
# Exit status: 0 done, 1 an engine failed (the last lines of its log are
# printed), 3 Java 17+ or Maven is missing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
dir=${GEOSHARD_REAL_DIR:-$repo/.real}
os_port=${OPENSEARCH_PORT:-9200}
os_transport_port=${OPENSEARCH_TRANSPORT_PORT:-$((os_port + 100))}
kafka_port=${KAFKA_PORT:-9092}
controller_port=${KAFKA_CONTROLLER_PORT:-$((kafka_port + 1))}
os_heap=${OPENSEARCH_HEAP:-1g}
kafka_heap=${KAFKA_HEAP:-512m}
timeout=${REAL_UP_TIMEOUT:-180}

java=java
javac=javac
if [[ -n "${JAVA_HOME:-}" ]]; then
	java=$JAVA_HOME/bin/java
	javac=$JAVA_HOME/bin/javac
fi

log() { printf 'real: %s\n' "$*" >&2; }

# need_tools exits 3 unless Java 17 or newer and Maven are present.
need_tools() {
	local missing=()
	command -v "$java" >/dev/null 2>&1 || missing+=("java (17+)")
	command -v "$javac" >/dev/null 2>&1 || missing+=("javac (17+)")
	command -v mvn >/dev/null 2>&1 || missing+=("mvn")
	if ((${#missing[@]})); then
		log "missing ${missing[*]}: the real engines need Java 17+ and Maven"
		exit 3
	fi
	local v
	v=$("$java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')
	if [[ -z "$v" || "${v%%.*}" -lt 17 ]]; then
		log "java is version ${v:-unknown}: the real engines need Java 17+"
		exit 3
	fi
}

# fetch NAME copies NAME's jars into $dir/NAME/lib and compiles its Java
# sources, again only when its pom or sources changed.
fetch() {
	local name=$1 src=$here/$1 out=$dir/$1
	local stamp
	stamp=$(cat "$src"/pom.xml "$src"/*.java | sha256sum | cut -c1-16)
	if [[ -f "$out/lib.stamp" && "$(cat "$out/lib.stamp")" == "$stamp" ]]; then
		return
	fi
	log "fetching the $name jars from Maven Central"
	rm -rf "$out/lib" "$out/classes"
	mkdir -p "$out/lib" "$out/classes"
	if ! mvn -q -B -f "$src/pom.xml" dependency:copy-dependencies -DoutputDirectory="$out/lib" >"$out/mvn.log" 2>&1; then
		tail -n 40 "$out/mvn.log" >&2
		log "maven could not fetch the $name jars (log: $out/mvn.log)"
		exit 1
	fi
	"$javac" -d "$out/classes" -cp "$out/lib/*" "$src"/*.java
	echo "$stamp" >"$out/lib.stamp"
}

# alive NAME reports whether the process in NAME's PID file runs and is the
# one up started (its command line names the run directory).
alive() {
	local pidfile=$dir/$1.pid pid
	[[ -f "$pidfile" ]] || return 1
	pid=$(cat "$pidfile")
	[[ -n "$pid" && -r /proc/$pid/cmdline ]] || return 1
	tr '\0' ' ' </proc/"$pid"/cmdline | grep -qF -- "$dir/$1"
}

os_health() {
	curl -fsS --max-time 5 "http://127.0.0.1:$os_port/_cluster/health?wait_for_status=yellow&timeout=2s" 2>/dev/null |
		grep -qE '"status":"(green|yellow)"'
}

start_opensearch() {
	local home=$dir/opensearch
	if alive opensearch; then
		log "opensearch already runs (pid $(cat "$dir/opensearch.pid"))"
		return
	fi
	if curl -fsS --max-time 2 "http://127.0.0.1:$os_port/" >/dev/null 2>&1; then
		log "port $os_port already answers, and not with a node this script started; set OPENSEARCH_PORT"
		exit 1
	fi
	mkdir -p "$home/node/data" "$home/node/logs" "$home/tmp"
	log "starting opensearch on 127.0.0.1:$os_port (heap $os_heap)"
	# The JVM options of OpenSearch's own jvm.options that matter here.
	nohup "$java" -Xms"$os_heap" -Xmx"$os_heap" -XX:+UseG1GC \
		-XX:+HeapDumpOnOutOfMemoryError -XX:HeapDumpPath="$home/tmp" \
		-Djava.io.tmpdir="$home/tmp" -Djava.awt.headless=true -Dfile.encoding=UTF-8 \
		-Djna.nosys=true -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true \
		-Dio.netty.recycler.maxCapacityPerThread=0 -Dlog4j.shutdownHookEnabled=false \
		-Dlog4j2.disable.jmx=true -Djava.locale.providers=SPI,COMPAT \
		-cp "$home/lib/*:$home/classes" GeoshardNode "$home/node" "$os_port" "$os_transport_port" \
		>"$home/node.log" 2>&1 </dev/null &
	echo $! >"$dir/opensearch.pid"
}

kafka_ready() {
	"$java" -cp "$dir/kafka/lib/*:$dir/kafka/classes" KafkaReady "127.0.0.1:$kafka_port" "$1" >>"$dir/kafka/ready.log" 2>&1
}

start_kafka() {
	local home=$dir/kafka
	if alive kafka; then
		log "kafka already runs (pid $(cat "$dir/kafka.pid"))"
		return
	fi
	if (exec 3<>"/dev/tcp/127.0.0.1/$kafka_port") 2>/dev/null; then
		log "port $kafka_port is already taken, and not by a broker this script started; set KAFKA_PORT"
		exit 1
	fi
	mkdir -p "$home/data" "$home/logs"
	sed -e "s#@DIR@#$dir#g" -e "s#@KAFKA_PORT@#$kafka_port#g" -e "s#@CONTROLLER_PORT@#$controller_port#g" \
		"$here/kafka/server.properties.in" >"$home/server.properties"
	local jvm=(-Dlog4j2.configurationFile="$here/kafka/log4j2.properties" -Dkafka.logs.dir="$home/logs")
	if [[ ! -f "$home/data/meta.properties" ]]; then
		local id
		id=$("$java" "${jvm[@]}" -cp "$home/lib/*" kafka.tools.StorageTool random-uuid)
		if ! "$java" "${jvm[@]}" -cp "$home/lib/*" kafka.tools.StorageTool format \
			-t "$id" -c "$home/server.properties" >"$home/format.log" 2>&1; then
			tail -n 40 "$home/format.log" >&2
			log "kafka storage format failed (log: $home/format.log)"
			exit 1
		fi
	fi
	log "starting kafka on 127.0.0.1:$kafka_port (heap $kafka_heap)"
	nohup "$java" -Xms"$kafka_heap" -Xmx"$kafka_heap" -XX:+UseG1GC -Djava.awt.headless=true \
		"${jvm[@]}" -cp "$home/lib/*" kafka.Kafka "$home/server.properties" \
		>"$home/stdout.log" 2>&1 </dev/null &
	echo $! >"$dir/kafka.pid"
}

fail() {
	local name=$1 logfile=$2
	log "$name did not come up within ${timeout}s; the last lines of $logfile:"
	tail -n 40 "$logfile" >&2 || true
	exit 1
}

up() {
	need_tools
	mkdir -p "$dir"
	fetch opensearch
	fetch kafka
	start_opensearch
	start_kafka
	local deadline=$((SECONDS + timeout))
	until os_health; do
		alive opensearch || fail opensearch "$dir/opensearch/node.log"
		((SECONDS < deadline)) || fail opensearch "$dir/opensearch/node.log"
		sleep 1
	done
	local left=$((deadline - SECONDS))
	alive kafka || fail kafka "$dir/kafka/logs/server.log"
	kafka_ready $((left > 5 ? left : 5)) || fail kafka "$dir/kafka/logs/server.log"
	log "opensearch ready at http://127.0.0.1:$os_port, kafka at 127.0.0.1:$kafka_port"
	env_lines
}

env_lines() {
	echo "GEOSHARD_OPENSEARCH_URL=http://127.0.0.1:$os_port"
	echo "GEOSHARD_KAFKA_BROKERS=127.0.0.1:$kafka_port"
}

stop() {
	local name=$1 pidfile=$dir/$1.pid
	if ! alive "$name"; then
		rm -f "$pidfile"
		return
	fi
	local pid
	pid=$(cat "$pidfile")
	log "stopping $name (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 60); do
		alive "$name" || break
		sleep 0.5
	done
	if alive "$name"; then
		log "$name did not stop within 30s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
		sleep 1
	fi
	rm -f "$pidfile"
}

down() {
	stop kafka
	stop opensearch
	rm -rf "$dir/kafka/data" "$dir/opensearch/node/data" "$dir/opensearch/tmp"
	log "stopped; data removed"
}

status() {
	local rc=0
	for name in opensearch kafka; do
		if alive "$name"; then
			echo "$name: running (pid $(cat "$dir/$name.pid"))"
		else
			echo "$name: stopped"
			rc=1
		fi
	done
	return $rc
}

# run_with CMD… runs CMD against the engines; see the header.
run_with() {
	if ! (need_tools) 2>/dev/null; then
		local why
		why=$( (need_tools) 2>&1 || true)
		if [[ "${GEOSHARD_REQUIRE_REAL:-}" == 1 ]]; then
			log "${why#real: } — and GEOSHARD_REQUIRE_REAL=1"
			exit 3
		fi
		log "real-engine suites skipped: ${why#real: }"
		return 0
	fi
	local started=0
	if ! { alive opensearch && alive kafka; }; then
		started=1
		trap down EXIT
	fi
	up >/dev/null
	export GEOSHARD_OPENSEARCH_URL="http://127.0.0.1:$os_port"
	export GEOSHARD_KAFKA_BROKERS="127.0.0.1:$kafka_port"
	log "running against the real engines: $*"
	local rc=0
	"$@" || rc=$?
	if ((started)); then
		trap - EXIT
		down
	fi
	return $rc
}

case "${1:-}" in
up) up ;;
run)
	shift
	run_with "$@"
	;;
down) down ;;
status) status ;;
env) env_lines ;;
*)
	echo "usage: $0 up|down|status|env|run CMD..." >&2
	exit 2
	;;
esac
