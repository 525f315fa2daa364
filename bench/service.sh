#!/usr/bin/env bash
# kvstore's service beside Redis on this machine: 2,048-block lookups by 64 clients; 2 MiB blocks stored and
# fetched over HTTP (framed batches) and over the one-sided UCX path, beside Redis SET/GET of the same blocks.
# Redis is also measured by its own tool, redis-benchmark, with the same value size, pipeline depth and clients.
# Usage: bench/service.sh [blocks] [batch] [lookup-seconds]   (needs redis-server; builds the jars if absent)
# The service's one-sided path is forced to direct UCX (OneSidedLoad drives a UCX worker), NIXL present or not.
set -euo pipefail
cd "$(dirname "$0")/.."
BLOCKS=${1:-512}          # 2 MiB each: 1 GiB working set, far beyond the CPU caches
BATCH=${2:-8}
LOOKUP_SECS=${3:-10}
command -v redis-server >/dev/null || { echo "redis-server not found (apt-get install redis-server)" >&2; exit 1; }
source bench/jars.sh

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
# Redis by its own tool: SET and GET of 2 MiB values, BATCH per pipeline, keys drawn from BLOCKS of them (all
# written first, so no GET finds a key missing and answers nil); GB/s = requests/s x 2 MiB
rb() {
  redis-benchmark -h 127.0.0.1 -p $RPORT -d 2097152 -r "$BLOCKS" -P "$BATCH" -q "$@" 2>&1 | tr '\r' '\n' \
    | awk '/^(SET|GET): [0-9.]+ requests per second/ { print $2 }'
}
redis-cli -p $RPORT FLUSHALL >/dev/null # the loads' keys: the tool's own must fit in maxmemory
# keys not yet holding 2 MiB (redis-benchmark names them key:<12 digits>)
short() {
  redis-cli -p $RPORT EVAL "local n = 0 for i = 0, tonumber(ARGV[1]) - 1 do if redis.call('STRLEN',
    string.format('key:%012d', i)) < 2097152 then n = n + 1 end end return n" 0 "$BLOCKS"
}
while [[ $(short) != 0 ]]; do rb -t set -n $((BLOCKS * 4)) -c 1 >/dev/null; done
echo "# $(redis-benchmark --version | cut -d' ' -f1-2): $BATCH per pipeline, $BLOCKS keys of 2 MiB"
echo "| peer, measured by | clients | SET GB/s | GET GB/s |"
echo "|---|---|---|---|"
for c in 1 4 16; do
  set_rps=$(rb -t set -n $((BLOCKS * 2)) -c $c)
  get_rps=$(rb -t get -n $((BLOCKS * 2)) -c $c)
  awk -v c=$c -v s="$set_rps" -v g="$get_rps" \
    'BEGIN { printf "| Redis, redis-benchmark | %d | %.2f | %.2f |\n", c, s * 2097152 / 1e9, g * 2097152 / 1e9 }'
done
