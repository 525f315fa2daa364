"""The service on a GPU machine (bench/gpu.sh service): starts it from the carried runtime with a config file,
stores 2 MiB blocks over HTTP with the Python client until they spill out of HBM, fetches every one back and
compares it, and prints what health, /admin/backends and the tier metrics say. Exits 1 if any block differs.
Usage: service_round_trip.py BUNDLE_DIR CONFIG OUT_DIR BLOCKS [--property=value ...]"""

import hashlib
import os
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.getcwd(), "clients/python/src"))
import numpy as np  # noqa: E402

import kvstore  # noqa: E402

here, config, out = sys.argv[1], sys.argv[2], sys.argv[3]
blocks, block_mib = int(sys.argv[4]), 2
port = 18080
extra = sys.argv[5:]
cp = os.path.join(here, "app/classes") + ":" + ":".join(
    sorted(os.path.join(here, "app/lib", j) for j in os.listdir(os.path.join(here, "app/lib"))))
cmd = [os.path.join(here, "jre/bin/java"), "@configs/jvm.options", "--enable-native-access=ALL-UNNAMED", "-cp", cp, "io.kvstore.service.KvStoreApplication",
       "--spring.config.additional-location=file:" + config, "--server.port=%d" % port, "--kvstore.admin-token=smoke-admin"] + extra
log = open(os.path.join(out, "service.log"), "w")
svc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
base = "http://127.0.0.1:%d" % port
TIER_METRICS = re.compile(
    r"kvstore_(tier_blocks|tier_degraded|device_storage_fallbacks_total|demotions_total|promotions_total"
    r"|checksum_failures_total)"
)


def show_tier_metrics():
    for line in get("/actuator/prometheus").splitlines():
        if TIER_METRICS.match(line):
            print(" ", line)


def get(path, token=None):
    req = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + token} if token else {})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read().decode()
try:
    deadline = time.time() + 120
    while True:
        if svc.poll() is not None:
            raise SystemExit("service exited %s" % svc.returncode)
        try:
            get("/actuator/health"); break
        except Exception:
            if time.time() > deadline: raise
            time.sleep(0.5)
    print("health:", get("/actuator/health"))
    try:
        print("backends:", get("/admin/backends", "smoke-admin"))
    except Exception as e:
        print("backends:", e)
    c = kvstore.KvStoreClient(base)
    size = block_mib << 20
    c.declare_namespace("gpu", kvstore.Layout.for_bytes(size), hash_scheme="vllm:sha256", hash_seed="0")
    rng = np.random.default_rng(7)
    hashes, parent, t0 = [], None, time.time()
    for i in range(blocks):
        data = rng.integers(0, 256, size, dtype=np.uint8)
        h = hashlib.sha256(b"gpu-block-%d" % i).digest()
        c.store("gpu", [kvstore.Block(h, data, parent)])
        hashes.append((h, hashlib.sha256(data.tobytes()).hexdigest()))
        parent = h
    print("stored %d blocks of %d MiB in %.1f s" % (blocks, block_mib, time.time() - t0))
    time.sleep(3)
    show_tier_metrics()
    bad, t0 = 0, time.time()
    for i, (h, digest) in enumerate(hashes):
        got = c.fetch("gpu", [h])[0]
        if hashlib.sha256(bytes(got)).hexdigest() != digest:
            bad += 1
    print("fetched %d blocks in %.1f s, %d differ" % (len(hashes), time.time() - t0, bad))
    show_tier_metrics()
    print("health after:", get("/actuator/health"))
    if bad:
        sys.exit(1)
finally:
    svc.terminate()
    try: svc.wait(30)
    except Exception: svc.kill()
    log.close()
    print("--- service log (kvstore lines) ---")
    for line in open(os.path.join(out, "service.log")):
        if "io.kvstore" in line or "ERROR" in line or "Exception" in line:
            print(line.rstrip()[:400])
