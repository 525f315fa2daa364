#!/usr/bin/env bash
# Block hashing throughput: every scheme beside raw SHA-256, XXH3-64 and XXH3-128 over the same token
# bytes (JMH, wall clock), then the vLLM schemes per second of CPU time (HashingCpuTime, one JVM per
# scheme), then CPython doing vLLM's own algorithm, wall clock and CPU time (needs python3-cbor2 and
# python3-xxhash). Figures go to docs/benchmarks.md, section "Hashing".
#
# The CPU-time runs (Java and CPython) are pinned to one CPU, KVSTORE_BENCH_CPU (default 0), when taskset
# exists: on a VM two vCPUs can differ by 20 % for the same native code (their host siblings' load), and
# a ratio is only fair when both sides ran on the same one. Each scheme gets its own JVM so that its
# figure does not depend on the JIT profile another scheme left in the code they share.
# Usage: bench/hashing.sh [--no-jmh] [JMH args...]
set -euo pipefail
cd "$(dirname "$0")/.."
./mvnw -q -B -ntp -pl bench -am package -DskipTests
if [[ "${1:-}" == "--no-jmh" ]]; then
    shift
else
    java -jar bench/target/benchmarks.jar 'io.kvstore.bench.hashing' -f 1 -wi 2 -i 3 -w 2s -r 4s "$@"
fi
pin=()
if command -v taskset >/dev/null; then
    pin=(taskset -c "${KVSTORE_BENCH_CPU:-0}")
    echo "CPU-time runs pinned to CPU ${KVSTORE_BENCH_CPU:-0}"
fi
for scheme in vllm:sha256 vllm:sha256_cbor vllm:xxhash vllm:xxhash_cbor floor; do
    "${pin[@]}" java --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
        -cp bench/target/benchmarks.jar io.kvstore.bench.hashing.HashingCpuTime "$scheme" |
        if [[ "$scheme" == vllm:sha256 ]]; then cat; else grep -v '^SHA-256: '; fi
done
"${pin[@]}" /usr/bin/python3 docs/hashing/bench_cpython.py
