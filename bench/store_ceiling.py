#!/usr/bin/env python3
"""The most a same-host store can reach on this machine, as a fraction of a numpy copy: no service, no
control calls, only the two passes over memory that every store makes.

A store through the shared-memory path is a copy into the tier's mapped file (the client) plus kvstore's
CRC32C pass over the same bytes (the commit), and on this kind of machine the checksum cannot read the copy
from cache (docs/benchmarks.md). At best the two overlap perfectly on two cores: one thread copies the next
blocks while the other checks the blocks before. This program times, over a working set far larger than the
CPU's caches, in 2 MiB blocks:

- a numpy copy between arrays, the reference of bench/python_client.py;
- a numpy copy into a tmpfs mapping (``/dev/shm``, as kvstore's DRAM tier), pages written before;
- a CRC32C pass (ISA-L through the client's binding) over another region of the same mapping;
- both at once, on two threads, each over its own blocks.

``reference / both`` is the ceiling of ``shm store / copy`` in bench/python_client.py on this machine: a
perfect pipeline would reach it, and any control call, wake-up or wait between copies comes off it.

Usage: python3 bench/store_ceiling.py [MiB] [rounds]   (default 128 MiB, 30 rounds; prints a markdown table
of the medians and the best rounds)
"""

from __future__ import annotations

import mmap
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients/python/src"))

from kvstore import crc32c  # noqa: E402
from kvstore._buffers import address  # noqa: E402

MIB = 1 << 20
BLOCK = 2 * MIB
WORKING = (int(sys.argv[1]) if len(sys.argv) > 1 else 128) * MIB
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 30


def main() -> None:
    if not crc32c.ACCELERATED:
        sys.exit("needs ISA-L (libisal2) for the CRC32C pass: the pure-Python CRC measures Python, not memory")
    n = WORKING // BLOCK
    with tempfile.TemporaryFile(dir="/dev/shm") as f:
        os.posix_fallocate(f.fileno(), 0, 2 * WORKING)
        mm = mmap.mmap(f.fileno(), 2 * WORKING, mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
        mem = np.frombuffer(mm, dtype=np.uint8)
        slots = [mem[i * BLOCK : (i + 1) * BLOCK] for i in range(n)]
        checked = [mem[WORKING + i * BLOCK : WORKING + (i + 1) * BLOCK] for i in range(n)]
        src = [np.random.default_rng(i).integers(0, 256, BLOCK, dtype=np.uint8) for i in range(n)]
        arrays = [np.empty(BLOCK, dtype=np.uint8) for _ in range(n)]
        for s in slots + checked + arrays:
            s[:] = 1  # every page written once before: the first write to a page is slower on some VMs

        def reference() -> None:
            for a, b in zip(src, arrays):
                np.copyto(b, a)

        def copy() -> None:
            for a, b in zip(src, slots):
                np.copyto(b, a)

        def check() -> None:
            for c in checked:
                crc32c.crc32c_address(address(c), c.nbytes, 0)

        def both() -> None:
            t = threading.Thread(target=check)
            t.start()
            copy()
            t.join()

        times: dict = {"reference": [], "copy": [], "CRC32C pass": [], "both at once": []}
        for _ in range(ROUNDS):  # interleaved, so that all four see the same phases of a shared machine
            for name, fn in (("reference", reference), ("copy", copy), ("CRC32C pass", check), ("both at once", both)):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)

    def gbps(v, pick):
        return WORKING / pick(sorted(v)) / 1e9

    median = lambda v: v[len(v) // 2]  # noqa: E731
    best = lambda v: v[0]  # noqa: E731
    ratios = sorted(c / b for c, b in zip(times["reference"], times["both at once"]))
    print(f"{os.cpu_count()} CPUs; {WORKING // MIB} MiB in {BLOCK // MIB} MiB blocks, {ROUNDS} interleaved rounds")
    print()
    print("| | numpy copy (reference) GB/s | copy into tmpfs GB/s | CRC32C pass GB/s | both at once GB/s | "
          "ceiling: reference / both |")
    print("|---|---|---|---|---|---|")
    for label, pick in (("median", median), ("best", best)):
        print(f"| {label} | {gbps(times['reference'], pick):.2f} | {gbps(times['copy'], pick):.2f} | "
              f"{gbps(times['CRC32C pass'], pick):.2f} | {gbps(times['both at once'], pick):.2f} | "
              f"{(median(ratios) if pick is median else ratios[-1]):.2f} |")
    print("\n(GB/s of the bytes stored, 1 GB = 1e9 bytes; the ceiling's best is the best round's ratio)")


if __name__ == "__main__":
    main()
