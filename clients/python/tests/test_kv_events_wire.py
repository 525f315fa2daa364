"""kvstore's KV events (ZMQ PUB + ROUTER replay, msgpack) decoded as real routers decode them.

Two stand-ins, written from the upstream source (read, not copied) with python3-msgpack, since msgspec
and Rust are not on the test machine:

- vLLM's msgspec decoder, ``msgspec.msgpack.Decoder(KVEventBatch)``, for the structs of
  ``vllm/distributed/kv_events.py`` at EmbeddedLLM/vllm 8704c8ad8095bc9387ccae2b974bc030b78131a4:
  ``KVEventBatch`` array_like ``[ts, events, data_parallel_rank=None]``; events tagged (``tag=True``, tag
  field ``type``, value the class name) and, since #42892, maps (no ``array_like``); fields without a
  default required, unknown fields ignored, each field type-checked as msgspec does (strict: no int for a
  str, no str for an int, ``ExternalBlockHash = bytes | int``).
- Dynamo's router, ``lib/kv-router/src/zmq_wire/{types,deserialize,convert}.rs`` and
  ``bin/kv_indexer/listener.rs`` at wxsms/dynamo 1254130491c1d8bf08354f24dd141bc3abdbbd69: three frames,
  an 8-byte sequence, ``KvEventBatch`` as the tuple ``(f64, Vec<RawKvEvent>, Option<i32>)``, events as a
  tagged map or a tagged sequence, block hashes ``i64 | u64`` (never bytes), ``token_ids`` ``Vec<u32>``,
  ``block_size`` ``usize``, ``medium`` through ``StorageTier::from_kv_medium``; then ``convert_event`` /
  ``create_stored_blocks``: a block is indexed only when ``block_size`` is the router's block size and
  ``token_ids`` holds its tokens.
- llm-d's kv-cache indexer, ``pkg/kvevents/engineadapter/vllm_adapter.go`` at llm-d/llm-d-kv-cache
  0d2ae5460e64a5b53c725cb38fd6f6a411c06568 with vmihailenco/msgpack v5: events are structs tagged
  ``msgpack:",array"``, and v5's ``decodeStructValue`` refuses an array whose length is not the struct's
  field count ("msgpack: number of fields in array-encoded struct has changed"): ``KVEventBatch`` exactly 3,
  ``BlockStored`` exactly 8 (tag, block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium,
  lora_name), ``BlockRemoved`` exactly 3; one event that fails fails its whole batch.
"""

from __future__ import annotations

import time

import msgpack
import pytest
import zmq

from blocks import SMALL, prompt
from service import Service, free_ports, port_taken
from vllm_kv_event_schema import REQUIRED, STRUCTS, VLLM_COMMIT

import kvstore

DYNAMO_COMMIT = "wxsms/dynamo@1254130491c1d8bf08354f24dd141bc3abdbbd69"
LLMD_COMMIT = "llm-d/llm-d-kv-cache@0d2ae5460e64a5b53c725cb38fd6f6a411c06568"



class DecodeError(Exception):
    pass


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


# ---------------------------------------------------------------- vLLM's msgspec decoder (stand-in)


def _ext_hash(v):  # ExternalBlockHash = bytes | int (msgspec ints: -2**63 .. 2**64-1)
    return isinstance(v, bytes) or (_is_int(v) and -(2**63) <= v < 2**64)


def _opt(check):
    return lambda v: v is None or check(v)


_VLLM_TYPES = {
    "hashes": lambda v: isinstance(v, list) and all(_ext_hash(h) for h in v),
    "opt_hash": _opt(_ext_hash),
    "ints": lambda v: isinstance(v, list) and all(_is_int(t) for t in v),
    "int": _is_int,
    "opt_int": _opt(_is_int),
    "opt_str": _opt(lambda v: isinstance(v, str)),
    "opt_float": _opt(lambda v: _is_int(v) or isinstance(v, float)),
    # list[tuple[Any, ...] | None] | None
    "opt_extra_keys": _opt(lambda v: isinstance(v, list) and all(k is None or isinstance(k, list) for k in v)),
}

# declaration order of vllm/distributed/kv_events.py at VLLM_COMMIT (vllm_kv_event_schema.py)
VLLM_STRUCTS = STRUCTS


def vllm_decode_event(raw, array_like):
    if array_like:  # vLLM before #42892
        if not isinstance(raw, list) or not raw:
            raise DecodeError("Expected `array`, got %r" % (raw,))
        tag, values = raw[0], raw[1:]
        if tag not in VLLM_STRUCTS:
            raise DecodeError("Invalid value %r - at `$.events[...][0]`" % (tag,))
        fields = VLLM_STRUCTS[tag]
        named = dict(zip((f[0] for f in fields), values))
    else:
        if not isinstance(raw, dict):
            raise DecodeError("Expected `object`, got `%s`" % type(raw).__name__)
        tag = raw.get("type")
        if tag not in VLLM_STRUCTS:
            raise DecodeError("Invalid value %r - at `$.events[...].type`" % (tag,))
        fields = VLLM_STRUCTS[tag]
        named = {k: v for k, v in raw.items() if k != "type"}  # unknown fields are ignored
    out = {"type": tag}
    for name, kind, default in fields:
        if name not in named:
            if default is REQUIRED:
                raise DecodeError("Object missing required field `%s` (%s)" % (name, tag))
            out[name] = default
            continue
        if not _VLLM_TYPES[kind](named[name]):
            raise DecodeError("Expected `%s`, got %r - at `%s.%s`" % (kind, named[name], tag, name))
        out[name] = named[name]
    return out


def vllm_decode_batch(payload, array_like=False):
    batch = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    if not isinstance(batch, list):
        raise DecodeError("Expected `array`, got `%s`" % type(batch).__name__)
    if len(batch) < 2:
        raise DecodeError("Expected `array` of at least length 2, got %d" % len(batch))
    ts, events = batch[0], batch[1]
    rank = batch[2] if len(batch) > 2 else None
    if not (isinstance(ts, float) or _is_int(ts)):
        raise DecodeError("Expected `float`, got %r - at `$[0]`" % (ts,))
    if not isinstance(events, list):
        raise DecodeError("Expected `array` - at `$[1]`")
    if rank is not None and not _is_int(rank):
        raise DecodeError("Expected `int | null` - at `$[2]`")
    return ts, [vllm_decode_event(e, array_like) for e in events], rank


# ---------------------------------------------------------------- Dynamo's router (stand-in)


def _dyn_hash(v):  # BlockHashValue: untagged Signed(i64) | Unsigned(u64); bytes are an error
    if not _is_int(v) or not -(2**63) <= v < 2**64:
        raise DecodeError("data did not match any variant of untagged enum BlockHashValue: %r" % (v,))
    return v & (2**64 - 1)


def _dyn_token_ids(v):
    if not isinstance(v, list):
        raise DecodeError("token_ids is not a sequence")
    if all(_is_int(t) and 0 <= t < 2**32 for t in v):
        return v
    raise DecodeError("data did not match any variant of untagged enum KvTokenIds")


def _dyn_opt_str(v):
    if v is not None and not isinstance(v, str):
        raise DecodeError("invalid type: %r, expected a string" % (v,))
    return v


def _dyn_usize(v):
    if not _is_int(v) or v < 0:
        raise DecodeError("invalid value: %r, expected usize" % (v,))
    return v


def dynamo_decode_event(raw):
    if isinstance(raw, dict):  # visit_map
        tag = raw.get("type")
        f = raw
        get = f.get
        if tag == "BlockStored":
            for name in ("block_hashes", "token_ids", "block_size"):
                if name not in f:
                    raise DecodeError("missing field `%s`" % name)
    elif isinstance(raw, list):  # visit_seq
        if not raw or not isinstance(raw[0], str):
            raise DecodeError("sequence must start with event tag")
        tag = raw[0]
        names = {
            "BlockStored": ["block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
                            "lora_name", "extra_keys"],
            "BlockRemoved": ["block_hashes", "medium"],
            "AllBlocksCleared": ["ownership"],
        }.get(tag, [])
        f = dict(zip(names, raw[1:]))
        if tag == "BlockStored":
            for i, name in ((1, "block_hashes"), (3, "token_ids"), (4, "block_size")):
                if name not in f:
                    raise DecodeError("invalid length %d, expected missing %s" % (i, name))
            if f.get("lora_id") is not None and not (_is_int(f["lora_id"]) and f["lora_id"] >= 0):
                raise DecodeError("lora_id is not Option<u64>")
        get = f.get
    else:
        raise DecodeError("a kv event encoded as a tagged map or sequence, got %r" % (raw,))
    if tag == "BlockStored":
        return {
            "type": tag,
            "block_hashes": [_dyn_hash(h) for h in get("block_hashes")],
            "parent_block_hash": None if get("parent_block_hash") is None else _dyn_hash(get("parent_block_hash")),
            "token_ids": _dyn_token_ids(get("token_ids")),
            "block_size": _dyn_usize(get("block_size")),
            "medium": _dyn_opt_str(get("medium")),
            "lora_name": _dyn_opt_str(get("lora_name")),
        }
    if tag == "BlockRemoved":
        if get("block_hashes") is None:
            raise DecodeError("missing field `block_hashes`")
        return {"type": tag, "block_hashes": [_dyn_hash(h) for h in get("block_hashes")],
                "medium": _dyn_opt_str(get("medium"))}
    if tag == "AllBlocksCleared":
        return {"type": tag}
    raise DecodeError("unknown variant %r" % (tag,))


def dynamo_decode_batch(payload):
    batch = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    # (f64, Vec<RawKvEvent>, Option<i32>): a sequence of exactly three
    if not isinstance(batch, list) or len(batch) != 3:
        raise DecodeError("invalid length, expected a tuple of size 3: %r" % (batch,))
    ts, events, rank = batch
    if not (isinstance(ts, float) or _is_int(ts)):
        raise DecodeError("ts is not f64")
    if rank is not None and not (_is_int(rank) and -(2**31) <= rank < 2**31):
        raise DecodeError("data_parallel_rank is not Option<i32>")
    return [dynamo_decode_event(e) for e in events]


_DYNAMO_MEDIA = {"GPU": "Device", "DEVICE": "Device", "CPU": "HostPinned", "CPU_PINNED": "HostPinned",
                 "CPU_TIER1": "HostPinned", "CPU_TIER2": "Disk", "DISK": "Disk", "NVME": "Disk",
                 "STORAGE": "Disk", "EXTERNAL": "External", "NETWORK": "External", "REMOTE": "External",
                 "SHARED": "External"}


def dynamo_indexed_blocks(event, kv_block_size):
    """convert_event + create_stored_blocks: the (tier, hash) pairs a BlockStored adds to the index."""
    medium = event["medium"]
    tier = "Device" if medium is None else _DYNAMO_MEDIA.get(medium)
    if tier is None:
        return []  # "Dropping KV event with unknown medium"
    out, offset = [], 0
    for h in event["block_hashes"]:
        if event["block_size"] != kv_block_size:
            break  # "Block not published. Block size must be ..."
        if offset + event["block_size"] > len(event["token_ids"]):
            break  # "Block not published. token_ids too short"
        out.append((tier, h))
        offset += event["block_size"]
    return out


# ---------------------------------------------------------------- llm-d's vLLM adapter (stand-in)


def _llmd_struct(raw, fields, what):
    # vmihailenco/msgpack v5 decodeStructValue: an array-encoded struct takes exactly its field count
    if not isinstance(raw, list):
        raise DecodeError("%s is not an array" % what)
    if len(raw) != fields:
        raise DecodeError("msgpack: number of fields in array-encoded struct has changed (%s: %d, struct %d)"
                          % (what, len(raw), fields))
    return raw


def _llmd_hash(v):  # getHashAsUint64: uint64, int64 or []byte
    if _is_int(v):
        return v & (2**64 - 1)
    if isinstance(v, bytes) and v:
        return int.from_bytes(v[-8:], "big")
    raise DecodeError("unsupported hash type: %r" % (v,))


def llmd_decode_batch(topic, payload):
    """DecodeMessageToEventBatch: (pod, model, events), or DecodeError for the whole batch."""
    parts = topic.decode().split("@")
    pod, model = (parts[1], parts[2]) if len(parts) == 3 else (topic.decode(), "")
    batch = _llmd_struct(msgpack.unpackb(payload, raw=False), 3, "KVEventBatch")
    out = []
    for raw in batch[1]:
        if not isinstance(raw, list) or not raw or not isinstance(raw[0], str):
            raise DecodeError("malformed tagged union")
        tag = raw[0]
        if tag == "BlockStored":
            _, hashes, parent, tokens, block_size, lora_id, medium, lora_name = _llmd_struct(raw, 8, tag)
            if not (isinstance(tokens, list) and all(_is_int(t) and 0 <= t < 2**32 for t in tokens)):
                raise DecodeError("TokenIds is not []uint32")
            if not _is_int(block_size):
                raise DecodeError("BlockSize is not int")
            out.append({"type": tag, "block_hashes": [_llmd_hash(h) for h in hashes],
                        "parent_block_hash": 0 if parent is None else _llmd_hash(parent),
                        "device_tier": "gpu" if medium is None else medium.lower(), "lora_name": lora_name})
        elif tag == "BlockRemoved":
            _, hashes, medium = _llmd_struct(raw, 3, tag)
            out.append({"type": tag, "block_hashes": [_llmd_hash(h) for h in hashes],
                        "device_tier": "gpu" if medium is None else medium.lower()})
        elif tag == "AllBlocksCleared":
            out.append({"type": tag})
        else:
            raise DecodeError("unknown vLLM event tag: %s" % tag)
    return pod, model, out


# ---------------------------------------------------------------- the service and its sockets


def _replay(ctx, endpoint, start):
    """[b"", start] to the ROUTER (as Dynamo's DEALER sends it); the answer up to the end marker."""
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 30000)
    sock.connect(endpoint)
    try:
        sock.send_multipart([b"", start.to_bytes(8, "big")])
        out = []
        while True:
            frames = sock.recv_multipart()
            assert len(frames) == 4 and frames[0] == b"", frames
            _, topic, seq, payload = frames
            if payload == b"":
                # vLLM's END_SEQ: (-1).to_bytes(8, "big", signed=True), empty topic and payload
                assert topic == b"" and seq == (-1).to_bytes(8, "big", signed=True)
                return out
            assert len(seq) == 8
            out.append((topic, int.from_bytes(seq, "big"), payload))
    finally:
        sock.close()


def _await_subscribed(c, sub) -> None:
    """Stores one block at a time, in a namespace of its own, until a live batch reaches ``sub``: a SUB's
    subscription reaches the PUB some time after it connects (seconds on a loaded machine), and what is published
    before that never reaches it."""
    c.declare_namespace("probe", SMALL, model="m-probe", hash_seed="0")
    deadline, seed = time.monotonic() + 60, 1000
    while not sub.poll(200):
        assert time.monotonic() < deadline, "no live batch reached the subscriber within 60 s"
        c.store("probe", prompt(1, SMALL.block_bytes, seed)[2])
        seed += 1
    sub.recv_multipart()


def _ext(h: bytes) -> int:
    """vLLM's maybe_convert_block_hash: int.from_bytes(hash, "big") & (2**64 - 1)."""
    return int.from_bytes(h, "big") & (2**64 - 1)


@pytest.fixture
def events_service(tmp_path, request):
    # the ports are free when chosen; another process may bind one before kvstore does: then choose again
    for attempt in range(3):
        pub, rep = free_ports(2)
        svc = Service(
            tmp_path / f"kvstore-{attempt}",
            extra_args=[
                "--kvstore.events.enabled=true",
                f"--kvstore.events.endpoint=tcp://*:{pub}",
                f"--kvstore.events.replay-endpoint=tcp://*:{rep}",
                f"--kvstore.events.encoding={request.param}",
            ],
        )
        try:
            svc.start()
            break
        except RuntimeError as e:
            if "no kvstore to start" in str(e):
                pytest.skip(str(e))
            if attempt == 2 or not port_taken(e):
                raise
    yield svc, f"tcp://127.0.0.1:{pub}", f"tcp://127.0.0.1:{rep}", request.param
    svc.stop()


def _store_and_collect(svc, pub, rep):
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.setsockopt(zmq.LINGER, 0)
    sub.connect(pub)
    c = kvstore.KvStoreClient(svc.url)
    try:
        _await_subscribed(c, sub)
        c.declare_namespace("plain", SMALL, model="m-plain", hash_seed="0")
        c.declare_namespace("adapter", SMALL, model="m-lora", hash_seed="0", lora="sql-lora",
                            extra_keys=["tenant-a"])
        size = SMALL.block_bytes
        hp, _, bp = prompt(3, size, 3)  # seed 3: two hashes of 2**63 and above (msgpack uint64), one below
        ha, _, ba = prompt(2, size, 2)
        assert any(_ext(h) >= 2**63 for h in hp) and any(_ext(h) < 2**63 for h in hp)
        c.store("plain", bp)
        c.store("adapter", ba)
        wanted = {_ext(h) for h in hp + ha}
        live, deadline = [], time.monotonic() + 30
        seen = set()
        while not wanted <= seen and time.monotonic() < deadline:
            if sub.poll(500):
                frames = sub.recv_multipart()
                live.append(frames)
                assert len(frames) == 3, "Dynamo drops a message of %d frames" % len(frames)
                for e in dynamo_decode_batch(frames[2]):
                    seen.update(e.get("block_hashes", []) if e["type"] == "BlockStored" else [])
        replayed = _replay(ctx, rep, 0)
        return hp, ha, live, replayed
    finally:
        c.close()
        sub.close()
        ctx.term()


@pytest.mark.parametrize("events_service", ["array", "map"], indirect=True)
def test_routers_decode_kvstores_published_events_as_vllm_dynamo_and_llm_d_do(events_service):
    svc, pub, rep, encoding = events_service
    hp, ha, live, replayed = _store_and_collect(svc, pub, rep)
    assert live, "no live batch"
    for topic, seq, payload in [(f[0], int.from_bytes(f[1], "big"), f[2]) for f in live]:
        assert len(payload) and topic.startswith(b"kv@")
    seqs = [s for _, s, _ in replayed]
    assert seqs == list(range(len(seqs))), "replay from 0 is every batch in order from seq 0"

    stored = {}  # hash -> (event as vLLM decodes it)
    dynamo_events = []
    llmd_stored = set()
    for topic, seq, payload in replayed:
        if encoding == "array":  # llm-d reads arrays only
            try:
                pod, model, events = llmd_decode_batch(topic, payload)
            except DecodeError as e:
                pytest.fail("llm-d drops batch %d on %s: %s" % (seq, topic.decode(), e))
            assert model.startswith("m-")
            llmd_stored.update((model, h) for e in events if e["type"] == "BlockStored" for h in e["block_hashes"])
        # vLLM main decodes maps; vLLM before #42892 (and llm-d) arrays
        ts, events, rank = vllm_decode_batch(payload, array_like=(encoding == "array"))
        assert isinstance(ts, float) and abs(ts - time.time()) < 600 and rank == 0
        for e in events:
            if e["type"] == "BlockStored":
                assert len(e["block_hashes"]) == 1
                stored.setdefault(e["block_hashes"][0], []).append((topic, e))
        dynamo_events += dynamo_decode_batch(payload)

    # the hashes a vLLM engine (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1) would publish for the same blocks
    # extra_keys only in the map form: llm-d refuses a BlockStored array longer than 8
    lora_keys = [["sql-lora", "tenant-a"]] if encoding == "map" else None
    for hashes, model, lora, extra in ((hp, "m-plain", None, None), (ha, "m-lora", "sql-lora", lora_keys)):
        for i, h in enumerate(hashes):
            assert _ext(h) in stored, "block %d of %s never announced" % (i, model)
            for topic, e in stored[_ext(h)]:
                assert topic.decode().endswith("@" + model)
                assert e["parent_block_hash"] == (None if i == 0 else _ext(hashes[i - 1]))
                assert e["block_size"] == SMALL.block_size
                assert e["lora_id"] is None and e["lora_name"] == lora
                assert e["extra_keys"] == extra
                assert e["medium"] in ("GPU", "CPU", "DISK")
                assert e["token_ids"] == []

    if encoding == "array":
        assert {("m-plain", _ext(h)) for h in hp} | {("m-lora", _ext(h)) for h in ha} <= llmd_stored

    # Dynamo decodes every event, but indexes none of kvstore's blocks: create_stored_blocks needs each
    # block's tokens in token_ids, and kvstore has none to send (docs/events.md says so)
    assert any(e["type"] == "BlockStored" for e in dynamo_events)
    indexed = [b for e in dynamo_events if e["type"] == "BlockStored"
               for b in dynamo_indexed_blocks(e, SMALL.block_size)]
    assert indexed == []
