#!/usr/bin/env bash
# UCX put/get bandwidth of kvstore's binding beside ucx_perftest, same machine, same transports.
# Usage: bench/ucx.sh [UCX_TLS]   (default: UCX's own choice; e.g. "tcp" or "posix,cma,self")
# KVSTORE_UCX_PEER_ERRORS=0 connects without UCX peer-failure handling (lets UCX use shared memory).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -n "${1:-}" ]] && export UCX_TLS="$1"
JAVA_HOME=${JAVA_HOME:-$(ls -d /usr/lib/jvm/temurin-25* | head -1)}
[[ -f bench/target/benchmarks.jar ]] || ./mvnw -q -B -ntp -DskipTests -pl bench -am package
command -v ucx_perftest >/dev/null || { echo "ucx_perftest is missing: apt-get install -y ucx-utils" >&2; exit 1; }
echo "machine: $(nproc) cores; UCX_TLS=${UCX_TLS:-default}; $(ucx_info -v | head -1)"
printf "%-10s %12s %12s %12s %12s %8s %8s\n" message kv_put perftest_put kv_get perftest_get put_ratio get_ratio
perftest() { # test size -> MB/s
  ucx_perftest -t "$1" -s "$2" -n 500 -p 13337 >/dev/null 2>&1 & local server=$!
  sleep 1
  ucx_perftest 127.0.0.1 -t "$1" -s "$2" -n 500 -p 13337 2>/dev/null | awk '/Final:/{print int($(NF-2))}' | tail -1
  wait $server 2>/dev/null || true
}
for size in 262144 1048576 4194304; do
  pp=$(perftest ucp_put_bw $size); pg=$(perftest ucp_get $size)
  read -r kp kg < <("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp bench/target/benchmarks.jar \
      io.kvstore.bench.ucx.UcxBandwidth $size $((2 << 30)) 2>/dev/null)
  printf "%-10s %9s MB/s %9s MB/s %9s MB/s %9s MB/s %8.2f %8.2f\n" $size $kp $pp $kg $pg \
    "$(awk -v a="$kp" -v b="$pp" 'BEGIN{print a/b}')" "$(awk -v a="$kg" -v b="$pg" 'BEGIN{print a/b}')"
done
