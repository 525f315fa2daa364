#!/usr/bin/env bash
# kvstore as a cluster on this machine (docs/benchmarks.md, "Cluster"): 2,048-block lookups through one
# node of a three-node cluster beside a single node (no cluster), and aggregate fetch GB/s of 2 MiB blocks
# with 1, 2 and 3 nodes, all in one run. Needs Debian's etcd (./kvstore deps); builds the jars if absent.
# Lookups are measured after a warm-up (64 clients, the same for the single node and the cluster): a node
# of a cluster and the peers it probes need thousands of lookups before their code is compiled.
# Usage: bench/cluster.sh [lookup-seconds] [fetch-seconds] [fetch-clients] [blocks] [warm-up-seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
LOOKUP_SECS=${1:-5}
FETCH_SECS=${2:-5}
CLIENTS=${3:-6}
BLOCKS=${4:-96}           # 2 MiB each, stored once across the cluster
WARMUP=${5:-60}           # seconds of lookups (64 clients) before each kind of lookup is measured
command -v etcd >/dev/null || { echo "etcd not found (./kvstore deps installs etcd-server)" >&2; exit 1; }
source bench/jars.sh

WORK=$(mktemp -d)
# etcd fsyncs every write; on a disk shared with other I/O that can take seconds, so its data lives in memory
ETCD_DATA=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
BASE_PORT=$((20000 + RANDOM % 20000))
ETCD_PORT=$BASE_PORT
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK" "$ETCD_DATA"; }
trap cleanup EXIT

etcd --data-dir "$ETCD_DATA/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
  --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
  --initial-cluster "default=http://127.0.0.1:$((ETCD_PORT + 1))" --log-level warn >"$WORK/etcd.log" 2>&1 &
PIDS+=($!)

NODE_PIDS=()
# start_node <port> <name or empty for a single node without cluster mode> <key prefix>
start_node() {
  local port=$1 name=$2 prefix=$3 cluster=()
  if [[ -n $name ]]; then
    cluster=(--kvstore.cluster.enabled=true "--kvstore.cluster.endpoints=http://127.0.0.1:$ETCD_PORT"
      "--kvstore.cluster.node-name=$name" "--kvstore.cluster.advertised-address=http://127.0.0.1:$port"
      "--kvstore.cluster.key-prefix=$prefix")
  fi
  local jfr=()
  # KVSTORE_BENCH_JFR=<dir>: each node records a JFR profile there (node-<port>.jfr), for `jfr print`
  [[ -n ${KVSTORE_BENCH_JFR:-} ]] && jfr=("-XX:StartFlightRecording=filename=$KVSTORE_BENCH_JFR/node-$port.jfr,settings=profile")
  "$JAVA" --enable-native-access=ALL-UNNAMED -Xmx1g "${jfr[@]}" -jar "$SERVICE" --server.port="$port" \
    --kvstore.data-dir="$WORK/data-$port" --kvstore.tiers.dram.capacity=$(( BLOCKS * 2 + 128 ))MB \
    --kvstore.tiers.nvme.enabled=false --kvstore.max-request-size=256MB --logging.level.root=WARN \
    "${cluster[@]}" >"$WORK/node-$port.log" 2>&1 &
  PIDS+=($!); NODE_PIDS+=($!)
}
wait_up() {
  for port in "$@"; do
    for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$port/actuator/health" >/dev/null && break; sleep 0.5; done
    curl -sf "http://127.0.0.1:$port/actuator/health" >/dev/null || { cat "$WORK/node-$port.log"; exit 1; }
  done
  sleep 2 # the member set reaches every node through the watch
}
stop_nodes() { for p in "${NODE_PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; NODE_PIDS=(); }
run() { "$JAVA" --enable-native-access=ALL-UNNAMED -Xmx3g -cp "$JAR" "$@" 2>&1 | grep -v -E '^\s*$|INFO'; }

echo "# machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%d GiB", $2/1048576}' /proc/meminfo), $(uname -r); loopback; $(etcd --version | head -1)"
echo "## single node, no cluster"
P=$((BASE_PORT + 10)); start_node $P "" ""; wait_up $P
run io.kvstore.bench.transport.HttpLoad lookup "http://127.0.0.1:$P" "$LOOKUP_SECS" "$WARMUP"
stop_nodes

for n in 1 2 3; do
  echo "## cluster of $n"
  urls=(); ports=()
  for i in $(seq 1 $n); do p=$((BASE_PORT + 10 * (n + 1) + i)); ports+=($p); urls+=("http://127.0.0.1:$p"); start_node $p "node-$i" "/bench-$n/"; done
  wait_up "${ports[@]}"
  if (( n == 3 )); then run io.kvstore.bench.transport.HttpLoad lookup "${urls[0]}" "$LOOKUP_SECS" "$WARMUP" "${urls[@]:1}"; fi
  if (( n == 3 )) && [[ -n ${KVSTORE_BENCH_AB_JAR:-} ]]; then
    # KVSTORE_BENCH_AB_JAR=<service jar>: the same lookups through a cluster of that build (A/B in one run)
    stop_nodes; ours=$SERVICE; SERVICE=$KVSTORE_BENCH_AB_JAR
    echo "## cluster of 3, $(basename "$SERVICE")"
    for i in 1 2 3; do start_node "${ports[i-1]}" "node-$i" "/bench-ab/"; done
    wait_up "${ports[@]}"
    run io.kvstore.bench.transport.HttpLoad lookup "${urls[0]}" "$LOOKUP_SECS" "$WARMUP" "${urls[@]:1}"
    stop_nodes; SERVICE=$ours
    for i in 1 2 3; do start_node "${ports[i-1]}" "node-$i" "/bench-$n-again/"; done
    wait_up "${ports[@]}"
  fi
  run io.kvstore.bench.transport.ClusterLoad "$FETCH_SECS" "$CLIENTS" "$BLOCKS" 8 "${urls[@]}"
  stop_nodes
done
