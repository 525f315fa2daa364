#!/usr/bin/env bash
# Stores/s of 4 KiB blocks into a DRAM tier with KV events off and on (publisher on loopback, a subscriber
# reading every batch), alternating rounds in one run (issue 15: aim at most 5 % slower).
# Usage: bench/events.sh [blocks-per-round] [rounds] [threads] [pinned]
# pinned: the storing threads on CPUs of their own, the publisher, the rest of the JVM and the subscriber on
# the CPUs left (needs more CPUs than threads), as on a server with cores to spare
set -euo pipefail
# KVSTORE_JVM_OPTIONS is a path as the caller typed it: relative to the directory the script was run from
if [[ -n "${KVSTORE_JVM_OPTIONS:-}" && "$KVSTORE_JVM_OPTIONS" != /* ]]; then
  KVSTORE_JVM_OPTIONS="$PWD/$KVSTORE_JVM_OPTIONS"
fi
cd "$(dirname "$0")/.."
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
# one invocation, so the reactor's tier-engine and native-ffm resolve to their target/classes
./mvnw -q -B -ntp -pl kv-store-service -am -Djacoco.skip=true test-compile dependency:build-classpath \
  -Dmdep.outputFile="$PWD/kv-store-service/target/bench-cp.txt" -Dmdep.includeScope=test
CP=kv-store-service/target/test-classes:kv-store-service/target/classes:$(cat kv-store-service/target/bench-cp.txt)
echo "# machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%d GiB", $2/1048576}' /proc/meminfo), $(uname -r)"
# the service's JVM options (configs/jvm.options, as ./kvstore run), unless KVSTORE_JVM_OPTIONS names another file;
# then a heap of KVSTORE_BENCH_HEAP (default 2g; empty: the JVM's own sizing) with every page touched at start, as
# in a service that has run a while: on a VM whose host backs guest memory lazily, rounds that allocate into
# never-touched heap pages ran 2-3x slower until the collector's first cycles, whichever kind of round they were
HEAP=${KVSTORE_BENCH_HEAP-2g}
"$JAVA" --enable-native-access=ALL-UNNAMED "@${KVSTORE_JVM_OPTIONS:-configs/jvm.options}" \
  ${HEAP:+-Xms$HEAP -Xmx$HEAP -XX:+AlwaysPreTouch} -cp "$CP" io.kvstore.service.events.EventsStoreRate "${1:-131072}" "${2:-9}" "${3:-1}" "${4:-shared}" \
  2>&1 | grep -v -E 'INFO|WARNING|^SLF4J'
