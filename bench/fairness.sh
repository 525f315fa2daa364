#!/usr/bin/env bash
# Tenant fairness: one tenant floods kvstore with lookups of a long prompt from many connections while another
# tenant asks a small lookup every 5 ms; the small lookups' latency alone (the reference, same run) and under
# the flood. Flood and victim are separate processes; the service runs with configs/jvm.options, as
# ./kvstore run starts it; KVSTORE_FAIR_LOOKUPS=false runs it without lookup turns (kvstore.limits.fair-lookups).
# Figures and what they mean: docs/benchmarks.md, "Tenant fairness".
# Usage: bench/fairness.sh [flood-clients] [flood-tokens] [seconds]   (builds the jars if absent)
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS=${1:-512}
TOKENS=${2:-4096}
SECS=${3:-15}
source bench/jars.sh

WORK=$(mktemp -d)
PORT=$((20000 + RANDOM % 20000))
URL="http://127.0.0.1:$PORT"
A=tenant-a-token-0123456789
B=tenant-b-token-0123456789
cleanup() { kill "${SVC:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
# KVSTORE_BENCH_PIN=1 keeps the clients' threads off the service's CPUs (taskset): the clients get CPU 0 and the
# service the rest. Off by default: on 2 CPUs it leaves the service one carrier thread, where lookups cannot take
# turns (kvstore.limits.fair-lookups needs a carrier to spare)
LAST=$(( $(nproc) - 1 ))
SVC_CPUS=() CLIENT_CPUS=()
if [[ ${KVSTORE_BENCH_PIN:-0} == 1 && $LAST -ge 1 ]] && command -v taskset >/dev/null; then
  SVC_CPUS=(taskset -c 1-$LAST) CLIENT_CPUS=(taskset -c 0)
fi
load() { "${CLIENT_CPUS[@]}" "$JAVA" -cp "$JAR" io.kvstore.bench.transport.TenantFairnessLoad "$@"; }

echo "# machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%d GiB", $2/1048576}' /proc/meminfo), $(uname -r); loopback"
echo "# service on CPU(s) ${SVC_CPUS[*]:-all}, clients on ${CLIENT_CPUS[*]:-all}"
echo "# flood: $CLIENTS connections of tenant a, ${TOKENS}-token lookups; victim: tenant b, 64-token lookups; ${SECS} s each"
rm -rf "$WORK/data"
"${SVC_CPUS[@]}" "$JAVA" --enable-native-access=ALL-UNNAMED @configs/jvm.options -jar "$SERVICE" --server.port=$PORT \
  --kvstore.data-dir="$WORK/data" --kvstore.tiers.nvme.enabled=false \
  --kvstore.tokens[0].tenant=a --kvstore.tokens[0].token=$A --kvstore.tokens[0].write=a \
  --kvstore.tokens[1].tenant=b --kvstore.tokens[1].token=$B --kvstore.tokens[1].write=b \
  --kvstore.limits.fair-lookups=${KVSTORE_FAIR_LOOKUPS:-true} --logging.level.root=WARN >"$WORK/service.log" 2>&1 &
SVC=$!
for _ in $(seq 1 120); do curl -sf "$URL/actuator/health" >/dev/null && break; sleep 0.5; done
for t in a b; do
  tok=$A; [[ $t == b ]] && tok=$B
  curl -sf -o /dev/null -X PUT -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' "$URL/v1/namespaces/$t" \
    -d '{"model":"m","layout":{"layers":1,"kvHeads":1,"headDim":64,"blockSize":16,"dtype":"bf16"},"hashScheme":"sha256_cbor","hashSeed":"0"}'
done
# JIT warm-up of the lookup path: a short flood first
load flood "$URL" $A a 64 "$TOKENS" 10 >/dev/null
load victim "$URL" $B b "$SECS" "victim alone"
load flood "$URL" $A a "$CLIENTS" "$TOKENS" $((SECS + 6)) & FLOOD=$!
sleep 2
load victim "$URL" $B b "$SECS" "victim under the flood"
wait $FLOOD
