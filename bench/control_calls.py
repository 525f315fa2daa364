#!/usr/bin/env python3
"""Service CPU and client wall time per control call of the same-host path, over the local control socket
and over HTTP, in one run against one service (full JIT, warmed up on both carriers first).

Usage: python3 bench/control_calls.py [pairs]   (needs kv-store-service's jar or KVSTORE_TEST_CLASSPATH)

Each carrier makes ``pairs`` reserve+commit pairs (one 16 KiB block each, fresh hashes) and as many
lease+release pairs of a stored block, one call at a time on one thread; the service's CPU time is read from
/proc/<pid>/stat around each phase (all its threads: request handling, GC, JIT), so the figure is what one
call costs the service, not a wall time disturbed by the machine's other work.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "clients/python/src"))
sys.path.insert(0, str(ROOT / "clients/python/tests"))

import kvstore  # noqa: E402
from kvstore import Block, Layout  # noqa: E402
from kvstore._control import HttpControl, SocketControl  # noqa: E402
from service import Service  # noqa: E402

PAIRS = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def hashes(n: int, tag: str):
    return [hashlib.sha256(f"{tag}-{i}".encode()).digest() for i in range(n)]


def phase(ctl, ns: str, tag: str, n: int, pid: int):
    """(service CPU ms, client wall ms) per call: n reserve+commit pairs, then n lease+release pairs."""
    hs = hashes(n, tag)
    c0, t0 = cpu_seconds(pid), time.perf_counter()
    for h in hs:
        r = ctl.reserve(ns, [(h, None)], None)
        ctl.commit(ns, r["reservationId"])
    c1, t1 = cpu_seconds(pid), time.perf_counter()
    for h in hs:
        lease = ctl.lease(ns, [h])
        ctl.release(lease["leaseId"])
    c2, t2 = cpu_seconds(pid), time.perf_counter()
    per = 1000 / (2 * n)
    return ((c1 - c0) * per, (t1 - t0) * per), ((c2 - c1) * per, (t2 - t1) * per)


def main():
    tmp = Path(tempfile.mkdtemp(prefix="kvstore-ctlbench-"))
    svc = Service(tmp / "kv", extra_args=["--kvstore.tiers.dram.capacity=1024MB", "--kvstore.tiers.dram.slab-size=16MB",
                                         "--kvstore.tiers.nvme.enabled=false", "--logging.level.root=WARN"],
                  lease_timeout="120s", quick_start=False)
    svc.start()
    try:
        client = kvstore.KvStoreClient(svc.url)
        ns = "ctl-bench"
        client.declare_namespace(ns, Layout(layers=2, kv_heads=2, head_dim=64, dtype="float16", block_size=16),
                                 hash_seed="0")
        view = client.request_json("GET", "/v1/local")
        carriers = {"socket": SocketControl(view["controlSocket"], None, lambda: None), "http": HttpControl(client)}
        pid = svc.proc.pid
        for name, ctl in carriers.items():  # warm-up: the JIT compiles both carriers' paths
            phase(ctl, ns, f"warm-{name}", PAIRS, pid)
        rows = {}
        for rnd in range(2):
            for name, ctl in carriers.items():
                rows.setdefault(name, []).append(phase(ctl, ns, f"{name}-{rnd}", PAIRS, pid))
        print(f"{PAIRS} pairs per phase, best of 2 rounds; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f}")
        print()
        print("| carrier | reserve+commit: service CPU ms/call | wall ms/call | lease+release: service CPU ms/call | wall ms/call |")
        print("|---|---|---|---|---|")
        for name, rs in rows.items():
            rc = min(r[0][0] for r in rs), min(r[0][1] for r in rs)
            lr = min(r[1][0] for r in rs), min(r[1][1] for r in rs)
            print(f"| {name} | {rc[0]:.3f} | {rc[1]:.3f} | {lr[0]:.3f} | {lr[1]:.3f} |")
        for ctl in carriers.values():
            ctl.close()
    finally:
        svc.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
