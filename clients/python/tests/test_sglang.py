"""kvstore.sglang driven as SGLang's HiCache drives an L3 backend (sgl-project/sglang
001067fffe33427bee0ed2f007fb7551a1d76b44): created by StorageBackendFactory's dynamic path as
``cls(storage_config, kwargs)``, given the host pool with ``register_mem_pool_host``, then the cache
controller's zero-copy calls: ``batch_exists`` for the prefetch query, ``batch_get_v1`` /
``batch_set_v1`` with host token indices, using only the leading successes of a get; for hybrid models the
side pools' multi-pool calls (``register_mem_host_pool_v2``, ``batch_exists_v2``, ``batch_get_v2`` /
``batch_set_v2`` with ``PoolTransfer``s)."""

from __future__ import annotations

import hashlib
import importlib

import engines  # noqa: F401
import numpy as np
import pytest

from sglang.srt.mem_cache.hicache_storage import (
    HiCacheStorage,
    HiCacheStorageConfig,
    HiCacheStorageExtraInfo,
    PoolHitPolicy,
    PoolName,
    PoolTransfer,
    count_pool_hits,
)

import kvstore

PAGE, LAYERS, HEADS, DIM = 16, 2, 2, 64  # fp16 -> each page's K and V are 8 KiB


class HostPool:
    """An MHA host pool in page_first layout: kv_buffer (2, tokens, layers, heads, dim); a page's buffers
    are its K run and its V run, as get_page_buffer_meta reports them."""

    layout = "page_first"
    page_size = PAGE

    def __init__(self, tokens=64 * PAGE):
        self.size = tokens
        self.kv_buffer = np.zeros((2, tokens, LAYERS, HEADS, DIM), dtype=np.float16)

    def _per_token(self):
        return LAYERS * HEADS * DIM * 2

    def get_page_buffer_meta(self, indices):
        idx = list(indices.tolist())
        assert len(idx) % PAGE == 0
        base = self.kv_buffer.__array_interface__["data"][0]
        v_off = self.size * self._per_token()
        ptrs = []
        for i in range(0, len(idx), PAGE):
            k = base + idx[i] * self._per_token()
            ptrs.extend([k, k + v_off])
        return ptrs, [PAGE * self._per_token()] * len(ptrs)

    def page(self, first_token):
        return self.kv_buffer[:, first_token : first_token + PAGE].copy()

    # the flat-page calls every host pool offers (HostKVCache), which the v2 calls use
    def get_data_page(self, index, flat=True):
        return self.kv_buffer[:, index : index + PAGE].flatten()

    def get_dummy_flat_data_page(self):
        return np.zeros(self.kv_buffer[:, :PAGE].size, dtype=self.kv_buffer.dtype)

    def set_from_flat_data_page(self, index, data_page):
        self.kv_buffer[:, index : index + PAGE] = np.asarray(data_page).reshape(self.kv_buffer[:, :PAGE].shape)


class SidePool:
    """A hybrid model's side host pool (an indexer pool's pages, a Mamba pool's states): ``page_size`` token
    indices per page, ``page_bytes`` of state each, through the flat-page calls."""

    def __init__(self, page_size, page_bytes, slots=64, seed=0):
        self.page_size = page_size
        self.data = np.random.default_rng(seed).integers(0, 256, (slots, page_bytes), dtype=np.uint8)

    def get_data_page(self, index, flat=True):
        return self.data[index // self.page_size].copy()

    def get_dummy_flat_data_page(self):
        return np.zeros(self.data.shape[1], dtype=np.uint8)

    def set_from_flat_data_page(self, index, data_page):
        self.data[index // self.page_size] = np.asarray(data_page)


def config(url, ns, **extra):
    return HiCacheStorageConfig(
        tp_rank=0, tp_size=1, pp_rank=0, pp_size=1, attn_cp_rank=0, attn_cp_size=1, is_mla_model=False,
        enable_storage_metrics=False, is_page_first_layout=True, model_name="test/model",
        extra_config={"backend_name": "kvstore", "module_path": "kvstore.sglang", "class_name": "KvStoreHiCache",
                      "url": url, "namespace": ns, **extra},
    )


def create(cfg, pool):
    e = cfg.extra_config  # StorageBackendFactory._create_dynamic_backend
    cls = getattr(importlib.import_module(e["module_path"]), e["class_name"])
    assert issubclass(cls, HiCacheStorage)
    backend = cls(cfg, {})
    backend.register_mem_pool_host(pool)
    return backend


def page_keys(n, seed):
    keys, prev = [], seed
    for i in range(n):
        prev = hashlib.sha256((prev + str(i)).encode()).hexdigest()  # chained SHA-256 hex, like get_hash_str
        keys.append(prev)
    return keys


def token_indices(first_pages):
    return np.concatenate([np.arange(p * PAGE, (p + 1) * PAGE) for p in first_pages]).astype(np.int64)


@pytest.fixture
def pool():
    p = HostPool()
    rng = np.random.default_rng(9)
    p.kv_buffer[...] = rng.standard_normal(p.kv_buffer.shape).astype(np.float16)
    return p


def test_pages_round_trip_byte_exact_through_the_zero_copy_calls(service, ns, pool):
    b = create(config(service.url, ns), pool)
    keys = page_keys(24, "a")
    assert b.batch_set_v1(keys, token_indices(range(24)), HiCacheStorageExtraInfo(prefix_keys=None)) == [True] * 24
    assert b.batch_exists(keys) == 24
    assert b.batch_exists(keys + page_keys(2, "z")) == 24
    before = [pool.page(p * PAGE) for p in range(24)]
    pool.kv_buffer[:, 32 * PAGE :] = 0
    assert b.batch_get_v1(keys, token_indices(range(32, 56))) == [True] * 24
    for i in range(24):
        assert np.array_equal(pool.page((32 + i) * PAGE), before[i])
    assert b._data_path().kind == "shm"


def test_hybrid_side_pools_round_trip_and_shorten_the_hit_by_their_policies(service, ns, pool):
    """A hybrid model's pages span side pools (v2 calls, registered with register_mem_host_pool_v2): an
    indexer pool that must hold every page of the hit (ALL_PAGES) and a Mamba pool whose state is kept at some
    pages only (TRAILING_PAGES: the hit must end on a page whose state is there). As HiCacheFile (the
    reference backend) answers batch_exists_v2: the KV prefix, each side pool's own boundary, the minimum."""
    b = create(config(service.url, ns), pool)
    indexer, mamba = SidePool(PAGE, 512, seed=1), SidePool(1, 4096, seed=2)
    b.register_mem_host_pool_v2(pool, PoolName.KV)
    b.register_mem_host_pool_v2(indexer, PoolName.INDEXER)
    b.register_mem_host_pool_v2(mamba, PoolName.MAMBA)
    keys = page_keys(10, "hybrid")
    kv_indices = token_indices(range(10))
    assert b.batch_set_v1(keys, kv_indices) == [True] * 10
    stored = b.batch_set_v2([
        PoolTransfer(PoolName.INDEXER, host_indices=kv_indices, keys=keys),
        PoolTransfer(PoolName.MAMBA, host_indices=np.array([3, 7]), keys=[keys[5], keys[9]],
                     hit_policy=PoolHitPolicy.TRAILING_PAGES),
    ])
    assert stored == {PoolName.INDEXER: [True] * 10, PoolName.MAMBA: [True, True]}

    def hit():
        r = b.batch_exists_v2(keys + page_keys(2, "beyond"), [
            PoolTransfer(PoolName.INDEXER, indices_from_pool=PoolName.KV),
            PoolTransfer(PoolName.MAMBA, keys=[keys[9]], hit_policy=PoolHitPolicy.TRAILING_PAGES),
        ])
        return r.kv_hit_pages, r.extra_pool_hit_pages

    assert hit() == (10, {PoolName.KV: 10, PoolName.INDEXER: 10, PoolName.MAMBA: 10})
    c = kvstore.KvStoreClient(service.url)
    mamba_ns = f"{ns}-mamba"
    c.delete(mamba_ns, bytes.fromhex(keys[9]))  # the last state gone: the hit ends at the state of page 5
    assert hit() == (6, {PoolName.KV: 10, PoolName.INDEXER: 10, PoolName.MAMBA: 6})
    c.delete(f"{ns}-indexer", bytes.fromhex(keys[3]))
    assert hit() == (3, {PoolName.KV: 10, PoolName.INDEXER: 3, PoolName.MAMBA: 6})

    # loaded back into other slots: byte-exact where stored, False where not, the rest still loaded
    want_indexer = [indexer.data[p].copy() for p in range(10)]
    want_state = mamba.data[3].copy()
    got = b.batch_get_v2([
        PoolTransfer(PoolName.INDEXER, host_indices=token_indices(range(20, 30)), keys=keys),
        PoolTransfer(PoolName.MAMBA, host_indices=np.array([11, 12]), keys=[keys[5], keys[9]]),
    ])
    assert got == {PoolName.INDEXER: [True] * 3 + [False] + [True] * 6, PoolName.MAMBA: [True, False]}
    for p in range(10):
        if p != 3:
            assert np.array_equal(indexer.data[20 + p], want_indexer[p])
    assert np.array_equal(mamba.data[11], want_state)
    assert count_pool_hits(got) == {PoolName.INDEXER: 3, PoolName.MAMBA: 1}

    # a pool never registered, or indices that do not cover the keys: failures, not exceptions
    assert b.batch_set_v2([PoolTransfer(PoolName.SWA, host_indices=np.array([0]), keys=keys[:1])]) == {
        PoolName.SWA: [False]}
    assert b.batch_get_v2([PoolTransfer(PoolName.INDEXER, host_indices=np.array([0]), keys=keys[:2])]) == {
        PoolName.INDEXER: [False, False]}
    b.clear()
    assert hit() == (0, {})


def test_keys_are_the_kvstore_hashes_and_chain_from_the_prefix(service, ns, pool):
    b = create(config(service.url, ns), pool)
    keys = page_keys(6, "chain")
    b.batch_set_v1(keys[:3], token_indices(range(3)))
    b.batch_set_v1(keys[3:], token_indices(range(3, 6)), HiCacheStorageExtraInfo(prefix_keys=keys[:3]))
    c = kvstore.KvStoreClient(service.url)
    assert c.lookup(ns, block_hashes=[bytes.fromhex(k) for k in keys]).matched_blocks == 6
    frames = c.fetch(ns, [bytes.fromhex(keys[3])])  # stored with its parent: the prefix's last page
    assert len(frames) == 1


def test_a_missing_page_ends_the_usable_prefix_and_later_pages_still_report(service, ns, pool):
    b = create(config(service.url, ns), pool)
    keys = page_keys(8, "gap")
    b.batch_set_v1(keys, token_indices(range(8)))
    kvstore.KvStoreClient(service.url).delete(ns, bytes.fromhex(keys[5]))
    got = b.batch_get_v1(keys, token_indices(range(40, 48)))
    assert got == [True] * 5 + [False] + [True] * 2
    assert b.batch_exists(keys) == 5


def test_buffer_interface_get_set_exists_and_bad_keys(service, ns, pool):
    b = create(config(service.url, ns), pool)
    page_bytes = 2 * PAGE * LAYERS * HEADS * DIM * 2
    v = np.arange(page_bytes, dtype=np.uint64).astype(np.uint8)
    assert b.set("not-a-sha256-hex-key", v)  # any key: hashed to 32 bytes
    assert b.exists("not-a-sha256-hex-key")
    assert not b.exists(page_keys(1, "never")[0])
    got = b.get("not-a-sha256-hex-key")
    assert np.array_equal(np.asarray(got), v)
    assert b.get(page_keys(1, "never")[0]) is None
    target = np.zeros(page_bytes, dtype=np.uint8)
    addr = target.__array_interface__["data"][0]
    assert b.batch_get(["not-a-sha256-hex-key"], [addr], [page_bytes]) == [addr]  # pointer form
    assert np.array_equal(target, v)
    assert b.set("wrong-size", np.zeros(10, dtype=np.uint8)) is False  # refused, nothing stored
    assert not b.exists("wrong-size")
    b.clear()
    assert not b.exists("not-a-sha256-hex-key")


def test_an_unreachable_service_is_misses_and_failures_not_exceptions(ns, pool):
    from service import free_port

    b = create(config(f"http://127.0.0.1:{free_port()}", ns, timeout=5), pool)
    keys = page_keys(3, "down")
    assert b.batch_exists(keys) == 0
    assert b.batch_set_v1(keys, token_indices(range(3))) == [False] * 3
    assert b.batch_get_v1(keys, token_indices(range(3))) == [False] * 3


def test_a_restart_under_the_backend_never_yields_wrong_pages(fresh_service, ns, pool):
    b = create(config(fresh_service.url, ns), pool)
    keys = page_keys(6, "restart")
    b.batch_set_v1(keys, token_indices(range(6)))
    before = [pool.page(p * PAGE) for p in range(6)]
    fresh_service.restart()
    got = b.batch_get_v1(keys, token_indices(range(20, 26)))
    for i, ok in enumerate(got):
        if ok:
            assert np.array_equal(pool.page((20 + i) * PAGE), before[i])
    more = page_keys(4, "restart-2")
    assert b.batch_set_v1(more, token_indices(range(8, 12))) == [True] * 4
    assert b.batch_get_v1(more, token_indices(range(30, 34))) == [True] * 4


def test_the_documented_configuration_selects_the_zero_copy_calls():
    """HiCacheController.attach_storage_backend (001067ff) hands a "dynamic" backend batch_get_v1 /
    batch_set_v1 only when extra_config has a true "interface_v1"; otherwise it calls batch_get / batch_set with
    host-pool tensors (one copy more, and torch's .numpy() raises on bfloat16 pages, which ends the backup and
    prefetch threads)."""
    import json
    import re
    from pathlib import Path

    import kvstore.sglang

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    for where, text in (("kvstore.sglang", kvstore.sglang.__doc__), ("README.md", readme)):
        m = re.search(r"--hicache-storage-backend-extra-config\s+'(\{.*?\})'", text, re.S)
        assert m, where
        extra = json.loads(m.group(1))
        assert extra["module_path"] == "kvstore.sglang" and extra["class_name"] == "KvStoreHiCache"
        assert bool(extra.get("interface_v1", 0)), f"{where}: SGLang would use batch_get/batch_set, not the v1 calls"


def test_detach_releases_the_backends_threads(service, ns, pool):
    """HiCacheController.detach_storage_backend calls the backend's close() when it has one; a re-attach then
    creates a new backend."""
    import threading

    before = set(threading.enumerate())
    b = create(config(service.url, ns), pool)
    assert b.batch_set_v1(page_keys(2, "detach"), token_indices(range(2))) == [True] * 2
    assert b._data_path().kind == "shm"
    assert hasattr(b, "close"), "SGLang skips close(): the data path's control threads and sockets stay"
    b.close()
    for t in set(threading.enumerate()) - before:
        if t.name.startswith("kvstore-control"):
            t.join(timeout=5)
    assert [t.name for t in set(threading.enumerate()) - before if t.name.startswith("kvstore-control")] == []


def test_pages_of_another_size_under_the_same_keys_are_misses_not_an_exception(service, ns, pool):
    """The same model restarted with another --kv-cache-dtype (or a shared "namespace"): same page keys, pages of
    another size. An exception out of batch_get_v1 ends SGLang's prefetch thread, which is never restarted."""
    other = 2 * PAGE * LAYERS * HEADS * DIM  # fp8 pages: half the bytes
    keys = page_keys(2, "dtype")
    c = kvstore.KvStoreClient(service.url)
    c.declare_namespace(ns, kvstore.Layout.for_bytes(other), hash_scheme="vllm:sha256", hash_seed="0")
    c.store(ns, [kvstore.Block(bytes.fromhex(k), np.zeros(other, np.uint8)) for k in keys])
    b = create(config(service.url, ns), pool)
    before = pool.page(40 * PAGE)
    assert b.batch_get_v1(keys, token_indices([40, 41])) == [False, False]
    assert np.array_equal(pool.page(40 * PAGE), before)
