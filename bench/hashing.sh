#!/usr/bin/env bash
# Block hashing throughput: every scheme beside raw SHA-256, XXH3-64 and XXH3-128 over the same token
# bytes (JMH, wall clock), then the vLLM schemes per second of CPU time (HashingCpuTime), then CPython
# doing vLLM's own algorithm, wall clock and CPU time (needs python3-cbor2 and python3-xxhash).
# Figures go to docs/benchmarks.md, section "Hashing".
set -euo pipefail
cd "$(dirname "$0")/.."
./mvnw -q -B -ntp -pl bench -am package -DskipTests
java -jar bench/target/benchmarks.jar 'io.kvstore.bench.hashing' -f 1 -wi 2 -i 3 -w 2s -r 4s "$@"
java --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -cp bench/target/benchmarks.jar io.kvstore.bench.hashing.HashingCpuTime
python3 docs/hashing/bench_cpython.py
