#!/usr/bin/env bash
# NVMe tier sequential write/read bandwidth beside fio (same directory, block size, queue depth).
# Usage: bench/nvme.sh [DIR] [TOTAL_MiB]   (default: ./data, 512 MiB per run)
# DIR is a directory on the device to measure; the runs work in a fresh subdirectory of it, removed at the end,
# and leave everything else in DIR alone.
set -euo pipefail
# DIR as the caller typed it (relative to where the script was run from); the default is the repo's ./data
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${1:-$ROOT/data}
mkdir -p "$BASE"
DIR=$(mktemp -d "$(cd "$BASE" && pwd)/bench-nvme.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
cd "$ROOT"
TOTAL_MIB=${2:-512}
JAVA_HOME=${JAVA_HOME:-$(ls -d /usr/lib/jvm/temurin-25* | head -1)}
[[ -f bench/target/benchmarks.jar ]] || ./mvnw -q -B -ntp -DskipTests -pl bench -am package
command -v fio >/dev/null || { echo "fio is missing: apt-get install -y fio" >&2; exit 1; }
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(findmnt -no FSTYPE,SOURCE -T "$(dirname "$DIR")")"
# fio_write: plain O_DIRECT writes; fio_sync: the same with an fdatasync every DEPTH writes, the durability
# the tier gives each batch (it also syncs its RocksDB WAL once per batch). Ratios are against fio_sync
# for writes and fio for reads.
printf "%-8s %-6s %14s %14s %14s %14s %14s %8s %8s\n" block depth kv_write fio_write fio_sync kv_read fio_read w_ratio r_ratio
for bs in 262144 2097152; do
  for depth in 1 4 16; do
    rm -rf "$DIR"; mkdir -p "$DIR"
    fio_dir="$DIR/fio"; mkdir -p "$fio_dir"
    fw=$(fio --name=w --directory="$fio_dir" --rw=write --bs=$bs --iodepth=$depth --direct=1 --ioengine=libaio \
          --size=${TOTAL_MIB}M --output-format=json | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["jobs"][0]["write"]["bw_bytes"]/1e6))')
    fs=$(fio --name=w --directory="$fio_dir" --rw=write --bs=$bs --iodepth=$depth --direct=1 --ioengine=libaio \
          --fdatasync=$depth --size=${TOTAL_MIB}M --output-format=json | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["jobs"][0]["write"]["bw_bytes"]/1e6))')
    fr=$(fio --name=w --directory="$fio_dir" --rw=read --bs=$bs --iodepth=$depth --direct=1 --ioengine=libaio \
          --size=${TOTAL_MIB}M --output-format=json | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["jobs"][0]["read"]["bw_bytes"]/1e6))')
    rm -rf "$fio_dir"
    read -r kw kr < <("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp bench/target/benchmarks.jar \
          io.kvstore.bench.nvme.NvmeLoad "$DIR/tier" $bs $depth $((TOTAL_MIB << 20)) 2>/dev/null)
    printf "%-8s %-6s %9s MB/s %9s MB/s %9s MB/s %9s MB/s %9s MB/s %8.2f %8.2f\n" $bs $depth $kw $fw $fs $kr $fr \
      "$(awk -v a="$kw" -v b="$fs" 'BEGIN{print a/b}')" "$(awk -v a="$kr" -v b="$fr" 'BEGIN{print a/b}')"
  done
done
rm -rf "$DIR"
