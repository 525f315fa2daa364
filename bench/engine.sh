#!/usr/bin/env bash
# Tier engine: catalog lookup of a 2,048-block chain among 1M blocks beside ConcurrentHashMap.get, and
# DRAM tier put+get bandwidth beside MemorySegment.copy, with the checksum costs that explain the gap.
# Usage: bench/engine.sh [extra JMH options]   (default: 1 fork, 2 x 1 s warm-up, 3 x 2 s measurement)
# Needs about 6 GB of free memory (the engine lookup stores 1,024,000 real 4 KiB blocks).
set -euo pipefail
cd "$(dirname "$0")/.."
JAVA_HOME=${JAVA_HOME:-$(ls -d /usr/lib/jvm/temurin-25* | head -1)}
[[ -f bench/target/benchmarks.jar ]] || ./mvnw -q -B -ntp -DskipTests -pl bench -am package
command -v python3 >/dev/null || { echo "python3 is missing (it formats the tables)" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
JMH=(-f 1 -wi 2 -w 1s -i 3 -r 2s -jvmArgsAppend "--enable-native-access=ALL-UNNAMED" "$@")
"$JAVA_HOME/bin/java" -jar bench/target/benchmarks.jar 'io.kvstore.bench.engine.LookupBenchmark' "${JMH[@]}" \
    -rf json -rff "$OUT/lookup.json" > "$OUT/lookup.log" || { cat "$OUT/lookup.log"; exit 1; }
"$JAVA_HOME/bin/java" -jar bench/target/benchmarks.jar 'io.kvstore.bench.engine.DramBandwidthBenchmark' "${JMH[@]}" \
    -rf json -rff "$OUT/dram.json" > "$OUT/dram.log" || { cat "$OUT/dram.log"; exit 1; }
python3 - "$OUT/lookup.json" "$OUT/dram.json" <<'EOF'
import json, sys

def runs(path):
    return {(r["benchmark"].rsplit(".", 1)[1], r.get("params", {}).get("blockSize")): r["primaryMetric"]
            for r in json.load(open(path))}

lookup = runs(sys.argv[1])
print("\nLookup of a 2,048-block chain among 1,024,000 blocks (us per call; ratio = reference / ours)")
ref = lookup[("referenceMapGets2048", None)]["scorePercentiles"]
print(f"{'':24} {'median':>9} {'p99':>9} {'samples':>8} {'ratio p50':>9} {'ratio p99':>9}")
for name in ("catalogLookup2048", "engineLookup2048", "catalogGetsOnly2048",
             "catalogGetsAndTouch2048", "referenceMapGets2048"):
    m = lookup[(name, None)]
    p = m["scorePercentiles"]
    n = sum(c for fork in m.get("rawDataHistogram", []) for it in fork for _, c in it)
    print(f"{name:24} {p['50.0']:9.0f} {p['99.0']:9.0f} {n!s:>8} {ref['50.0'] / p['50.0']:9.2f} {ref['99.0'] / p['99.0']:9.2f}")

dram = runs(sys.argv[2])
print("\nDRAM put+get (ops/s; GB/s counts the bytes of one block pass; ratio = ours / two copies)")
print(f"{'block':>8} {'benchmark':24} {'ops/s':>10} {'+-':>8} {'GB/s':>6} {'ratio':>6}")
for size in ("262144", "2097152"):
    ref = dram[("referenceTwoCopies", size)]["score"]
    for name, passes in (("tierPutAndGet", 2), ("referenceTwoCopies", 2), ("twoCopiesTwoCrc32c", 2),
                         ("twoCopiesOneCrc32c", 2), ("fusedTwoCopiesTwoCrc32c", 2), ("twoCopiesTwoCrc32", 2),
                         ("twoCopiesOneCrc32", 2), ("crc32cOnly", 1), ("crc32Only", 1), ("xxh3Only", 1)):
        m = dram[(name, size)]
        gbs = m["score"] * int(size) * passes / 1e9
        ratio = f"{m['score'] / ref:6.2f}" if passes == 2 else ""
        print(f"{size:>8} {name:24} {m['score']:10.0f} {m['scoreError']:8.0f} {gbs:6.1f} {ratio:>6}")
EOF
