"""The same-host data path: copy blocks straight into and out of kvstore's DRAM tier.

A kvstore started with ``kvstore.local.enabled=true`` keeps its DRAM tier in a file on tmpfs
(``GET /v1/local`` names it) that only its own user, or also a group the operator names, may open.
A client on the same host maps that file once and then:

- store: ``POST /v1/local/namespaces/{ns}/blocks:reserve`` -> slots (offsets into the file); copy each
  block into its slot, taking its CRC32C on the way; ``blocks:commit`` with the CRC32Cs (kvstore checksums
  every slot in place and makes only matching blocks visible);
- load: ``blocks:lease`` -> the leading stored blocks held in place, with offsets and CRC32Cs; copy each
  out, check its CRC32C on the copy, release the lease (``DELETE /v1/leases/{id}``).

Only the control calls travel over HTTP. Blocks held only on NVMe have no offset and are fetched over
HTTP under the same lease. Every answer carries the region id of the service's current file; a client
still mapping a file of an earlier run (the service restarted) maps the new one before copying.
"""

from __future__ import annotations

import mmap
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

import numpy as np

from . import crc32c as _crc
from ._buffers import address as _address
from ._buffers import parts as _parts
from .client import Block, KvStoreClient, _hex, _q
from .errors import ChecksumMismatch, KvStoreError, NotFound, ServiceUnavailable

__all__ = ["LocalDataPath", "HttpDataPath", "StoreResult", "data_path"]

# CRC32Cs are taken in groups of about this many bytes on a helper thread while the caller's thread copies
# the next blocks (ISA-L through ctypes and numpy's copy both release the GIL), so on a machine with a spare
# core a batch costs about its copies rather than copies plus checksums; the last group runs on the caller's
# thread (nothing left to overlap with).
_GROUP = 4 << 20
_pool: Optional[ThreadPoolExecutor] = None
_pool_lock = threading.Lock()


def _helper() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvstore-crc32c")
        return _pool


@dataclass(frozen=True)
class StoreResult:
    """What a store did: blocks committed now, blocks kvstore already had, and refused ones with the reason."""

    committed: List[bytes]
    already_stored: List[bytes]
    failed: List[tuple]


def _crc_of(pieces: List[np.ndarray]) -> int:
    """The CRC32C of a block's pieces back to back."""
    crc = 0
    for p in pieces:
        crc = _crc.crc32c_address(_address(p), p.nbytes, crc) if _crc.ACCELERATED and p.nbytes else _crc.crc32c(p, crc)
    return crc


def _crcs_of(blocks: List[List[np.ndarray]]) -> List[int]:
    return [_crc_of(b) for b in blocks]


class Checksums:
    """The CRC32Cs of blocks added in order, computed in groups on the helper thread as groups fill up
    (``overlap``), the last group on the caller's thread in :meth:`results`."""

    def __init__(self, overlap: bool = True):
        self._overlap = overlap
        self._done: list = []  # futures, then the last group's list
        self._group: List[List[np.ndarray]] = []
        self._bytes = 0

    def add(self, pieces: List[np.ndarray]) -> None:
        self._group.append(pieces)
        self._bytes += sum(p.nbytes for p in pieces)
        if self._overlap and self._bytes >= _GROUP:
            self._done.append(_helper().submit(_crcs_of, self._group))
            self._group, self._bytes = [], 0

    def results(self) -> List[int]:
        out: List[int] = []
        for f in self._done:
            out.extend(f.result())
        out.extend(_crcs_of(self._group))
        return out


def _pieces(data: Any, size: int, what: str) -> List[np.ndarray]:
    pieces = _parts(data)
    total = sum(p.nbytes for p in pieces)
    if total != size:
        raise ValueError(what.format(have=total, want=size))
    return pieces


def copy_in(slot: np.ndarray, pieces: List[np.ndarray]) -> None:
    """Copies a block's pieces into its slot back to back."""
    pos = 0
    for p in pieces:
        np.copyto(slot[pos : pos + p.nbytes], p)
        pos += p.nbytes


def copy_out(slot: np.ndarray, pieces: List[np.ndarray]) -> None:
    """Copies a slot into the caller's pieces back to back."""
    pos = 0
    for p in pieces:
        np.copyto(p, slot[pos : pos + p.nbytes])
        pos += p.nbytes


class LocalDataPath:
    """Stores and loads blocks by copying them in and out of the service's mapped DRAM tier.

    :raises ServiceUnavailable: when the service has no same-host path (``detail`` says why)
    :raises PermissionError: when this process may not open the tier's file (not its owner or group)
    """

    kind = "shm"

    def __init__(self, client: KvStoreClient):
        self.client = client
        self._lock = threading.Lock()
        self.region_id: Optional[str] = None
        self.mem: Optional[np.ndarray] = None
        self.path: Optional[str] = None
        self._map()

    # ------------------------------------------------------------------ mapping

    def _map(self) -> None:
        view = self.client.request_json("GET", "/v1/local")
        if not view.get("available"):
            raise ServiceUnavailable(503, {"title": "Same-host data path unavailable", "detail": view.get("reason")})
        fd = os.open(view["path"], os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
        try:
            # MAP_POPULATE: page tables filled once here, not by a fault per page on the first copies
            flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
            mm = mmap.mmap(fd, view["length"], flags, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        self.mem = np.frombuffer(mm, dtype=np.uint8)
        self.path = view["path"]
        self.region_id = view["regionId"]

    def _region(self, region_id: str) -> np.ndarray:
        """The mapping of region ``region_id``, remapping when the service restarted since the last map."""
        with self._lock:
            if region_id != self.region_id:
                self._map()  # the old mapping goes when the last array over it does
                if region_id != self.region_id:
                    raise KvStoreError("kvstore restarted during the request; retry it")
            return self.mem

    # ------------------------------------------------------------------ store

    def store(self, namespace: str, blocks: Sequence[Block], timeout_seconds: Optional[int] = None) -> StoreResult:
        """Reserves slots for the blocks kvstore does not hold, copies them in and commits with CRC32Cs."""
        if not blocks:
            return StoreResult([], [], [])
        body: dict = {
            "blocks": [
                {"hash": _hex(b.hash), **({"parent": _hex(b.parent)} if b.parent is not None else {})} for b in blocks
            ]
        }
        if timeout_seconds is not None:
            body["timeoutSeconds"] = int(timeout_seconds)
        ns = _q(namespace)
        r = self.client.request_json("POST", f"/v1/local/namespaces/{ns}/blocks:reserve", body)
        committed = False
        try:
            mem = self._region(r["regionId"])
            by_hash = {_hex(b.hash): b for b in blocks}
            todo = []  # (slot view, the block's pieces, hash)
            for slot in r["slots"]:
                off, length = slot["offset"], slot["length"]
                pieces = _pieces(by_hash[slot["hash"]].data, length,
                                 "block has {have} bytes; the namespace's blocks have {want}")
                todo.append((mem[off : off + length], pieces, slot["hash"]))
            # the CRC32Cs of what is meant (the sources) run beside the copies; kvstore checksums each slot at
            # commit and refuses any that differs, so a copy that did not land whole is never visible
            sums = Checksums(overlap=len(todo) > 1)
            for _, pieces, _ in todo:
                sums.add(pieces)
            for dst, pieces, _ in todo:
                copy_in(dst, pieces)
            crcs = {h: c for (_, _, h), c in zip(todo, sums.results())}
            if not r["slots"]:
                self.client.cancel(r["reservationId"])
                committed = True
                return StoreResult([], [bytes.fromhex(h) for h in r["alreadyStored"]], [])
            c = self.client.request_json(
                "POST",
                f"/v1/local/namespaces/{ns}/blocks:commit",
                {"reservationId": r["reservationId"], "crc32c": crcs},
            )
            committed = True
        finally:
            if not committed:
                try:
                    self.client.cancel(r["reservationId"])
                except KvStoreError:
                    pass  # expires on its own
        return StoreResult(
            [bytes.fromhex(h) for h in c["committed"]],
            [bytes.fromhex(h) for h in r["alreadyStored"]] + [bytes.fromhex(h) for h in c["alreadyStored"]],
            [(bytes.fromhex(f["hash"]), f["reason"]) for f in c["failed"]],
        )

    # ------------------------------------------------------------------ load

    def load(self, namespace: str, hashes: Sequence[bytes], out: Sequence[Any]) -> int:
        """Copies the leading stored blocks of ``hashes`` into ``out`` (per hash a writable buffer, or a list
        of buffers that together are one) and
        returns how many: every one copied was checked against its CRC32C. A block that fails its check
        ends the count there (its buffer holds garbage; the caller recomputes from that block on)."""
        if not hashes:
            return 0
        ns = _q(namespace)
        r = self.client.request_json(
            "POST", f"/v1/local/namespaces/{ns}/blocks:lease", {"blockHashes": [_hex(h) for h in hashes]}
        )
        lease_id = r.get("leaseId")
        if lease_id is None:
            return 0
        try:
            mem = self._region(r["regionId"])
            locations = r["locations"]
            local = 0  # the leading blocks that lie in the mapped tier; the rest come over HTTP
            while local < len(locations) and locations[local].get("offset") is not None:
                local += 1
            # copy each out, then take the CRC32C of the copy (what the caller gets) on the helper thread
            # while the next blocks are copied; count the leading ones that match
            sums = Checksums(overlap=local > 1)
            for i in range(local):
                off, length = locations[i]["offset"], locations[i]["length"]
                pieces = _pieces(out[i], length, "the buffer has {have} bytes, the block has {want}")
                copy_out(mem[off : off + length], pieces)
                sums.add(pieces)
            loaded = 0
            for loc, crc in zip(locations, sums.results()):
                if crc != loc["crc32c"]:
                    return loaded
                loaded += 1
            remote = list(range(local, len(locations)))
            if remote:
                want = [hashes[i] for i in remote]
                try:
                    self.client.fetch(namespace, want, out=[out[i] for i in remote])
                except NotFound:
                    return loaded
                loaded += len(remote)
            return loaded
        finally:
            try:
                self.client.release(lease_id)
            except KvStoreError:
                pass  # expired, or the service restarted: nothing is held either way

    def fetch(self, namespace: str, hashes: Sequence[bytes], out: Optional[Sequence[Any]] = None) -> List[Any]:
        """Like ``KvStoreClient.fetch``: every block or NotFound / ChecksumMismatch; new numpy arrays unless ``out``."""
        if out is None:
            block_bytes = self.client.namespace(namespace)["blockBytes"]
            out = [np.empty(block_bytes, dtype=np.uint8) for _ in hashes]
        n = self.load(namespace, hashes, out)
        if n < len(hashes):
            r = self.client.lookup(namespace, block_hashes=list(hashes[n : n + 1]))
            if r.matched_blocks:
                raise ChecksumMismatch(f"block {_hex(hashes[n])} did not match its CRC32C when copied out")
            raise NotFound(404, {"title": "Not Found", "detail": f"block {_hex(hashes[n])} is not stored"})
        return list(out)


class HttpDataPath:
    """The same interface as :class:`LocalDataPath` over plain HTTP, for services on other hosts."""

    kind = "http"

    def __init__(self, client: KvStoreClient):
        self.client = client

    def store(self, namespace: str, blocks: Sequence[Block], timeout_seconds: Optional[int] = None) -> StoreResult:
        if not blocks:
            return StoreResult([], [], [])
        self.client.store(namespace, blocks)
        return StoreResult([bytes(b.hash) for b in blocks], [], [])

    def load(self, namespace: str, hashes: Sequence[bytes], out: Sequence[Any]) -> int:
        for _ in range(2):
            n = self.client.lookup(namespace, block_hashes=list(hashes)).matched_blocks
            if n == 0:
                return 0
            try:
                self.client.fetch(namespace, list(hashes[:n]), out=list(out[:n]))
                return n
            except NotFound:
                continue  # evicted between lookup and fetch: look again
        return 0

    def fetch(self, namespace: str, hashes: Sequence[bytes], out: Optional[Sequence[Any]] = None) -> List[Any]:
        return self.client.fetch(namespace, hashes, out=out)


def data_path(client: KvStoreClient, local: str = "auto"):
    """The fastest data path to ``client``'s service: ``local="auto"`` maps the DRAM tier when the service
    offers it and this process may open it, else HTTP; ``"require"`` raises instead of falling back;
    ``"off"`` always HTTP."""
    if local == "off":
        return HttpDataPath(client)
    try:
        return LocalDataPath(client)
    except (ServiceUnavailable, OSError) as e:
        if local == "require":
            raise
        import logging

        logging.getLogger("kvstore").info("kvstore: same-host data path not used (%s); blocks go over HTTP", e)
        return HttpDataPath(client)

