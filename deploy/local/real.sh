#!/usr/bin/env bash
# real.sh up|down|status|env|exports|run — a real single-node OpenSearch
# 2.19 and a real single KRaft Kafka 4.1 broker on loopback, from jars Maven takes from Maven
# Central (the poms beside this file), and where the machine has PostgreSQL
# a change-data-capture source beside them: a PostgreSQL server with logical
# decoding and a Kafka Connect 4.1 worker with Debezium's Postgres connector
# (connect/). `make real-up` and `make real-down` call it.
#
#   up      fetch the jars (once), start the engines, return when each
#           answers: OpenSearch's cluster health yellow or green, Kafka a
#           metadata request, PostgreSQL a connection, and Connect's REST
#           API a list of plugins naming Debezium's Postgres connector.
#           Idempotent: what already runs is left alone. PostgreSQL is
#           Debian's package (its initdb, pg_ctl and postgres); where it is
#           missing, root with apt-get installs it, and anyone else is told
#           so in one line and gets the other two engines. It ends by
#           printing what exports prints.
#   down    stop exactly the processes up started (PID files), then remove
#           their data. Logs stay until the next up.
#   status  say what runs.
#   env     print, as KEY=VALUE lines, the variables that point at them
#           both the real-engine suites (GEOSHARD_OPENSEARCH_URL,
#           GEOSHARD_KAFKA_BROKERS, …) and the commands (GEOSHARD_OPENSEARCH,
#           GEOSHARD_BROKERS): `export $(deploy/local/real.sh env | xargs)`.
#   exports the same as export lines to paste into each terminal.
#   run CMD…  run CMD with those variables set, the engines brought up first
#           and down afterwards (unless they already ran). Where Java 17+ or
#           Maven is missing it says so in one line and exits 0 without
#           running CMD, or 3 with GEOSHARD_REQUIRE_REAL=1 (CI).
#
# Variables: OPENSEARCH_PORT (9200), KAFKA_PORT (9092), PG_PORT (5432),
# CONNECT_PORT (8083), GEOSHARD_REAL_DIR (the directory it owns: .real/ at
# the top of the repo), OPENSEARCH_HEAP (1g), KAFKA_HEAP (512m),
# CONNECT_HEAP (512m), REAL_UP_TIMEOUT (seconds to wait, 180), JAVA_HOME,
# PG_BIN (the directory of initdb and postgres; default the newest
# /usr/lib/postgresql/*/bin).
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
pg_port=${PG_PORT:-5432}
connect_port=${CONNECT_PORT:-8083}
connect_heap=${CONNECT_HEAP:-512m}
pg_bin=${PG_BIN:-}
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
# sources, if it has any; the jars of each pom one directory further down
# (NAME/PLUGIN/pom.xml) go into $dir/NAME/plugins/PLUGIN. All again only
# when a pom or a source changed.
fetch() {
	local name=$1 src=$here/$1 out=$dir/$1
	local stamp sources plugins
	shopt -s nullglob
	sources=("$src"/*.java)
	plugins=("$src"/*/pom.xml)
	shopt -u nullglob
	stamp=$(cat "$src"/pom.xml "${sources[@]}" "${plugins[@]}" | sha256sum | cut -c1-16)
	if [[ -f "$out/lib.stamp" && "$(cat "$out/lib.stamp")" == "$stamp" ]]; then
		return
	fi
	log "fetching the $name jars from Maven Central"
	rm -rf "$out/lib" "$out/classes" "$out/plugins"
	mkdir -p "$out/lib" "$out/classes"
	copy_jars "$name" "$src/pom.xml" "$out/lib"
	local pom
	for pom in "${plugins[@]}"; do
		copy_jars "$name" "$pom" "$out/plugins/$(basename "$(dirname "$pom")")"
	done
	if ((${#sources[@]})); then
		"$javac" -d "$out/classes" -cp "$out/lib/*" "${sources[@]}"
	fi
	echo "$stamp" >"$out/lib.stamp"
}

# copy_jars NAME POM DIR copies the jars POM depends on into DIR.
copy_jars() {
	local name=$1 pom=$2 to=$3 mvnlog=$dir/$1/mvn.log
	mkdir -p "$to"
	if ! mvn -q -B -f "$pom" dependency:copy-dependencies -DoutputDirectory="$to" >"$mvnlog" 2>&1; then
		tail -n 40 "$mvnlog" >&2
		log "maven could not fetch the $name jars of $pom (log: $mvnlog)"
		exit 1
	fi
}

# alive NAME reports whether the process in NAME's PID file runs and is the
# one up started (its command line names the run directory, or for
# postgres its data directory).
alive() {
	local pidfile=$dir/$1.pid pid mark=$dir/$1
	[[ $1 != postgres ]] || mark=$(pg_home)/data
	[[ -f "$pidfile" ]] || return 1
	pid=$(cat "$pidfile")
	[[ -n "$pid" && -r /proc/$pid/cmdline ]] || return 1
	tr '\0' ' ' </proc/"$pid"/cmdline | grep -qF -- "$mark"
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

# find_pg sets pg_bin to the directory of PostgreSQL's server programs, or
# fails when the machine has none.
find_pg() {
	if [[ -n "$pg_bin" ]]; then
		[[ -x "$pg_bin/initdb" && -x "$pg_bin/postgres" ]]
		return
	fi
	local d
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [[ -x "$d/initdb" && -x "$d/postgres" ]]; then
			pg_bin=$d
			return 0
		fi
	done
	d=$(command -v initdb 2>/dev/null) || return 1
	pg_bin=$(dirname "$(readlink -f "$d")")
	[[ -x "$pg_bin/postgres" ]]
}

# have_pg finds PostgreSQL, installing Debian's package first where it is
# missing and this is root with apt-get; it fails, saying why in one line,
# where it cannot.
have_pg() {
	find_pg && return 0
	if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
		log "no postgresql here (and not root with apt-get to install it): postgres and kafka connect not started; the CDC suites skip (fail under GEOSHARD_REQUIRE_REAL=1)"
		return 1
	fi
	log "installing postgresql (apt-get)"
	mkdir -p "$dir"
	if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql; } >"$dir/apt.log" 2>&1; then
		log "apt-get could not install postgresql (log: $dir/apt.log): postgres and kafka connect not started"
		return 1
	fi
	find_pg
}

# The account the server runs as: PostgreSQL refuses to run as root, so
# root runs it as Debian's postgres user (created where missing), through
# setpriv, which replaces itself with the command: `"${as_pg[@]}" postgres
# … &` leaves the server's own PID in $!. Anyone else runs it as themselves.
as_pg=()
if [[ $(id -u) == 0 ]]; then
	as_pg=(setpriv --reuid=postgres --regid=postgres --init-groups --)
fi

pg_user() {
	if ((${#as_pg[@]})) && ! id postgres >/dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin postgres
	fi
	((${#as_pg[@]})) && echo postgres || id -un
}

# pg_home is where the server's data and log live: $dir/postgres, unless
# the postgres user cannot reach $dir (a checkout under root's home), then
# a directory of its own under /tmp named after $dir.
pg_home() {
	if ((${#as_pg[@]} == 0)) || ! id postgres >/dev/null 2>&1 || "${as_pg[@]}" test -x "$dir" 2>/dev/null; then
		echo "$dir/postgres"
	else
		echo "/tmp/geoshard-real-pg.$(echo "$dir" | sha256sum | cut -c1-12)"
	fi
}

pg_ready() {
	"$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres >/dev/null 2>&1
}

start_postgres() {
	local home
	home=$(pg_home)
	if alive postgres; then
		log "postgres already runs (pid $(cat "$dir/postgres.pid"))"
		return
	fi
	if (exec 3<>"/dev/tcp/127.0.0.1/$pg_port") 2>/dev/null; then
		log "port $pg_port is already taken, and not by a server this script started; set PG_PORT"
		exit 1
	fi
	local user
	user=$(pg_user)
	mkdir -p "$home"
	chown "$user" "$home"
	chmod 700 "$home"
	if [[ ! -f "$home/data/PG_VERSION" ]]; then
		rm -rf "$home/data"
		# trust on loopback: the server listens on 127.0.0.1 only, and
		# the suites connect as the superuser postgres without a
		# password, replication (Debezium's slot) included.
		if ! "${as_pg[@]}" "$pg_bin/initdb" -D "$home/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
			>"$home/initdb.log" 2>&1; then
			tail -n 40 "$home/initdb.log" >&2
			log "initdb failed (log: $home/initdb.log)"
			exit 1
		fi
	fi
	log "starting postgres on 127.0.0.1:$pg_port ($pg_bin)"
	# Logical decoding for Debezium (wal_level, slots, senders); a slot
	# left behind by a killed test holds at most 1GB of WAL. Durability
	# is traded for speed: the data is a test's, removed by down.
	nohup "${as_pg[@]}" "$pg_bin/postgres" -D "$home/data" \
		-c listen_addresses=127.0.0.1 -c port="$pg_port" -c unix_socket_directories= \
		-c wal_level=logical -c max_replication_slots=20 -c max_wal_senders=20 \
		-c max_slot_wal_keep_size=1GB -c max_connections=60 -c shared_buffers=64MB \
		-c fsync=off -c synchronous_commit=off -c full_page_writes=off \
		>"$home/postgres.log" 2>&1 </dev/null &
	echo $! >"$dir/postgres.pid"
}

connect_ready() {
	curl -fsS --max-time 5 "http://127.0.0.1:$connect_port/connector-plugins" 2>/dev/null |
		grep -qF '"io.debezium.connector.postgresql.PostgresConnector"'
}

start_connect() {
	local home=$dir/connect
	if alive connect; then
		log "kafka connect already runs (pid $(cat "$dir/connect.pid"))"
		return
	fi
	if (exec 3<>"/dev/tcp/127.0.0.1/$connect_port") 2>/dev/null; then
		log "port $connect_port is already taken, and not by a worker this script started; set CONNECT_PORT"
		exit 1
	fi
	mkdir -p "$home/data" "$home/logs"
	sed -e "s#@DIR@#$dir#g" -e "s#@KAFKA_PORT@#$kafka_port#g" -e "s#@CONNECT_PORT@#$connect_port#g" \
		"$here/connect/worker.properties.in" >"$home/worker.properties"
	log "starting kafka connect on 127.0.0.1:$connect_port (heap $connect_heap)"
	nohup "$java" -Xms"$connect_heap" -Xmx"$connect_heap" -XX:+UseG1GC -Djava.awt.headless=true \
		-Dlog4j2.configurationFile="$here/connect/log4j2.properties" -Dkafka.logs.dir="$home/logs" \
		-cp "$home/lib/*" org.apache.kafka.connect.cli.ConnectStandalone "$home/worker.properties" \
		>"$home/stdout.log" 2>&1 </dev/null &
	echo $! >"$dir/connect.pid"
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
	local cdc=0
	if have_pg; then
		cdc=1
		fetch connect
	fi
	start_opensearch
	start_kafka
	if ((cdc)); then
		start_postgres
		# The worker reads its plugins while the broker starts, and asks
		# the broker for its cluster id (for up to a minute) only then.
		start_connect
	fi
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
	if ((cdc)); then
		until pg_ready; do
			alive postgres || fail postgres "$(pg_home)/postgres.log"
			((SECONDS < deadline)) || fail postgres "$(pg_home)/postgres.log"
			sleep 0.5
		done
		until connect_ready; do
			alive connect || fail "kafka connect" "$dir/connect/logs/connect.log"
			((SECONDS < deadline)) || fail "kafka connect" "$dir/connect/logs/connect.log"
			sleep 1
		done
		log "postgres ready at 127.0.0.1:$pg_port, kafka connect (debezium postgres) at http://127.0.0.1:$connect_port"
	fi
	exports
}

# env_lines prints the engines' variables as KEY=VALUE lines: those the
# real-engine suites read (internal/realenv), and those the commands read
# (ingest, reshard, search, produce); the CDC source's only where the
# machine has PostgreSQL. `export $(real.sh env | xargs)` and run_with
# read them a line at a time.
env_lines() {
	suite_lines
	command_lines
}

suite_lines() {
	echo "GEOSHARD_OPENSEARCH_URL=http://127.0.0.1:$os_port"
	echo "GEOSHARD_KAFKA_BROKERS=127.0.0.1:$kafka_port"
	if find_pg; then
		echo "GEOSHARD_POSTGRES_DSN=postgres://postgres@127.0.0.1:$pg_port/postgres?sslmode=disable"
		echo "GEOSHARD_CONNECT_URL=http://127.0.0.1:$connect_port"
	fi
}

command_lines() {
	echo "GEOSHARD_OPENSEARCH=http://127.0.0.1:$os_port"
	echo "GEOSHARD_BROKERS=127.0.0.1:$kafka_port"
}

# exports prints the variables as export lines to paste into a shell:
# the commands' on one line, the suites' on another, each value in single
# quotes (the DSN holds a "?", which a shell would take for a pattern).
exports() {
	echo "# paste these into each terminal (the commands' variables, then the test suites'):"
	echo "export$(command_lines | sed "s/=\(.*\)/='\1'/; s/^/ /" | tr -d '\n')"
	echo "export$(suite_lines | sed "s/=\(.*\)/='\1'/; s/^/ /" | tr -d '\n')"
}

# stop NAME [SIGNAL] stops NAME with SIGNAL (TERM), then KILL after 30s.
stop() {
	local name=$1 sig=${2:-TERM} pidfile=$dir/$1.pid
	if ! alive "$name"; then
		rm -f "$pidfile"
		return
	fi
	local pid
	pid=$(cat "$pidfile")
	log "stopping $name (pid $pid)"
	kill -"$sig" "$pid" 2>/dev/null || true
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
	# Connect before the broker it writes to and the server it reads;
	# postgres by SIGINT, its fast shutdown (TERM waits for every client).
	stop connect
	stop postgres INT
	stop kafka
	stop opensearch
	rm -rf "$dir/kafka/data" "$dir/opensearch/node/data" "$dir/opensearch/tmp" \
		"$dir/connect/data" "$(pg_home)/data"
	log "stopped; data removed"
}

status() {
	local rc=0
	local names=(opensearch kafka)
	find_pg && names+=(postgres connect)
	for name in "${names[@]}"; do
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
	if ! { alive opensearch && alive kafka && { ! find_pg || { alive postgres && alive connect; }; }; }; then
		started=1
		trap down EXIT
	fi
	up >/dev/null
	local line
	while read -r line; do
		export "$line"
	done < <(suite_lines)
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
exports) exports ;;
*)
	echo "usage: $0 up|down|status|env|exports|run CMD..." >&2
	exit 2
	;;
esac
