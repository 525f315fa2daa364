#!/usr/bin/env bash
# The CUDA and cuFile tests, and the GDS benchmark, on a GPU machine that has no Java or Maven (such as the
# GPU machine this project is sometimes lent): `bench/gpu.sh bundle` builds here, into .gpu/bundle.tar.xz,
# a jlink'd runtime and the test and bench classes with their dependencies (RocksDB's jar cut to its
# linux64 library); `bench/gpu.sh run OUTDIR` runs on the GPU machine, from the repository root with
# .gpu beside it: the GPU tests of native-ffm and tier-engine (JUnit's launcher, one line a test, SKIP
# lines with the reason), then GdsLoad (cuFile against the route through pinned host memory, beside
# O_DIRECT I/O and cudaMemcpy alone), and gdsio when the machine has it. `bundle-service` and `service OUTDIR`
# do the same for the service itself with the GPU configs (below). On a GPU machine with a JDK, run the same
# tests with ./mvnw test instead: they run wherever libcudart, libcufile and a device are found.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

bundle() {
    local jdk=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
    export JAVA_HOME=$jdk PATH=$jdk/bin:$PATH
    ./mvnw -q -B -ntp -o -pl tier-engine,bench -am test-compile dependency:build-classpath \
        -Djacoco.skip=true -Dmdep.outputFile=target/gpu-classpath.txt -Dmdep.includeScope=test
    local work=$ROOT/.gpu/work
    rm -rf "$work" && mkdir -p "$work/lib"
    "$jdk/bin/jlink" --add-modules java.base,java.logging,java.management,jdk.unsupported \
        --strip-debug --no-header-files --no-man-pages --output "$work/jre"
    for module in native-ffm tier-engine; do
        "$jdk/bin/jar" cf "$work/lib/$module.jar" -C "$module/target/classes" .
        "$jdk/bin/jar" cf "$work/lib/$module-tests.jar" -C "$module/target/test-classes" .
    done
    "$jdk/bin/jar" cf "$work/lib/bench.jar" -C bench/target/classes .
    local launcher version
    launcher=$(cat native-ffm/target/gpu-classpath.txt tier-engine/target/gpu-classpath.txt \
        bench/target/gpu-classpath.txt | tr ':' '\n' \
        | grep -v -e '/target/' -e slf4j-nop -e /jmh- -e commons-math3 -e jopt-simple | sort -u | tr '\n' ':')
    # JUnit's launcher (Surefire brings its own, so no module depends on it), at the engine's version
    version=$(echo "$launcher" | grep -o 'junit-platform-engine-[0-9.]*[0-9]' | head -1)
    version=${version#junit-platform-engine-}
    local platform=$HOME/.m2/repository/org/junit/platform
    launcher=$launcher$platform/junit-platform-launcher/$version/junit-platform-launcher-$version.jar
    mkdir -p "$work/launcher"
    "$jdk/bin/javac" -d "$work/launcher" -cp "$launcher" bench/gpu/RunTests.java
    for jar in $(echo "$launcher" | tr ':' '\n' | sort -u); do
        case $jar in
        */rocksdbjni-*.jar)
            local cut=$work/rocks && rm -rf "$cut" && mkdir -p "$cut"
            (cd "$cut" && unzip -q "$jar" -x '*.so' '*.jnilib' '*.dll' && unzip -q "$jar" librocksdbjni-linux64.so)
            "$jdk/bin/jar" cf "$work/lib/$(basename "$jar")" -C "$cut" . && rm -rf "$cut" ;;
        *) cp "$jar" "$work/lib/" ;;
        esac
    done
    tar -C "$work" -cJf "$ROOT/.gpu/bundle.tar.xz" jre lib launcher
    rm -rf "$work"
    ls -la "$ROOT/.gpu/bundle.tar.xz"
}

# libcudart and libcufile on LD_LIBRARY_PATH: the CUDA toolkit's, else the ones Python's NVIDIA wheels carry
find_cuda_libraries() {
    local dirs="" lib found
    for lib in libcudart.so libcufile.so; do
        found=$(ls /usr/local/cuda/lib64/$lib* 2>/dev/null | head -1 || true)
        [ -n "$found" ] || found=$(find / -xdev -name "$lib*" -not -path '/proc/*' 2>/dev/null | head -1 || true)
        [ -n "$found" ] && dirs=$dirs:$(dirname "$found")
        echo "$lib: ${found:-not found}"
    done
    export LD_LIBRARY_PATH=${dirs#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

# cuFile reads the block device's filesystem properties from udev's database: in a VM with no udev (the lent GPU
# machine) they are missing, and every cuFileHandleRegister fails with CU_FILE_HANDLE_NOT_REGISTERED (cufile.log:
# "udev property not found: ID_FS_USAGE"). As root, write them in for the device under $1 when udev has none.
describe_device_for_cufile() {
    local dir=$1 dev major minor
    df -T "$dir" | tail -1
    dev=$(stat -c '%D' "$dir")
    major=$((0x$dev >> 8)) minor=$((0x$dev & 0xff))
    if [ ! -e "/run/udev/data/b$major:$minor" ] && [ "$(id -u)" = 0 ]; then
        mkdir -p /run/udev/data
        printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=%s\n' "$(df --output=fstype "$dir" | tail -1)" \
            >"/run/udev/data/b$major:$minor"
        echo "udev: no entry for block device $major:$minor; wrote /run/udev/data/b$major:$minor for cuFile"
    fi
}

run() {
    local out=${1:?OUTDIR}
    mkdir -p "$out"
    local here=/tmp/kvstore-gpu
    rm -rf "$here" && mkdir -p "$here" && tar -C "$here" -xJf "$ROOT/.gpu/bundle.tar.xz"
    find_cuda_libraries
    export KVSTORE_GDS_DIR=${KVSTORE_GDS_DIR:-/var/tmp/kvstore-gds}
    mkdir -p "$KVSTORE_GDS_DIR"
    describe_device_for_cufile "$KVSTORE_GDS_DIR"
    # compatibility mode where the nvidia-fs driver is absent (cuFile then moves bytes through its own bounce buffers)
    cat >"$here/cufile.json" <<JSON
{ "logging": { "dir": "$out", "level": "INFO" },
  "properties": { "allow_compat_mode": true, "use_compat_mode": false } }
JSON
    export CUFILE_ENV_PATH_JSON=$here/cufile.json
    local java=("$here/jre/bin/java" --enable-native-access=ALL-UNNAMED -Xmx2g -Djava.io.tmpdir="$KVSTORE_GDS_DIR"
        -cp "$here/launcher:$(ls "$here"/lib/*.jar | tr '\n' ':')")
    local status=0
    (cd "$here" && "${java[@]}" RunTests \
        io.kvstore.ffm.cuda.CudaRuntimeTest io.kvstore.ffm.cufile.CuFileTest \
        io.kvstore.tier.device.CudaDeviceCopierTest io.kvstore.tier.device.DeviceTierTest \
        io.kvstore.transfer.local.GdsCopierTest io.kvstore.transfer.local.CuFileDeviceFileCopierTest \
        io.kvstore.engine.DeviceStoragePathTest io.kvstore.engine.DeviceStorageCopierFailureTest) 2>&1 \
        | tee "$out/tests.txt" || status=1
    (cd "$here" && "${java[@]}" io.kvstore.bench.gpu.GdsLoad "$KVSTORE_GDS_DIR" 2 "${GDS_LOAD_MIB:-1024}" \
        "${GDS_LOAD_ROUNDS:-3}") 2>&1 | tee "$out/gds-load.txt" || status=1
    local gdsio
    gdsio=$(ls /usr/local/cuda/gds/tools/gdsio 2>/dev/null || command -v gdsio || true)
    if [ -n "$gdsio" ]; then
        for x in 0 2; do # 0: GPU direct (cuFile), 2: through the CPU (host bounce)
            for rw in 0 1; do # 0 read, 1 write
                "$gdsio" -D "$KVSTORE_GDS_DIR" -d 0 -w 1 -s 1G -i 2M -x $x -I $rw -T 10 2>&1 \
                    | tee -a "$out/gdsio.txt" || true
            done
        done
    else
        echo "gdsio: not on this machine" | tee "$out/gdsio.txt"
    fi
    return $status
}

# The service itself, for a machine with no Java: its jar's classes and libraries (rewritten uncompressed, RocksDB
# cut to linux64) and a jlink'd runtime of the Java SE modules, in .gpu/service.tar.xz (about 48 MB; carry it
# without bundle.tar.xz beside it, the two pass the 64 MiB a call may carry).
bundle_service() {
    local jdk=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
    export JAVA_HOME=$jdk PATH=$jdk/bin:$PATH
    ./mvnw -q -B -ntp -o -DskipTests -Djacoco.skip=true -pl kv-store-service -am package
    local work=$ROOT/.gpu/service-work
    rm -rf "$work" && mkdir -p "$work/app" "$work/boot"
    (cd "$work/boot" && unzip -q "$ROOT"/kv-store-service/target/kv-store-service-*-SNAPSHOT.jar 'BOOT-INF/*')
    mv "$work/boot/BOOT-INF/classes" "$work/app/classes"
    python3 bench/gpu/stored_jars.py "$work/boot/BOOT-INF/lib" "$work/app/lib"
    rm -rf "$work/boot"
    "$jdk/bin/jlink" --add-modules java.se,jdk.unsupported,jdk.management,jdk.zipfs,jdk.net,jdk.naming.dns,jdk.crypto.ec \
        --strip-debug --no-header-files --no-man-pages --output "$work/jre"
    tar -C "$work" -cf - jre app | xz -T2 -6 >"$ROOT/.gpu/service.tar.xz"
    rm -rf "$work"
    ls -la "$ROOT/.gpu/service.tar.xz"
}

# On the GPU machine: the service with configs/application-gds.yaml (HBM straight to NVMe through cuFile) and
# with configs/application-gpu.yaml (through DRAM), each storing BLOCKS blocks of 2 MiB over HTTP into a 512 MiB
# HBM tier and fetching them back (bench/gpu/service_round_trip.py).
service() {
    local out=${1:?OUTDIR} blocks=${2:-600} status=0 config
    local here=/tmp/kvstore-service
    rm -rf "$here" && mkdir -p "$here" && tar -C "$here" -xJf "$ROOT/.gpu/service.tar.xz"
    find_cuda_libraries
    for config in gds gpu; do
        mkdir -p "$out/$config" "/var/tmp/kvstore-$config"
        describe_device_for_cufile "/var/tmp/kvstore-$config"
        echo "=== configs/application-$config.yaml"
        PYTHONUNBUFFERED=1 python3 bench/gpu/service_round_trip.py "$here" "configs/application-$config.yaml" \
            "$out/$config" "$blocks" --kvstore.data-dir="/var/tmp/kvstore-$config" \
            --kvstore.tiers.hbm.capacity=512MB --kvstore.tiers.dram.capacity=512MB \
            --kvstore.tiers.nvme.capacity=4GB --kvstore.tiers.nvme.file-size=512MB \
            --kvstore.nixl.require-backends=false || status=1
    done
    return $status
}

case ${1:-} in
bundle) bundle ;;
run) shift && run "$@" ;;
bundle-service) bundle_service ;;
service) shift && service "$@" ;;
*) echo "usage: bench/gpu.sh bundle | run OUTDIR | bundle-service | service OUTDIR [BLOCKS]" >&2 && exit 2 ;;
esac
