#!/usr/bin/env bash
# real.sh up|down|status|env|exports|run — a real single-node OpenSearch
# (3.9 by default, or the 2.x line: OPENSEARCH_VERSION below) and a real
# single KRaft Kafka 4.1 broker on loopback, from jars Maven takes from Maven
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
#           running CMD, or 3 with GEOSHARD_REQUIRE_REAL=1 (CI); so where
#           no Java fits OPENSEARCH_VERSION (below).
#
# OPENSEARCH_VERSION (3.9.0) is the OpenSearch the nodes run: 3.9.0, the
# newest tested, or 2.19.6, the 2.x line's. Each version's jars go to a
# directory of their own ($dir/opensearch/VERSION), so both can be kept;
# the node's data is one version's, and up refuses to start another
# version on it (down removes it). The 3.x line needs Java 21 or newer, the
# 2.x line Java 17 to 23 (its security manager is gone from Java 24): the
# node runs on OPENSEARCH_JAVA_HOME, else JAVA_HOME, else the java on the
# PATH, else the newest JDK in /usr/lib/jvm, the first that fits. Kafka,
# Connect and the tools stay on JAVA_HOME's or the PATH's java (17+).
#
# The cluster profile: OPENSEARCH_NODES=3 KAFKA_BROKERS=3 (or REAL_CLUSTER=3
# for both) make up start, instead of the single node and broker, three
# OpenSearch nodes (each cluster-manager-eligible and data; node N named
# geoshard-N, HTTP on OPENSEARCH_PORT+N-1, transport on
# OPENSEARCH_TRANSPORT_PORT+N-1, heap OPENSEARCH_HEAP, 512m here) and three
# KRaft brokers (each broker and controller, the three a controller quorum;
# broker N on KAFKA_PORT+2(N-1), its controller on KAFKA_CONTROLLER_PORT+
# 2(N-1); three replicas of every topic, two in sync for a write), and wait
# for a green cluster of three nodes and three registered brokers under a
# quorum leader (REAL_UP_TIMEOUT 300 here). PostgreSQL and Kafka Connect are
# not started. env, exports and run name every node's URL and every
# broker's address, comma-joined. up records the profile in the directory,
# so that later commands on it (down, status, env, the verbs below) need
# only GEOSHARD_REAL_DIR; down forgets it. Fault tests control each process:
#   kill KIND N    SIGKILL node or broker N (KIND opensearch or kafka, N from 1)
#   start KIND N   start it again with its data (after kill or down's TERM)
#   stop KIND N    SIGSTOP it; cont KIND N SIGCONTs it
#   pid KIND N     print its pid
# each printing one line; an N out of range, or a process that does not
# run, exits 1 (an N out of range 2). In the single-node profile N is 1.
#
# Variables: OPENSEARCH_VERSION (3.9.0), OPENSEARCH_JAVA_HOME,
# OPENSEARCH_PORT (9200), KAFKA_PORT (9092), PG_PORT (5432),
# CONNECT_PORT (8083), GEOSHARD_REAL_DIR (the directory it owns: .real/ at
# the top of the repo), OPENSEARCH_HEAP (1g), KAFKA_HEAP (512m),
# CONNECT_HEAP (512m), REAL_UP_TIMEOUT (seconds to wait, 180), JAVA_HOME,
# PG_BIN (the directory of initdb and postgres; default the newest
# /usr/lib/postgresql/*/bin).
#
# Exit status: 0 done, 1 an engine failed (the last lines of its log are
# printed), 3 Java 17+ or Maven is missing, or no Java fits the OpenSearch
# version.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
dir=${GEOSHARD_REAL_DIR:-$repo/.real}
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac # the steps below change directory
export GEOSHARD_REAL_DIR=$dir                   # and so may what run runs

# The cluster profile's sizes: OPENSEARCH_NODES and KAFKA_BROKERS, else
# REAL_CLUSTER for both, else what up recorded in $dir (for its ports and
# heaps too, where unset), else 1.
profile=$dir/cluster.profile
for var in OPENSEARCH_NODES KAFKA_BROKERS; do
	if [[ -n "${!var:-}" && ! "${!var}" =~ ^[1-9]$ ]]; then
		printf 'real: %s=%s is not a number from 1 to 9; taken as unset\n' "$var" "${!var}" >&2
		unset "$var"
	fi
	if [[ -z "${!var:-}" && -n "${REAL_CLUSTER:-}" ]]; then
		[[ "$REAL_CLUSTER" =~ ^[1-9]$ ]] || {
			printf 'real: REAL_CLUSTER=%s is not a number from 1 to 9\n' "$REAL_CLUSTER" >&2
			exit 2
		}
		declare "$var=$REAL_CLUSTER"
	fi
done
if [[ -f "$profile" ]]; then
	while IFS='=' read -r key value; do
		case $key in
		OPENSEARCH_NODES | KAFKA_BROKERS | OPENSEARCH_PORT | OPENSEARCH_TRANSPORT_PORT | KAFKA_PORT | \
			KAFKA_CONTROLLER_PORT | OPENSEARCH_HEAP | KAFKA_HEAP | OPENSEARCH_VERSION)
			[[ -n "${!key:-}" ]] || declare "$key=$value"
			;;
		esac
	done <"$profile"
fi
# The OpenSearch version: OPENSEARCH_VERSION, else the one whose data the
# single node holds, else 3.9.0.
if [[ -z "${OPENSEARCH_VERSION:-}" && -s "$dir/opensearch/version" ]]; then
	OPENSEARCH_VERSION=$(cat "$dir/opensearch/version")
fi
os_version=${OPENSEARCH_VERSION:-3.9.0}
if ! [[ "$os_version" =~ ^(2\.19|3\.[0-9]+)\.[0-9]+$ ]]; then
	printf 'real: OPENSEARCH_VERSION=%s: the nodes here run 2.19.x or 3.x (3.9.0 the newest tested)\n' "$os_version" >&2
	exit 2
fi
os_major=${os_version%%.*}
os_lib=$dir/opensearch/$os_version
os_nodes=${OPENSEARCH_NODES:-1}
kafka_brokers=${KAFKA_BROKERS:-1}
os_port=${OPENSEARCH_PORT:-9200}
os_transport_port=${OPENSEARCH_TRANSPORT_PORT:-$((os_port + 100))}
kafka_port=${KAFKA_PORT:-9092}
controller_port=${KAFKA_CONTROLLER_PORT:-$((kafka_port + 1))}
os_heap=${OPENSEARCH_HEAP:-1g}
((os_nodes == 1)) || os_heap=${OPENSEARCH_HEAP:-512m}
kafka_heap=${KAFKA_HEAP:-512m}
pg_port=${PG_PORT:-5432}
connect_port=${CONNECT_PORT:-8083}
connect_heap=${CONNECT_HEAP:-512m}
pg_bin=${PG_BIN:-}
timeout=${REAL_UP_TIMEOUT:-180}
((os_nodes == 1 && kafka_brokers == 1)) || timeout=${REAL_UP_TIMEOUT:-300}

java=java
javac=javac
if [[ -n "${JAVA_HOME:-}" ]]; then
	java=$JAVA_HOME/bin/java
	javac=$JAVA_HOME/bin/javac
fi

log() { printf 'real: %s\n' "$*" >&2; }

# say logs what up does, but not under the verbs, which print one line.
quiet=0
say() { ((quiet)) || log "$@"; }

# java_feature JAVA prints JAVA's feature version (17, 21, 25), or nothing.
java_feature() {
	local v
	v=$("$1" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')
	echo "${v%%.*}"
}

# find_os_java sets os_java and os_javac to the first Java that fits the
# OpenSearch line (see the header), or fails saying what it looked at.
find_os_java() {
	local lo=21 hi=99
	((os_major >= 3)) || { lo=17 hi=23; }
	local candidates=() c v seen=
	[[ -n "${OPENSEARCH_JAVA_HOME:-}" ]] && candidates+=("$OPENSEARCH_JAVA_HOME/bin/java")
	[[ -n "${JAVA_HOME:-}" ]] && candidates+=("$JAVA_HOME/bin/java")
	c=$(command -v java 2>/dev/null) && candidates+=("$c")
	for c in $(ls -d /usr/lib/jvm/*/bin/java 2>/dev/null | sort -V -r); do
		candidates+=("$c")
	done
	for c in "${candidates[@]}"; do
		[[ -x "$c" && -x "$(dirname "$c")/javac" ]] || continue
		v=$(java_feature "$c")
		seen+="${seen:+, }$c ($v)"
		if [[ -n "$v" ]] && ((v >= lo && v <= hi)); then
			os_java=$c
			os_javac=$(dirname "$c")/javac
			return 0
		fi
	done
	local want="Java $lo or newer"
	((hi == 99)) || want="Java $lo to $hi"
	log "OpenSearch $os_version needs $want (JDK, with javac); none found among: ${seen:-no java at all}. Set OPENSEARCH_JAVA_HOME, or OPENSEARCH_VERSION to the other line"
	return 1
}

# need_tools exits 3 unless Java 17 or newer and Maven are present, and a
# Java that fits the OpenSearch version (find_os_java).
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
	find_os_java || exit 3
}

# fetch NAME copies NAME's jars into $dir/NAME/lib and compiles its Java
# sources, if it has any; the jars of each pom one directory further down
# (NAME/PLUGIN/pom.xml) go into $dir/NAME/plugins/PLUGIN. All again only
# when a pom or a source changed. fetch opensearch is the OpenSearch
# version's: its jars in $os_lib, its sources those of the top directory
# and of its line's (vMAJOR/), compiled by the Java that runs it.
fetch() {
	local name=$1 src=$here/$1 out=$dir/$1
	local stamp sources plugins mvnargs=() compile=$javac
	shopt -s nullglob
	sources=("$src"/*.java)
	plugins=("$src"/*/pom.xml)
	if [[ $name == opensearch ]]; then
		out=$os_lib
		sources+=("$src/v$os_major"/*.java)
		mvnargs=(-Dopensearch.version="$os_version")
		compile=$os_javac
	fi
	shopt -u nullglob
	stamp=$( (echo "${mvnargs[*]}" && cat "$src"/pom.xml "${sources[@]}" "${plugins[@]}") | sha256sum | cut -c1-16)
	if [[ -f "$out/lib.stamp" && "$(cat "$out/lib.stamp")" == "$stamp" ]]; then
		return
	fi
	log "fetching the $name jars from Maven Central${mvnargs[*]:+ (${mvnargs[*]})}"
	rm -rf "$out/lib" "$out/classes" "$out/plugins"
	mkdir -p "$out/lib" "$out/classes"
	copy_jars "$name" "$src/pom.xml" "$out/lib" "${mvnargs[@]}"
	local pom
	for pom in "${plugins[@]}"; do
		copy_jars "$name" "$pom" "$out/plugins/$(basename "$(dirname "$pom")")"
	done
	if ((${#sources[@]})); then
		"$compile" -d "$out/classes" -cp "$out/lib/*" "${sources[@]}"
	fi
	echo "$stamp" >"$out/lib.stamp"
}

# copy_jars NAME POM DIR [MAVEN_ARGS…] copies the jars POM depends on into
# DIR.
copy_jars() {
	local name=$1 pom=$2 to=$3 mvnlog=$dir/$1/mvn.log
	shift 3
	mkdir -p "$to" "$dir/$name"
	if ! mvn -q -B -f "$pom" "$@" dependency:copy-dependencies -DoutputDirectory="$to" >"$mvnlog" 2>&1; then
		tail -n 40 "$mvnlog" >&2
		log "maven could not fetch the $name jars of $pom (log: $mvnlog)"
		exit 1
	fi
}

# alive NAME reports whether the process in NAME's PID file runs and is the
# one up started (its command line names the run directory, or for
# postgres its data directory, for a cluster's node or broker its own).
alive() {
	local pidfile=$dir/$1.pid pid mark=$dir/$1
	case $1 in
	postgres) mark=$(pg_home)/data ;;
	opensearch-*) mark="$dir/opensearch/node-${1#opensearch-} " ;;
	kafka-*) mark="$dir/kafka/broker-${1#kafka-}/" ;;
	esac
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
	claim_os_data "$home/node/data"
	mkdir -p "$home/node/data" "$home/node/logs" "$home/tmp"
	say "starting opensearch $os_version on 127.0.0.1:$os_port (heap $os_heap, java $(java_feature "$os_java"))"
	os_jvm "$home/tmp"
	nohup "$os_java" "${jvm_opts[@]}" \
		-cp "$os_lib/lib/*:$os_lib/classes" GeoshardNode "$home/node" "$os_port" "$os_transport_port" \
		>"$home/node.log" 2>&1 </dev/null &
	echo $! >"$dir/opensearch.pid"
}

# claim_os_data DATA fails where DATA holds another OpenSearch version's
# data, and records this version's as the one it holds.
claim_os_data() {
	local mark=$dir/opensearch/version
	if [[ -s "$mark" && "$(cat "$mark")" != "$os_version" && -n "$(ls -A "$1" 2>/dev/null)" ]]; then
		log "$1 holds OpenSearch $(cat "$mark")'s data, not $os_version's: \`real.sh down\` first (it removes the data), or set GEOSHARD_REAL_DIR"
		exit 1
	fi
	mkdir -p "$dir/opensearch"
	echo "$os_version" >"$mark"
}

# os_jvm TMP sets jvm_opts to the JVM options of OpenSearch's own
# jvm.options that matter here, TMP its temporary and heap-dump directory.
# The 3.x line's locale providers are SPI,CLDR (Java 23 dropped COMPAT), and
# Lucene 10 calls native code and the vector API, as its jvm.options allow.
os_jvm() {
	local line=(-Djava.locale.providers=SPI,COMPAT)
	((os_major < 3)) || line=(-Djava.locale.providers=SPI,CLDR --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector)
	jvm_opts=(-Xms"$os_heap" -Xmx"$os_heap" -XX:+UseG1GC \
		-XX:+HeapDumpOnOutOfMemoryError -XX:HeapDumpPath="$1" \
		-Djava.io.tmpdir="$1" -Djava.awt.headless=true -Dfile.encoding=UTF-8 \
		-Djna.nosys=true -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true \
		-Dio.netty.recycler.maxCapacityPerThread=0 -Dlog4j.shutdownHookEnabled=false \
		-Dlog4j2.disable.jmx=true "${line[@]}")
}

# The cluster profile's ports of node or broker N.
os_http_port() { echo $((os_port + $1 - 1)); }
os_tport() { echo $((os_transport_port + $1 - 1)); }
kafka_nport() { echo $((kafka_port + 2 * ($1 - 1))); }
kafka_cport() { echo $((controller_port + 2 * ($1 - 1))); }

# os_urls and kafka_addrs print every node's URL and every broker's
# address, comma-joined: the single node's and broker's in the default
# profile.
os_urls() {
	local n out=
	for n in $(seq "$os_nodes"); do
		out+=${out:+,}http://127.0.0.1:$(os_http_port "$n")
	done
	echo "$out"
}

kafka_addrs() {
	local n out=
	for n in $(seq "$kafka_brokers"); do
		out+=${out:+,}127.0.0.1:$(kafka_nport "$n")
	done
	echo "$out"
}

# start_os_node N starts node N of the cluster profile, with the data it
# has: cluster.initial_cluster_manager_nodes only on its first start.
start_os_node() {
	local n=$1 home=$dir/opensearch node=$dir/opensearch/node-$1
	local http tport
	http=$(os_http_port "$n")
	tport=$(os_tport "$n")
	if alive "opensearch-$n"; then
		say "opensearch $n already runs (pid $(cat "$dir/opensearch-$n.pid"))"
		return
	fi
	if curl -fsS --max-time 2 "http://127.0.0.1:$http/" >/dev/null 2>&1; then
		log "port $http already answers, and not with a node this script started; set OPENSEARCH_PORT"
		exit 1
	fi
	local seeds= managers= i
	for i in $(seq "$os_nodes"); do
		seeds+=${seeds:+,}127.0.0.1:$(os_tport "$i")
		managers+=${managers:+,}geoshard-$i
	done
	if [[ -n "$(ls -A "$node/data" 2>/dev/null)" ]]; then
		managers=-
	fi
	claim_os_data "$node/data"
	mkdir -p "$node/data" "$node/logs" "$node/tmp"
	say "starting opensearch $os_version $n on 127.0.0.1:$http (transport $tport, heap $os_heap, java $(java_feature "$os_java"))"
	os_jvm "$node/tmp"
	nohup "$os_java" "${jvm_opts[@]}" \
		-cp "$os_lib/lib/*:$os_lib/classes" GeoshardNode "$node" "$http" "$tport" "geoshard-$n" "$seeds" "$managers" \
		>"$node/node.log" 2>&1 </dev/null &
	echo $! >"$dir/opensearch-$n.pid"
}

# os_green says whether the cluster profile's nodes form a green cluster of
# all of them, asking each node in turn.
os_green() {
	local n
	for n in $(seq "$os_nodes"); do
		if curl -fsS --max-time 5 "http://127.0.0.1:$(os_http_port "$n")/_cluster/health?wait_for_status=green&wait_for_nodes=$os_nodes&timeout=2s" 2>/dev/null |
			grep -F '"timed_out":false' | grep -qF '"status":"green"'; then
			return 0
		fi
	done
	return 1
}

kafka_ready() {
	"$java" -cp "$dir/kafka/lib/*:$dir/kafka/classes" KafkaReady "127.0.0.1:$kafka_port" "$1" >>"$dir/kafka/ready.log" 2>&1
}

# kafka_quorum_ready TIMEOUT waits for the cluster profile's brokers: all
# registered, and a quorum leader among as many voters.
kafka_quorum_ready() {
	"$java" -cp "$dir/kafka/lib/*:$dir/kafka/classes" KafkaReady "$(kafka_addrs)" "$1" "$kafka_brokers" \
		>>"$dir/kafka/ready.log" 2>&1
}

# start_kafka_broker N starts broker N of the cluster profile, formatting
# its storage with the cluster's id on its first start.
start_kafka_broker() {
	local n=$1 home=$dir/kafka broker=$dir/kafka/broker-$1
	local port cport
	port=$(kafka_nport "$n")
	cport=$(kafka_cport "$n")
	if alive "kafka-$n"; then
		say "kafka $n already runs (pid $(cat "$dir/kafka-$n.pid"))"
		return
	fi
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		log "port $port is already taken, and not by a broker this script started; set KAFKA_PORT"
		exit 1
	fi
	mkdir -p "$broker/data" "$broker/logs"
	local voters= i rf=$((kafka_brokers < 3 ? kafka_brokers : 3))
	for i in $(seq "$kafka_brokers"); do
		voters+=${voters:+,}$i@127.0.0.1:$(kafka_cport "$i")
	done
	sed -e "s#@DIR@#$dir#g" -e "s#@NODE_ID@#$n#g" -e "s#@KAFKA_PORT@#$port#g" -e "s#@CONTROLLER_PORT@#$cport#g" \
		-e "s#@VOTERS@#$voters#g" -e "s#@RF@#$rf#g" -e "s#@MIN_ISR@#$((rf < 2 ? rf : 2))#g" \
		"$here/kafka/cluster.properties.in" >"$broker/server.properties"
	local jvm=(-Dlog4j2.configurationFile="$here/kafka/log4j2.properties" -Dkafka.logs.dir="$broker/logs")
	if [[ ! -f "$broker/data/meta.properties" ]]; then
		if [[ ! -s "$home/cluster.id" ]]; then
			"$java" "${jvm[@]}" -cp "$home/lib/*" kafka.tools.StorageTool random-uuid >"$home/cluster.id"
		fi
		if ! "$java" "${jvm[@]}" -cp "$home/lib/*" kafka.tools.StorageTool format \
			-t "$(cat "$home/cluster.id")" -c "$broker/server.properties" >"$broker/format.log" 2>&1; then
			tail -n 40 "$broker/format.log" >&2
			log "kafka $n storage format failed (log: $broker/format.log)"
			exit 1
		fi
	fi
	say "starting kafka $n on 127.0.0.1:$port (controller $cport, heap $kafka_heap)"
	nohup "$java" -Xms"$kafka_heap" -Xmx"$kafka_heap" -XX:+UseG1GC -Djava.awt.headless=true \
		"${jvm[@]}" -cp "$home/lib/*" kafka.Kafka "$broker/server.properties" \
		>"$broker/stdout.log" 2>&1 </dev/null &
	echo $! >"$dir/kafka-$n.pid"
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
	say "starting kafka on 127.0.0.1:$kafka_port (heap $kafka_heap)"
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
	if ((os_nodes > 1 || kafka_brokers > 1)); then
		up_cluster
		return
	fi
	if [[ -f "$profile" ]]; then
		log "$dir holds a cluster ($(tr '\n' ' ' <"$profile")); \`real.sh down\` it first, or set GEOSHARD_REAL_DIR"
		exit 1
	fi
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

# member KIND N is the name of node or broker N (its PID file's): the
# single node's or broker's own in the default profile.
member() {
	local count=$os_nodes
	[[ $1 == opensearch ]] || count=$kafka_brokers
	if ((count == 1)); then echo "$1"; else echo "$1-$2"; fi
}

# member_addr KIND N is the address node or broker N serves clients on.
member_addr() {
	if [[ $1 == opensearch ]]; then
		echo "http://127.0.0.1:$(os_http_port "$2")"
	else
		echo "127.0.0.1:$(kafka_nport "$2")"
	fi
}

# member_log KIND N is node or broker N's log.
member_log() {
	case $(member "$1" "$2") in
	opensearch) echo "$dir/opensearch/node.log" ;;
	kafka) echo "$dir/kafka/logs/server.log" ;;
	opensearch-*) echo "$dir/opensearch/node-$2/node.log" ;;
	kafka-*) echo "$dir/kafka/broker-$2/logs/server.log" ;;
	esac
}

# start_member KIND N starts node or broker N, with its data.
start_member() {
	case $(member "$1" "$2") in
	opensearch) start_opensearch ;;
	kafka) start_kafka ;;
	opensearch-*) start_os_node "$2" ;;
	kafka-*) start_kafka_broker "$2" ;;
	esac
}

# up_cluster is up in the cluster profile: no PostgreSQL nor Kafka Connect,
# and ready once the nodes form a green cluster of all of them and every
# broker is registered under a quorum leader.
up_cluster() {
	# A profile of one broker (or one node) names it as the single-node
	# profile does: only a single node beside a cluster's brokers, or a
	# single broker beside a cluster's nodes, is another profile's.
	if { ((os_nodes > 1)) && alive opensearch; } || { ((kafka_brokers > 1)) && alive kafka; }; then
		log "the single-node engines run in $dir; \`real.sh down\` them first, or set GEOSHARD_REAL_DIR"
		exit 1
	fi
	local want="OPENSEARCH_NODES=$os_nodes KAFKA_BROKERS=$kafka_brokers"
	if [[ -f "$profile" ]] && [[ "$(grep -E '^(OPENSEARCH_NODES|KAFKA_BROKERS)=' "$profile" | tr '\n' ' ')" != "$want " ]]; then
		log "$dir holds another cluster ($(tr '\n' ' ' <"$profile")); \`real.sh down\` it first, or set GEOSHARD_REAL_DIR"
		exit 1
	fi
	fetch opensearch
	fetch kafka
	printf '%s\n' "OPENSEARCH_NODES=$os_nodes" "KAFKA_BROKERS=$kafka_brokers" \
		"OPENSEARCH_PORT=$os_port" "OPENSEARCH_TRANSPORT_PORT=$os_transport_port" \
		"KAFKA_PORT=$kafka_port" "KAFKA_CONTROLLER_PORT=$controller_port" \
		"OPENSEARCH_HEAP=$os_heap" "KAFKA_HEAP=$kafka_heap" "OPENSEARCH_VERSION=$os_version" >"$profile"
	local n
	for n in $(seq "$os_nodes"); do
		start_member opensearch "$n"
	done
	for n in $(seq "$kafka_brokers"); do
		start_member kafka "$n"
	done
	local deadline=$((SECONDS + timeout))
	until if ((os_nodes > 1)); then os_green; else os_health; fi; do
		for n in $(seq "$os_nodes"); do
			alive "$(member opensearch "$n")" || fail "opensearch $n" "$(member_log opensearch "$n")"
		done
		((SECONDS < deadline)) || fail opensearch "$(member_log opensearch 1)"
		sleep 1
	done
	local left=$((deadline - SECONDS))
	for n in $(seq "$kafka_brokers"); do
		alive "$(member kafka "$n")" || fail "kafka $n" "$(member_log kafka "$n")"
	done
	if ((kafka_brokers > 1)); then
		kafka_quorum_ready $((left > 5 ? left : 5)) || fail kafka "$(member_log kafka 1)"
	else
		kafka_ready $((left > 5 ? left : 5)) || fail kafka "$(member_log kafka 1)"
	fi
	log "opensearch ready at $(os_urls) ($os_nodes node(s), green), kafka at $(kafka_addrs) ($kafka_brokers broker(s))"
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
	echo "GEOSHARD_OPENSEARCH_URL=$(os_urls)"
	echo "GEOSHARD_OPENSEARCH_VERSION=$os_version"
	echo "GEOSHARD_KAFKA_BROKERS=$(kafka_addrs)"
	if ((os_nodes == 1 && kafka_brokers == 1)) && find_pg; then
		echo "GEOSHARD_POSTGRES_DSN=postgres://postgres@127.0.0.1:$pg_port/postgres?sslmode=disable"
		echo "GEOSHARD_CONNECT_URL=http://127.0.0.1:$connect_port"
	fi
}

command_lines() {
	echo "GEOSHARD_OPENSEARCH=$(os_urls)"
	echo "GEOSHARD_BROKERS=$(kafka_addrs)"
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
	# A process a fault test left stopped (SIGSTOP) handles the signal once
	# it runs again.
	kill -CONT "$pid" 2>/dev/null || true
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

# stop_members KIND stops every node or broker of KIND that the cluster
# profile started (their PID files), all at once: TERM, then KILL after 30s.
stop_members() {
	local f name pids=() names=()
	shopt -s nullglob
	for f in "$dir/$1"-[0-9].pid; do
		name=$(basename "$f" .pid)
		if alive "$name"; then
			names+=("$name")
			pids+=("$(cat "$f")")
		else
			rm -f "$f"
		fi
	done
	shopt -u nullglob
	((${#names[@]})) || return 0
	log "stopping ${names[*]} (pids ${pids[*]})"
	kill -TERM "${pids[@]}" 2>/dev/null || true
	kill -CONT "${pids[@]}" 2>/dev/null || true
	local i left
	for _ in $(seq 60); do
		left=0
		for name in "${names[@]}"; do
			! alive "$name" || left=1
		done
		((left)) || break
		sleep 0.5
	done
	for i in "${!names[@]}"; do
		if alive "${names[$i]}"; then
			log "${names[$i]} did not stop within 30s; killing it"
			kill -KILL "${pids[$i]}" 2>/dev/null || true
		fi
	done
	((left == 0)) || sleep 1
	for name in "${names[@]}"; do
		rm -f "$dir/$name.pid"
	done
}

down() {
	# Connect before the broker it writes to and the server it reads;
	# postgres by SIGINT, its fast shutdown (TERM waits for every client).
	stop connect
	stop postgres INT
	stop kafka
	stop opensearch
	# The cluster profile's brokers, then its nodes, each kind at once.
	stop_members kafka
	stop_members opensearch
	rm -rf "$dir/kafka/data" "$dir/opensearch/node/data" "$dir/opensearch/tmp" \
		"$dir/connect/data" "$(pg_home)/data"
	rm -rf "$dir"/opensearch/node-[0-9]/data "$dir"/opensearch/node-[0-9]/tmp \
		"$dir"/kafka/broker-[0-9]/data "$dir/kafka/cluster.id" "$profile" "$dir/opensearch/version"
	log "stopped; data removed"
}

status() {
	local rc=0
	if ((os_nodes > 1 || kafka_brokers > 1)); then
		local kind n name count ports
		for kind in opensearch kafka; do
			count=$os_nodes
			[[ $kind == opensearch ]] || count=$kafka_brokers
			for n in $(seq "$count"); do
				name=$(member "$kind" "$n")
				ports=$(member_addr "$kind" "$n")
				if [[ $name == opensearch-* ]]; then
					ports+=", transport $(os_tport "$n")"
				elif [[ $name == kafka-* ]]; then
					ports+=", controller $(kafka_cport "$n")"
				fi
				if alive "$name"; then
					echo "$kind $n: running (pid $(cat "$dir/$name.pid"), $ports)"
				else
					echo "$kind $n: stopped ($ports)"
					rc=1
				fi
			done
		done
		return $rc
	fi
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

# engines_alive says whether every engine of the profile runs.
engines_alive() {
	if ((os_nodes == 1 && kafka_brokers == 1)); then
		alive opensearch && alive kafka && { ! find_pg || { alive postgres && alive connect; }; }
		return
	fi
	local n
	for n in $(seq "$os_nodes"); do
		alive "$(member opensearch "$n")" || return 1
	done
	for n in $(seq "$kafka_brokers"); do
		alive "$(member kafka "$n")" || return 1
	done
}

# control VERB KIND N: the fault tests' verbs (kill, start, stop, cont,
# pid); see the header.
control() {
	local verb=$1 kind=${2:-} n=${3:-} count
	case $kind in
	opensearch) count=$os_nodes ;;
	kafka) count=$kafka_brokers ;;
	*)
		log "usage: $0 $verb opensearch|kafka N"
		exit 2
		;;
	esac
	if ! [[ "$n" =~ ^[1-9][0-9]*$ ]] || ((n > count)); then
		log "$kind ${n:-(none)}: no such $( [[ $kind == opensearch ]] && echo node || echo broker); the profile in $dir has $count, numbered 1 to $count"
		exit 2
	fi
	local name pid
	name=$(member "$kind" "$n")
	if [[ $verb == start ]]; then
		need_tools
		local jars=$dir/$kind
		[[ $kind == kafka ]] || jars=$os_lib
		if [[ ! -f "$jars/lib.stamp" ]]; then
			log "$kind $n: no jars in $jars; run \`real.sh up\` first"
			exit 1
		fi
		if alive "$name"; then
			echo "$kind $n: already running (pid $(cat "$dir/$name.pid"), $(member_addr "$kind" "$n"))"
			return
		fi
		quiet=1
		start_member "$kind" "$n"
		echo "$kind $n: started (pid $(cat "$dir/$name.pid"), $(member_addr "$kind" "$n"))"
		return
	fi
	if ! alive "$name"; then
		log "$kind $n: not running"
		exit 1
	fi
	pid=$(cat "$dir/$name.pid")
	case $verb in
	pid) echo "$pid" ;;
	kill)
		kill -KILL "$pid"
		for _ in $(seq 100); do
			alive "$name" || break
			sleep 0.1
		done
		echo "$kind $n: killed (SIGKILL, pid $pid)"
		;;
	stop)
		kill -STOP "$pid"
		echo "$kind $n: stopped (SIGSTOP, pid $pid)"
		;;
	cont)
		kill -CONT "$pid"
		echo "$kind $n: continued (SIGCONT, pid $pid)"
		;;
	esac
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
	if ! engines_alive; then
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
kill | start | stop | cont | pid) control "$@" ;;
*)
	echo "usage: $0 up|down|status|env|exports|run CMD...|kill|start|stop|cont|pid opensearch|kafka N" >&2
	exit 2
	;;
esac
