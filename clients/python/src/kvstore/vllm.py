"""kvstore as a vLLM secondary offloading tier (``SecondaryTierManager``).

Targets vLLM's tiering interface of ``vllm/v1/kv_offload/tiering/base.py`` at upstream commit
5ac2684976ee22c04fe0d2f968c6cf6096b383f2 (2026-08-07; the tiering work lives in the EmbeddedLLM/vllm
fork until merged). Loaded from configuration alone::

    --kv-transfer-config '{"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
      "kv_connector_extra_config": {"spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": 8000000000,
        "secondary_tiers": [{"type": "KvStoreTier", "module_path": "kvstore.vllm",
                             "url": "http://127.0.0.1:8080", "namespace": "llama-8b"}]}}'

``spec_name`` must be ``TieringOffloadingSpec``: vLLM's default spec (``CPUOffloadingSpec``) ignores
``secondary_tiers`` without a word. Every other key of the tier's entry is passed to ``KvStoreTier``:
``url``, ``namespace``, ``token``, ``local`` (``auto``/``require``/``off``), ``io_threads``, ``hash_seed``,
``timeout`` and vLLM's own ``locality`` (``LOCAL``/``REMOTE``, unspecified when left out).

How it behaves, as the interface asks:

- Every method returns at once; copies and HTTP calls run on a small thread pool. ``lookup`` answers
  RETRY while kvstore has not been asked yet, then HIT or MISS; lookups queued during a scheduler step
  go to kvstore as one prefix lookup per request at the step's end (``on_schedule_end``). vLLM scans a
  sliding-window group from its last key back, through misses; the tier learns such groups from the scans
  and answers their lookups whole, so a prompt's missing tail does not cost a step per block.
- Keys: an ``OffloadKey`` is vLLM's block hash plus a 4-byte KV-cache group index. Each group is its own
  namespace (``<namespace>-g<idx>``), and the block hash is the kvstore hash (SHA-256 of it when it is
  not 32 bytes, e.g. xxhash).
- Parents: vLLM's scheduler ``touch``-es each group's keys of a request in prefix order before it builds
  the request's store jobs; the tier remembers, per request, the key before each key (same group) and
  stores every block with that parent, so the first block of a job names the last block of the job before
  it, and a job's keys may come in any order (vLLM hands them over as a set). A key vLLM did not touch
  falls back to the key before it in the job when the job's keys are ordered (a list or tuple), else has
  no parent. The memory is the request's keys, dropped at ``on_request_finished``. KV events and the
  prefix-aware eviction policy so see vLLM's chains.
- Stores copy the primary tier's rows (``primary_kv_view[block_id]``) into kvstore; loads copy kvstore
  blocks into the rows given. A block that cannot be loaded (evicted since the lookup, damaged, kvstore
  down or restarted) is reported failed through ``JobResult.successful_keys``, so vLLM recomputes it:
  never wrong bytes, every block copied out of shared memory is checked against its CRC32C.
- Same host: the shared-memory data path when the service offers it (``local``: ``auto``/``require``/
  ``off``), else HTTP.

Not yet run inside vLLM: tested against stand-ins of the interface (clients/python/tests).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

from vllm.v1.kv_offload.base import (  # the engine's own types; this module is loaded inside vLLM
    Locality,
    LookupResult,
    Medium,
    RequestOffloadingContext,
)
from vllm.v1.kv_offload.tiering.base import JobResult, SecondaryTierManager

from . import _keys
from .client import Block, KvStoreClient, Layout
from .errors import Conflict, KvStoreError, NotFound
from .shm import data_path

log = logging.getLogger("kvstore.vllm")

_LOOKUP_BATCH = 256


def _split(key: bytes) -> Tuple[bytes, int]:
    """(block hash, group index) of an OffloadKey: the hash followed by a 4-byte big-endian group."""
    key = bytes(key)
    return key[:-4], int.from_bytes(key[-4:], "big")


class KvStoreTier(SecondaryTierManager):
    """A vLLM secondary tier kept in a kvstore service."""

    medium = Medium.STORAGE

    def __init__(
        self,
        offloading_spec: Any,
        primary_kv_view: memoryview,
        tier_type: str,
        url: str = "http://127.0.0.1:8080",
        namespace: Optional[str] = None,
        token: Optional[str] = None,
        local: str = "auto",
        io_threads: int = 2,
        hash_seed: str = "0",
        timeout: float = 60.0,
        locality: Optional[str] = None,
    ) -> None:
        super().__init__(offloading_spec, primary_kv_view, tier_type)
        assert primary_kv_view.strides is not None
        self._block_bytes = int(primary_kv_view.strides[0])
        self._rows = np.asarray(primary_kv_view).view(np.uint8).reshape(-1, self._block_bytes)
        self._client = KvStoreClient(url, token=token, timeout=timeout)
        self._local = local
        self._hash_seed = hash_seed
        self._namespace = namespace or _keys.namespace_name("vllm", _model_name(offloading_spec), self._block_bytes)
        self._executor = ThreadPoolExecutor(max_workers=max(1, io_threads), thread_name_prefix="kvstore-vllm")
        # re-entrant: a future that is already done runs its callback in the thread adding it
        self._lock = threading.RLock()
        self._path_lock = threading.Lock()
        self._path = None
        self._declared: set = set()
        # request -> key -> stored; a request's entry exists from its first lookup until it finishes, and
        # answers arriving after that are dropped
        self._known: Dict[str, Dict[bytes, bool]] = {}
        self._queued: Dict[str, List[bytes]] = defaultdict(list)  # lookups not yet sent, per request
        self._asked: set = set()  # (request, key) sent and not answered
        self._futures: set = set()
        self._finished: List[JobResult] = []
        # request -> key -> the key before it in the request (same group), from vLLM's touch calls; and per
        # touched sequence (by its first key) how far it was recorded. Dropped when the request finishes
        self._parents: Dict[str, Dict[bytes, bytes]] = {}
        self._touched: Dict[str, Dict[bytes, Tuple[int, bytes]]] = {}
        # sliding-window groups (by their 4-byte index), learnt from vLLM's scans (_note_scan_locked); and per
        # request and group, the keys asked in this scheduler step and whether one was answered MISS
        self._sliding: set = set()
        self._scanned: Dict[Tuple[str, bytes], Tuple[set, List[bool]]] = {}
        # vLLM's tier field: LOCAL or REMOTE to the vLLM instance, unspecified (None) when not configured, as
        # vLLM's own tiers; a request's load filter matches an unspecified tier whatever it asks for
        self.locality = Locality(locality) if locality is not None else None

    # ------------------------------------------------------------------ the interface

    def on_new_request(self, req_context) -> RequestOffloadingContext:
        return RequestOffloadingContext()

    def lookup(self, key, req_context) -> LookupResult:
        k = (req_context.req_id, bytes(key))
        with self._lock:
            known = self._known.setdefault(req_context.req_id, {}).get(k[1])
            self._note_scan_locked(k[0], k[1], known)
            if known is not None:
                return LookupResult.HIT if known else LookupResult.MISS
            if k not in self._asked:
                self._asked.add(k)
                batch = self._queued[req_context.req_id]
                batch.append(bytes(key))
                if len(batch) >= _LOOKUP_BATCH:
                    self._send_lookups_locked(req_context.req_id)
        return LookupResult.RETRY

    def submit_store(self, job_metadata) -> None:
        # parents are read here, on the scheduler's thread: the request may finish (and its state go) before
        # the job runs
        with self._lock:
            known = self._parents.get(job_metadata.req_context.req_id, {})
            parents = {bytes(k): known[bytes(k)] for k in job_metadata.keys if bytes(k) in known}
        self._submit(job_metadata, lambda job: self._store(job, parents))

    def submit_load(self, job_metadata) -> None:
        self._submit(job_metadata, self._load)

    def get_finished_jobs(self) -> Iterable[JobResult]:
        with self._lock:
            out, self._finished = self._finished, []
        return out

    def has_pending_work(self) -> bool:
        with self._lock:
            return bool(self._futures) or any(self._queued.values())

    def touch(self, keys, req_context):
        """kvstore counts accesses itself (lookup, lease); what this keeps is the order: vLLM touches a group's
        keys of a request in prefix order (its whole list every time, grown), so the key before a key is its
        parent. Only the part not seen before is walked."""
        seq = keys if isinstance(keys, (list, tuple)) else list(keys)
        if len(seq) < 2:
            return
        first = bytes(seq[0])
        with self._lock:
            parents = self._parents.setdefault(req_context.req_id, {})
            marks = self._touched.setdefault(req_context.req_id, {})
            start = 1
            mark = marks.get(first)
            if mark is not None and mark[0] <= len(seq) and bytes(seq[mark[0] - 1]) == mark[1]:
                start = mark[0]
            prev = bytes(seq[start - 1])
            for i in range(start, len(seq)):
                k = bytes(seq[i])
                if k[-4:] == prev[-4:] and k != prev:  # same group (a list of one key per group chains nothing)
                    parents[k] = prev
                prev = k
            marks[first] = (len(seq), prev)

    def on_request_finished(self, req_context) -> None:
        rid = req_context.req_id
        with self._lock:
            self._queued.pop(rid, None)
            self._known.pop(rid, None)
            self._parents.pop(rid, None)
            self._touched.pop(rid, None)
            self._asked = {k for k in self._asked if k[0] != rid}

    def on_schedule_end(self, context) -> None:
        with self._lock:
            self._scanned.clear()
            for rid in [r for r, keys in self._queued.items() if keys]:
                self._send_lookups_locked(rid)

    def drain_jobs(self) -> None:
        # a future leaves _futures in its done-callback, after its result is queued; waiters on the future
        # wake before that callback runs, so wait for _futures to empty, not for the futures to be done
        while True:
            with self._lock:
                pending = list(self._futures)
            if not pending:
                return
            if not wait(pending, timeout=1.0).not_done:
                time.sleep(0.001)

    def shutdown(self) -> None:
        self.drain_jobs()
        self._executor.shutdown(wait=True)
        with self._path_lock:
            path, self._path = self._path, None
        if path is not None:
            path.close()  # the same-host path's control threads and socket connections
        self._client.close()

    # ------------------------------------------------------------------ work on the pool

    def _submit(self, job, work) -> None:
        future = self._executor.submit(work, job)
        with self._lock:
            self._futures.add(future)
        future.add_done_callback(lambda f, job=job: self._done(f, job))

    def _done(self, future: Future, job) -> None:
        try:
            result = future.result()
        except Exception:  # noqa: BLE001 - any failure is a failed job, never a crashed scheduler
            log.exception("kvstore job %s failed", job.job_id)
            result = JobResult(job_id=job.job_id, success=False)
        with self._lock:
            self._futures.discard(future)
            if job.is_promotion and not result.success:
                # vLLM frees a failed block's primary slot and looks it up again while the request waits: a
                # cached HIT would promote it again, and fail again, every step; it is a miss from now on
                known = self._known.get(job.req_context.req_id)
                if known is not None:
                    for k in set(map(bytes, job.keys)).difference(map(bytes, result.successful_keys or ())):
                        known[k] = False
            self._finished.append(result)

    def _note_scan_locked(self, rid: str, key: bytes, known: Optional[bool]) -> None:
        """Learns which groups vLLM scans as sliding windows: it scans a full-attention group in prefix order
        and stops at the first MISS, but a sliding-window group from its last key back, on through misses.
        A key asked in the same step after a MISS of its request and group, and not asked before it (a
        repeated prefix scan asks the same keys again), is such a scan. Lookups of those groups are then
        answered whole (_lookup_batch), not up to the first miss: else each missing block costs a step."""
        group = key[-4:]
        asked, missed = self._scanned.setdefault((rid, group), (set(), [False]))
        if missed[0] and key not in asked and group not in self._sliding:
            self._sliding.add(group)
            log.info("vLLM scans KV-cache group %d as a sliding window: its lookups are answered whole",
                     int.from_bytes(group, "big"))
        asked.add(key)
        if known is False:
            missed[0] = True

    def _send_lookups_locked(self, rid: str) -> None:
        keys = self._queued.pop(rid, [])
        if keys:
            future = self._executor.submit(self._lookup_batch, rid, keys)
            self._futures.add(future)
            future.add_done_callback(lambda f: self._lookup_done(f, rid, keys))

    def _lookup_done(self, future: Future, rid: str, keys: List[bytes]) -> None:
        try:
            answers = future.result()
        except Exception as e:  # noqa: BLE001
            log.warning("kvstore lookup failed (%s); reporting misses", e)
            answers = {k: False for k in keys}
        with self._lock:
            self._futures.discard(future)
            known = self._known.get(rid)  # None: the request finished meanwhile
            for k in keys:
                self._asked.discard((rid, k))
                if k in answers and known is not None:
                    known[k] = answers[k]

    def _lookup_batch(self, rid: str, keys: List[bytes]) -> Dict[bytes, bool]:
        """A prefix lookup per group, in the order vLLM asked: the matched ones are stored, the next is not.
        In a full-attention group the keys after it stay unknown (vLLM stops at that miss, and asks again if
        it wants more); a sliding-window group's are looked up on, each lookup from the key after the miss,
        until every key is answered."""
        answers: Dict[bytes, bool] = {}
        for group, members in _by_group(keys).items():
            sliding = members[0][-4:] in self._sliding
            while members:
                try:
                    n = self._client.lookup(
                        self._ns(group), block_hashes=[_keys.block_hash(_split(k)[0]) for k in members]
                    ).matched_blocks
                except NotFound:  # the namespace does not exist yet: nothing stored
                    for k in members:
                        answers[k] = False
                    break
                except KvStoreError as e:
                    log.warning("kvstore lookup failed (%s); reporting misses", e)
                    answers[members[0]] = False
                    break
                for i, k in enumerate(members[: n + 1]):
                    answers[k] = i < n
                members = members[n + 1 :] if sliding else []
        return answers

    def _store(self, job, parents: Dict[bytes, bytes]) -> JobResult:
        keys = [bytes(k) for k in job.keys]
        ordered = not isinstance(job.keys, (set, frozenset))  # vLLM's cascade hands a set: no order to chain by
        ok = True
        for group, idx in _indices_by_group(keys).items():
            self._declare(group)
            blocks, before = [], None
            for i in idx:
                h = _keys.block_hash(_split(keys[i])[0])
                p = parents.get(keys[i])
                parent = _keys.block_hash(_split(p)[0]) if p is not None else (before if ordered else None)
                blocks.append(Block(h, self._rows[int(job.block_ids[i])], parent))
                before = h
            try:
                result = self._data_path().store(self._ns(group), blocks)
            except NotFound:  # the service lost the namespace (a restart on fresh data): declare it again
                self._declared.discard(group)
                self._declare(group)
                result = self._data_path().store(self._ns(group), blocks)
            if result.failed:
                log.warning("kvstore refused %d blocks of store job %s: %s", len(result.failed), job.job_id,
                            result.failed[0][1])
                ok = False
        return JobResult(job_id=job.job_id, success=ok)

    def _load(self, job) -> JobResult:
        keys = [bytes(k) for k in job.keys]
        loaded: List[bytes] = []
        for group, idx in _indices_by_group(keys).items():
            hashes = [_keys.block_hash(_split(keys[i])[0]) for i in idx]
            rows = [self._rows[int(job.block_ids[i])] for i in idx]
            i = 0
            while i < len(idx):
                try:
                    n = self._data_path().load(self._ns(group), hashes[i:], rows[i:])
                except NotFound:
                    n = 0
                loaded.extend(keys[j] for j in idx[i : i + n])
                i += n + 1  # the block after a loaded run is missing or failed its check: recompute it
        if len(loaded) == len(keys):
            return JobResult(job_id=job.job_id, success=True)
        if loaded:
            log.info("kvstore load job %s: %d of %d blocks; vLLM recomputes the rest", job.job_id, len(loaded),
                     len(keys))
            return JobResult(job_id=job.job_id, success=False, successful_keys=loaded)
        return JobResult(job_id=job.job_id, success=False)

    # ------------------------------------------------------------------ helpers

    def _ns(self, group: int) -> str:
        return f"{self._namespace}-g{group}"

    def _data_path(self):
        with self._path_lock:
            if self._path is None:
                self._path = data_path(self._client, self._local)
            return self._path

    def _declare(self, group: int) -> None:
        if group in self._declared:
            return
        try:
            self._client.declare_namespace(
                self._ns(group), Layout.for_bytes(self._block_bytes), model=self._ns(group),
                hash_scheme="vllm:sha256", hash_seed=self._hash_seed,
            )
        except Conflict:
            raise KvStoreError(f"namespace {self._ns(group)} exists with another block size")
        self._declared.add(group)


def _by_group(keys: List[bytes]) -> Dict[int, List[bytes]]:
    out: Dict[int, List[bytes]] = defaultdict(list)
    for k in keys:
        out[_split(k)[1]].append(k)
    return out


def _indices_by_group(keys: List[bytes]) -> Dict[int, List[int]]:
    out: Dict[int, List[int]] = defaultdict(list)
    for i, k in enumerate(keys):
        out[_split(k)[1]].append(i)
    return out


def _model_name(spec: Any) -> str:
    for path in (("config", "model", "name"), ("vllm_config", "model_config", "model")):
        obj = spec
        for attr in path:
            obj = getattr(obj, attr, None)
        if obj:
            return str(obj)
    return "model"
