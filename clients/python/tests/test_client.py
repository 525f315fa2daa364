"""The HTTP client against a real kvstore: namespaces, store, fetch, lookup, delete, leases, errors."""

from __future__ import annotations

import numpy as np
import pytest

import kvstore
from blocks import SMALL, chain, prompt
from kvstore import Block, Layout


def test_declaring_a_namespace_creates_then_confirms_and_a_different_layout_conflicts(client, ns):
    created = client.declare_namespace(ns, SMALL, model="m", hash_seed="0")
    assert created["layout"]["kvHeads"] == 2
    assert client.declare_namespace(ns, SMALL, model="m", hash_seed="0")["model"] == "m"
    assert ns in client.namespaces()
    with pytest.raises(kvstore.Conflict) as e:
        client.declare_namespace(ns, Layout(4, 2, 64, "float16", 16), model="m", hash_seed="0")
    assert e.value.status == 409 and e.value.problem["status"] == 409


def test_a_bad_declaration_raises_with_the_problem_field(client, ns):
    with pytest.raises(kvstore.BadRequest) as e:
        client.declare_namespace(ns, Layout(2, 2, 64, "float13", 16))
    assert e.value.status == 400
    assert e.value.field == "layout.dtype"
    assert "float13" in e.value.detail
    assert e.value.title


def test_many_blocks_round_trip_byte_exact(client, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(200, SMALL.block_bytes, seed=1)
    stored = client.store(ns, blocks)
    assert stored["storedBlocks"] == 200 and stored["bytes"] == 200 * SMALL.block_bytes
    got = client.fetch(ns, hashes)
    assert len(got) == 200
    for want, have in zip(data, got):
        assert np.array_equal(want, have)
    # into caller buffers, in a different order
    out = [bytearray(SMALL.block_bytes) for _ in range(3)]
    client.fetch(ns, [hashes[7], hashes[0], hashes[199]], out=out)
    assert bytes(out[0]) == data[7].tobytes() and bytes(out[1]) == data[0].tobytes()
    assert bytes(out[2]) == data[199].tobytes()


def test_lookup_by_hashes_matches_the_stored_prefix_and_reports_tiers(client, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, _, blocks = prompt(10, SMALL.block_bytes, seed=2)
    client.store(ns, blocks[:6])
    r = client.lookup(ns, block_hashes=hashes)
    assert r.matched_blocks == 6
    assert r.matched_tokens == 6 * SMALL.block_size
    assert r.matched_hashes == hashes[:6]
    assert r.tiers == ["DRAM"] * 6
    assert r.lease is None
    assert client.lookup(ns, block_hashes=chain(3, "other")).matched_blocks == 0


def test_lookup_by_token_ids_of_an_unknown_prompt_matches_nothing(client, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    r = client.lookup(ns, token_ids=list(range(64)), extra_keys={"lora": "a"})
    assert r.matched_blocks == 0


def test_lookup_with_both_tokens_and_hashes_is_refused_naming_the_field(client, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    with pytest.raises(kvstore.BadRequest) as e:
        client.lookup(ns, token_ids=[1] * 16, block_hashes=chain(1, "x"))
    assert e.value.field == "tokenIds"


def test_a_hash_of_the_wrong_length_is_refused(client, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    with pytest.raises(kvstore.BadRequest) as e:
        client.lookup(ns, block_hashes=[b"\x01" * 8])
    assert e.value.field == "blockHashes[0]"


def test_a_block_of_the_wrong_size_is_refused_and_earlier_frames_stay(client, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, blocks = prompt(3, SMALL.block_bytes, seed=3)
    bad = Block(hashes[2], np.zeros(100, dtype=np.uint8), hashes[1])
    with pytest.raises(kvstore.BadRequest) as e:
        client.store(ns, blocks[:2] + [bad])
    assert e.value.field == "body" and "frame 2" in e.value.detail
    assert client.lookup(ns, block_hashes=hashes).matched_blocks == 2
    # the connection is still usable after the refusal
    assert np.array_equal(client.fetch(ns, [hashes[1]])[0], data[1])


def test_delete_then_fetch_names_the_missing_block(client, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, _, blocks = prompt(3, SMALL.block_bytes, seed=4)
    client.store(ns, blocks)
    client.delete(ns, hashes[1])
    with pytest.raises(kvstore.NotFound) as e:
        client.fetch(ns, hashes)
    assert hashes[1].hex() in e.value.detail
    with pytest.raises(kvstore.NotFound):
        client.delete(ns, hashes[1])
    assert client.lookup(ns, block_hashes=hashes).matched_blocks == 1


def test_a_lease_holds_blocks_until_released(client, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, _, blocks = prompt(4, SMALL.block_bytes, seed=5)
    client.store(ns, blocks)
    r = client.lookup(ns, block_hashes=hashes, lease=True)
    assert r.lease is not None and r.lease.blocks == 4
    assert client.lease(r.lease.id)["blocks"] == [h.hex() for h in hashes]
    with pytest.raises(kvstore.Conflict):
        client.delete(ns, hashes[0])
    with pytest.raises(kvstore.Conflict):
        client.delete_namespace(ns)
    client.release(r.lease.id)
    with pytest.raises(kvstore.NotFound):
        client.release(r.lease.id)
    assert client.delete_namespace(ns) == 4


def test_one_keep_alive_connection_carries_many_requests(client, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, _, blocks = prompt(2, SMALL.block_bytes, seed=6)
    client.store(ns, blocks)
    sock = client._conns.get().sock
    for _ in range(150):
        client.lookup(ns, block_hashes=hashes)
        client.fetch(ns, hashes[:1])
    assert client._conns.get().sock is sock


def test_an_unreachable_service_raises_unavailable():
    from service import free_port

    c = kvstore.KvStoreClient(f"http://127.0.0.1:{free_port()}", timeout=5)
    with pytest.raises(kvstore.KvStoreUnavailable):
        c.namespaces()


def test_a_token_is_sent_as_a_bearer_header(service, ns):
    # the engine API accepts it whether or not tokens are configured; the admin API checks it
    admin = kvstore.KvStoreClient(service.url, token="pytest-admin")
    assert "DRAM" in str(admin.request_json("GET", "/admin/tiers"))
    wrong = kvstore.KvStoreClient(service.url, token="wrong")
    with pytest.raises(kvstore.Forbidden) as e:
        wrong.request_json("GET", "/admin/tiers")
    assert e.value.status == 403


def test_all_hashes_names_every_full_block_so_a_client_stores_under_kvstore_hashes(client, ns):
    client.declare_namespace(ns, SMALL, hash_seed="0")
    tokens = list(range(1000, 1000 + 5 * SMALL.block_size + 3))  # five full blocks and a partial one
    r = client.lookup(ns, token_ids=tokens, all_hashes=True)
    assert r.matched_blocks == 0 and len(r.block_hashes) == 5
    _, data, _ = prompt(5, SMALL.block_bytes, seed=8)
    hs = r.block_hashes
    client.store(ns, [Block(h, d, hs[i - 1] if i else None) for i, (h, d) in enumerate(zip(hs, data))])
    again = client.lookup(ns, token_ids=tokens)
    assert again.matched_blocks == 5 and again.matched_tokens == 5 * SMALL.block_size


def _stalling_server(first_body_sent: bytes, first_body_length: int):
    """An HTTP server whose first answer sends part of its body and stalls; later answers are
    whole. Returns (url, the request lines it received)."""
    import socket
    import threading
    import time

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)
    seen = []

    def accept():
        while True:
            conn, _ = srv.accept()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    def serve(conn):
        f = conn.makefile("rb")
        while True:
            line = f.readline()
            if not line:
                return
            while f.readline() not in (b"\r\n", b""):
                pass
            seen.append(line.decode().strip())
            if len(seen) == 1:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
                conn.sendall(b"Content-Length: %d\r\n\r\n" % first_body_length + first_body_sent)
                time.sleep(3)
            else:
                body = b'{"namespaces":["x"]}'
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)

    threading.Thread(target=accept, daemon=True).start()
    return f"http://127.0.0.1:{srv.getsockname()[1]}", seen


def test_a_body_that_stalls_past_the_timeout_is_unavailable_and_the_next_call_goes_out_on_a_new_connection():
    url, seen = _stalling_server(b'{"namespa', 20)
    c = kvstore.KvStoreClient(url, timeout=0.5)
    with pytest.raises(kvstore.KvStoreUnavailable):
        c.namespaces()
    # the half-read answer must not be left on the connection: the next call is answered, not sent and then
    # refused by http.client (which the service would have acted on)
    assert c.namespaces() == ["x"]


def test_a_fetch_answer_that_stalls_mid_block_past_the_timeout_is_unavailable():
    h = bytes(32)
    frame_start = bytes((32,)) + h + b"\x00" + (64).to_bytes(4, "big") + bytes(10)  # 10 of the block's 64 bytes
    url, _ = _stalling_server(frame_start, len(frame_start) + 54)
    c = kvstore.KvStoreClient(url, timeout=0.5)
    with pytest.raises(kvstore.KvStoreUnavailable):
        c.fetch("ns", [h])
    assert c.namespaces() == ["x"]


def test_a_large_store_refused_before_its_body_is_read_raises_the_problem_not_unavailable(client, ns):
    # 32 MiB batches: the service answers (and closes) long before the client has sent the body
    big = Layout.for_bytes(1 << 20)
    blocks = [Block(h, np.zeros(1 << 20, np.uint8)) for h in chain(32, ns)]
    with pytest.raises(kvstore.NotFound) as e:
        client.store(ns, blocks)  # not declared yet: a vLLM adapter declares it again on NotFound
    assert "not declared" in e.value.detail
    client.declare_namespace(ns, big, hash_seed="0")
    wrong = [Block(h, np.zeros((1 << 20) + 2, np.uint8)) for h in chain(32, ns)]
    with pytest.raises(kvstore.BadRequest) as e:
        client.store(ns, wrong)
    assert "frame 0" in e.value.detail
    assert client.store(ns, blocks[:2])["storedBlocks"] == 2  # and the client goes on


def test_a_store_over_the_request_size_limit_raises_payload_too_large(tmp_path):
    from service import Service

    svc = Service(tmp_path / "kv", local=False, extra_args=["--kvstore.max-request-size=4MB"]).start()
    try:
        c = kvstore.KvStoreClient(svc.url)
        c.declare_namespace("py-limit", Layout.for_bytes(1 << 20), hash_seed="0")
        with pytest.raises(kvstore.PayloadTooLarge) as e:
            c.store("py-limit", [Block(h, np.zeros(1 << 20, np.uint8)) for h in chain(32, "limit")])
        assert "kvstore.max-request-size" in e.value.detail
    finally:
        svc.stop()


class _TorchStandIn:
    """The parts of torch a CPU tensor passed as block data uses (``torch.Tensor`` as torch behaves, written
    for this test): ``.numpy()`` refuses dtypes numpy lacks (bfloat16, float8) with a TypeError, as torch does;
    ``.view(torch.uint8)`` reinterprets the same memory."""

    uint8 = "uint8"

    class Tensor:
        def __init__(self, storage, dtype):
            self._storage, self.dtype = storage, dtype  # storage: a numpy array of the element's width

        def numpy(self):
            if self.dtype in ("bfloat16", "float8_e4m3fn"):
                raise TypeError(f"Got unsupported ScalarType {self.dtype}")
            return self._storage

        def view(self, dtype):
            assert dtype == "uint8"
            return _TorchStandIn.Tensor(self._storage.view(np.uint8), "uint8")

        def is_contiguous(self):
            return self._storage.flags.c_contiguous

        def detach(self):
            return self


@pytest.mark.parametrize("dtype,width", [("bfloat16", np.uint16), ("float8_e4m3fn", np.uint8)])
def test_a_bfloat16_or_float8_cpu_tensor_stores_and_fetches_its_own_bytes(client, ns, monkeypatch, dtype, width):
    import sys

    torch = _TorchStandIn()
    monkeypatch.setitem(sys.modules, "torch", torch)
    client.declare_namespace(ns, SMALL, hash_seed="0")
    hashes, data, _ = prompt(2, SMALL.block_bytes, seed=21)
    kv = torch.Tensor(data[0].view(width).reshape(2, -1), dtype)  # a bf16 KV block, as the engine holds it
    client.store(ns, [Block(hashes[0], kv)])
    assert np.array_equal(client.fetch(ns, hashes[:1])[0], data[0])
    out = torch.Tensor(np.zeros(SMALL.block_bytes // np.dtype(width).itemsize, width), dtype)
    client.fetch(ns, hashes[:1], out=[out])  # into the engine's own bf16 buffer
    assert out._storage.view(np.uint8).tobytes() == data[0].tobytes()


def test_a_tenant_past_its_leased_block_limit_gets_too_many_requests_naming_the_limit(tmp_path):
    from service import Service

    svc = Service(tmp_path / "kv", local=False, extra_args=["--kvstore.limits.max-leased-blocks-per-tenant=2"]).start()
    try:
        c = kvstore.KvStoreClient(svc.url)
        c.declare_namespace("py-leases", SMALL, hash_seed="0")
        hashes = chain(3, "leases")
        c.store("py-leases", [Block(h, np.full(SMALL.block_bytes, i, np.uint8)) for i, h in enumerate(hashes)])
        with pytest.raises(kvstore.TooManyRequests) as e:
            c.lookup("py-leases", block_hashes=hashes, lease=True)
        assert e.value.status == 429
        assert "max-leased-blocks-per-tenant" in e.value.detail
        held = c.lookup("py-leases", block_hashes=hashes[:2], lease=True)  # within the limit: leased
        assert held.matched_blocks == 2
    finally:
        svc.stop()
