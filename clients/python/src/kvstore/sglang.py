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
  overrides it. Its block size is a host page's bytes (all of its buffers, e.g. K then V).
- Zero copy: ``batch_set_v1`` / ``batch_get_v1`` copy between the host pool's page buffers
  (``get_page_buffer_meta``) and kvstore's mapped DRAM tier on the same host, HTTP otherwise.
- SGLang calls storage from its prefetch and backup threads, so calls block until done. A page that
  cannot be read (missing, evicted, damaged, kvstore unreachable) is ``False`` in the result: SGLang
  uses only the leading successes and recomputes the rest.

Not yet run inside SGLang: tested against stand-ins of the interface (clients/python/tests).
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any, List, Optional

import numpy as np

from sglang.srt.mem_cache.hicache_storage import HiCacheStorage, HiCacheStorageConfig

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
        self._page_bytes: Optional[int] = None

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
        if not keys:
            return 0
        try:
            return self.client.lookup(self.namespace, block_hashes=[page_hash(k) for k in keys]).matched_blocks
        except NotFound:
            return 0  # not declared yet: nothing stored
        except KvStoreError as e:
            log.warning("kvstore: exists check failed (%s); reporting none", e)
            return 0

    def close(self) -> None:
        """Called by SGLang's detach_storage_backend: stops the data path's control threads and connections."""
        path, self._path = self._path, None
        if path is not None:
            path.close()
        self.client.close()

    def clear(self) -> None:
        try:
            self.client.delete_namespace(self.namespace)
        except NotFound:
            pass
        self._page_bytes = None

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

    def _declare(self, page_bytes: int) -> None:
        if self._page_bytes == page_bytes:
            return
        self.client.declare_namespace(self.namespace, Layout.for_bytes(page_bytes), model=self.config.model_name,
                                      hash_scheme="vllm:sha256", hash_seed=self._hash_seed)
        self._page_bytes = page_bytes

    def _block_bytes(self) -> Optional[int]:
        if self._page_bytes is None:
            try:
                self._page_bytes = self.client.namespace(self.namespace)["blockBytes"]
            except KvStoreError:
                return None
        return self._page_bytes

    def _data_path(self):
        if self._path is None:
            self._path = data_path(self.client, self._local)
        return self._path

    def _store(self, blocks: List[Block]):
        size = sum(np.asarray(p).nbytes for p in _as_list(blocks[0].data))
        known = self._block_bytes()
        if known is not None and known != size:
            raise KvStoreError(f"pages of {size} bytes, but namespace {self.namespace} holds {known}-byte pages")
        self._declare(size)
        try:
            return self._data_path().store(self.namespace, blocks)
        except NotFound:  # the service lost the namespace (restart on fresh data): declare it again
            self._page_bytes = None
            self._declare(size)
            return self._data_path().store(self.namespace, blocks)

    def _load(self, hashes: List[bytes], targets: List[Any]) -> List[bool]:
        ok = [False] * len(hashes)
        i = 0
        while i < len(hashes):
            try:
                n = self._data_path().load(self.namespace, hashes[i:], targets[i:])
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
