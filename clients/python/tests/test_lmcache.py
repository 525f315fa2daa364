"""kvstore.lmcache driven as LMCache drives a remote storage plugin, through stand-ins of LMCache's interface
(tests/standins/lmcache; their docstrings name the upstream versions: the connector package as at
LMCache/LMCache 0109660c, the rest as in LMCache main read on 2026-11-28, where the index named no commit).

Plugin mode, the configuration of current LMCache: CreateStorageBackends makes one RemoteBackend per
``remote_storage_plugins`` entry, whose connector is created for the URL ``plugin://<entry>`` with
``plugin_name`` set, by the adapter that ``remote_storage_plugin.<entry>.module_path`` / ``class_name`` name,
and wrapped in an InstrumentedRemoteConnector; the service is ``remote_storage_plugin.<entry>.url``. Legacy
mode (older LMCache): the backend of ``remote_url: kvstore://host:port/ns``, with no plugin name. The async
calls run on LMCache's event loop, on a thread of its own; get answers a memory object allocated from the
local CPU backend, or None."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import textwrap
import threading
import time
import urllib.parse
import uuid
from pathlib import Path

import engines  # noqa: F401
import numpy as np
import pytest

import kvstore
from kvstore import KvStoreUnavailable
from lmcache.v1.config import LMCacheEngineConfig
from lmcache.v1.memory_management import MemoryFormat, TensorMemoryObj
from lmcache.v1.metadata import LMCacheMetadata
from lmcache.v1.storage_backend import CreateStorageBackends
from lmcache.v1.storage_backend.connector import CreateConnector
from lmcache.v1.storage_backend.connector.base_connector import RemoteConnector
from lmcache.v1.storage_backend.remote_backend import RemoteBackend
from lmcache.v1.storage_backend.storage_manager import StorageManager

CHUNK_TOKENS, LAYERS, HEADS, HEAD_SIZE = 16, 2, 4, 64
HIDDEN = HEADS * HEAD_SIZE
SHAPE = (2, LAYERS, CHUNK_TOKENS, HIDDEN)  # KV_2LTD
DTYPE = "torch.float16"
ADAPTER = {"module_path": "kvstore.lmcache", "class_name": "KvStoreConnectorAdapter"}


class Key:
    """A CacheEngineKey's identity as LMCache prints it."""

    def __init__(self, chunk_hash: int, model="test/model"):
        self.chunk_hash, self.model = chunk_hash, model

    def to_string(self):
        return f"vllm@{self.model}@1@0@{self.chunk_hash:x}@half"


class LocalCPUBackend:
    """LMCache's local CPU backend, keeping every memory object it allocated (to check reference counts)."""

    def __init__(self):
        self.allocated = []

    def get_full_chunk_size_bytes(self):
        return int(np.prod(SHAPE)) * 2

    def allocate(self, shape, dtype, fmt):
        obj = TensorMemoryObj(shape, dtype, fmt)
        self.allocated.append(obj)
        return obj


def metadata(role=None):
    return LMCacheMetadata("test/model", 1, 0, DTYPE, (LAYERS, 2, CHUNK_TOKENS, HEADS, HEAD_SIZE), role=role,
                           chunk_size=CHUNK_TOKENS)


def plugin_config(urls: dict) -> LMCacheEngineConfig:
    """Plugin mode: one remote_storage_plugins entry per {plugin name: kvstore URL} (a URL of None: no url key)."""
    extra = {}
    for name, url in urls.items():
        extra.update({f"remote_storage_plugin.{name}.{k}": v for k, v in ADAPTER.items()})
        if url is not None:
            extra[f"remote_storage_plugin.{name}.url"] = url
    return LMCacheEngineConfig(remote_storage_plugins=list(urls), extra_config=extra)


def legacy_config(url) -> LMCacheEngineConfig:
    """Legacy mode: the backend is remote_url's; remote_storage_plugins only has the adapter loaded."""
    extra = {f"remote_storage_plugin.kvstore.{k}": v for k, v in ADAPTER.items()}
    return LMCacheEngineConfig(remote_url=url, remote_storage_plugins=["kvstore"], extra_config=extra)


class Loop:
    """LMCache's event loop, running on a thread of its own as in LMCache."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro, timeout=60):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def lmc():
    lp = Loop()
    yield lp
    lp.close()


def kv_url(service_or_port, ns):
    port = getattr(service_or_port, "port", service_or_port)
    return f"kvstore://127.0.0.1:{port}/{ns}"


def connector(url, lmc, cpu=None, name="kvstore", md="default"):
    """A plugin-mode connector, created as RemoteBackend creates it (InstrumentedRemoteConnector-wrapped)."""
    return CreateConnector(f"plugin://{name}", lmc.loop, cpu or LocalCPUBackend(), plugin_config({name: url}),
                           metadata() if md == "default" else md, plugin_name=name)


def legacy_connector(url, lmc, cpu=None, md="default"):
    return CreateConnector(url, lmc.loop, cpu or LocalCPUBackend(), legacy_config(url),
                           metadata() if md == "default" else md)


def remote_backend(mode, url, lmc, cpu):
    """The RemoteBackend LMCache makes in either mode."""
    if mode == "plugin":
        (backend,) = CreateStorageBackends(plugin_config({"kvstore": url}), metadata(), lmc.loop, cpu).values()
        return backend
    return RemoteBackend(legacy_config(url), metadata(), lmc.loop, cpu)


def chunk(seed, tokens=CHUNK_TOKENS):
    obj = TensorMemoryObj((2, LAYERS, tokens, HIDDEN), DTYPE, MemoryFormat.KV_2LTD)
    obj._buf[:] = np.random.default_rng(seed).integers(0, 256, obj._buf.nbytes, dtype=np.uint8)
    return obj


def counting_loads(c):
    """Counts the data-path loads of connector ``c`` (the wrapped one)."""
    path = c._data_path()
    calls = []
    load = path.load

    def counted(*args, **kwargs):
        calls.append(len(args[1]))
        return load(*args, **kwargs)

    path.load = counted
    return calls


# ------------------------------------------------------------------ configuration


def _config_blocks(text):
    """The YAML configurations in ``text`` that list remote_storage_plugins (fenced, or reST literal blocks)."""
    fenced = re.findall(r"```yaml\n(.*?)```", text, re.S)
    literal = [textwrap.dedent(m) for m in re.findall(r"::\n\n((?:(?: {4}.*)?\n)+)", text)]
    return [b for b in fenced + literal if "remote_storage_plugins" in b]


def test_the_documented_configuration_makes_one_remote_backend_that_stores_in_kvstore(service, ns, lmc):
    """README.md and kvstore.lmcache's docstring give the plugin-mode configuration; loaded as current LMCache
    loads it, it makes exactly one remote backend (a remote_url beside it would make a second), and that
    backend's connector reaches kvstore."""
    yaml = pytest.importorskip("yaml")
    import kvstore.lmcache

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    for where, text in (("kvstore.lmcache", kvstore.lmcache.__doc__), ("README.md", readme)):
        blocks = _config_blocks(text)
        assert len(blocks) == 1, f"{where}: {len(blocks)} LMCache configurations"
        conf = yaml.safe_load(blocks[0])
        assert "remote_url" not in conf, f"{where}: remote_url makes a second remote backend"
        assert conf.get("max_local_cpu_size", 0) > 0, f"{where}: a plugin backend needs the local CPU backend"
        extra = dict(conf["extra_config"])
        (name,) = conf["remote_storage_plugins"]
        documented = urllib.parse.urlsplit(extra[f"remote_storage_plugin.{name}.url"])
        assert documented.scheme == "kvstore" and documented.port and documented.path.strip("/"), where
        extra[f"remote_storage_plugin.{name}.url"] = kv_url(service, ns)  # the test's kvstore
        config = LMCacheEngineConfig(remote_url=conf.get("remote_url"), remote_storage_plugins=[name],
                                     extra_config=extra)
        backends = CreateStorageBackends(config, metadata(), lmc.loop, LocalCPUBackend())
        assert list(backends) == [f"RemoteBackend-{name}"], where
        backend = backends[f"RemoteBackend-{name}"]
        assert backend.connection is not None, f"{where}: the plugin's backend has no connector"
        keys = [Key(i, model=where) for i in range(3)]
        backend.batched_submit_put_task(keys, [chunk(i) for i in range(3)]).result(30)
        assert StorageManager(backends).batched_contains(keys) == (3, {f"RemoteBackend-{name}": keys})
        backend.close()


def test_each_kvstore_plugin_entry_is_a_backend_with_the_service_its_url_names(service, lmc):
    """remote_storage_plugins ["kvstore.a", "kvstore.b"]: two backends of type kvstore, each storing in the
    namespace of its own remote_storage_plugin.<entry>.url."""
    ns_a, ns_b = (f"py-{uuid.uuid4().hex[:12]}" for _ in range(2))
    config = plugin_config({"kvstore.a": kv_url(service, ns_a), "kvstore.b": kv_url(service, ns_b)})
    backends = CreateStorageBackends(config, metadata(), lmc.loop, LocalCPUBackend())
    assert sorted(backends) == ["RemoteBackend-kvstore.a", "RemoteBackend-kvstore.b"]
    assert all(b.connection is not None for b in backends.values())
    keys = [Key(i) for i in range(4)]
    backends["RemoteBackend-kvstore.a"].batched_submit_put_task(keys, [chunk(i) for i in range(4)]).result(30)
    assert StorageManager(backends).batched_contains(keys) == (4, {"RemoteBackend-kvstore.a": keys})
    client = kvstore.KvStoreClient(service.url)
    assert len(list(client.list_blocks(ns_a))) == 4
    with pytest.raises(kvstore.NotFound):  # nothing stored in b's namespace: never declared
        client.namespace(ns_b)
    client.close()
    for b in backends.values():
        b.close()


def test_a_plugin_without_a_url_fails_naming_the_key_it_needs(lmc, caplog):
    with pytest.raises(ValueError, match=re.escape("remote_storage_plugin.kvstore.url")):
        connector(None, lmc)
    with pytest.raises(ValueError, match=r"kvstore://"):
        connector("http://127.0.0.1:8080/ns", lmc)  # not a kvstore:// URL
    (backend,) = CreateStorageBackends(plugin_config({"kvstore": None}), metadata(), lmc.loop,
                                       LocalCPUBackend()).values()
    assert backend.connection is None
    assert "remote_storage_plugin.kvstore.url" in caplog.text  # what LMCache's log shows


# ------------------------------------------------------------------ lookups and loads as LMCache makes them


@pytest.mark.parametrize("mode", ["plugin", "legacy"])
def test_a_lookup_counts_the_chunks_kvstore_holds_as_a_prefix(service, ns, lmc, mode):
    """StorageManager slices the keys with each backend's batched_contains answer: it must be a count."""
    backend = remote_backend(mode, kv_url(service, ns), lmc, LocalCPUBackend())
    keys = [Key(i) for i in range(6)]
    backend.batched_submit_put_task([keys[i] for i in (0, 1, 2, 3, 5)], [chunk(i) for i in range(5)]).result(30)
    name = "RemoteBackend-kvstore" if mode == "plugin" else "RemoteBackend"
    assert StorageManager({name: backend}).batched_contains(keys) == (4, {name: keys[:4]})
    assert backend.connection.batched_contains(keys) == 4
    assert lmc.run(backend.batched_async_contains("l1", keys)) == 4
    backend.close()


@pytest.mark.parametrize("mode", ["plugin", "legacy"])
def test_a_prefetch_loads_the_stored_prefix_at_once_and_allocates_nothing_past_a_miss(service, ns, lmc, mode):
    """LMCache's async loading: batched_async_contains, then batched_get_non_blocking on that many keys, whose
    answer is the leading chunks only (no None). A chunk removed meanwhile ends the prefix; nothing after it is
    read or allocated from LMCache's CPU pool."""
    cpu = LocalCPUBackend()
    backend = remote_backend(mode, kv_url(service, ns), lmc, cpu)
    keys = [Key(i) for i in range(6)]
    objs = [chunk(i) for i in range(6)]
    want = [bytes(o.byte_array) for o in objs]
    backend.batched_submit_put_task(keys, objs).result(30)
    loads = counting_loads(backend.connection.getWrappedConnector())

    got = lmc.run(StorageManager({"kv": backend}).async_lookup_and_prefetch("l1", keys))
    assert [k for k, _ in got] == keys and [bytes(o.byte_array) for _, o in got] == want
    assert len(loads) == 1 and len(cpu.allocated) == 6

    assert backend.connection.getWrappedConnector().remove_sync(keys[3])  # evicted after the lookup
    del loads[:], cpu.allocated[:]
    got = lmc.run(backend.batched_get_non_blocking("l2", keys))
    assert [bytes(o.byte_array) for o in got] == want[:3]
    assert len(loads) == 1
    assert [o.get_ref_count() for o in cpu.allocated] == [1, 1, 1]  # the three handed over, nothing else
    backend.close()


def test_on_a_base_whose_batched_contains_still_has_stop_after_first_not_exits_it_answers_a_list(
        service, ns, lmc, monkeypatch):
    """Older LMCache (base_connector at 01712fbd: no __init__, batched_contains(keys, stop_after_first_not_exits)
    -> List[bool], legacy remote_url): the connector answers in that shape."""

    def old_batched_contains(self, keys, stop_after_first_not_exits: bool = True):
        raise NotImplementedError

    monkeypatch.setattr(RemoteConnector, "batched_contains", old_batched_contains)
    monkeypatch.delattr(RemoteConnector, "__init__")
    c = legacy_connector(kv_url(service, ns), lmc, md=None).getWrappedConnector()
    keys = [Key(i) for i in range(6)]
    lmc.run(c.batched_put([keys[i] for i in (0, 1, 2, 3, 5)], [chunk(i) for i in range(5)]))
    assert c.batched_contains(keys) == [True] * 4 + [False] * 2
    assert c.batched_contains(keys, False) == [True] * 4 + [False, True]
    lmc.run(c.close())


# ------------------------------------------------------------------ what LMCache reads off a connector


def test_the_connector_carries_lmcaches_chunk_metadata_for_the_health_check(service, ns, lmc):
    """RemoteBackendHealthCheck, recovering a failed backend, reads meta_shapes / meta_dtypes / meta_fmt off the
    connector (RemoteConnector.__init__ sets them) to put a chunk, checks it exists and gets it back."""
    cpu = LocalCPUBackend()
    backend = remote_backend("plugin", kv_url(service, ns), lmc, cpu)
    c = backend.connection.getWrappedConnector()
    md = metadata()
    assert c.meta_shapes == md.get_shapes() and c.meta_dtypes == md.get_dtypes()
    assert c.meta_fmt == MemoryFormat.KV_2LTD
    assert c.full_chunk_size_bytes == cpu.get_full_chunk_size_bytes()
    probe = cpu.allocate(c.meta_shapes[0], c.meta_dtypes[0], c.meta_fmt)
    probe._buf[:] = 7
    backend.batched_submit_put_task([Key(0, model="test")], [probe]).result(30)
    assert backend.contains(Key(0, model="test"))
    assert bytes(backend.get_blocking(Key(0, model="test")).byte_array) == bytes(probe.byte_array)
    backend.close()


def test_without_lmcache_metadata_or_on_an_older_base_without_init_the_connector_still_works(
        service, ns, lmc, monkeypatch):
    for c in (connector(kv_url(service, ns), lmc, md=None), legacy_connector(kv_url(service, ns), lmc, md=None)):
        lmc.run(c.put(Key(1), chunk(1)))
        assert bytes(lmc.run(c.get(Key(1))).byte_array) == bytes(chunk(1).byte_array)
        lmc.run(c.close())
    monkeypatch.delattr(RemoteConnector, "__init__")  # older LMCache: nothing to call
    c = legacy_connector(kv_url(service, ns), lmc)
    assert lmc.run(c.batched_async_contains("l", [Key(1), Key(2)])) == 1
    lmc.run(c.close())


def test_ping_answers_0_while_the_service_answers_and_not_once_it_is_gone(fresh_service, ns, lmc):
    c = connector(kv_url(fresh_service, ns), lmc)
    assert c.support_ping()
    assert lmc.run(c.ping()) == 0  # nothing declared yet: the service answers all the same
    lmc.run(c.put(Key(1), chunk(1)))
    assert lmc.run(c.ping()) == 0
    fresh_service.stop()
    assert lmc.run(c.ping()) != 0
    lmc.run(c.close())


# ------------------------------------------------------------------ chunks


@pytest.mark.parametrize("mode", ["plugin", "legacy"])
def test_chunks_round_trip_byte_exact_with_shape_dtype_and_format(service, ns, lmc, mode):
    url = kv_url(service, ns)
    c = connector(url, lmc) if mode == "plugin" else legacy_connector(url, lmc)
    keys = [Key(i) for i in range(20)]
    objs = [chunk(i) for i in range(20)]
    want = [bytes(o.byte_array) for o in objs]
    lmc.run(c.batched_put(keys, objs))
    assert [o.get_ref_count() for o in objs] == [0] * 20  # LMCache's wrapper dropped them once, nobody else
    assert lmc.run(c.batched_async_contains("l1", keys + [Key(999)])) == 20
    got = lmc.run(c.batched_get(keys))
    for data, have in zip(want, got):
        assert have.metadata.shape == SHAPE and have.metadata.dtype == DTYPE
        assert have.metadata.fmt == MemoryFormat.KV_2LTD
        assert bytes(have.byte_array) == data
    assert lmc.run(c.exists(keys[3])) and c.exists_sync(keys[4])
    assert not c.exists_sync(Key(999))
    assert lmc.run(c.get(Key(999))) is None
    assert sorted(lmc.run(c.list())) == sorted(k.to_string() for k in keys)
    assert c.getWrappedConnector()._data_path().kind == "shm"
    lmc.run(c.close())


def test_a_scheduler_connector_without_a_cpu_backend_answers_what_the_workers_stored(service, ns, lmc):
    """The scheduler role has no local CPU backend (None, wrapped as SafeLocalCPUBackend, which cannot tell a
    chunk's size). Current LMCache asserts a CPU backend for plugin backends, so only the legacy remote_url
    backend is made there: its connector only asks what is stored."""
    url = kv_url(service, ns)
    scheduler = RemoteBackend(legacy_config(url), metadata(role="scheduler"), lmc.loop, None)
    assert scheduler.connection is not None
    keys = [Key(i) for i in range(6)]
    assert lmc.run(scheduler.batched_async_contains("l0", keys)) == 0  # nothing declared yet
    worker = remote_backend("plugin", url, lmc, LocalCPUBackend())
    worker.batched_submit_put_task(keys[:4], [chunk(i) for i in range(4)]).result(30)
    assert lmc.run(scheduler.batched_async_contains("l1", keys)) == 4
    assert scheduler.contains(keys[3]) and not scheduler.contains(keys[4])
    assert StorageManager({"RemoteBackend": scheduler}).batched_contains(keys) == (4, {"RemoteBackend": keys[:4]})
    for b in (scheduler, worker):
        b.close()


def test_list_names_every_chunk_in_kvstore_not_only_this_connectors(service, ns, lmc):
    url = kv_url(service, ns)
    first, second = connector(url, lmc), connector(url, lmc)
    assert lmc.run(first.list()) == []  # nothing declared yet
    mine = [Key(i) for i in range(30)]
    theirs = [Key(1000 + i, model="other/model") for i in range(5)]
    lmc.run(first.batched_put(mine, [chunk(i) for i in range(30)]))
    lmc.run(second.batched_put(theirs, [chunk(i) for i in range(5)]))
    assert first.remove_sync(mine[7])
    want = sorted(k.to_string() for k in mine[:7] + mine[8:] + theirs)
    assert sorted(lmc.run(first.list())) == want  # read and named from kvstore
    restarted = connector(url, lmc)  # LMCache restarted: knows nothing, lists all
    assert sorted(lmc.run(restarted.list())) == want
    assert not restarted.exists_sync(mine[7])
    for c in (first, second, restarted):
        lmc.run(c.close())


def test_a_partial_last_chunk_is_stored_and_comes_back_with_its_own_shape(service, ns, lmc):
    c = connector(kv_url(service, ns), lmc)
    part = chunk(5, tokens=7)
    lmc.run(c.put(Key(1), part))
    got = lmc.run(c.get(Key(1)))
    assert got.metadata.shape == (2, LAYERS, 7, HIDDEN)
    assert bytes(got.byte_array) == bytes(chunk(5, tokens=7).byte_array)
    assert c.remove_sync(Key(1)) and not c.exists_sync(Key(1))
    lmc.run(c.close())


def test_the_event_loop_keeps_running_while_kvstore_is_stalled(fresh_service, ns, lmc):
    c = connector(kv_url(fresh_service, ns), lmc)
    lmc.run(c.put(Key(1), chunk(1)))
    ticks = []

    async def ticker():
        for _ in range(20):
            ticks.append(time.monotonic())
            await asyncio.sleep(0.05)

    async def scenario():
        os.kill(fresh_service.proc.pid, signal.SIGSTOP)
        get = asyncio.ensure_future(c.get(Key(1)))
        await ticker()  # the loop runs while the get waits on the frozen service
        os.kill(fresh_service.proc.pid, signal.SIGCONT)
        return await get

    try:
        got = lmc.run(scenario())
    finally:
        os.kill(fresh_service.proc.pid, signal.SIGCONT)
    assert len(ticks) == 20
    assert got is not None and bytes(got.byte_array) == bytes(chunk(1).byte_array)
    lmc.run(c.close())


def test_an_unreachable_service_is_none_and_misses(ns, lmc):
    from service import free_port

    c = connector(kv_url(free_port(), ns), lmc)
    assert lmc.run(c.get(Key(1))) is None
    assert lmc.run(c.batched_async_contains("x", [Key(1)])) == 0
    assert lmc.run(c.batched_get_non_blocking("x", [Key(1)])) == []
    assert c.batched_contains([Key(1)]) == 0
    with pytest.raises(KvStoreUnavailable):  # LMCache's remote backend logs a failed put and goes on
        lmc.run(c.put(Key(1), chunk(1)))
    lmc.run(c.close())


def test_close_releases_the_data_paths_threads(service, ns, lmc):
    before = set(threading.enumerate())
    c = connector(kv_url(service, ns), lmc)
    lmc.run(c.put(Key(1), chunk(1)))
    assert c.getWrappedConnector()._data_path().kind == "shm"
    lmc.run(c.close())
    for t in set(threading.enumerate()) - before:
        if t.name.startswith(("kvstore-control", "kvstore-lmc")):
            t.join(timeout=5)
    assert [t.name for t in set(threading.enumerate()) - before if t.name.startswith("kvstore-control")] == []


@pytest.mark.parametrize("call", ["batched_get", "batched_get_non_blocking"])
def test_a_get_lmcache_gave_up_on_hands_its_memory_objects_back(fresh_service, ns, lmc, call):
    """RemoteBackend waits blocking_timeout_secs for batched_get (and batched_get_non_blocking), then cancels
    it; the chunks read after that must not stay allocated from LMCache's CPU pool."""
    cpu = LocalCPUBackend()
    c = connector(kv_url(fresh_service, ns), lmc, cpu)
    keys = [Key(1), Key(2)]
    lmc.run(c.batched_put(keys, [chunk(1), chunk(2)]))
    read = c.batched_get(keys) if call == "batched_get" else c.batched_get_non_blocking("l", keys)
    os.kill(fresh_service.proc.pid, signal.SIGSTOP)
    time.sleep(0.5)
    try:
        future = asyncio.run_coroutine_threadsafe(read, lmc.loop)
        with pytest.raises(Exception):  # concurrent.futures.TimeoutError
            future.result(1)
        future.cancel()
    finally:
        os.kill(fresh_service.proc.pid, signal.SIGCONT)
    deadline = time.monotonic() + 15  # the read finishes on the pool meanwhile
    while time.monotonic() < deadline and not (len(cpu.allocated) == 2
                                               and all(o.get_ref_count() == 0 for o in cpu.allocated)):
        time.sleep(0.05)
    assert [o.get_ref_count() for o in cpu.allocated] == [0, 0]
    lmc.run(c.close())


def test_a_chunk_that_is_not_lmcaches_is_none_and_the_others_still_come(service, ns, lmc):
    from kvstore.lmcache import key_hash

    cpu = LocalCPUBackend()
    c = connector(kv_url(service, ns), lmc, cpu)
    lmc.run(c.put(Key(1), chunk(1)))
    # another writer of the namespace stored a block under the second chunk's hash that has no chunk header
    block = np.zeros(c.getWrappedConnector().block_bytes, np.uint8)
    kvstore.KvStoreClient(service.url).store(ns, [kvstore.Block(key_hash(Key(2)), block)])
    got = lmc.run(c.batched_get([Key(1), Key(2)]))
    assert got[1] is None and bytes(got[0].byte_array) == bytes(chunk(1).byte_array)
    assert [o.get_ref_count() for o in cpu.allocated] == [1]  # only what was handed over is allocated
    got = lmc.run(c.batched_get_non_blocking("l", [Key(1), Key(2), Key(1)]))
    assert [bytes(o.byte_array) for o in got] == [bytes(chunk(1).byte_array)]
    assert [o.get_ref_count() for o in cpu.allocated] == [1, 1]
    lmc.run(c.close())

