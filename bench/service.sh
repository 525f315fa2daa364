#!/usr/bin/env bash
# kvstore's service beside Redis on this machine: 2,048-block lookups by 64 clients; 2 MiB blocks stored and
# fetched over HTTP (framed batches) and over the one-sided UCX path, beside Redis SET/GET of the same blocks.
# Usage: bench/service.sh [blocks] [batch] [lookup-seconds]   (needs redis-server; builds the jars if absent)
# The service's one-sided path is forced to direct UCX (OneSidedLoad drives a UCX worker), NIXL present or not.
set -euo pipefail
cd "$(dirname "$0")/.."
BLOCKS=${1:-512}          # 2 MiB each: 1 GiB working set, far beyond the CPU caches
BATCH=${2:-8}
LOOKUP_SECS=${3:-10}
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
JAR=bench/target/benchmarks.jar
SERVICE=$(ls kv-store-service/target/kv-store-service-*.jar 2>/dev/null | grep -v original | head -1 || true)
command -v redis-server >/dev/null || { echo "redis-server not found (apt-get install redis-server)" >&2; exit 1; }
[[ -f $JAR ]] || ./mvnw -q -B -ntp -pl bench -am package -DskipTests
[[ -n $SERVICE ]] || { ./mvnw -q -B -ntp -pl kv-store-service -am package -DskipTests; SERVICE=$(ls kv-store-service/target/kv-store-service-*.jar | grep -v original | head -1); }

WORK=$(mktemp -d)
PORT=$((20000 + RANDOM % 20000))
RPORT=$((PORT + 1))
cleanup() { kill "${SVC:-}" "${RDS:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

"$JAVA" --enable-native-access=ALL-UNNAMED -Xmx2g -jar "$SERVICE" --server.port=$PORT --kvstore.data-dir="$WORK/data" \
  --kvstore.tiers.dram.capacity=$(( BLOCKS * 2 * 5 / 4 + 64 ))MB --kvstore.tiers.nvme.enabled=false \
  --kvstore.max-request-size=256MB --kvstore.transport.data-plane=ucx \
  --logging.level.root=WARN >"$WORK/service.log" 2>&1 &
SVC=$!
redis-server --port $RPORT --save '' --appendonly no --maxmemory $(( BLOCKS * 2 * 3 / 2 + 64 ))mb \
  --proto-max-bulk-len 64mb --client-query-buffer-limit 1gb --daemonize no >"$WORK/redis.log" 2>&1 &
RDS=$!
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$PORT/actuator/health" >/dev/null && break; sleep 0.5; done
curl -sf "http://127.0.0.1:$PORT/actuator/health" >/dev/null || { cat "$WORK/service.log"; exit 1; }

echo "# machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%d GiB", $2/1048576}' /proc/meminfo), $(uname -r); loopback"
echo "# $(redis-server --version | cut -d' ' -f1-3)"
run() { "$JAVA" --enable-native-access=ALL-UNNAMED -Xmx3g -cp "$JAR" "$@" 2>&1 | grep -v -E '^\s*$|INFO'; }
run io.kvstore.bench.transport.HttpLoad lookup "http://127.0.0.1:$PORT" "$LOOKUP_SECS"
run io.kvstore.bench.transport.HttpLoad blocks "http://127.0.0.1:$PORT" $RPORT "$BLOCKS" "$BATCH" 1 4 16
for c in 1 4 16; do
  run io.kvstore.bench.transport.OneSidedLoad "http://127.0.0.1:$PORT" "$BLOCKS" "$BATCH" $c ""
done
