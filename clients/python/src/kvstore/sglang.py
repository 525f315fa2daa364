"""kvstore as an SGLang HiCache storage backend (``HiCacheStorage``, L3 of hierarchical caching).

Targets ``python/sglang/srt/mem_cache/hicache_storage.py`` at sgl-project/sglang commit
001067fffe33427bee0ed2f007fb7551a1d76b44. Loaded by the dynamic backend::

    --enable-hierarchical-cache --hicache-storage-backend dynamic \\
    --hicache-storage-backend-extra-config '{"backend_name": "kvstore", "module_path": "kvstore.sglang",
        "class_name": "KvStoreHiCache", "interface_v1": 1, "url": "http://127.0.0.1:8080"}'

  (``"interface_v1": 1`` makes SGLang call ``batch_get_v1`` / ``batch_set_v1``; without it a dynamic backend
  gets ``batch_get`` / ``batch_set`` with host-pool tensors.)

- Keys: SGLang's page keys are chained SHA-256 hex digests; they are the kvstore block hashes as they are
  (any other key is hashed with SHA-256). A page's parent is the key before it in the batch, or the last
  of ``extra_info.prefix_keys`` for the first, so kvstore sees SGLang's chains.
- One namespace per (model, TP rank unless MLA, PP rank, CP rank); ``"namespace"`` in the extra config
  overrides it. Pages are not split by heads (``tp_lcm_size``): deployments of another TP size do not
  share them (nor ever read another layout's bytes). Its block size is a host page's bytes (all of its
  buffers, e.g. K then V).
- Zero copy: ``batch_set_v1`` / ``batch_get_v1`` copy between the host pool's page buffers
  (``get_page_buffer_meta``) and kvstore's mapped DRAM tier on the same host, HTTP otherwise.
- Hybrid models (multi-pool ``*_v2`` calls): each side pool registered with ``register_mem_host_pool_v2``
  (Mamba states, SWA, indexer and DeepSeek-V4 pools, draft pools) keeps its pages in a namespace of its own,
  ``<namespace>-<pool>``, through the pool's flat-page calls; the KV pool's are the v1 namespace's.
  ``batch_exists_v2`` shortens the KV hit to what each side pool holds by its hit policy (every page, or
  the trailing pages of the hit), as SGLang's reference file backend does.
- SGLang calls storage from its prefetch and backup threads, so calls block until done. A page that
  cannot be read (missing, evicted, damaged, kvstore unreachable) is ``False`` in the result: SGLang
  uses only the leading successes and recomputes the rest.

Not yet run inside SGLang: tested against stand-ins of the interface (clients/python/tests).
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any, Dict, List, Optional

import numpy as np

from sglang.srt.mem_cache.hicache_storage import (
    HiCacheStorage,
    HiCacheStorageConfig,
    PoolHitPolicy,
    PoolName,
    PoolTransferResult,
)

from . import _keys
from ._buffers import at_address
from .client import Block, KvStoreClient, Layout
from .errors import KvStoreError, NotFound
from .shm import data_path

log = logging.getLogger("kvstore.sglang")


def page_hash(key: str) -> bytes:
    """An SGLang page key as a kvstore hash: the 32 bytes of a SHA-256 hex digest, else SHA-256 of the key."""
    if len(key) == 64:
        try:
            return bytes.fromhex(key)
        except ValueError:
            pass
    return hashlib.sha256(key.encode()).digest()


class KvStoreHiCache(HiCacheStorage):
    """An SGLang L3 storage backend kept in a kvstore service."""

    def __init__(self, storage_config: HiCacheStorageConfig, kwargs: Optional[dict] = None):
        extra = dict(storage_config.extra_config or {})
        self.config = storage_config
        self.client = KvStoreClient(extra.get("url", "http://127.0.0.1:8080"), token=extra.get("token"),
                                    timeout=float(extra.get("timeout", 60)))
        self._local = extra.get("local", "auto")
        self._hash_seed = str(extra.get("hash_seed", "0"))
        c = storage_config
        self.namespace = extra.get("namespace") or _keys.namespace_name(
            "sglang",
            c.model_name or "model",
            None if c.is_mla_model else f"tp{c.tp_rank}of{c.tp_size}",
            f"pp{c.pp_rank}of{c.pp_size}" if c.pp_size > 1 else None,
            f"cp{c.attn_cp_rank}of{c.attn_cp_size}" if c.attn_cp_size > 1 else None,
        )
        self._path = None
        self._page_bytes: Dict[str, int] = {}  # per namespace (the KV pool's, and each side pool's)
        if c.should_split_heads:
            log.info("kvstore: pages are stored whole per TP rank (tp_lcm_size head splitting is not done): "
                     "ranks of another TP size do not share them")

    # ------------------------------------------------------------------ zero-copy batch interface

    def batch_set_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        if not keys:
            return []
        pages = self._pages(keys, host_indices)
        blocks, parent = [], _first_parent(extra_info)
        for key, page in zip(keys, pages):
            h = page_hash(key)
            blocks.append(Block(h, page, parent))
            parent = h
        try:
            result = self._store(blocks)
        except KvStoreError as e:
            log.warning("kvstore: storing %d pages failed: %s", len(keys), e)
            return [False] * len(keys)
        failed = {h for h, _ in result.failed}
        return [page_hash(k) not in failed for k in keys]

    def batch_get_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        if not keys:
            return []
        pages = self._pages(keys, host_indices)
        return self._load([page_hash(k) for k in keys], pages)

    # ------------------------------------------------------------------ multi-pool (v2) interface

    def batch_exists_v2(self, keys: List[str], pool_transfers: Optional[list] = None,
                        extra_info: Any = None) -> PoolTransferResult:
        """The KV prefix in kvstore, shortened to what every side pool holds by its hit policy: all of the
        prefix's pages (ALL_PAGES), or the last ``len(transfer.keys)`` pages of some prefix (TRAILING_PAGES,
        e.g. Mamba states, kept only at some pages); the longest such prefix counts."""
        hashes = [page_hash(k) for k in keys]
        kv = self._prefix(self.namespace, hashes)
        hashes = hashes[:kv]
        hits = {PoolName.KV: kv} if kv else {}
        final = kv
        for transfer in pool_transfers or []:
            if final == 0:
                break
            namespace = self._pool_namespace(transfer.name)
            if transfer.hit_policy == PoolHitPolicy.TRAILING_PAGES:
                boundary = self._trailing_prefix(namespace, hashes, max(1, len(transfer.keys or ())))
            else:
                boundary = self._prefix(namespace, hashes)
            if boundary:
                hits[transfer.name] = boundary
            final = min(final, boundary)
        return PoolTransferResult(final, hits)

    def batch_set_v2(self, transfers: list, extra_info: Any = None) -> dict:
        """Per transfer, stores its keys' pages from the pool registered under its name (its flat data
        pages) in that pool's namespace; per pool name, a success per key."""

        def store(transfer, pool, keys, starts) -> List[bool]:
            blocks, parent = [], _first_parent(extra_info) if transfer.name == PoolName.KV else None
            for key, start in zip(keys, starts):
                h = page_hash(key)
                blocks.append(Block(h, pool.get_data_page(start, flat=True), parent))
                parent = h
            try:
                failed = {h for h, _ in self._store(blocks, self._pool_namespace(transfer.name)).failed}
            except KvStoreError as e:
                log.warning("kvstore: storing %d pages of pool %s failed: %s", len(keys), transfer.name, e)
                return [False] * len(keys)
            return [b.hash not in failed for b in blocks]

        return self._each_pool(transfers, store)

    def batch_get_v2(self, transfers: list, extra_info: Any = None) -> dict:
        """Per transfer, loads its keys' pages from that pool's namespace into the pool registered under its
        name (``set_from_flat_data_page``); per pool name, a success per key (a missing page is False, the
        rest still load)."""

        def load(transfer, pool, keys, starts) -> List[bool]:
            pages = [pool.get_dummy_flat_data_page() for _ in keys]
            ok = self._load([page_hash(k) for k in keys], pages, self._pool_namespace(transfer.name))
            for good, start, page in zip(ok, starts, pages):
                if good:
                    pool.set_from_flat_data_page(start, page)
            return ok

        return self._each_pool(transfers, load)

    def _each_pool(self, transfers: list, io) -> dict:
        """Runs ``io(transfer, pool, keys, page_starts)`` per transfer, with the host pool registered under its
        name and the first token index of each key's page; a transfer without such a pool, or whose indices
        do not cover its keys, is all False (logged)."""
        results = {}
        for transfer in transfers:
            keys = list(transfer.keys or [])
            pool = getattr(self, "registered_pools", {}).get(transfer.name)
            step = int(getattr(pool, "page_size", 1) or 1)
            count = 0 if transfer.host_indices is None else len(transfer.host_indices)
            if pool is None:
                log.warning("kvstore: no host pool registered as %s (register_mem_host_pool_v2)", transfer.name)
                results[transfer.name] = [False] * len(keys)
            elif count != len(keys) * step:
                log.warning("kvstore: pool %s transfer has %d host indices for %d keys of %d tokens",
                            transfer.name, count, len(keys), step)
                results[transfer.name] = [False] * len(keys)
            else:
                starts = [int(transfer.host_indices[i * step]) for i in range(len(keys))]
                results[transfer.name] = io(transfer, pool, keys, starts)
        return results

    def _pool_namespace(self, name) -> str:
        """The KV pool's pages live in the backend's namespace (shared with the v1 calls); each side pool's in
        one of its own, whose block size is that pool's page."""
        value = getattr(name, "value", name)
        return self.namespace if value == PoolName.KV.value else _keys.namespace_name(self.namespace, value)

    def _prefix(self, namespace: str, hashes: List[bytes]) -> int:
        """How many of ``hashes``, from the first, ``namespace`` holds (0 when it is not declared yet, or
        kvstore cannot be asked)."""
        if not hashes:
            return 0
        try:
            return self.client.lookup(namespace, block_hashes=hashes).matched_blocks
        except NotFound:
            return 0
        except KvStoreError as e:
            log.warning("kvstore: exists check failed (%s); reporting none", e)
            return 0

    def _trailing_prefix(self, namespace: str, hashes: List[bytes], trailing: int) -> int:
        """The longest prefix of ``hashes`` whose last ``trailing`` pages (or all, when fewer) ``namespace``
        holds: each lookup walks back from a candidate end; a missing page rules out every end up to
        ``trailing`` after it, so the next candidate ends right before it."""
        end = len(hashes)
        while end > 0:
            window = hashes[max(0, end - trailing) : end]
            held = self._prefix(namespace, window[::-1])
            if held == len(window):
                return end
            end -= held + 1
        return 0

    # ------------------------------------------------------------------ buffer interface

    def get(self, key: str, target_location: Optional[Any] = None, target_sizes: Optional[Any] = None):
        return self.batch_get([key], None if target_location is None else [target_location],
                              None if target_sizes is None else [target_sizes])[0]

    def batch_get(self, keys: List[str], target_locations: Optional[Any] = None, target_sizes: Optional[Any] = None):
        if not keys:
            return []
        if target_locations is None:
            size = self._block_bytes()
            if size is None:
                return [None] * len(keys)
            targets = [np.empty(size, dtype=np.uint8) for _ in keys]
        else:
            targets = [_target(t, s) for t, s in zip(target_locations, target_sizes or [None] * len(keys))]
        ok = self._load([page_hash(k) for k in keys], targets)
        results = []
        for i, good in enumerate(ok):
            if not good:
                results.append(None)
            elif target_locations is not None:
                results.append(target_locations[i])
            else:
                results.append(_as_tensor(targets[i]))
        return results

    def set(self, key: str, value: Optional[Any] = None, target_location: Optional[Any] = None,
            target_sizes: Optional[Any] = None) -> bool:
        return self.batch_set([key], None if value is None else [value],
                              None if target_location is None else [target_location],
                              None if target_sizes is None else [target_sizes])

    def batch_set(self, keys: List[str], values: Optional[Any] = None, target_locations: Optional[Any] = None,
                  target_sizes: Optional[Any] = None) -> bool:
        if not keys:
            return True
        if values is not None:
            data = list(values)
        elif target_locations is not None:
            data = [_target(t, s) for t, s in zip(target_locations, target_sizes or [None] * len(keys))]
        else:
            raise ValueError("batch_set needs values or target_locations")
        blocks, parent = [], None
        for k, d in zip(keys, data):
            h = page_hash(k)
            blocks.append(Block(h, d, parent))
            parent = h
        try:
            return not self._store(blocks).failed
        except KvStoreError as e:
            log.warning("kvstore: storing %d pages failed: %s", len(keys), e)
            return False

    def exists(self, key: str) -> bool:
        return self.batch_exists([key]) == 1

    def batch_exists(self, keys: List[str], extra_info: Any = None) -> int:
        return self._prefix(self.namespace, [page_hash(k) for k in keys])

    def close(self) -> None:
        """Called by SGLang's detach_storage_backend: stops the data path's control threads and connections."""
        path, self._path = self._path, None
        if path is not None:
            path.close()
        self.client.close()

    def clear(self) -> None:
        """Deletes the KV pool's namespace and each registered side pool's."""
        pools = set(getattr(self, "registered_pools", {})) | {PoolName.KV}
        for namespace in {self._pool_namespace(p) for p in pools}:
            try:
                self.client.delete_namespace(namespace)
            except NotFound:
                pass
            self._page_bytes.pop(namespace, None)

    # ------------------------------------------------------------------ helpers

    def _pages(self, keys: List[str], host_indices: Any) -> List[list]:
        """Per key, the host pool's buffers of that page (views of the pool's memory, no copy)."""
        ptrs, sizes = self.mem_pool_host.get_page_buffer_meta(host_indices)
        if isinstance(sizes, int):
            sizes = [sizes] * len(ptrs)
        per = len(ptrs) // len(keys)
        if per * len(keys) != len(ptrs):
            raise ValueError(f"{len(ptrs)} page buffers for {len(keys)} keys")
        return [[at_address(int(ptrs[i * per + j]), int(sizes[i * per + j])) for j in range(per)]
                for i in range(len(keys))]

    def _declare(self, page_bytes: int, namespace: str) -> None:
        if self._page_bytes.get(namespace) == page_bytes:
            return
        self.client.declare_namespace(namespace, Layout.for_bytes(page_bytes), model=self.config.model_name,
                                      hash_scheme="vllm:sha256", hash_seed=self._hash_seed)
        self._page_bytes[namespace] = page_bytes

    def _block_bytes(self, namespace: Optional[str] = None) -> Optional[int]:
        namespace = namespace or self.namespace
        if namespace not in self._page_bytes:
            try:
                self._page_bytes[namespace] = self.client.namespace(namespace)["blockBytes"]
            except KvStoreError:
                return None
        return self._page_bytes[namespace]

    def _data_path(self):
        if self._path is None:
            self._path = data_path(self.client, self._local)
        return self._path

    def _store(self, blocks: List[Block], namespace: Optional[str] = None):
        namespace = namespace or self.namespace
        size = sum(np.asarray(p).nbytes for p in _as_list(blocks[0].data))
        known = self._block_bytes(namespace)
        if known is not None and known != size:
            raise KvStoreError(f"pages of {size} bytes, but namespace {namespace} holds {known}-byte pages")
        self._declare(size, namespace)
        try:
            return self._data_path().store(namespace, blocks)
        except NotFound:  # the service lost the namespace (restart on fresh data): declare it again
            self._page_bytes.pop(namespace, None)
            self._declare(size, namespace)
            return self._data_path().store(namespace, blocks)

    def _load(self, hashes: List[bytes], targets: List[Any], namespace: Optional[str] = None) -> List[bool]:
        namespace = namespace or self.namespace
        ok = [False] * len(hashes)
        i = 0
        while i < len(hashes):
            try:
                n = self._data_path().load(namespace, hashes[i:], targets[i:])
            except NotFound:
                n = 0
            except (KvStoreError, ValueError) as e:  # ValueError: the namespace's pages have another size
                log.warning("kvstore: loading pages failed: %s", e)
                break
            for j in range(i, i + n):
                ok[j] = True
            i += n + 1
        return ok


def _first_parent(extra_info: Any) -> Optional[bytes]:
    prefix = getattr(extra_info, "prefix_keys", None) if extra_info is not None else None
    return page_hash(prefix[-1]) if prefix else None


def _as_list(data: Any) -> list:
    return list(data) if isinstance(data, (list, tuple)) else [data]


def _target(location: Any, size: Any) -> Any:
    """A target given as a buffer, or as an address with its size (SGLang's pointer form)."""
    if isinstance(location, int):
        return at_address(location, int(size))
    return location


def _as_tensor(arr: np.ndarray):
    try:
        import torch  # inside SGLang

        return torch.from_numpy(arr)
    except ImportError:
        return arr
