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
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

import numpy as np

from . import crc32c as _crc
from ._buffers import address as _address
from ._buffers import parts as _parts
from .client import Block, KvStoreClient, _hex, _q
from .errors import ChecksumMismatch, KvStoreError, NotFound, ServiceUnavailable

__all__ = ["LocalDataPath", "HttpDataPath", "StoreResult", "data_path"]

# copy and checksum in pieces that stay in cache between the two passes
_PIECE = 256 * 1024


@dataclass(frozen=True)
class StoreResult:
    """What a store did: blocks committed now, blocks kvstore already had, and refused ones with the reason."""

    committed: List[bytes]
    already_stored: List[bytes]
    failed: List[tuple]


def copy_with_crc(dst: np.ndarray, src: np.ndarray, checksum_dst: bool, crc: int = 0) -> int:
    """Copies src into dst (same length) piece by piece, returning the CRC32C of the bytes copied (continuing
    from ``crc``), taken from ``dst`` (what landed) or ``src`` (what was meant) while each piece is in cache."""
    n = src.nbytes
    if not _crc.ACCELERATED:
        np.copyto(dst, src)
        return _crc.crc32c(dst if checksum_dst else src, crc)
    base = _address(dst if checksum_dst else src)
    for pos in range(0, n, _PIECE):
        end = min(n, pos + _PIECE)
        np.copyto(dst[pos:end], src[pos:end])
        crc = _crc.crc32c_address(base + pos, end - pos, crc)
    return crc


def copy_in(slot: np.ndarray, data: Any) -> int:
    """Copies a block's pieces into its slot back to back; the CRC32C of what was meant."""
    pieces = _parts(data)
    size = sum(p.nbytes for p in pieces)
    if size != slot.nbytes:
        raise ValueError(f"block has {size} bytes; the namespace's blocks have {slot.nbytes}")
    crc, pos = 0, 0
    for p in pieces:
        crc = copy_with_crc(slot[pos : pos + p.nbytes], p, checksum_dst=False, crc=crc)
        pos += p.nbytes
    return crc


def copy_out(slot: np.ndarray, out: Any) -> int:
    """Copies a slot into the caller's piece(s) back to back; the CRC32C of what landed there."""
    pieces = _parts(out)
    size = sum(p.nbytes for p in pieces)
    if size != slot.nbytes:
        raise ValueError(f"the buffer has {size} bytes, the block has {slot.nbytes}")
    crc, pos = 0, 0
    for p in pieces:
        crc = copy_with_crc(p, slot[pos : pos + p.nbytes], checksum_dst=True, crc=crc)
        pos += p.nbytes
    return crc


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
            crcs = {}
            for slot in r["slots"]:
                off, length = slot["offset"], slot["length"]
                crcs[slot["hash"]] = copy_in(mem[off : off + length], by_hash[slot["hash"]].data)
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
            loaded = 0
            remote = []  # (index) of leased blocks only on NVMe
            for i, loc in enumerate(r["locations"]):
                if loc.get("offset") is None:
                    remote.append(i)
                    continue
                if remote:  # keep order simple: stop the in-place run, fetch the rest over HTTP below
                    remote.append(i)
                    continue
                off, length = loc["offset"], loc["length"]
                if copy_out(mem[off : off + length], out[i]) != loc["crc32c"]:
                    return loaded
                loaded += 1
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

