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


def _address(arr: np.ndarray) -> int:
    return arr.__array_interface__["data"][0]


def _as_bytes_array(data: Any) -> np.ndarray:
    if isinstance(data, np.ndarray):
        if not data.flags.c_contiguous:
            raise ValueError("block data must be contiguous")
        return data.reshape(-1).view(np.uint8)
    return np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)


def copy_with_crc(dst: np.ndarray, src: np.ndarray, checksum_dst: bool) -> int:
    """Copies src into dst (same length) piece by piece, returning the CRC32C of the bytes copied, taken
    from ``dst`` (what landed) or ``src`` (what was meant) while each piece is still in cache."""
    n = src.nbytes
    crc = 0
    base = _address(dst if checksum_dst else src)
    for pos in range(0, n, _PIECE):
        end = min(n, pos + _PIECE)
        np.copyto(dst[pos:end], src[pos:end])
        if _crc.ACCELERATED:
            crc = _crc.crc32c_address(base + pos, end - pos, crc)
    if not _crc.ACCELERATED:
        crc = _crc.crc32c(dst if checksum_dst else src)
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
            mm = mmap.mmap(fd, view["length"], mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
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
                src = _as_bytes_array(by_hash[slot["hash"]].data)
                off, length = slot["offset"], slot["length"]
                if src.nbytes != length:
                    raise ValueError(f"block {slot['hash']} has {src.nbytes} bytes; the namespace's blocks have {length}")
                crcs[slot["hash"]] = copy_with_crc(mem[off : off + length], src, checksum_dst=False)
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
        """Copies the leading stored blocks of ``hashes`` into ``out`` (one writable buffer per hash) and
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
                dst = _as_bytes_array(out[i])
                off, length = loc["offset"], loc["length"]
                if dst.nbytes != length:
                    raise ValueError(f"out[{i}] has {dst.nbytes} bytes, the block has {length}")
                if copy_with_crc(dst, mem[off : off + length], checksum_dst=True) != loc["crc32c"]:
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

