#!/usr/bin/env bash
# Tier engine: catalog lookup of a 2,048-block chain among 1M blocks beside ConcurrentHashMap.get, and
# DRAM tier put+get bandwidth beside MemorySegment.copy, with the checksum costs that explain the gap, and
# put+get with a cold read and with inline eviction from a full tier.
# Usage: [PARTS="lookup dram cold"] bench/engine.sh [JMH options]
#        (default: all three parts; JMH options default to -f 1 -wi 2 -w 1s -i 3 -r 2s and are replaced
#        as a whole by any given)
# Needs about 6 GB of free memory for "lookup" (the engine lookup stores 1,024,000 real 4 KiB blocks),
# about 2 GB for "dram" and "cold".
set -euo pipefail
cd "$(dirname "$0")/.."
JAVA_HOME=${JAVA_HOME:-$(ls -d /usr/lib/jvm/temurin-25* | head -1)}
[[ -f bench/target/benchmarks.jar ]] || ./mvnw -q -B -ntp -DskipTests -pl bench -am package
command -v python3 >/dev/null || { echo "python3 is missing (it formats the tables)" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
# JMH takes each option once: options given on the command line replace the default run lengths.
RUN=(-f 1 -wi 2 -w 1s -i 3 -r 2s)
(($# == 0)) || RUN=("$@")
JMH=("${RUN[@]}" -jvmArgsAppend "--enable-native-access=ALL-UNNAMED")
PARTS=${PARTS:-lookup dram cold}
declare -A CLASS=([lookup]=LookupBenchmark [dram]=DramBandwidthBenchmark [cold]=DramColdReadBenchmark)
for part in $PARTS; do
    [[ -n "${CLASS[$part]:-}" ]] || { echo "unknown part '$part' (lookup, dram, cold)" >&2; exit 1; }
    "$JAVA_HOME/bin/java" -jar bench/target/benchmarks.jar "io.kvstore.bench.engine.${CLASS[$part]}" "${JMH[@]}" \
        -rf json -rff "$OUT/$part.json" > "$OUT/$part.log" || { cat "$OUT/$part.log"; exit 1; }
done
python3 - "$OUT" <<'EOF'
import json, os, sys

out = sys.argv[1]

def err(m):
    """JMH reports the error as "NaN" when a run has a single iteration."""
    e = m["scoreError"]
    return f"{e:8.0f}" if isinstance(e, (int, float)) else f"{'-':>8}"

def runs(part):
    path = os.path.join(out, part + ".json")
    if not os.path.exists(path):
        return None
    return {(r["benchmark"].rsplit(".", 1)[1], r.get("params", {}).get("blockSize")): r["primaryMetric"]
            for r in json.load(open(path))}

lookup = runs("lookup")
if lookup:
    print("\nLookup of a 2,048-block chain among 1,024,000 blocks (us per call; ratio = reference / ours)")
    ref = lookup[("referenceMapGets2048", None)]["scorePercentiles"]
    print(f"{'':24} {'median':>9} {'p99':>9} {'samples':>8} {'ratio p50':>9} {'ratio p99':>9}")
    for name in ("catalogLookup2048", "engineLookup2048", "catalogGetsOnly2048",
                 "catalogGetsAndTouch2048", "referenceMapGets2048"):
        m = lookup[(name, None)]
        p = m["scorePercentiles"]
        n = sum(c for fork in m.get("rawDataHistogram", []) for it in fork for _, c in it)
        print(f"{name:24} {p['50.0']:9.0f} {p['99.0']:9.0f} {n!s:>8} {ref['50.0'] / p['50.0']:9.2f} {ref['99.0'] / p['99.0']:9.2f}")

dram = runs("dram")
if dram:
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
            print(f"{size:>8} {name:24} {m['score']:10.0f} {err(m)} {gbs:6.1f} {ratio:>6}")

cold = runs("cold")
if cold:
    print("\nDRAM put+get, get of a block stored 256 MiB earlier (ops/s; GB/s = bytes copied; ratio = ours / two copies)")
    print(f"{'block':>8} {'benchmark':24} {'ops/s':>10} {'+-':>8} {'GB/s':>6} {'ratio':>6} {'us/op':>7}")
    for size in ("262144", "2097152"):
        ref = cold[("memcpyReference", size)]["score"]
        for name in ("enginePutGet", "enginePutEvictGet", "memcpyAndCrcReference", "memcpyReference"):
            m = cold[(name, size)]
            gbs = m["score"] * int(size) * 2 / 1e9
            print(f"{size:>8} {name:24} {m['score']:10.0f} {err(m)} {gbs:6.1f} "
                  f"{m['score'] / ref:6.2f} {1e6 / m['score']:7.1f}")
EOF
