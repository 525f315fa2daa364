"""kvstore.lmcache driven as LMCache drives a remote storage plugin (LMCache/LMCache 0109660c connector
package, 01712fbd base_connector): the adapter named by remote_storage_plugin.<name>.module_path /
class_name creates the connector for a kvstore:// URL; the async exists/get/put/batched calls are awaited
on LMCache's event loop; get answers a memory object allocated from the local CPU backend, or None."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import engines  # noqa: F401
import numpy as np
import pytest

from kvstore import KvStoreUnavailable
from lmcache.v1.memory_management import MemoryFormat, TensorMemoryObj
from lmcache.v1.storage_backend.connector import create_plugin_connector

CHUNK_TOKENS, LAYERS, HIDDEN = 16, 2, 256
SHAPE = (2, LAYERS, CHUNK_TOKENS, HIDDEN)  # KV_2LTD
DTYPE = "torch.float16"


class Key:
    """A CacheEngineKey's identity as LMCache prints it."""

    def __init__(self, chunk_hash: int, model="test/model"):
        self.chunk_hash, self.model = chunk_hash, model

    def to_string(self):
        return f"vllm@{self.model}@1@0@{self.chunk_hash:x}@half"


class LocalCPUBackend:
    def get_full_chunk_size_bytes(self):
        return int(np.prod(SHAPE)) * 2

    def allocate(self, shape, dtype, fmt):
        return TensorMemoryObj(shape, dtype, fmt)


class Config:
    def __init__(self):
        self.remote_storage_plugins = ["kvstore"]
        self.extra_config = {
            "remote_storage_plugin.kvstore.module_path": "kvstore.lmcache",
            "remote_storage_plugin.kvstore.class_name": "KvStoreConnectorAdapter",
        }


def chunk(seed, tokens=CHUNK_TOKENS):
    obj = TensorMemoryObj((2, LAYERS, tokens, HIDDEN), DTYPE, MemoryFormat.KV_2LTD)
    obj._buf[:] = np.random.default_rng(seed).integers(0, 256, obj._buf.nbytes, dtype=np.uint8)
    return obj


@pytest.fixture
def loop():
    lp = asyncio.new_event_loop()
    yield lp
    lp.close()


def connector(url, loop):
    return create_plugin_connector(url, loop, LocalCPUBackend(), Config(), None)


def test_chunks_round_trip_byte_exact_with_shape_dtype_and_format(service, ns, loop):
    c = connector(f"kvstore://127.0.0.1:{service.port}/{ns}", loop)
    keys = [Key(i) for i in range(20)]
    objs = [chunk(i) for i in range(20)]
    loop.run_until_complete(c.batched_put(keys, objs))
    assert loop.run_until_complete(c.batched_async_contains("l1", keys + [Key(999)])) == 20
    got = loop.run_until_complete(c.batched_get(keys))
    for want, have in zip(objs, got):
        assert have.metadata.shape == want.metadata.shape and have.metadata.dtype == DTYPE
        assert have.metadata.fmt == MemoryFormat.KV_2LTD
        assert bytes(have.byte_array) == bytes(want.byte_array)
    assert loop.run_until_complete(c.exists(keys[3])) and c.exists_sync(keys[4])
    assert not c.exists_sync(Key(999))
    assert loop.run_until_complete(c.get(Key(999))) is None
    assert sorted(loop.run_until_complete(c.list())) == sorted(k.to_string() for k in keys)
    assert c._data_path().kind == "shm"
    loop.run_until_complete(c.close())


def test_a_scheduler_connector_without_a_cpu_backend_answers_what_the_workers_stored(service, ns, loop):
    """LMCache creates connectors in its scheduler role too, with no local CPU backend (None, wrapped as
    SafeLocalCPUBackend, which cannot tell a chunk's size): that connector only asks what is stored."""
    url = f"kvstore://127.0.0.1:{service.port}/{ns}"
    scheduler = create_plugin_connector(url, loop, None, Config(), None)
    keys = [Key(i) for i in range(6)]
    assert loop.run_until_complete(scheduler.batched_async_contains("l0", keys)) == 0  # nothing declared yet
    worker = connector(url, loop)
    loop.run_until_complete(worker.batched_put(keys[:4], [chunk(i) for i in range(4)]))
    assert loop.run_until_complete(scheduler.batched_async_contains("l1", keys)) == 4
    assert scheduler.exists_sync(keys[3]) and not scheduler.exists_sync(keys[4])
    assert scheduler.batched_contains(keys) == [True] * 4 + [False] * 2
    for c in (scheduler, worker):
        loop.run_until_complete(c.close())


def test_list_names_every_chunk_in_kvstore_not_only_this_connectors(service, ns, loop):
    url = f"kvstore://127.0.0.1:{service.port}/{ns}"
    first, second = connector(url, loop), connector(url, loop)
    assert loop.run_until_complete(first.list()) == []  # nothing declared yet
    mine = [Key(i) for i in range(30)]
    theirs = [Key(1000 + i, model="other/model") for i in range(5)]
    loop.run_until_complete(first.batched_put(mine, [chunk(i) for i in range(30)]))
    loop.run_until_complete(second.batched_put(theirs, [chunk(i) for i in range(5)]))
    assert first.remove_sync(mine[7])
    want = sorted(k.to_string() for k in mine[:7] + mine[8:] + theirs)
    assert sorted(loop.run_until_complete(first.list())) == want  # read and named from kvstore
    restarted = connector(url, loop)  # LMCache restarted: knows nothing, lists all
    assert sorted(loop.run_until_complete(restarted.list())) == want
    assert not restarted.exists_sync(mine[7])
    for c in (first, second, restarted):
        loop.run_until_complete(c.close())


def test_a_partial_last_chunk_is_stored_and_comes_back_with_its_own_shape(service, ns, loop):
    c = connector(f"kvstore://127.0.0.1:{service.port}/{ns}", loop)
    part = chunk(5, tokens=7)
    loop.run_until_complete(c.put(Key(1), part))
    got = loop.run_until_complete(c.get(Key(1)))
    assert got.metadata.shape == (2, LAYERS, 7, HIDDEN)
    assert bytes(got.byte_array) == bytes(part.byte_array)
    assert c.remove_sync(Key(1)) and not c.exists_sync(Key(1))
    loop.run_until_complete(c.close())


def test_the_event_loop_keeps_running_while_kvstore_is_stalled(fresh_service, ns, loop):
    c = connector(f"kvstore://127.0.0.1:{fresh_service.port}/{ns}", loop)
    loop.run_until_complete(c.put(Key(1), chunk(1)))
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
        got = loop.run_until_complete(scenario())
    finally:
        os.kill(fresh_service.proc.pid, signal.SIGCONT)
    assert len(ticks) == 20
    assert got is not None and bytes(got.byte_array) == bytes(chunk(1).byte_array)
    loop.run_until_complete(c.close())


def test_an_unreachable_service_is_none_and_misses(ns, loop):
    from service import free_port

    c = connector(f"kvstore://127.0.0.1:{free_port()}/{ns}", loop)
    assert loop.run_until_complete(c.get(Key(1))) is None
    assert loop.run_until_complete(c.batched_async_contains("x", [Key(1)])) == 0
    with pytest.raises(KvStoreUnavailable):  # LMCache's remote backend logs a failed put and goes on
        loop.run_until_complete(c.put(Key(1), chunk(1)))
    loop.run_until_complete(c.close())


def test_close_releases_the_data_paths_threads(service, ns, loop):
    import threading

    before = set(threading.enumerate())
    c = connector(f"kvstore://127.0.0.1:{service.port}/{ns}", loop)
    loop.run_until_complete(c.put(Key(1), chunk(1)))
    assert c._data_path().kind == "shm"
    loop.run_until_complete(c.close())
    for t in set(threading.enumerate()) - before:
        if t.name.startswith(("kvstore-control", "kvstore-lmc")):
            t.join(timeout=5)
    assert [t.name for t in set(threading.enumerate()) - before if t.name.startswith("kvstore-control")] == []


class _Tracking(LocalCPUBackend):
    """LMCache's CPU backend, keeping every memory object it allocated (to check their reference counts)."""

    def __init__(self):
        super().__init__()
        self.allocated = []

    def allocate(self, shape, dtype, fmt):
        obj = super().allocate(shape, dtype, fmt)
        self.allocated.append(obj)
        return obj


def test_a_get_lmcache_gave_up_on_hands_its_memory_objects_back(fresh_service, ns):
    """RemoteBackend.batched_get_blocking waits blocking_timeout_secs for the coroutine, then cancels it; the
    chunks read after that must not stay allocated from LMCache's CPU pool."""
    import asyncio as aio
    import threading

    lp = aio.new_event_loop()
    thread = threading.Thread(target=lp.run_forever, daemon=True)  # LMCache's loop runs on its own thread
    thread.start()
    tracking = _Tracking()
    allocated = tracking.allocated

    c = create_plugin_connector(f"kvstore://127.0.0.1:{fresh_service.port}/{ns}", lp, tracking, Config(), None)
    try:
        aio.run_coroutine_threadsafe(c.batched_put([Key(1), Key(2)], [chunk(1), chunk(2)]), lp).result(30)
        os.kill(fresh_service.proc.pid, signal.SIGSTOP)
        time.sleep(0.5)
        try:
            future = aio.run_coroutine_threadsafe(c.batched_get([Key(1), Key(2)]), lp)
            with pytest.raises(Exception):  # concurrent.futures.TimeoutError
                future.result(1)
            future.cancel()
        finally:
            os.kill(fresh_service.proc.pid, signal.SIGCONT)
        deadline = time.monotonic() + 15  # the read finishes on the pool meanwhile
        while time.monotonic() < deadline and not (len(allocated) == 2 and all(o.get_ref_count() == 0 for o in allocated)):
            time.sleep(0.05)
        assert len(allocated) == 2 and [o.get_ref_count() for o in allocated] == [0, 0]
    finally:
        aio.run_coroutine_threadsafe(c.close(), lp).result(60)
        lp.call_soon_threadsafe(lp.stop)
        thread.join(10)


def test_a_chunk_that_is_not_lmcaches_is_none_and_the_others_still_come(service, ns, loop):
    import kvstore
    from kvstore.lmcache import key_hash

    tracking = _Tracking()
    allocated = tracking.allocated

    c = create_plugin_connector(f"kvstore://127.0.0.1:{service.port}/{ns}", loop, tracking, Config(), None)
    loop.run_until_complete(c.put(Key(1), chunk(1)))
    # another writer of the namespace stored a block under the second chunk's hash that has no chunk header
    kvstore.KvStoreClient(service.url).store(ns, [kvstore.Block(key_hash(Key(2)), np.zeros(c.block_bytes, np.uint8))])
    got = loop.run_until_complete(c.batched_get([Key(1), Key(2)]))
    assert got[1] is None and bytes(got[0].byte_array) == bytes(chunk(1).byte_array)
    assert [o.get_ref_count() for o in allocated] == [1]  # only what was handed over is allocated
    loop.run_until_complete(c.close())
