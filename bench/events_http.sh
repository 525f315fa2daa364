#!/usr/bin/env bash
# 4 KiB blocks stored over the service's HTTP API with KV events off and on (issue 15: aim at most 5 % slower):
# two services of the same build, one publishing events to a Python subscriber (pyzmq), alternating rounds in
# one run; stores/s and the service's CPU time per store (docs/events.md).
# Usage: bench/events_http.sh [rounds] [seconds] [clients] [batch]   (builds the jars if absent)
set -euo pipefail
# KVSTORE_JVM_OPTIONS is a path as the caller typed it: relative to the directory the script was run from
if [[ -n "${KVSTORE_JVM_OPTIONS:-}" && "$KVSTORE_JVM_OPTIONS" != /* ]]; then
  KVSTORE_JVM_OPTIONS="$PWD/$KVSTORE_JVM_OPTIONS"
fi
cd "$(dirname "$0")/.."
source bench/jars.sh

WORK=$(mktemp -d)
PORT=$((20000 + RANDOM % 20000))
EPORT=$((PORT + 2))
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
start() { # name port extra-args...
  local name=$1 port=$2; shift 2
  "$JAVA" --enable-native-access=ALL-UNNAMED "@${KVSTORE_JVM_OPTIONS:-configs/jvm.options}" -Xmx1g -jar "$SERVICE" --server.port="$port" --kvstore.data-dir="$WORK/$name" \
    --kvstore.tiers.dram.capacity=2GB --kvstore.tiers.nvme.enabled=false --logging.level.root=WARN "$@" \
    >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
}
start off "$PORT"
OFF=${PIDS[-1]}
start on $((PORT + 1)) --kvstore.events.enabled=true --kvstore.events.endpoint="tcp://*:$EPORT" --kvstore.events.replay-endpoint=
ON=${PIDS[-1]}
for p in $PORT $((PORT + 1)); do
  for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$p/actuator/health" >/dev/null && break; sleep 0.5; done
  curl -sf "http://127.0.0.1:$p/actuator/health" >/dev/null || { cat "$WORK"/*.log; exit 1; }
done
/usr/bin/python3 -c '
import sys, zmq
s = zmq.Context().socket(zmq.SUB)
s.setsockopt(zmq.SUBSCRIBE, b"")
s.connect(sys.argv[1])
while True:
    s.recv_multipart()
' "tcp://127.0.0.1:$EPORT" &
PIDS+=($!)
echo "# machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%d GiB", $2/1048576}' /proc/meminfo), $(uname -r); loopback"
"$JAVA" -cp "$JAR" io.kvstore.bench.transport.EventsHttpLoad "http://127.0.0.1:$PORT" "$OFF" \
  "http://127.0.0.1:$((PORT + 1))" "$ON" "${1:-9}" "${2:-3}" "${3:-4}" "${4:-16}" 2>&1 | grep -v -E 'INFO|WARNING'
curl -s "http://127.0.0.1:$((PORT + 1))/actuator/prometheus" | grep -E '^kvstore_events_(published|batches|dropped)_total' || true
