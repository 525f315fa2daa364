#!/usr/bin/env bash
# UCX bandwidth of kvstore's UcxTransferEngine against ucx_perftest on the same machine and transport.
# Usage: bench/ucx.sh [seconds-per-point]   (needs ucx-utils; builds bench/target/benchmarks.jar if absent)
# Prints a markdown table: transport, op, message size, perftest MiB/s, engine MiB/s, ratio, engine path; for sm
# also a memcpy over the engine's rotating 256 MiB working set (the memory-bound ceiling of shared-memory RMA;
# ucx_perftest reuses one cache-resident buffer up to 1 MiB) and the engine's ratio to it, and the engine
# reusing one buffer as perftest does (-Dkvstore.bench.reuse=true), the like-for-like ratio to perftest.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-2}
SIZES=(262144 1048576 4194304)
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
JAR=bench/target/benchmarks.jar
command -v ucx_perftest >/dev/null || { echo "ucx_perftest not found (apt-get install ucx-utils)" >&2; exit 1; }
[[ -f $JAR ]] || ./mvnw -q -B -ntp -pl bench -am package -DskipTests

PORT=$((20000 + RANDOM % 20000))
perftest() { # tls test size -> MiB/s (overall bandwidth column of the "Final:" line)
  local tls=$1 test=$2 size=$3 iters
  iters=$(( (4 << 30) / size )); (( iters > 20000 )) && iters=20000
  UCX_TLS=$tls ucx_perftest -p $PORT >/dev/null 2>&1 &
  local srv=$!
  sleep 0.5
  local out
  out=$(UCX_TLS=$tls timeout 120 ucx_perftest 127.0.0.1 -p $PORT -t "$test" -s "$size" -n "$iters" -w 50 2>&1 || true)
  wait $srv 2>/dev/null || true
  PORT=$((PORT + 1))
  awk '/Final:/ {print int($7)}' <<<"$out"
}

engine() { # tls path [reuse] -> lines "op size MiB/s path"
  "$JAVA" --enable-native-access=ALL-UNNAMED -Dkvstore.bench.reuse="${3:-false}" -cp "$JAR" \
    io.kvstore.bench.ucx.UcxBandwidth "$1" "$2" "$SECS" "${SIZES[@]}"
}

declare -A MEMCPY=()
while read -r size mibs; do MEMCPY[$size]=$mibs; done < <("$JAVA" -cp "$JAR" io.kvstore.bench.ucx.MemcpyBandwidth "$SECS" "${SIZES[@]}")
echo "| transport | op | size | ucx_perftest MiB/s | engine MiB/s | ratio | engine path | memcpy MiB/s (same working set) | engine / memcpy | engine MiB/s, one reused buffer | reused / perftest |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for tls in sm tcp; do
  declare -A ENG=() PATHS=() HOT=()
  while read -r op size mibs path; do ENG[$op.$size]=$mibs; PATHS[$op.$size]=$path; done < <(engine $tls AUTO)
  if [[ $tls == sm ]]; then
    while read -r op size mibs path; do HOT[$op.$size]=$mibs; done < <(engine $tls AUTO true)
  fi
  for size in "${SIZES[@]}"; do
    for op in put get; do
      test=ucp_put_bw; [[ $op == get ]] && test=ucp_get   # 1.13 has no ucp_get_bw; ucp_get reports bandwidth too
      ref=$(perftest $tls $test "$size")
      e=${ENG[$op.$size]:-0}
      ratio=$(awk -v e="$e" -v r="$ref" 'BEGIN { if (r > 0) printf "%.2f", e / r; else print "n/a" }')
      if [[ $tls == sm ]]; then
        m=${MEMCPY[$size]} h=${HOT[$op.$size]:-0}
        echo "| $tls | $op | $size | $ref | $e | $ratio | ${PATHS[$op.$size]:-?} | $m | $(awk -v e="$e" -v m="$m" 'BEGIN { printf "%.2f", e / m }') | $h | $(awk -v h="$h" -v r="$ref" 'BEGIN { if (r > 0) printf "%.2f", h / r; else print "n/a" }') |"
      else
        echo "| $tls | $op | $size | $ref | $e | $ratio | ${PATHS[$op.$size]:-?} | | | | |"
      fi
    done
  done
  if [[ $tls == tcp ]]; then
    for size in "${SIZES[@]}"; do
      echo "| tcp | am_bw (reference for the AM path) | $size | $(perftest tcp ucp_am_bw "$size") | | | | | | | |"
    done
  fi
  unset ENG PATHS HOT
done
