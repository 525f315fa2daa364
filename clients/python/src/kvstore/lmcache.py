"""kvstore as an LMCache remote storage plugin (a ``ConnectorAdapter`` creating a ``RemoteConnector``).

Plugin mode is the configuration of current LMCache, where every ``remote_storage_plugins`` entry is a remote
backend of its own (``RemoteBackend-<entry>``, whose connector is created for the URL ``plugin://<entry>``).
Entries ``kvstore`` and ``kvstore.<instance>`` are this adapter's; the service is the entry's ``url``::

    max_local_cpu_size: 5     # > 0: LMCache hands a plugin backend its local CPU backend as a buffer
    remote_storage_plugins: ["kvstore"]
    extra_config:
      remote_storage_plugin.kvstore.module_path: kvstore.lmcache
      remote_storage_plugin.kvstore.class_name: KvStoreConnectorAdapter
      remote_storage_plugin.kvstore.url: "kvstore://127.0.0.1:8080/llama-8b"   # namespace in the path (optional)

Leave ``remote_url`` unset: LMCache makes one more remote backend for it beside the plugins' (with a
``kvstore://`` URL, two backends on kvstore). A missing ``url`` is a ValueError naming the key (LMCache logs it
and keeps that backend without a connection). Other options of an entry, as
``remote_storage_plugin.<entry>.<option>``: ``token`` (kvstore's bearer token), ``timeout`` (seconds, 60),
``local`` (``auto``, ``require`` or ``off``: the same-host data path) and ``io_threads`` (2).

Legacy mode, for older LMCache, where ``remote_storage_plugins`` only loads adapters and the remote backend
is ``remote_url``'s: ``remote_url: "kvstore://host:port/<namespace>"`` with the same ``module_path`` /
``class_name`` entry (options under ``remote_storage_plugin.kvstore.``); the connector gets that URL and no
plugin name.

Targets (stand-ins in clients/python/tests reproduce them; the LMCache versions were read, not run):
``lmcache/v1/storage_backend/connector/__init__.py`` (ConnectorContext with ``plugin_name``, the plugin
loading) at LMCache/LMCache 0109660ce57fe9c046eb7953dfb56fb1e3c6d9fd (the newest version read loads a
``ConnectorAdapter`` plugin the same way); ``base_connector.py``, ``instrumented_connector.py``,
``remote_backend.py``, ``storage_manager.py`` and ``storage_backend/__init__.py`` as in LMCache main read on
2026-11-28 through a source index that names no commit for those versions. Still supported: the older
``base_connector.py`` of 01712fbd51d033060d6a8851c06de0ebf351f74e (no ``RemoteConnector.__init__``,
``batched_contains`` answering one bool per key). No commit of a legacy-only LMCache was placed: e23f2bbc
loads no plugins at all, and 0109660c already makes a backend per plugin.

- Current interface: ``RemoteConnector.__init__(config, metadata)`` is called when the base has one (it sets
  ``meta_shapes`` / ``meta_dtypes`` / ``meta_fmt``, which LMCache's remote health check reads to put and get a
  probe chunk); ``batched_contains(keys)`` is how many leading chunks kvstore holds (one bool per key only on
  a base whose ``batched_contains`` still takes ``stop_after_first_not_exits``);
  ``batched_get_non_blocking`` (LMCache's async loading) answers the leading chunks up to the first that
  cannot be read, from one load, allocating nothing after it; ``ping`` is 0 while kvstore answers.
- Keys: a ``CacheEngineKey`` becomes the SHA-256 of its ``to_string()`` (model, world size, worker, chunk
  hash): 32 bytes, one kvstore block per chunk. LMCache's chunk keys carry no parent; in
  ``batched_put`` each chunk's parent is the chunk before it in the batch (one request's chunks in order).
- A block holds a 512-byte header (shape, dtype, memory format, byte count, the key's ``to_string()``) and
  the chunk's bytes, padded to a full chunk (``context.get_full_chunk_size_bytes()``), so partial last
  chunks are stored too and ``get`` rebuilds the memory object with
  ``local_cpu_backend.allocate(shape, dtype, fmt)``.
- ``list()`` names every chunk the namespace holds in kvstore, whoever stored it and whenever (kvstore's
  ``GET /v1/namespaces/{ns}/blocks``): keys this connector stored are known by hash; any other chunk is
  read (checksummed as every load) and named from its header.
- Scheduler role (no local CPU backend, ``SafeLocalCPUBackend`` in its place): the connector sizes no chunk
  and answers ``exists`` and ``contains`` (what the workers stored). That is the legacy ``remote_url``
  backend's case: current LMCache asserts a local CPU backend before it makes a plugin backend, so with
  ``remote_storage_plugins`` set a scheduler-role process fails in LMCache's ``CreateStorageBackends``
  (upstream behaviour, as read), never reaching this adapter.
- The async methods run their HTTP and copies on a small thread pool (``run_in_executor``), never on
  LMCache's event loop. A chunk that cannot be read is ``None`` (LMCache recomputes it).

Not yet run inside LMCache: tested against stand-ins of the interface (clients/python/tests).
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import struct
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from typing import Any, List, Optional

import numpy as np

from lmcache.v1.storage_backend.connector import ConnectorAdapter, ConnectorContext
from lmcache.v1.storage_backend.connector.base_connector import RemoteConnector

from . import _keys
from ._buffers import as_bytes
from .client import Block, KvStoreClient, Layout
from .errors import KvStoreError, NotFound, ProblemError
from .shm import data_path

log = logging.getLogger("kvstore.lmcache")

SCHEME = "kvstore://"
PLUGIN_SCHEME = "plugin://"
PLUGIN_TYPE = "kvstore"
HEADER = 512
_MAGIC = b"KVSL"
_VERSION = 2
# magic, version, ndim, nbytes, 8 dims, fmt, dtype name (32 bytes), key length; the key's UTF-8 follows
_HEADER_FMT = "<4sHHQ8qi32sH"
_KEY_ROOM = HEADER - struct.calcsize(_HEADER_FMT)
# chunks read per round when list() names chunks from their headers
_LIST_BATCH = 16


def key_hash(key: Any) -> bytes:
    return hashlib.sha256(key_text(key).encode()).digest()


def key_text(key: Any) -> str:
    return key.to_string() if hasattr(key, "to_string") else str(key)


def pack_header(shape, dtype, fmt, nbytes: int, key: str = "") -> bytes:
    """The chunk's header; a key whose UTF-8 does not fit is left out (``list()`` cannot name that chunk)."""
    dims = list(shape)
    if len(dims) > 8:
        raise ValueError(f"shape {tuple(shape)} has more than 8 dimensions")
    name = str(dtype).encode()[:32]
    text = key.encode()
    if len(text) > _KEY_ROOM:
        text = b""
    raw = struct.pack(_HEADER_FMT, _MAGIC, _VERSION, len(dims), nbytes, *(dims + [0] * (8 - len(dims))), int(fmt),
                      name, len(text)) + text
    return raw + b"\0" * (HEADER - len(raw))


def unpack_header(raw) -> tuple:
    """(shape, dtype name, format, byte count, key text or "")."""
    head = bytes(raw[:HEADER])
    magic, version, ndim, nbytes, *rest = struct.unpack_from(_HEADER_FMT, head)
    if magic != _MAGIC or version != _VERSION:
        raise ValueError("not a kvstore LMCache chunk")
    dims, fmt, name, key_len = rest[:8], rest[8], rest[9].rstrip(b"\0").decode(), rest[10]
    start = struct.calcsize(_HEADER_FMT)
    key = head[start : start + min(key_len, _KEY_ROOM)].decode("utf-8", errors="replace")
    return tuple(dims[:ndim]), name, fmt, nbytes, key


class KvStoreConnectorAdapter(ConnectorAdapter):
    """Creates a KvStoreConnector for ``plugin://kvstore[.<instance>]`` (a ``remote_storage_plugins`` entry)
    and for ``kvstore://host:port[/namespace]`` (the legacy ``remote_url``)."""

    def __init__(self) -> None:
        super().__init__(SCHEME)

    def can_parse(self, url: str) -> bool:
        """``kvstore://...`` (legacy ``remote_url``) or ``plugin://kvstore[.<instance>]`` (a plugin backend)."""
        if url.startswith(PLUGIN_SCHEME):
            return url[len(PLUGIN_SCHEME) :].split(".", 1)[0] == PLUGIN_TYPE
        return url.startswith(SCHEME)

    def create_connector(self, context: ConnectorContext) -> RemoteConnector:
        return KvStoreConnector(context)


class KvStoreConnector(RemoteConnector):
    """An LMCache remote connector kept in a kvstore service."""

    def __init__(self, context: ConnectorContext):
        config, meta = context.config, getattr(context, "metadata", None)
        if config is not None and meta is not None and RemoteConnector.__init__ is not object.__init__:
            # current LMCache: the chunk metadata its other parts read off a connector (meta_shapes, meta_dtypes,
            # meta_fmt: RemoteBackendHealthCheck's put-and-get check); older bases have no __init__
            super().__init__(config, meta)
        extra = (getattr(config, "extra_config", None) or {}) if config is not None else {}
        plugin = getattr(context, "plugin_name", None)  # None: the legacy remote_url backend

        def option(name, default=None):
            return extra.get(f"remote_storage_plugin.{plugin or PLUGIN_TYPE}.{name}", default)

        if plugin is None:
            parsed = _service_url(context.url, "remote_url")
        else:
            parsed = _service_url(option("url"), f"extra_config remote_storage_plugin.{plugin}.url")

        self.loop = context.loop
        self.local_cpu_backend = context.local_cpu_backend
        self.client = KvStoreClient(f"http://{parsed.hostname}:{parsed.port or 8080}", token=option("token"),
                                    timeout=float(option("timeout", 60)))
        self._local = option("local", "auto")
        self.namespace = parsed.path.strip("/") or _keys.namespace_name(
            "lmcache", getattr(meta, "model_name", "model"), f"w{getattr(meta, 'worker_id', 0)}of"
            f"{getattr(meta, 'world_size', 1)}")
        self._context = context
        self._chunk_bytes: Optional[int] = None  # asked at first use (chunk_bytes)
        self._executor = ThreadPoolExecutor(max_workers=int(option("io_threads", 2)), thread_name_prefix="kvstore-lmc")
        self._path = None
        self._declared = False
        self._names: dict = {}  # hash -> key string, of chunks this connector put or named (for list())
        self._contains_lists = _base_contains_lists()

    @property
    def chunk_bytes(self) -> int:
        """A full chunk's bytes, as LMCache's local CPU backend tells them, asked at first use: in LMCache's
        scheduler role there is no such backend (``SafeLocalCPUBackend``), and that connector only asks what
        is stored, which needs no size."""
        if self._chunk_bytes is None:
            try:
                self._chunk_bytes = int(self._context.get_full_chunk_size_bytes())
            except (AttributeError, AssertionError, RuntimeError) as e:
                raise KvStoreError(
                    "this connector has no local CPU backend to size chunks by (LMCache's scheduler role): "
                    "it answers exists and contains only"
                ) from e
        return self._chunk_bytes

    @property
    def block_bytes(self) -> int:
        return HEADER + self.chunk_bytes

    # ------------------------------------------------------------------ RemoteConnector

    async def exists(self, key) -> bool:
        return await self._run(self.exists_sync, key)

    def exists_sync(self, key) -> bool:
        return self._prefix([key_hash(key)]) == 1

    async def get(self, key):
        return (await self._run_get([key]))[0]

    async def put(self, key, memory_obj) -> None:
        await self._run(self._put_many, [key], [memory_obj])

    async def list(self) -> List[str]:
        return await self._run(self._list)

    async def close(self) -> None:
        self._executor.shutdown(wait=True)
        path, self._path = self._path, None
        if path is not None:
            path.close()  # the same-host path's control threads and socket connections
        self.client.close()

    def support_batched_get(self) -> bool:
        return True

    async def batched_get(self, keys) -> List[Optional[Any]]:
        return await self._run_get(list(keys))

    def support_batched_put(self) -> bool:
        return True

    async def batched_put(self, keys, memory_objs) -> None:
        await self._run(self._put_many, list(keys), list(memory_objs))

    def support_batched_async_contains(self) -> bool:
        return True

    async def batched_async_contains(self, lookup_id: str, keys, pin: bool = False) -> int:
        return await self._run(self._prefix, [key_hash(k) for k in keys])

    def support_batched_get_non_blocking(self) -> bool:
        return True

    async def batched_get_non_blocking(self, lookup_id: str, keys) -> List[Any]:
        """The leading chunks, up to the first one that cannot be read: one load, nothing allocated after it."""
        return await self._run_get(list(keys), self._get_prefix)

    def support_batched_contains(self) -> bool:
        return True

    def batched_contains(self, keys, stop_after_first_not_exits: bool = True):
        """How many leading chunks kvstore holds. On an older LMCache whose ``RemoteConnector.batched_contains``
        still takes ``stop_after_first_not_exits`` (01712fbd), one bool per key, as that interface has it."""
        n = self._prefix([key_hash(k) for k in keys])
        if not self._contains_lists:
            return n
        if stop_after_first_not_exits:
            return [i < n for i in range(len(keys))]
        return [i < n or self._prefix([key_hash(k)]) == 1 for i, k in enumerate(keys)]

    def support_ping(self) -> bool:
        return True

    async def ping(self) -> int:
        """0 while kvstore answers; else the HTTP status it refused with, or -1 when it cannot be reached."""
        return await self._run(self._ping)

    def remove_sync(self, key) -> bool:
        try:
            self.client.delete(self.namespace, key_hash(key))
            return True
        except KvStoreError:
            return False

    def __repr__(self) -> str:
        return f"<KvStoreConnector {self.client.url} namespace={self.namespace}>"

    # ------------------------------------------------------------------ work on the pool

    async def _run(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def _run_get(self, keys, read_fn=None):
        """``_get_many`` (or ``read_fn``) on the pool. LMCache cancels a get it stopped waiting for
        (blocking_timeout_secs); the read goes on on the pool, and the memory objects it allocates then go back
        to LMCache's pool."""
        read = asyncio.get_running_loop().run_in_executor(self._executor, read_fn or self._get_many, keys)
        try:
            return await asyncio.shield(read)
        except asyncio.CancelledError:
            read.add_done_callback(_give_back)
            raise

    def _prefix(self, hashes: List[bytes]) -> int:
        try:
            return self.client.lookup(self.namespace, block_hashes=hashes).matched_blocks
        except NotFound:
            return 0
        except KvStoreError as e:
            log.warning("kvstore lookup failed (%s); reporting misses", e)
            return 0

    def _put_many(self, keys, memory_objs) -> None:
        blocks, parent = [], None
        for key, obj in zip(keys, memory_objs):
            data = as_bytes(obj.byte_array)
            if data.nbytes > self.chunk_bytes:
                raise ValueError(f"chunk of {data.nbytes} bytes is larger than a full chunk ({self.chunk_bytes})")
            meta = obj.metadata
            header = np.frombuffer(pack_header(meta.shape, meta.dtype, meta.fmt, data.nbytes, key_text(key)),
                                   dtype=np.uint8)
            pad = np.zeros(self.chunk_bytes - data.nbytes, dtype=np.uint8)
            h = key_hash(key)
            blocks.append(Block(h, [header, data, pad], parent))
            parent = h
        self._declare()
        try:
            result = self._data_path().store(self.namespace, blocks)
        except NotFound:
            self._declared = False
            self._declare()
            result = self._data_path().store(self.namespace, blocks)
        failed = {h for h, _ in result.failed}
        for key, b in zip(keys, blocks):
            if b.hash not in failed:
                self._names[b.hash] = key_text(key)
        if failed:
            log.warning("kvstore refused %d chunks: %s", len(failed), result.failed[0][1])

    def _get_many(self, keys) -> List[Optional[Any]]:
        buffers = [np.empty(self.block_bytes, dtype=np.uint8) for _ in keys]
        ok = self._load_each([key_hash(k) for k in keys], buffers)
        return [self._memory_obj(buf) if good else None for good, buf in zip(ok, buffers)]

    def _get_prefix(self, keys) -> List[Any]:
        buffers = [np.empty(self.block_bytes, dtype=np.uint8) for _ in keys]
        n = self._load([key_hash(k) for k in keys], buffers) or 0
        objs = []
        for buf in buffers[:n]:
            obj = self._memory_obj(buf)
            if obj is None:
                break
            objs.append(obj)
        return objs

    def _ping(self) -> int:
        try:
            self.client.namespace(self.namespace)
        except NotFound:
            pass  # nothing stored yet: kvstore answered
        except ProblemError as e:
            return e.status
        except KvStoreError:
            return -1
        return 0

    def _memory_obj(self, buf: np.ndarray):
        """The chunk as a memory object of LMCache's, or None (no chunk header, or one that does not fit)."""
        try:
            shape, dtype_name, fmt, nbytes, _ = unpack_header(buf)
        except ValueError as e:
            log.warning("kvstore: a block of %s is not an LMCache chunk (%s)", self.namespace, e)
            return None
        obj = self.local_cpu_backend.allocate(_shape(shape), _dtype(dtype_name), _fmt(fmt))
        if obj is None:
            log.warning("LMCache could not allocate a chunk of %d bytes", nbytes)
            return None
        try:
            dst = as_bytes(obj.byte_array)
            dst[:nbytes] = buf[HEADER : HEADER + nbytes]
        except (ValueError, TypeError) as e:
            obj.ref_count_down()  # back to LMCache's pool
            log.warning("kvstore: a chunk of %s does not fit its header (%s)", self.namespace, e)
            return None
        return obj

    def _list(self) -> List[str]:
        try:
            held = list(self.client.list_blocks(self.namespace))
        except NotFound:
            return []  # nothing declared yet: nothing stored
        unknown = [h for h in held if h not in self._names]
        unnamed = 0
        for i in range(0, len(unknown), _LIST_BATCH):
            batch = unknown[i : i + _LIST_BATCH]
            buffers = [np.empty(self.block_bytes, dtype=np.uint8) for _ in batch]
            for h, buf, ok in zip(batch, buffers, self._load_each(batch, buffers)):
                key = ""
                if ok:
                    try:
                        key = unpack_header(buf)[4]
                    except ValueError:
                        pass  # not a chunk this adapter wrote
                if key and key_hash(key) == h:  # the name must be the one the chunk is stored under
                    self._names[h] = key
                else:
                    unnamed += 1
        if unnamed:
            log.warning("kvstore: %d chunks in %s could not be named (removed meanwhile, or not LMCache's)",
                        unnamed, self.namespace)
        return [self._names[h] for h in held if h in self._names]

    def _load_each(self, hashes: List[bytes], buffers: List[np.ndarray]) -> List[bool]:
        """Loads each block on its own terms (load stops at the first missing one): which ones came."""
        ok = [False] * len(hashes)
        i = 0
        while i < len(hashes):
            n = self._load(hashes[i:], buffers[i:])
            if n is None:
                break
            for j in range(i, i + n):
                ok[j] = True
            i += n + 1
        return ok

    def _load(self, hashes: List[bytes], buffers: List[np.ndarray]) -> Optional[int]:
        """How many leading blocks were loaded (0: the namespace is not declared); None: kvstore failed."""
        try:
            return self._data_path().load(self.namespace, hashes, buffers)
        except NotFound:
            return 0
        except KvStoreError as e:
            log.warning("kvstore get failed: %s", e)
            return None

    def _declare(self) -> None:
        if not self._declared:
            self.client.declare_namespace(self.namespace, Layout.for_bytes(self.block_bytes), model=self.namespace,
                                          hash_scheme="vllm:sha256", hash_seed="0")
            self._declared = True

    def _data_path(self):
        if self._path is None:
            self._path = data_path(self.client, self._local)
        return self._path


def _base_contains_lists() -> bool:
    """Whether the installed RemoteConnector's batched_contains is the older one answering one bool per key."""
    try:
        return "stop_after_first_not_exits" in inspect.signature(RemoteConnector.batched_contains).parameters
    except (AttributeError, TypeError, ValueError):
        return False


def _service_url(url, where: str) -> urllib.parse.SplitResult:
    """kvstore's address in ``kvstore://host[:port][/namespace]``."""
    parsed = urllib.parse.urlsplit(url or "")
    if not url or not url.startswith(SCHEME) or not parsed.hostname:
        raise ValueError(f"kvstore's LMCache connector needs {where} set to kvstore://host:port[/namespace], "
                         f"not {url!r}")
    return parsed


def _give_back(read) -> None:
    """Drops the memory objects of a get nobody waits for any more."""
    if read.cancelled() or read.exception() is not None:
        return
    for obj in read.result():
        if obj is not None:
            obj.ref_count_down()


def _shape(dims):
    try:
        import torch  # inside LMCache

        return torch.Size(dims)
    except ImportError:
        return tuple(dims)


def _dtype(name: str):
    try:
        import torch

        if name.startswith("torch."):
            return getattr(torch, name[len("torch."):])
    except ImportError:
        pass
    return name


def _fmt(value: int):
    try:
        from lmcache.v1.memory_management import MemoryFormat

        return MemoryFormat(value)
    except (ImportError, ValueError):
        return value
