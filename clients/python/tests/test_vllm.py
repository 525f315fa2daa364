"""kvstore.vllm driven exactly as vLLM's TieringOffloadingManager drives a secondary tier (upstream
EmbeddedLLM/vllm 5ac2684976ee22c04fe0d2f968c6cf6096b383f2, vllm/v1/kv_offload/tiering/manager.py):
loaded by SecondaryTierFactory from {"type", "module_path", ...}; lookup per key until HIT/MISS (RETRY
means ask again next step); on_schedule_end once per step; submit_store / submit_load with the primary
tier's block ids; get_finished_jobs polled every step; failed keys of a load are recomputed."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import signal
import struct
import time
import urllib.request

import engines  # noqa: F401  (stand-ins on the path)
import numpy as np
import pytest

from vllm.v1.kv_offload.base import (
    Locality,
    LookupResult,
    ReqContext,
    ScheduleEndContext,
    TierFilter,
    TierMatcher,
    make_offload_key,
)
from vllm.v1.kv_offload.tiering.base import JobMetadata, SecondaryTierManager

import kvstore

BLOCK = 32 * 1024


class Spec:
    """The parts of OffloadingSpec the tier reads."""

    class config:
        class model:
            name = "test/model"


class Driver:
    def __init__(self, url: str, namespace: str, blocks: int = 96, **extra):
        self.primary = np.zeros((blocks, BLOCK), dtype=np.uint8)  # vLLM's pinned CPU tier
        tier_config = {"type": "KvStoreTier", "module_path": "kvstore.vllm", "url": url, "namespace": namespace,
                       **extra}
        # SecondaryTierFactory.get_tier_class / create_secondary_tier
        cls = getattr(importlib.import_module(tier_config["module_path"]), tier_config["type"])
        assert issubclass(cls, SecondaryTierManager)
        config = dict(tier_config)
        tier_type = config.pop("type")
        config.pop("module_path")
        self.tier = cls(offloading_spec=Spec(), primary_kv_view=memoryview(self.primary), tier_type=tier_type, **config)
        self.next_job = 0
        self.finished = {}

    def step(self):
        self.tier.on_schedule_end(ScheduleEndContext((), ()))
        for r in self.tier.get_finished_jobs():
            assert r.job_id not in self.finished
            self.finished[r.job_id] = r

    def lookup(self, keys, req, timeout=60):
        """Per key in order, stopping at the first miss, as the scheduler does; RETRY -> next step."""
        self.tier.on_new_request(req)
        out = []
        deadline = time.monotonic() + timeout
        for k in keys:
            while True:
                r = self.tier.lookup(k, req)
                if r is not LookupResult.RETRY:
                    break
                assert time.monotonic() < deadline, "lookup never answered"
                self.step()
                time.sleep(0.005)
            out.append(r)
            if r is LookupResult.MISS:
                break
        return out

    def sliding_window_lookup(self, keys, window, req, max_scans=100):
        """The scheduler's lookup of a sliding-window group (offloading/scheduler.py, _sliding_window_lookup):
        each step scans from the last key back, not stopping at a miss, for the last run of ``window`` hits;
        a RETRY defers the answer to a later step. Each scan here runs after the tier's lookups sent at the
        step before have come back. Returns (the end index of that run, or 0; scans it took)."""
        self.tier.on_new_request(req)
        for scans in range(1, max_scans + 1):
            deferred, hits = False, 0
            for idx in range(len(keys) - 1, -1, -1):
                r = self.tier.lookup(keys[idx], req)
                if r is LookupResult.RETRY:
                    deferred, hits = True, 0
                else:
                    hits = hits + 1 if r is LookupResult.HIT else 0
                if hits == window and not deferred:
                    return idx + window, scans
            if not deferred:
                return hits, scans
            self.tier.on_schedule_end(ScheduleEndContext((), ()))
            self.tier.drain_jobs()
        raise AssertionError(f"no answer after {max_scans} scans")

    def job(self, keys, rows, promotion, req):
        jid = self.next_job
        self.next_job += 1
        job = JobMetadata(job_id=jid, keys=list(keys), block_ids=np.array(rows, dtype=np.int64),
                          is_promotion=promotion, req_context=req)
        (self.tier.submit_load if promotion else self.tier.submit_store)(job)
        return jid

    def wait(self, jid, timeout=120):
        deadline = time.monotonic() + timeout
        while jid not in self.finished:
            assert time.monotonic() < deadline, f"job {jid} never finished"
            self.step()
            time.sleep(0.005)
        return self.finished.pop(jid)


def parents_in_kvstore(url, namespace, hashes):
    """Each block's parent as kvstore holds it (the parent field of its frame in a fetch answer), None for
    a chain root."""
    body = json.dumps({"blockHashes": [h.hex() for h in hashes]}).encode()
    req = urllib.request.Request(f"{url}/v1/namespaces/{namespace}/blocks:fetch", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    out = []
    with urllib.request.urlopen(req, timeout=30) as r:
        for _ in hashes:
            r.read(r.read(1)[0])
            plen = r.read(1)[0]
            out.append(r.read(plen) if plen else None)
            r.read(struct.unpack(">I", r.read(4))[0])
    return out


def keys_of(n, seed, group=0):
    out, h = [], seed.encode()
    for _ in range(n):
        h = hashlib.sha256(h).digest()
        out.append(make_offload_key(h, group))
    return out


def fill(driver, rows, seed):
    rng = np.random.default_rng(seed)
    for r in rows:
        driver.primary[r] = rng.integers(0, 256, BLOCK, dtype=np.uint8)


@pytest.fixture
def driver(service, ns):
    d = Driver(service.url, ns)
    yield d
    d.tier.shutdown()


def test_many_blocks_round_trip_byte_exact_through_store_and_load_jobs(driver):
    keys = keys_of(40, "rt")
    fill(driver, range(40), 1)
    req = ReqContext("r1")
    assert driver.wait(driver.job(keys, range(40), False, req)).success
    assert driver.lookup(keys, ReqContext("r2")) == [LookupResult.HIT] * 40
    r = driver.wait(driver.job(keys, range(48, 88), True, ReqContext("r2")))
    assert r.success and r.successful_keys is None
    assert np.array_equal(driver.primary[0:40], driver.primary[48:88])
    # a prompt that continues past the stored prefix: the first unknown block is a MISS
    longer = keys + keys_of(3, "rt-more")
    assert driver.lookup(longer, ReqContext("r3"))[-1] is LookupResult.MISS
    assert driver.tier._data_path().kind == "shm"  # the same-host path was used


def test_groups_are_namespaces_of_their_own_and_parents_chain_within_a_job(service, driver, ns):
    keys0, keys1 = keys_of(4, "g", 0), keys_of(4, "g", 1)
    fill(driver, range(8), 2)
    assert driver.wait(driver.job(keys0 + keys1, range(8), False, ReqContext("s"))).success
    c = kvstore.KvStoreClient(service.url)
    hashes0 = [bytes(k)[:-4] for k in keys0]
    assert c.lookup(f"{ns}-g0", block_hashes=hashes0).matched_blocks == 4
    assert c.lookup(f"{ns}-g1", block_hashes=[bytes(k)[:-4] for k in keys1]).matched_blocks == 4
    # the chain is kept: the second block's frame names the first as its parent
    frames = c.request_json("GET", f"/v1/namespaces/{ns}-g0")
    assert frames["blockBytes"] == BLOCK


def test_lookup_answers_retry_while_in_flight_and_no_call_blocks_on_a_stalled_service(fresh_service, ns):
    d = Driver(fresh_service.url, ns)
    try:
        keys = keys_of(8, "stall")
        fill(d, range(8), 3)
        assert d.wait(d.job(keys, range(8), False, ReqContext("a"))).success
        os.kill(fresh_service.proc.pid, signal.SIGSTOP)  # kvstore frozen: every HTTP call would hang
        try:
            t0 = time.monotonic()
            req = ReqContext("b")
            d.tier.on_new_request(req)
            assert d.tier.lookup(keys[0], req) is LookupResult.RETRY
            d.tier.on_schedule_end(ScheduleEndContext((), ()))
            assert d.tier.lookup(keys[0], req) is LookupResult.RETRY  # still in flight
            jid = d.job(keys, range(10, 18), True, req)
            d.job(keys_of(2, "stall-new"), range(0, 2), False, req)
            assert list(d.tier.get_finished_jobs()) == []
            assert d.tier.has_pending_work()
            # a call that waited would take the client's 60 s timeout; 20 s leaves room for a loaded machine
            assert time.monotonic() - t0 < 20, "an interface call waited for the service"
        finally:
            os.kill(fresh_service.proc.pid, signal.SIGCONT)
        assert d.lookup(keys, req) == [LookupResult.HIT] * 8
        assert d.wait(jid).success
        assert np.array_equal(d.primary[0:8], d.primary[10:18])
    finally:
        d.tier.shutdown()


def test_a_block_evicted_between_lookup_and_load_is_reported_failed_and_the_rest_load(service, driver, ns):
    keys = keys_of(10, "race")
    fill(driver, range(10), 4)
    assert driver.wait(driver.job(keys, range(10), False, ReqContext("w"))).success
    req = ReqContext("r")
    assert driver.lookup(keys, req) == [LookupResult.HIT] * 10
    c = kvstore.KvStoreClient(service.url)
    c.delete(f"{ns}-g0", bytes(keys[6])[:-4])  # gone from every tier after vLLM saw a HIT
    driver.primary[20:30] = 0
    r = driver.wait(driver.job(keys, range(20, 30), True, req))
    assert not r.success
    assert list(r.successful_keys) == keys[:6] + keys[7:]
    ok = [i for i in range(10) if i != 6]
    assert np.array_equal(driver.primary[[20 + i for i in ok]], driver.primary[ok])


def test_a_kvstore_restart_under_the_tier_never_yields_wrong_bytes(fresh_service, ns):
    d = Driver(fresh_service.url, ns)
    try:
        keys = keys_of(12, "restart")
        fill(d, range(12), 5)
        assert d.wait(d.job(keys, range(12), False, ReqContext("w"))).success
        fresh_service.restart()
        req = ReqContext("after")
        found = d.lookup(keys, req)
        hits = [k for k, r in zip(keys, found) if r is LookupResult.HIT]
        d.primary[40:52] = 0
        r = d.wait(d.job(hits, range(40, 40 + len(hits)), True, req)) if hits else None
        loaded = set(map(bytes, r.successful_keys if r and r.successful_keys else (hits if r and r.success else [])))
        for i, k in enumerate(hits):
            if bytes(k) in loaded:
                assert np.array_equal(d.primary[40 + i], d.primary[keys.index(k)])
        # the tier keeps working against the restarted service, on its new shared-memory file
        more = keys_of(6, "restart-2")
        fill(d, range(60, 66), 6)
        assert d.wait(d.job(more, range(60, 66), False, ReqContext("w2"))).success
        assert d.lookup(more, ReqContext("r2")) == [LookupResult.HIT] * 6
        d.primary[70:76] = 0
        assert d.wait(d.job(more, range(70, 76), True, ReqContext("r2"))).success
        assert np.array_equal(d.primary[60:66], d.primary[70:76])
    finally:
        d.tier.shutdown()


def test_keys_that_are_not_32_byte_hashes_are_hashed_and_still_round_trip(driver):
    keys = [make_offload_key(hashlib.blake2b(bytes([i]), digest_size=16).digest(), 0) for i in range(5)]
    fill(driver, range(5), 7)
    assert driver.wait(driver.job(keys, range(5), False, ReqContext("x"))).success
    assert driver.lookup(keys, ReqContext("y")) == [LookupResult.HIT] * 5
    assert driver.wait(driver.job(keys, range(30, 35), True, ReqContext("y"))).success
    assert np.array_equal(driver.primary[0:5], driver.primary[30:35])


def test_a_sliding_window_scan_is_answered_in_a_few_steps_not_one_step_per_missing_block(driver):
    """A sliding-window group is scanned from its last key back, through misses: a prompt whose first blocks
    are stored and whose last 12 are new must not cost a scheduler step per missing block."""
    keys = keys_of(16, "window")
    fill(driver, range(4), 11)
    assert driver.wait(driver.job(keys[:4], range(4), False, ReqContext("w0"))).success
    end, scans = driver.sliding_window_lookup(keys, 2, ReqContext("w1"))
    assert end == 4  # the window of 2 hits ending at the last stored block
    assert scans <= 4, f"{scans} scheduler steps"


def test_the_locality_tier_field_is_taken_and_left_unspecified_when_not_configured(service, ns):
    """vLLM documents ``locality`` (LOCAL/REMOTE) as a field of every tier's entry and passes each field to
    the tier's constructor; the tiering manager skips a tier a request's load filter does not allow
    (``load_tier_filter.allows(tier.medium, tier.locality)``, tiering/manager.py)."""
    only_local = TierFilter(matchers=(TierMatcher(locality=Locality.LOCAL),))
    only_remote = TierFilter(matchers=(TierMatcher(locality=Locality.REMOTE),))
    remote = Driver(service.url, ns, locality="REMOTE")
    unspecified = Driver(service.url, ns)
    try:
        assert remote.tier.locality is Locality.REMOTE
        assert not only_local.allows(remote.tier.medium, remote.tier.locality)
        assert only_remote.allows(remote.tier.medium, remote.tier.locality)
        assert unspecified.tier.locality is None  # as vLLM's own tiers: never inferred
        assert only_local.allows(unspecified.tier.medium, unspecified.tier.locality)
        assert only_remote.allows(unspecified.tier.medium, unspecified.tier.locality)
    finally:
        remote.tier.shutdown()
        unspecified.tier.shutdown()


def test_an_unreachable_service_is_misses_and_failed_jobs_not_errors(ns):
    from service import free_port

    d = Driver(f"http://127.0.0.1:{free_port()}", ns, timeout=5)
    try:
        keys = keys_of(3, "down")
        assert d.lookup(keys, ReqContext("q")) == [LookupResult.MISS]
        assert not d.wait(d.job(keys, range(3), False, ReqContext("q"))).success
        assert not d.wait(d.job(keys, range(3), True, ReqContext("q"))).success
    finally:
        d.tier.shutdown()


def test_a_block_that_failed_to_load_is_no_hit_again_for_the_same_request(service, driver, ns):
    keys = keys_of(4, "relook")
    fill(driver, range(4), 8)
    assert driver.wait(driver.job(keys, range(4), False, ReqContext("w"))).success
    req = ReqContext("r")
    assert driver.lookup(keys, req) == [LookupResult.HIT] * 4
    kvstore.KvStoreClient(service.url).delete(f"{ns}-g0", bytes(keys[2])[:-4])  # evicted after the HIT
    r = driver.wait(driver.job(keys, range(20, 24), True, req))
    assert not r.success and list(r.successful_keys) == keys[:2] + keys[3:]
    # vLLM drops the failed block from its primary tier and, the request still waiting, looks it up again:
    # a HIT would promote it again, fail again, and so on every step (the request never runs)
    assert driver.lookup([keys[2]], req) == [LookupResult.MISS]


def test_a_request_finished_while_its_lookup_is_in_flight_leaves_no_state_behind(driver):
    import threading

    gate = threading.Event()
    holds = [driver.tier._executor.submit(gate.wait) for _ in range(2)]  # both io threads busy
    req = ReqContext("aborted")
    driver.tier.on_new_request(req)
    keys = keys_of(3, "aborted")
    assert [driver.tier.lookup(k, req) for k in keys] == [LookupResult.RETRY] * 3
    driver.tier.on_schedule_end(ScheduleEndContext((), ()))  # the lookup is queued behind the busy threads
    driver.tier.on_request_finished(req)  # aborted: no call for it follows
    gate.set()
    for h in holds:
        h.result()
    driver.tier.drain_jobs()
    assert not [k for k in driver.tier._known if "aborted" in repr(k)]  # no answer kept for a finished request


def test_drain_jobs_returns_only_once_every_submitted_jobs_result_can_be_taken(driver):
    keys = keys_of(2, "drain")
    fill(driver, range(2), 9)
    done = driver.tier._done

    def late(future, job):  # the pool's done-callback runs after waiters on the future were woken
        time.sleep(0.3)
        done(future, job)

    driver.tier._done = late
    jid = driver.job(keys, range(2), False, ReqContext("d"))
    driver.tier.drain_jobs()  # reset_cache: then get_finished_jobs, then the primary tier is reset
    assert [r.job_id for r in driver.tier.get_finished_jobs()] == [jid]


def test_shutdown_releases_the_data_paths_threads(service, ns):
    import threading

    before = set(threading.enumerate())
    d = Driver(service.url, ns)
    fill(d, range(2), 10)
    assert d.wait(d.job(keys_of(2, "shut"), range(2), False, ReqContext("s"))).success
    assert d.tier._data_path().kind == "shm"
    d.tier.shutdown()
    for t in set(threading.enumerate()) - before:
        if t.name.startswith(("kvstore-control", "kvstore-vllm")):
            t.join(timeout=5)
    assert [t.name for t in set(threading.enumerate()) - before if t.name.startswith("kvstore-control")] == []


def test_a_load_from_a_hung_kvstore_fails_after_the_timeout_instead_of_hanging(fresh_service, ns):
    d = Driver(fresh_service.url, ns, timeout=2)
    try:
        keys = keys_of(4, "hung")
        fill(d, range(4), 11)
        assert d.wait(d.job(keys, range(4), False, ReqContext("w"))).success
        req = ReqContext("r")
        assert d.lookup(keys, req) == [LookupResult.HIT] * 4
        assert d.tier._data_path().control_kind == "socket"
        os.kill(fresh_service.proc.pid, signal.SIGSTOP)  # alive but answering nothing
        time.sleep(0.5)
        try:
            jid = d.job(keys, range(10, 14), True, req)
            r = d.wait(jid, timeout=30)  # the configured timeout is 2 s
        finally:
            os.kill(fresh_service.proc.pid, signal.SIGCONT)
        assert not r.success and not r.successful_keys
    finally:
        d.tier.shutdown()


def test_a_load_job_that_fails_outright_is_no_hit_again_for_the_same_request(service, ns):
    # another deployment's blocks (another block size) under the same keys: the whole load job fails
    keys = keys_of(2, "other-size")
    c = kvstore.KvStoreClient(service.url)
    c.declare_namespace(f"{ns}-g0", kvstore.Layout.for_bytes(BLOCK // 2), hash_scheme="vllm:sha256", hash_seed="0")
    c.store(f"{ns}-g0", [kvstore.Block(bytes(k)[:-4], np.zeros(BLOCK // 2, np.uint8)) for k in keys])
    d = Driver(service.url, ns)
    try:
        req = ReqContext("r")
        assert d.lookup(keys, req) == [LookupResult.HIT] * 2
        assert not d.wait(d.job(keys, range(10, 12), True, req)).success
        assert d.lookup(keys[:1], req) == [LookupResult.MISS]  # else: promote, fail, promote... every step
    finally:
        d.tier.shutdown()


def test_a_store_jobs_first_block_names_the_last_block_of_the_requests_job_before_it(service, driver, ns):
    # vLLM's scheduler touches the request's keys of each group in prefix order (its whole list, grown)
    # before it builds the request's store jobs, then stores each job's new keys
    keys = keys_of(8, "across-jobs")
    fill(driver, range(8), 12)
    req = ReqContext("long-prompt")
    driver.tier.on_new_request(req)
    driver.tier.touch(keys[:4], req)
    assert driver.wait(driver.job(keys[:4], range(4), False, req)).success
    driver.tier.touch(keys, req)
    assert driver.wait(driver.job(keys[4:], range(4, 8), False, req)).success
    hashes = [bytes(k)[:-4] for k in keys]
    assert parents_in_kvstore(service.url, f"{ns}-g0", hashes) == [None] + hashes[:-1]
    driver.tier.on_request_finished(req)
    assert "long-prompt" not in driver.tier._parents and "long-prompt" not in driver.tier._touched


def test_a_store_job_whose_keys_come_as_a_set_chains_them_in_the_requests_order(service, driver, ns):
    # the cascade to a secondary tier hands over the scheduler's set(keys_to_store): no order of its own
    keys = keys_of(8, "set-order", 0) + keys_of(3, "set-order", 1)
    fill(driver, range(11), 13)
    req = ReqContext("set")
    driver.tier.on_new_request(req)
    driver.tier.touch(keys[:8], req)
    driver.tier.touch(keys[8:], req)
    unordered = set(keys)
    rows = {k: i for i, k in enumerate(keys)}
    order = list(unordered)
    job = JobMetadata(job_id=900, keys=unordered, block_ids=np.array([rows[k] for k in order], dtype=np.int64),
                      is_promotion=False, req_context=req)
    driver.tier.submit_store(job)
    assert driver.wait(900).success
    h0 = [bytes(k)[:-4] for k in keys[:8]]
    h1 = [bytes(k)[:-4] for k in keys[8:]]
    assert parents_in_kvstore(service.url, f"{ns}-g0", h0) == [None] + h0[:-1]
    assert parents_in_kvstore(service.url, f"{ns}-g1", h1) == [None] + h1[:-1]


def test_the_documented_configuration_loads_the_tier_through_the_tiering_spec():
    """vLLM's OffloadingSpecFactory (5ac26849, vllm/v1/kv_offload/factory.py) takes "spec_name" from
    kv_connector_extra_config, "CPUOffloadingSpec" by default, and only "TieringOffloadingSpec" reads
    "secondary_tiers": without it the tier is ignored without a word. SecondaryTierFactory then imports "type" from
    "module_path" and passes every other field of the entry to the tier's constructor."""
    import inspect
    import re
    from pathlib import Path

    import kvstore.vllm

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    accepted = set(inspect.signature(kvstore.vllm.KvStoreTier.__init__).parameters)
    for where, text in (("kvstore.vllm", kvstore.vllm.__doc__), ("README.md", readme)):
        m = re.search(r"--kv-transfer-config\s+'(\{.*?\})'", text, re.S)
        assert m, where
        config = json.loads(m.group(1))
        assert config["kv_connector"] == "OffloadingConnector", where
        extra = config["kv_connector_extra_config"]
        assert extra.get("spec_name") == "TieringOffloadingSpec", f"{where}: vLLM would ignore secondary_tiers"
        (tier,) = extra["secondary_tiers"]
        cls = getattr(importlib.import_module(tier["module_path"]), tier["type"])
        assert cls is kvstore.vllm.KvStoreTier, where
        fields = set(tier) - {"type", "module_path"}
        assert fields <= accepted, f"{where}: {fields - accepted} would be a TypeError in vLLM"
