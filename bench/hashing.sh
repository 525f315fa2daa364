#!/usr/bin/env bash
# Block hashing throughput: both schemes beside raw SHA-256 and raw XXH3 over the same token bytes.
# Figures go to docs/benchmarks.md, section "Hashing".
set -euo pipefail
cd "$(dirname "$0")/.."
./mvnw -q -B -ntp -pl bench -am package -DskipTests
java -jar bench/target/benchmarks.jar 'io.kvstore.bench.hashing' -f 1 -wi 2 -i 3 -w 2s -r 4s "$@"
