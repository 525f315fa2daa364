"""The same-host data path against a real kvstore: the mapped DRAM tier, reserve -> copy -> commit with
CRC32C, lease -> copy -> check -> release, and what HTTP serves of the same blocks."""

from __future__ import annotations

import grp
import os
import socket
import stat
import struct
import time

import numpy as np
import pytest

import kvstore
from blocks import SMALL, prompt
from kvstore._control import _hash, _str
from kvstore.shm import HttpDataPath, LocalDataPath, data_path
from service import Service


@pytest.fixture
def local(client):
    path = LocalDataPath(client)
    yield path
    path.close()


def test_the_tier_file_is_mappable_by_its_owner_only(client, local):
    view = client.request_json("GET", "/v1/local")
    assert view["available"] and view["tier"] == "DRAM" and view["length"] == 64 << 20
    st = os.stat(view["path"])
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_uid == os.getuid()
    assert local.mem.nbytes == view["length"]


def test_the_control_calls_go_over_a_socket_only_the_tier_files_owner_may_open(client, local):
    view = client.request_json("GET", "/v1/local")
    sock = view["controlSocket"]
    assert sock == view["path"] + ".sock"
    st = os.stat(sock)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
    assert local.control_kind == "socket"


def test_the_socket_refuses_bad_input_with_the_problem_fields_http_gives(client, local, ns):
    from kvstore._control import SocketControl

    client.declare_namespace(ns, SMALL, hash_seed="0")
    ctl = SocketControl(client.request_json("GET", "/v1/local")["controlSocket"], None, lambda: None)
    try:
        with pytest.raises(kvstore.BadRequest) as e:
            ctl.reserve(ns, [(b"\xab\xcd", None)], None)
        assert e.value.field == "blocks[0].hash" and e.value.status == 400
        with pytest.raises(kvstore.BadRequest) as e:
            ctl.reserve(ns, [], None)
        assert e.value.field == "blocks" and "at least one block" in e.value.detail
        with pytest.raises(kvstore.BadRequest) as e:
            ctl.lease(ns, [b"\xab" * 8])
        assert e.value.field == "blockHashes[0]"
        with pytest.raises(kvstore.NotFound):
            ctl.lease("no-such-ns", [])
        with pytest.raises(kvstore.NotFound):
            ctl.commit(ns, "nope")
        with pytest.raises(kvstore.NotFound):
            ctl.release("no-such-lease")
        # refusals leave the connection usable: a good round trip on it
        hashes, data, blocks = prompt(3, SMALL.block_bytes, seed=31)
        r = ctl.reserve(ns, [(h, None) for h in hashes], None)
        assert [s["hash"] for s in r["slots"]] == [h.hex() for h in hashes]
        ctl.cancel(r["reservationId"])
    finally:
        ctl.close()


def test_with_the_socket_off_the_control_calls_go_over_http(tmp_path):
    svc = Service(tmp_path / "kv", extra_args=["--kvstore.local.control-socket="]).start()
    try:
        c = kvstore.KvStoreClient(svc.url)
        assert "controlSocket" not in c.request_json("GET", "/v1/local")
        local = LocalDataPath(c)
        assert local.control_kind == "http"
        c.declare_namespace("py-http-control", SMALL, hash_seed="0")
        hashes, data, blocks = prompt(40, SMALL.block_bytes, seed=32)
        assert local.store("py-http-control", blocks).committed == hashes
        for want, got in zip(data, local.fetch("py-http-control", hashes)):
            assert np.array_equal(want, got)
        assert c.delete_namespace("py-http-control") == 40  # every lease released
        local.close()
    finally:
        svc.stop()


def test_control_over_http_can_be_chosen_when_the_socket_is_offered(client, ns):
    local = LocalDataPath(client, control="http")
    try:
        assert local.control_kind == "http"
        client.declare_namespace(ns, SMALL, hash_seed="0")
        hashes, data, blocks = prompt(10, SMALL.block_bytes, seed=33)
        assert local.store(ns, blocks).committed == hashes
        for want, got in zip(data, local.fetch(ns, hashes)):
            assert np.array_equal(want, got)
    finally:
        local.close()


def test_blocks_stored_through_shared_memory_are_what_http_serves(client, local, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(120, SMALL.block_bytes, seed=11)
    r = local.store(ns, blocks)
    assert r.committed == hashes and not r.failed
    assert client.lookup(ns, block_hashes=hashes).matched_blocks == 120
    for want, got in zip(data, client.fetch(ns, hashes)):
        assert np.array_equal(want, got)
    # storing them again reserves nothing
    again = local.store(ns, blocks)
    assert again.committed == [] and again.already_stored == hashes


def test_a_batch_that_lists_a_block_twice_stores_it_once_as_over_http(client, local, ns):
    # HTTP stores such a batch; the same batch through shared memory was refused whole (a reservation
    # may not list a block twice)
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(4, SMALL.block_bytes, seed=13)
    r = local.store(ns, blocks + blocks[1:3])
    assert r.committed == hashes and not r.failed
    out = [np.zeros(SMALL.block_bytes, np.uint8) for _ in hashes]
    assert local.load(ns, hashes, out) == 4
    assert all(np.array_equal(a, b) for a, b in zip(data, out))


def test_blocks_stored_over_http_load_byte_exact_from_shared_memory(client, local, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(150, SMALL.block_bytes, seed=12)
    client.store(ns, blocks)
    out = [np.zeros(SMALL.block_bytes, dtype=np.uint8) for _ in hashes]
    assert local.load(ns, hashes, out) == 150
    for want, got in zip(data, out):
        assert np.array_equal(want, got)
    # the lease was released: nothing holds the blocks
    assert client.delete_namespace(ns) == 150


def test_load_stops_at_the_first_block_not_stored(client, local, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(10, SMALL.block_bytes, seed=13)
    local.store(ns, blocks[:4])
    out = [bytearray(SMALL.block_bytes) for _ in hashes]
    assert local.load(ns, hashes, out) == 4
    assert bytes(out[3]) == data[3].tobytes()
    with pytest.raises(kvstore.NotFound):
        local.fetch(ns, hashes)


def test_a_slot_whose_bytes_do_not_match_the_crc_is_refused_and_never_served(client, local, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(3, SMALL.block_bytes, seed=14)
    r = client.request_json(
        "POST",
        f"/v1/local/namespaces/{ns}/blocks:reserve",
        {"blocks": [{"hash": h.hex()} for h in hashes]},
    )
    crcs = {}
    for slot, d in zip(r["slots"], data):
        local.mem[slot["offset"] : slot["offset"] + slot["length"]] = d
        crcs[slot["hash"]] = kvstore.crc32c.crc32c(d)
    torn = r["slots"][1]
    local.mem[torn["offset"] + 100] ^= 0xFF  # a byte changed after the CRC was taken
    c = client.request_json(
        "POST", f"/v1/local/namespaces/{ns}/blocks:commit", {"reservationId": r["reservationId"], "crc32c": crcs}
    )
    assert c["committed"] == [hashes[0].hex(), hashes[2].hex()]
    assert [f["hash"] for f in c["failed"]] == [hashes[1].hex()]
    assert client.lookup(ns, block_hashes=hashes).matched_blocks == 1
    with pytest.raises(kvstore.NotFound):
        client.fetch(ns, [hashes[1]])


def test_a_block_damaged_in_place_after_commit_fails_its_check_on_the_way_out(client, local, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(3, SMALL.block_bytes, seed=15)
    local.store(ns, blocks)
    lease = client.request_json("POST", f"/v1/local/namespaces/{ns}/blocks:lease", {"blockHashes": [h.hex() for h in hashes]})
    off = lease["locations"][1]["offset"]
    client.release(lease["leaseId"])
    local.mem[off] ^= 0xFF  # e.g. a late writer of an expired reservation
    out = [bytearray(SMALL.block_bytes) for _ in hashes]
    assert local.load(ns, hashes, out) == 1  # block 1 is never handed over
    with pytest.raises(kvstore.ChecksumMismatch):
        local.fetch(ns, hashes)


def test_copies_shared_with_the_helper_thread_still_stop_at_the_first_damaged_block(service, client, local, ns, monkeypatch):
    from kvstore import shm

    monkeypatch.setattr(shm, "_SHARE_BYTES", 1)  # the helper thread copies and checks some blocks too
    monkeypatch.setattr(shm, "_STEP", 2 * SMALL.block_bytes)  # and a lease per two blocks, taken ahead
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(6, SMALL.block_bytes, seed=16)
    assert len(local.store(ns, blocks).committed) == 6
    lease = client.request_json("POST", f"/v1/local/namespaces/{ns}/blocks:lease", {"blockHashes": [h.hex() for h in hashes]})
    off = lease["locations"][4]["offset"]
    client.release(lease["leaseId"])
    local.mem[off + 7] ^= 0x01
    out = [bytearray(SMALL.block_bytes) for _ in hashes]
    assert local.load(ns, hashes, out) == 4
    assert [bytes(o) for o in out[:4]] == [bytes(d) for d in data[:4]]
    assert active_leases(service) == 0


def active_leases(service) -> float:
    m = service.admin("GET", "/actuator/metrics/kvstore.leases.active")
    return m["measurements"][0]["value"]


def expired_reservations(service) -> float:
    m = service.admin("GET", "/actuator/metrics/kvstore.reservations.expired")
    return m["measurements"][0]["value"]


def await_expired_reservations(service, at_least: float) -> None:
    """Waits (30 s at most) for kvstore's sweep to have expired reservations up to ``at_least`` in all: the sweep
    runs about once a second, later on a loaded machine, so sleeping past an expiry does not mean it ran."""
    deadline = time.monotonic() + 30
    while expired_reservations(service) < at_least and time.monotonic() < deadline:
        time.sleep(0.1)
    assert expired_reservations(service) >= at_least, "the reservation never expired"


def test_a_store_and_a_load_in_many_steps_are_byte_exact_and_hold_nothing_afterwards(service, client, local, ns, monkeypatch):
    from kvstore import shm

    # a reservation or lease per three blocks: each step's control calls overlap the copies of its neighbours
    monkeypatch.setattr(shm, "_STEP", 3 * SMALL.block_bytes)
    monkeypatch.setattr(shm, "_SHARE_BYTES", 1)  # each step's copies shared with the helper thread
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(40, SMALL.block_bytes, seed=19)
    first = local.store(ns, blocks[4:11])  # some steps will find blocks stored already
    assert first.committed == hashes[4:11]
    r = local.store(ns, blocks)
    assert r.committed == hashes[:4] + hashes[11:] and r.already_stored == hashes[4:11] and not r.failed
    for want, got in zip(data, client.fetch(ns, hashes)):  # what HTTP serves: checked by the service
        assert np.array_equal(want, got)
    out = [np.zeros(SMALL.block_bytes, dtype=np.uint8) for _ in hashes]
    assert local.load(ns, hashes, out) == 40
    for want, got in zip(data, out):
        assert np.array_equal(want, got)
    assert active_leases(service) == 0
    assert client.delete_namespace(ns) == 40  # no lease or reservation holds anything


def test_a_load_in_steps_stops_at_the_first_missing_block_and_releases_the_leases_taken_ahead(
    service, client, local, ns, monkeypatch
):
    from kvstore import shm

    monkeypatch.setattr(shm, "_STEP", 3 * SMALL.block_bytes)
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(20, SMALL.block_bytes, seed=20)
    local.store(ns, blocks[:13])
    local.store(ns, blocks[14:])  # stored after the gap: a lease ahead finds them, the load must not count them
    out = [bytearray(SMALL.block_bytes) for _ in hashes]
    assert local.load(ns, hashes, out) == 13
    assert [bytes(o) for o in out[:13]] == [bytes(d) for d in data[:13]]
    assert bytes(out[13]) == bytes(SMALL.block_bytes)
    assert local.load(ns, hashes[2:], out[2:]) == 11
    assert local.load(ns, hashes[13:], out[13:]) == 0
    assert active_leases(service) == 0
    assert client.delete_namespace(ns) == 19


def test_a_store_that_fails_midway_keeps_the_steps_before_and_gives_the_reserved_slots_back(
    service, client, local, ns, monkeypatch
):
    from kvstore import Block, shm

    monkeypatch.setattr(shm, "_STEP", 2 * SMALL.block_bytes)
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(8, SMALL.block_bytes, seed=21)
    bad = list(blocks)
    bad[5] = Block(hashes[5], data[5][:-2], hashes[4])  # the third step holds a block of the wrong size
    with pytest.raises(ValueError):
        local.store(ns, bad)
    assert client.lookup(ns, block_hashes=hashes).matched_blocks == 4  # the steps before it were committed
    # the slots of the failed step and of the step reserved ahead were given back: storing the rest now
    # reserves them anew and commits them
    r = local.store(ns, blocks)
    assert r.already_stored == hashes[:4] and r.committed == hashes[4:]
    out = [bytearray(SMALL.block_bytes) for _ in hashes]
    assert local.load(ns, hashes, out) == 8
    assert client.delete_namespace(ns) == 8


def test_stores_left_in_flight_commit_in_order_and_serve_what_was_copied(client, local, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(60, SMALL.block_bytes, seed=22)
    originals = [d.copy() for d in data]
    pending = []
    for i in range(0, 60, 6):
        pending.append(local.store_async(ns, blocks[i : i + 6]))
        for d in data[i : i + 6]:
            d[:8] = 0  # the sources may be reused once store_async returns: the slots hold the copies
    results = [f.result(timeout=120) for f in pending]
    assert [h for r in results for h in r.committed] == hashes
    for want, got in zip(originals, client.fetch(ns, hashes)):
        assert np.array_equal(want, got)


def test_a_commit_refused_after_store_async_returned_surfaces_from_its_future(client, local, ns, monkeypatch):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(4, SMALL.block_bytes, seed=23)
    real = local._ctl.commit

    def refusing(ns, reservation_id, crc32c=None):  # as a service shutting down answers a commit
        raise kvstore.ServiceUnavailable(503, {"title": "Service Unavailable", "detail": "shutting down"})

    monkeypatch.setattr(local._ctl, "commit", refusing)
    future = local.store_async(ns, blocks)
    with pytest.raises(kvstore.ServiceUnavailable):
        future.result(timeout=120)
    with pytest.raises(kvstore.ServiceUnavailable):
        local.store(ns, blocks)
    monkeypatch.setattr(local._ctl, "commit", real)
    assert client.lookup(ns, block_hashes=hashes).matched_blocks == 0  # nothing unverified became visible
    assert local.store(ns, blocks).committed == hashes  # the refused reservations gave their slots back


def test_blocks_held_only_on_nvme_come_over_http_under_the_same_lease(service, client, local, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(8, SMALL.block_bytes, seed=16)
    local.store(ns, blocks)
    service.admin("POST", "/admin/evict", {"tier": "DRAM", "namespace": ns})
    assert client.lookup(ns, block_hashes=hashes).tiers == ["NVME"] * 8
    got = local.fetch(ns, hashes)
    for want, have in zip(data, got):
        assert np.array_equal(want, have)


def test_reserve_and_lease_answer_problem_json_for_bad_input(client, local, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    with pytest.raises(kvstore.BadRequest) as e:
        client.request_json("POST", f"/v1/local/namespaces/{ns}/blocks:reserve", {"blocks": [{"hash": "zz"}]})
    assert e.value.field == "blocks[0].hash"
    with pytest.raises(kvstore.BadRequest) as e:
        client.request_json("POST", f"/v1/local/namespaces/{ns}/blocks:lease", {"blockHashes": ["ab" * 8]})
    assert e.value.field == "blockHashes[0]"
    with pytest.raises(kvstore.NotFound):
        client.request_json("POST", "/v1/local/namespaces/no-such-ns/blocks:lease", {"blockHashes": []})
    with pytest.raises(kvstore.NotFound):
        client.request_json(
            "POST", f"/v1/local/namespaces/{ns}/blocks:commit", {"reservationId": "nope", "crc32c": {}}
        )


def test_after_a_restart_the_client_maps_the_new_tier_file(fresh_service, ns):
    c = kvstore.KvStoreClient(fresh_service.url)
    local = LocalDataPath(c)
    old_path, old_region = local.path, local.region_id
    fresh_service.restart()
    c.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(5, SMALL.block_bytes, seed=17)
    assert local.store(ns, blocks).committed == hashes
    assert local.region_id != old_region and local.path != old_path
    assert not os.path.exists(old_path)  # the old run's file went with it
    assert not os.path.exists(old_path + ".sock")  # and its control socket: the client found the new one
    for want, have in zip(data, local.fetch(ns, hashes)):
        assert np.array_equal(want, have)


def test_a_group_named_by_the_operator_may_map_the_tier_too(tmp_path):
    group = grp.getgrgid(os.getgid()).gr_name
    svc = Service(tmp_path / "kv", extra_args=[f"--kvstore.local.group={group}"]).start()
    try:
        view = kvstore.KvStoreClient(svc.url).request_json("GET", "/v1/local")
        st = os.stat(view["path"])
        assert stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == os.getgid()
        assert view["group"] == group
        sock = os.stat(view["controlSocket"])  # the control socket: the same mode and group
        assert stat.S_ISSOCK(sock.st_mode) and stat.S_IMODE(sock.st_mode) == 0o660 and sock.st_gid == os.getgid()
    finally:
        svc.stop()


def test_without_the_local_path_data_path_falls_back_to_http_and_says_why(tmp_path):
    svc = Service(tmp_path / "kv", local=False).start()
    try:
        c = kvstore.KvStoreClient(svc.url)
        with pytest.raises(kvstore.ServiceUnavailable) as e:
            LocalDataPath(c)
        assert "kvstore.local.enabled=false" in e.value.detail
        assert isinstance(data_path(c), HttpDataPath)
        with pytest.raises(kvstore.ServiceUnavailable):
            data_path(c, local="require")
    finally:
        svc.stop()


def test_a_token_without_the_one_sided_grant_gets_the_http_path(tmp_path):
    # README: give only trusted engines oneSided tokens and "the others HTTP only"; data_path(client) must
    # then fall back to HTTP, not fail every store and load with 403
    svc = Service(tmp_path / "kv").start()
    try:
        issued = svc.admin("POST", "/admin/tokens", {"tenant": "t", "write": ["py-*"], "oneSided": False})
        c = kvstore.KvStoreClient(svc.url, token=issued["token"])
        path = data_path(c)
        assert isinstance(path, HttpDataPath)
        c.declare_namespace("py-http-only", SMALL, hash_seed="0")
        hashes, data, blocks = prompt(3, SMALL.block_bytes, seed=41)
        path.store("py-http-only", blocks)
        out = [np.zeros(SMALL.block_bytes, np.uint8) for _ in hashes]
        assert path.load("py-http-only", hashes, out) == 3
        assert all(np.array_equal(a, b) for a, b in zip(data, out))
        with pytest.raises(kvstore.Forbidden):
            data_path(c, local="require")
    finally:
        svc.stop()


def test_a_killed_client_holding_a_lease_has_its_blocks_freed_when_the_lease_expires(service, client, local, ns):
    import subprocess
    import sys
    import time
    from pathlib import Path

    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, _, blocks = prompt(6, SMALL.block_bytes, seed=18)
    local.store(ns, blocks)
    src = Path(__file__).resolve().parents[1] / "src"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; sys.path.insert(0, sys.argv[1]); import kvstore\n"
         "c = kvstore.KvStoreClient(sys.argv[2])\n"
         "r = c.request_json('POST', f'/v1/local/namespaces/{sys.argv[3]}/blocks:lease', {'blockHashes': sys.argv[4:]})\n"
         "print(r['leaseId'], flush=True); time.sleep(600)",
         str(src), service.url, ns, *[h.hex() for h in hashes]],
        stdout=subprocess.PIPE, text=True)
    try:
        lease_id = holder.stdout.readline().strip()
        assert client.lease(lease_id)["blocks"] == [h.hex() for h in hashes]
        with pytest.raises(kvstore.Conflict):
            client.delete_namespace(ns)  # held
        holder.kill()  # dies mid-copy, never releasing
        holder.wait(timeout=30)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                client.lease(lease_id)
                time.sleep(0.2)
            except kvstore.NotFound:
                break
        with pytest.raises(kvstore.NotFound):
            client.lease(lease_id)  # expired after kvstore.lease-timeout (6 s here)
        assert client.delete_namespace(ns) == 6
    finally:
        holder.kill()


def test_large_calls_share_their_blocks_between_the_caller_and_one_helper_thread():
    import threading
    import time

    from kvstore import shm

    done, threads = [], set()

    def work(i):
        threads.add(threading.get_ident())
        time.sleep(0.01)  # long enough that the helper takes some blocks
        done.append(i)

    shm._share(8, shm._SHARE_BYTES, work)
    assert sorted(done) == list(range(8))  # each block exactly once
    assert len(threads) == 2 and threading.get_ident() in threads

    small = set()
    shm._share(8, shm._SHARE_BYTES - 1, lambda i: small.add(threading.get_ident()))
    assert small == {threading.get_ident()}  # below the threshold the caller does it all

    taken = []

    def failing(i):
        taken.append(i)
        time.sleep(0.01)
        if i == 2:
            raise ValueError("block 2")

    with pytest.raises(ValueError, match="block 2"):
        shm._share(40, shm._SHARE_BYTES, failing)
    assert len(taken) < 10  # after a failure neither thread takes another block


def test_a_load_of_blocks_partly_in_dram_and_partly_on_nvme_loads_every_block(service, client, local, ns):
    """The leading blocks are copied out of the mapped tier and the rest fetched over HTTP in one call."""
    client.declare_namespace(ns, SMALL, hash_seed="0")
    on_nvme, nvme_data, nvme_blocks = prompt(4, SMALL.block_bytes, seed=41)
    local.store(ns, nvme_blocks)
    service.admin("POST", "/admin/evict", {"tier": "DRAM", "namespace": ns})
    in_dram, dram_data, dram_blocks = prompt(4, SMALL.block_bytes, seed=42)
    local.store(ns, dram_blocks)
    assert client.lookup(ns, block_hashes=in_dram).tiers == ["DRAM"] * 4
    hashes = in_dram + on_nvme
    out = [np.zeros(SMALL.block_bytes, dtype=np.uint8) for _ in hashes]
    assert local.load(ns, hashes, out) == 8
    for want, have in zip(dram_data + nvme_data, out):
        assert np.array_equal(want, have)


def test_a_load_in_steps_goes_on_past_a_step_whose_blocks_came_over_http(service, client, local, ns, monkeypatch):
    """A call over _STEP bytes whose first step holds NVMe-only blocks loads the later steps too, and fetch
    does not call the first block of the next step a checksum mismatch."""
    from kvstore import shm

    monkeypatch.setattr(shm, "_STEP", 3 * SMALL.block_bytes)
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(8, SMALL.block_bytes, seed=43)
    local.store(ns, blocks)
    service.admin("POST", "/admin/evict", {"tier": "DRAM", "namespace": ns})
    assert client.lookup(ns, block_hashes=hashes).tiers == ["NVME"] * 8
    out = [np.zeros(SMALL.block_bytes, dtype=np.uint8) for _ in hashes]
    assert local.load(ns, hashes, out) == 8
    for want, have in zip(data, out):
        assert np.array_equal(want, have)
    for want, have in zip(data, local.fetch(ns, hashes)):
        assert np.array_equal(want, have)
    assert active_leases(service) == 0


def test_the_http_path_does_not_count_a_block_that_failed_its_check_as_loaded(client, local, ns):
    """kvstore sends a block that fails its CRC32C mid-answer as a missing frame: the HTTP data path's load
    counts only the blocks before it, so an adapter never uses that block's untouched buffer as KV data."""
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(3, SMALL.block_bytes, seed=43)
    local.store(ns, blocks)
    r = local._ctl.lease(ns, [hashes[1]])
    off = r["locations"][0]["offset"]
    local._ctl.release(r["leaseId"])
    local.mem[off : off + 64] ^= 0xFF  # block 1 damaged in place
    out = [np.zeros(SMALL.block_bytes, dtype=np.uint8) for _ in hashes]
    assert HttpDataPath(client).load(ns, hashes, out) == 1
    assert np.array_equal(out[0], data[0])


def test_the_http_paths_fetch_raises_for_a_block_that_failed_its_check_as_the_local_paths_does(client, local, ns):
    """data_path(c).fetch is "every block or NotFound / ChecksumMismatch" on both paths: over HTTP a missing
    frame must not come back as None (or, with ``out``, as that block's untouched buffer)."""
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(3, SMALL.block_bytes, seed=46)
    local.store(ns, blocks)
    r = local._ctl.lease(ns, [hashes[1]])
    off = r["locations"][0]["offset"]
    local._ctl.release(r["leaseId"])
    local.mem[off : off + 64] ^= 0xFF  # block 1 damaged in place
    with pytest.raises(kvstore.ChecksumMismatch):
        local.fetch(ns, hashes)
    # kvstore drops a block that fails its check when it serves it: the next call finds it gone
    with pytest.raises((kvstore.ChecksumMismatch, kvstore.NotFound)) as e:
        HttpDataPath(client).fetch(ns, hashes)
    assert hashes[1].hex() in str(e.value)
    out = [np.zeros(SMALL.block_bytes, dtype=np.uint8) for _ in hashes]
    with pytest.raises((kvstore.ChecksumMismatch, kvstore.NotFound)):
        HttpDataPath(client).fetch(ns, hashes, out=out)


def _store_with_a_late_copy(path, ns, blocks, at, late):
    """Stores ``blocks`` through ``path`` while a stalled writer's copy of ``late`` lands at offset ``at`` after
    the blocks were copied in and before their commit; returns the reservations made and the result."""
    real_commit, real_reserve = path._ctl.commit, path._ctl.reserve
    reserved = []

    def reserve(*args, **kwargs):
        r = real_reserve(*args, **kwargs)
        reserved.append(r)
        return r

    def late_copy_then_commit(*args, **kwargs):
        path.mem[at : at + late.nbytes] = late
        return real_commit(*args, **kwargs)

    path._ctl.commit, path._ctl.reserve = late_copy_then_commit, reserve
    try:
        return reserved, path.store(ns, blocks)
    finally:
        path._ctl.commit, path._ctl.reserve = real_commit, real_reserve


def test_a_late_writer_of_an_expired_reservation_cannot_make_another_block_serve_its_bytes(service, client, ns):
    """Over HTTP control calls (no fences): client A's reservation expires while it stalls; its slot goes to
    client B's block Y. A's late copy of block X lands after B's copy and before B's commit: the commit carries
    the CRC32C of B's own bytes, so Y is refused instead of being served with X's bytes under a checksum that
    matches them."""
    local = LocalDataPath(client, control="http")
    try:
        client.declare_namespace(ns, SMALL, hash_seed="0")
        x_hashes, x_data, _ = prompt(1, SMALL.block_bytes, seed=44)
        y_hashes, y_data, y_blocks = prompt(1, SMALL.block_bytes, seed=45)
        expired = expired_reservations(service)
        a = local._ctl.reserve(ns, [(x_hashes[0], None)], 1)  # client A: 1 s to commit
        assert a.get("checksums", True)
        a_off = a["slots"][0]["offset"]
        await_expired_reservations(service, expired + 1)  # A stalls: its reservation expires, its slot is free
        reserved, result = _store_with_a_late_copy(local, ns, y_blocks, a_off, x_data[0])  # A's copy lands
        offsets = [s["offset"] for r in reserved for s in r["slots"]]
        assert offsets == [a_off], "the freed slot was handed out again (the allocator reuses it first)"
        assert [h for h, _ in result.failed] == [y_hashes[0]]
        out = [np.zeros(SMALL.block_bytes, dtype=np.uint8)]
        assert local.load(ns, y_hashes, out) == 0
    finally:
        local.close()


def test_a_socket_client_given_a_slot_an_unfenced_reservation_left_sends_its_crc32cs(service, client, local, ns):
    """A reservation made over HTTP has no fence: once it expires its slot goes back to the pool while its
    writer may still copy there. A socket client given that slot is told to send its CRC32Cs, so a late copy
    landing before its commit fails the block instead of being served."""
    client.declare_namespace(ns, SMALL, hash_seed="0")
    http = LocalDataPath(client, control="http")
    try:
        x_hashes, x_data, _ = prompt(1, SMALL.block_bytes, seed=49)
        expired = expired_reservations(service)
        a = http._ctl.reserve(ns, [(x_hashes[0], None)], 1)
        a_off = a["slots"][0]["offset"]
        await_expired_reservations(service, expired + 1)  # expired, unfenced: the slot is free again
    finally:
        http.close()
    y_hashes, _, y_blocks = prompt(1, SMALL.block_bytes, seed=50)
    seen, result = _store_with_a_late_copy(local, ns, y_blocks, a_off, x_data[0])
    assert [s["offset"] for s in seen[0]["slots"]] == [a_off] and seen[0]["checksums"]
    assert [h for h, _ in result.failed] == [y_hashes[0]]
    assert local.load(ns, y_hashes, [np.zeros(SMALL.block_bytes, dtype=np.uint8)]) == 0


def test_a_stalled_socket_clients_expired_slots_are_no_one_elses_until_it_names_them_or_goes(service, client, ns):
    """Over the control socket kvstore fences an expired reservation's slots while its client is connected, so
    that client's late copy lands only in its own slots and other stores (which then send no CRC32Cs) get
    other slots; the slots are free again once the client cancels the reservation, or closes its connections."""
    client.declare_namespace(ns, SMALL, hash_seed="0")
    stalled, other = LocalDataPath(client), LocalDataPath(client)
    try:
        x_hashes, x_data, _ = prompt(1, SMALL.block_bytes, seed=46)
        expired = expired_reservations(service)
        a = stalled._ctl.reserve(ns, [(x_hashes[0], None)], 1)  # 1 s to commit
        assert stalled._ctl._named  # its connections name the client: fenced
        a_off = a["slots"][0]["offset"]
        await_expired_reservations(service, expired + 1)  # expired, but its client is connected: fenced
        got = []
        real_reserve = other._ctl.reserve

        def reserve(*args, **kwargs):
            r = real_reserve(*args, **kwargs)
            got.extend(s["offset"] for s in r["slots"])
            stalled.mem[a_off : a_off + SMALL.block_bytes] = x_data[0]  # the stalled client's late copy
            return r

        y_hashes, y_data, y_blocks = prompt(1, SMALL.block_bytes, seed=47)
        other._ctl.reserve = reserve
        try:
            result = other.store(ns, y_blocks)
        finally:
            other._ctl.reserve = real_reserve
        assert got and a_off not in got, "an expired slot was handed out while its writer's client was connected"
        assert result.committed == [y_hashes[0]] and not result.failed
        out = [np.zeros(SMALL.block_bytes, dtype=np.uint8)]
        assert other.load(ns, y_hashes, out) == 1 and bytes(out[0]) == bytes(y_data[0])

        stalled._cancel(a["reservationId"])  # the stalled client wakes, stops copying and names it: 404, freed
        z_hashes, _, z_blocks = prompt(1, SMALL.block_bytes, seed=48)
        z = other._ctl.reserve(ns, [(z_hashes[0], None)], None)
        assert [s["offset"] for s in z["slots"]] == [a_off], "the named slot is free again (reused first)"
        other._cancel(z["reservationId"])

        expired = expired_reservations(service)
        b = stalled._ctl.reserve(ns, [(x_hashes[0], None)], 1)
        b_off = b["slots"][0]["offset"]
        await_expired_reservations(service, expired + 1)  # expired, fenced
        stalled.close()  # every connection of the stalled client closes: the next sweep frees its slots
        deadline = time.monotonic() + 30
        while True:
            w = other._ctl.reserve(ns, [(z_hashes[0], None)], None)
            other._cancel(w["reservationId"])
            if [s["offset"] for s in w["slots"]] == [b_off] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert [s["offset"] for s in w["slots"]] == [b_off]
    finally:
        stalled.close()
        other.close()


def test_a_reservation_whose_answer_never_reached_its_socket_client_goes_at_its_expiry(client, ns):
    """A socket client that gave up on a RESERVE (its timeout: it closes that connection unread) never learns
    the slots, so it cannot name the reservation; its anchor stays open. The reservation must still go back at
    its expiry instead of staying fenced, held and counted against the tenant's quota, for the client's life."""
    client.declare_namespace(ns, SMALL, hash_seed="0")
    local = LocalDataPath(client)
    try:
        ctl = local._ctl
        x_hashes, _, _ = prompt(1, SMALL.block_bytes, seed=51)
        first = ctl.reserve(ns, [(x_hashes[0], None)], None)  # opens the anchor; the slot handed out first
        off = first["slots"][0]["offset"]
        ctl.cancel(first["reservationId"])
        s, fenced = ctl._open()
        assert fenced
        s.shutdown(socket.SHUT_RD)  # the client stops waiting for the answer
        body = _str(ns) + struct.pack("<qI", 1, 1) + _hash(x_hashes[0]) + _hash(None)
        s.sendall(struct.pack("<IB", len(body) + 1, 2) + body)  # RESERVE, 1 s
        # past its expiry while the client (its anchor) is connected; no sweep need have run: the wait below
        # gives the slot until its deadline to come back (the answer unsendable, it may be cancelled at once)
        time.sleep(3)
        s.close()
        deadline = time.monotonic() + 30
        while True:
            w = ctl.reserve(ns, [(x_hashes[0], None)], None)
            ctl.cancel(w["reservationId"])
            if [sl["offset"] for sl in w["slots"]] == [off] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert [sl["offset"] for sl in w["slots"]] == [off], "a reservation no one learned of stays fenced"
    finally:
        local.close()
