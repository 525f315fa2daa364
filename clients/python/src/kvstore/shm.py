"""The same-host data path: copy blocks straight into and out of kvstore's DRAM tier.

A kvstore started with ``kvstore.local.enabled=true`` keeps its DRAM tier in a file on tmpfs
(``GET /v1/local`` names it) that only its own user, or also a group the operator names, may open.
A client on the same host maps that file once and then:

- store: ``POST /v1/local/namespaces/{ns}/blocks:reserve`` -> slots (offsets into the file); copy each
  block into its slot; ``blocks:commit`` (kvstore checksums every slot in place and makes it visible with
  that CRC32C, which every later read is checked against);
- load: ``blocks:lease`` -> the leading stored blocks held in place, with offsets and CRC32Cs; copy each
  out, check its CRC32C on the copy, release the lease (``DELETE /v1/leases/{id}``).

Only the control calls travel to the service: over its local control socket when ``GET /v1/local`` names one
(binary frames on a Unix socket, no HTTP or JSON), else over HTTP. They stay off the copying thread where
they can: they run on a small pool of background threads (one connection each). A store returns from
:meth:`LocalDataPath.store_async` as soon as its blocks are copied, its commit (kvstore's checksum pass
over the slots) running while the caller copies the next blocks; :meth:`LocalDataPath.store` waits for it.
Large calls copy on two threads, the caller's and a helper, each taking the next block; a load's thread
checks the CRC32C of each copy it made right after making it (still in its core's cache) and releases a
step's lease once its blocks are copied and checked. Calls larger than ``_STEP`` bytes
move in steps of that size, each its own reservation or lease: the next step's slots are reserved (or its
blocks leased) while this step is copied, and each step is committed while the next one is copied.

Blocks held only on NVMe have no offset and are fetched over HTTP under the same lease. Every answer
carries the region id of the service's current file; a client still mapping a file of an earlier run
(the service restarted) maps the new one before copying.
"""

from __future__ import annotations

import itertools
import mmap
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from . import crc32c as _crc
from ._buffers import address as _address
from ._buffers import parts as _parts
from ._control import HttpControl, SocketControl
from .client import Block, KvStoreClient, _hex
from .errors import ChecksumMismatch, Forbidden, KvStoreError, NotFound, ServiceUnavailable

__all__ = ["LocalDataPath", "HttpDataPath", "StoreResult", "data_path"]

# Bytes per step of a large store or load: one reservation (or lease) each, so that kvstore's checksum pass
# over one step overlaps the copies of the next and no reservation holds more than this. Every step costs
# a reserve and a commit (or a lease and a release) of service time, so steps are large.
_STEP = 64 << 20
# A call that moves at least this many bytes shares its copies (and a load its CRC32C checks) between the
# caller's thread and one helper thread, each taking the next block: numpy's copy and ISA-L through ctypes
# release the GIL, so the two run at once (two threads copy at about twice one's speed where one core does
# not fill the memory bus); below it the hand-over costs more than it saves.
_SHARE_BYTES = 1 << 20
_CONTROL_THREADS = 4
_pool: Optional[ThreadPoolExecutor] = None
_pool_lock = threading.Lock()


def _helper() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvstore-copy")
        return _pool


def _share(count: int, nbytes: int, work: Callable[[int], None]) -> None:
    """Runs ``work(i)`` for every ``i`` below ``count``, on this thread and, for ``nbytes`` of at least
    ``_SHARE_BYTES``, on the helper thread too, each taking the next ``i`` (so a slow block or a busy helper
    only shifts the split). Returns when all are done; raises what the first failing ``work`` raised."""
    indexes = itertools.count()  # next() on it is atomic under the GIL
    failed: List[BaseException] = []  # once one thread fails, the other takes no further block

    def run() -> None:
        for i in indexes:
            if i >= count or failed:
                return
            try:
                work(i)
            except BaseException as e:
                failed.append(e)
                raise

    if count < 2 or nbytes < _SHARE_BYTES:
        run()
        return
    helping = _helper().submit(run)
    try:
        run()
    finally:
        if not helping.cancel():  # still queued behind another call's work: this thread did it all
            helping.result()


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


def _steps(sizes: List[int]) -> List[range]:
    """Consecutive runs of blocks of at most ``_STEP`` bytes (at least one block each)."""
    out: List[range] = []
    start = total = 0
    for i, size in enumerate(sizes):
        if i > start and total + size > _STEP:
            out.append(range(start, i))
            start, total = i, 0
        total += size
    out.append(range(start, len(sizes)))
    return out


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


def _raw(h: Any) -> bytes:
    """A block hash's bytes (given as bytes or as hex)."""
    return bytes.fromhex(h) if isinstance(h, str) else bytes(h)


def _size_check(pieces: List[np.ndarray], length: int, what: str) -> None:
    total = sum(p.nbytes for p in pieces)
    if total != length:
        raise ValueError(what.format(have=total, want=length))


def _copy_and_checksum(
    copies: List[tuple], copy: Callable[[np.ndarray, List[np.ndarray]], None]
) -> List[int]:
    """Runs ``copy(slot, pieces)`` for every pair (shared with the helper thread, see :func:`_share`) and
    returns the CRC32C of each pair's pieces, taken by the thread that copied them while they are still in
    its core's cache."""
    sums = [0] * len(copies)

    def one(i: int) -> None:
        copy(*copies[i])
        sums[i] = _crc_of(copies[i][1])

    _share(len(copies), sum(c[0].nbytes for c in copies), one)
    return sums


def _leading(fetched: List[Any]) -> int:
    """How many of an HTTP fetch's blocks arrived before the first that did not (``None``: a missing frame,
    a block that failed its check mid-answer, its buffer left untouched)."""
    n = 0
    while n < len(fetched) and fetched[n] is not None:
        n += 1
    return n


def _first_of_each(blocks: Sequence[Block]) -> Sequence[Block]:
    """The blocks without the repeats of a hash listed earlier in the same call."""
    seen: set = set()
    kept = []
    for b in blocks:
        h = _raw(b.hash)
        if h not in seen:
            seen.add(h)
            kept.append(b)
    return blocks if len(kept) == len(blocks) else kept


def _done(result: Any) -> Future:
    f: Future = Future()
    f.set_result(result)
    return f


def _merged(closing: List[Future]) -> Future:
    """One future of the StoreResult of all steps, completed by the last step's commit (no thread waits)."""
    out: Future = Future()
    left = [len(closing)]
    lock = threading.Lock()

    def step_done(_: Future) -> None:
        with lock:
            left[0] -= 1
            if left[0]:
                return
        committed: List[bytes] = []
        already: List[bytes] = []
        failed: List[tuple] = []
        try:
            for f in closing:
                c, a, x = f.result()
                committed += c
                already += a
                failed += x
        except BaseException as e:  # noqa: BLE001 - handed to whoever waits on the future
            out.set_exception(e)
            return
        out.set_result(StoreResult(committed, already, failed))

    for f in closing:
        f.add_done_callback(step_done)
    return out


class LocalDataPath:
    """Stores and loads blocks by copying them in and out of the service's mapped DRAM tier.

    Safe to use from several threads; each call's control requests run on a small pool of background
    threads of its own (one keep-alive connection each) beside the copies of the calling thread.

    The control calls go over kvstore's local control socket when ``GET /v1/local`` names one (binary
    frames, no HTTP; one connection per thread), else over HTTP; ``control="http"`` keeps them on HTTP.
    ``control_kind`` says which is used.

    :raises ServiceUnavailable: when the service has no same-host path (``detail`` says why)
    :raises PermissionError: when this process may not open the tier's file (not its owner or group)
    """

    kind = "shm"

    def __init__(self, client: KvStoreClient, control: str = "auto"):
        if control not in ("auto", "http"):
            raise ValueError(f"control must be 'auto' or 'http', not {control!r}")
        self.client = client
        self._lock = threading.Lock()
        self.region_id: Optional[str] = None
        self.mem: Optional[np.ndarray] = None
        self.path: Optional[str] = None
        self._socket: Optional[str] = None
        self._map()
        if control == "auto" and self._socket is not None:
            self._ctl: Any = SocketControl(self._socket, client.token, self._socket_path, client._conns.timeout)
        else:
            self._ctl = HttpControl(client)
        self.control_kind: str = self._ctl.kind
        self._control = ThreadPoolExecutor(max_workers=_CONTROL_THREADS, thread_name_prefix="kvstore-control")

    def close(self) -> None:
        """Stops the control threads once the calls in flight are done (the mapping goes with the object)."""
        self._control.shutdown(wait=True)
        self._ctl.close()

    def _socket_path(self) -> Optional[str]:
        """The control socket ``GET /v1/local`` names now (a restarted service listens on a new one)."""
        return self.client.request_json("GET", "/v1/local").get("controlSocket")

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
        self._socket = view.get("controlSocket")

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
        """Reserves slots for the blocks kvstore does not hold, copies them in and commits them (kvstore
        checksums each slot and keeps that CRC32C); returns when every block is committed or refused."""
        return self.store_async(namespace, blocks, timeout_seconds).result()

    def store_async(
        self, namespace: str, blocks: Sequence[Block], timeout_seconds: Optional[int] = None
    ) -> "Future[StoreResult]":
        """:meth:`store` that returns as soon as the blocks are copied into their slots (the caller may
        reuse its buffers then), with a future of the :class:`StoreResult` that completes when kvstore has
        checksummed and committed them, or fails with what the commit raised. The next call's copies run
        while kvstore checksums this one's. Failures before the copies are done raise here."""
        if not blocks:
            return _done(StoreResult([], [], []))
        ns = namespace
        blocks = _first_of_each(blocks)  # a reservation may not list a block twice; HTTP stores it once too
        pieces = [_parts(b.data) for b in blocks]
        steps = _steps([sum(p.nbytes for p in ps) for ps in pieces])
        # the first step is reserved on this thread (no hand-over on the critical path); the second at the
        # same time on a control thread
        reserving: List[Future] = [Future()]
        if len(steps) > 1:
            reserving.append(self._control.submit(self._reserve, ns, blocks, steps[1], timeout_seconds))
        closing: List[Future] = []  # per step whose slots were filled: its commit (or cancel when empty)
        try:
            for j, step in enumerate(steps):
                if j == 0:
                    try:
                        reserving[0].set_result(self._reserve(ns, blocks, step, timeout_seconds))
                    except BaseException as e:
                        reserving[0].set_exception(e)
                r = reserving[j].result()
                if j >= 1 and j + 1 < len(steps):  # the next step's slots are reserved while this one is copied
                    reserving.append(self._control.submit(self._reserve, ns, blocks, steps[j + 1], timeout_seconds))
                try:
                    mem = self._region(r["regionId"])
                    by_hash = {_hex(blocks[i].hash): pieces[i] for i in step}
                    copies = []
                    for slot in r["slots"]:
                        off, length = slot["offset"], slot["length"]
                        src = by_hash[slot["hash"]]
                        _size_check(src, length, "block has {have} bytes; the namespace's blocks have {want}")
                        copies.append((mem[off : off + length], src))
                    if not r.get("checksums", True):
                        # kvstore says no slot of this reservation can be reached by a writer still at work (it
                        # fences expired slots while their client is connected, docs/local-data-path.md): its
                        # own pass at commit suffices
                        _share(len(copies), sum(c[0].nbytes for c in copies), lambda i: copy_in(*copies[i]))
                    else:
                        # the CRC32C of the source, not of the slot: bytes a late writer of an expired
                        # reservation lands in the slot before kvstore's commit pass then fail the block
                        sums = _copy_and_checksum(copies, copy_in)
                        r = dict(r, crc32c={slot["hash"]: crc for slot, crc in zip(r["slots"], sums)})
                except BaseException:
                    closing.append(self._control.submit(self._cancel, r["reservationId"]))
                    raise
                # kvstore checksums the slots while the next step is copied
                closing.append(self._control.submit(self._close, ns, r))
        except BaseException:
            # reservations made ahead of a failure give their slots back; steps already closed stay
            for f in reserving[len(closing) :]:
                try:
                    self._cancel(f.result()["reservationId"])
                except BaseException:  # noqa: BLE001 - the reserve itself failed: nothing to give back
                    pass
            for f in closing:
                try:
                    f.result()
                except Exception:  # noqa: BLE001 - the first failure is the one raised
                    pass
            raise
        return _merged(closing)

    def _reserve(self, ns: str, blocks: Sequence[Block], step: range, timeout_seconds: Optional[int]) -> dict:
        wanted = [(_raw(blocks[i].hash), None if blocks[i].parent is None else _raw(blocks[i].parent)) for i in step]
        return self._ctl.reserve(ns, wanted, timeout_seconds)

    def _close(self, ns: str, r: dict) -> tuple:
        """Commits a filled reservation (cancels one with no slots): (committed, already stored, failed)."""
        if not r["slots"]:
            self._cancel(r["reservationId"])
            return [], [bytes.fromhex(h) for h in r["alreadyStored"]], []
        try:
            c = self._ctl.commit(ns, r["reservationId"], r.get("crc32c"))
        except BaseException:
            self._cancel(r["reservationId"])
            raise
        return (
            [bytes.fromhex(h) for h in c["committed"]],
            [bytes.fromhex(h) for h in c["alreadyStored"]],  # the reservation's too
            [(bytes.fromhex(f["hash"]), f["reason"]) for f in c["failed"]],
        )

    def _cancel(self, reservation_id: str) -> None:
        try:
            self._ctl.cancel(reservation_id)
        except KvStoreError:
            pass  # committed, or expired on its own: nothing is held either way

    # ------------------------------------------------------------------ load

    def load(self, namespace: str, hashes: Sequence[bytes], out: Sequence[Any]) -> int:
        """Copies the leading stored blocks of ``hashes`` into ``out`` (per hash a writable buffer, or a list
        of buffers that together are one) and returns how many: every one copied was checked against its
        CRC32C. A block that fails its check ends the count there (its buffer holds garbage; the caller
        recomputes from that block on). Every lease taken is released before it returns."""
        if not hashes:
            return 0
        ns = namespace
        outs = [_parts(out[i]) for i in range(len(hashes))]
        steps = _steps([sum(p.nbytes for p in ps) for ps in outs])
        leasing: List[Future] = []  # leasing[m]: step m + 1, leased on a control thread ahead of its copies
        if len(steps) > 1:
            leasing.append(self._control.submit(self._lease, ns, hashes, steps[1]))
        taken = 0  # how many of ``leasing`` were waited for (their leases are released below)
        releasing: List[Future] = []
        got: List[int] = []  # per block copied out, in order: the CRC32C of the copy
        # per block handed over, in order: its CRC32C (copied out of the mapped tier), or whether it arrived
        # (fetched over HTTP, checked by kvstore)
        expected: List[Any] = []
        try:
            for j, step in enumerate(steps):
                if j == 0:
                    r = self._lease(ns, hashes, step)
                else:
                    taken += 1
                    r = leasing[j - 1].result()
                lease_id = r.get("leaseId")
                if lease_id is None:
                    break
                locations = r["locations"]
                whole = len(locations) == len(step)
                if whole and j >= 1 and j + 1 < len(steps):  # the next step is leased while this one is copied
                    leasing.append(self._control.submit(self._lease, ns, hashes, steps[j + 1]))
                try:
                    mem = self._region(r["regionId"])
                    copies = []
                    k = 0
                    while k < len(locations) and locations[k].get("offset") is not None:
                        off, length = locations[k]["offset"], locations[k]["length"]
                        dst = outs[step[k]]
                        _size_check(dst, length, "the buffer has {have} bytes, the block has {want}")
                        copies.append((mem[off : off + length], dst))
                        expected.append(locations[k]["crc32c"])
                        k += 1
                    got.extend(_copy_and_checksum(copies, copy_out))
                    if k < len(locations):  # the rest of this lease lies outside the mapped tier: over HTTP
                        remote = [step[x] for x in range(k, len(locations))]
                        try:
                            fetched = self.client.fetch(namespace, [hashes[i] for i in remote], out=[out[i] for i in remote])
                        except NotFound:
                            fetched = []
                        arrived = _leading(fetched)
                        expected.extend(x < arrived for x in range(len(remote)))
                        if arrived < len(remote):
                            break
                finally:
                    # the copies are taken (their CRC32Cs are checked on the copies): the lease can go
                    releasing.append(self._control.submit(self._release, lease_id))
                if not whole:
                    break
        finally:
            for f in leasing[taken:]:  # leased ahead for steps never copied
                releasing.append(self._control.submit(self._release_ahead, f))
        try:
            loaded = 0
            crcs = iter(got)
            for want in expected:
                if isinstance(want, bool):  # over HTTP
                    if not want:
                        break
                elif next(crcs) != want:
                    break
                loaded += 1
            return loaded
        finally:
            for f in releasing:
                f.result()

    def _lease(self, ns: str, hashes: Sequence[bytes], step: range) -> dict:
        return self._ctl.lease(ns, [_raw(hashes[i]) for i in step])

    def _release(self, lease_id: str) -> None:
        try:
            self._ctl.release(lease_id)
        except KvStoreError:
            pass  # expired, or the service restarted: nothing is held either way

    def _release_ahead(self, leasing: Future) -> None:
        try:
            lease_id = leasing.result().get("leaseId")
        except Exception:  # noqa: BLE001 - the lease itself failed: nothing is held
            return
        if lease_id is not None:
            self._release(lease_id)

    def fetch(self, namespace: str, hashes: Sequence[bytes], out: Optional[Sequence[Any]] = None) -> List[Any]:
        """Like ``KvStoreClient.fetch``: every block or NotFound / ChecksumMismatch; new numpy arrays unless ``out``."""
        if out is None:
            block_bytes = self.client.namespace(namespace)["blockBytes"]
            out = [np.empty(block_bytes, dtype=np.uint8) for _ in hashes]
        n = self.load(namespace, hashes, out)
        if n < len(hashes):
            _raise_missing(self.client, namespace, hashes[n])
        return list(out)


def _raise_missing(client: KvStoreClient, namespace: str, block_hash: Any) -> None:
    """Raises ChecksumMismatch for a block kvstore holds but that failed its check, else NotFound."""
    if client.lookup(namespace, block_hashes=[block_hash]).matched_blocks:
        raise ChecksumMismatch(f"block {_hex(block_hash)} did not match its CRC32C when copied out")
    raise NotFound(404, {"title": "Not Found", "detail": f"block {_hex(block_hash)} is not stored"})


class HttpDataPath:
    """The same interface as :class:`LocalDataPath` over plain HTTP, for services on other hosts."""

    kind = "http"

    def __init__(self, client: KvStoreClient):
        self.client = client

    def close(self) -> None:
        """Nothing of its own to release: the connections are the client's."""

    def store(self, namespace: str, blocks: Sequence[Block], timeout_seconds: Optional[int] = None) -> StoreResult:
        if not blocks:
            return StoreResult([], [], [])
        self.client.store(namespace, blocks)
        return StoreResult([bytes(b.hash) for b in blocks], [], [])

    def store_async(
        self, namespace: str, blocks: Sequence[Block], timeout_seconds: Optional[int] = None
    ) -> "Future[StoreResult]":
        """:meth:`store`, done when it returns (HTTP sends the bytes with the request)."""
        return _done(self.store(namespace, blocks, timeout_seconds))

    def load(self, namespace: str, hashes: Sequence[bytes], out: Sequence[Any]) -> int:
        for _ in range(2):
            n = self.client.lookup(namespace, block_hashes=list(hashes)).matched_blocks
            if n == 0:
                return 0
            try:
                return _leading(self.client.fetch(namespace, list(hashes[:n]), out=list(out[:n])))
            except NotFound:
                continue  # evicted between lookup and fetch: look again
        return 0

    def fetch(self, namespace: str, hashes: Sequence[bytes], out: Optional[Sequence[Any]] = None) -> List[Any]:
        """Like :meth:`LocalDataPath.fetch`: every block or NotFound / ChecksumMismatch (a block kvstore sent
        as a missing frame, having failed its check, is never handed back as None or an untouched buffer)."""
        got = self.client.fetch(namespace, hashes, out=out)
        n = _leading(got)
        if n < len(got):
            _raise_missing(self.client, namespace, hashes[n])
        return got


def data_path(client: KvStoreClient, local: str = "auto"):
    """The fastest data path to ``client``'s service: ``local="auto"`` maps the DRAM tier when the service
    offers it, this process may open it and the client's token grants the one-sided data plane, else HTTP;
    ``"require"`` raises instead of falling back; ``"off"`` always HTTP."""
    if local == "off":
        return HttpDataPath(client)
    try:
        return LocalDataPath(client)
    except (ServiceUnavailable, Forbidden, OSError) as e:  # Forbidden: a token without the oneSided grant
        if local == "require":
            raise
        import logging

        logging.getLogger("kvstore").info("kvstore: same-host data path not used (%s); blocks go over HTTP", e)
        return HttpDataPath(client)

