#!/usr/bin/env python3
"""A KV event subscriber as a router would write it, with Debian's python3-zmq and python3-msgpack.

It checks every batch against vLLM's schema (vllm/distributed/kv_events.py at the commit that
clients/python/tests/vllm_kv_event_schema.py names): KVEventBatch [ts, events, data_parallel_rank] as an array; each event a tagged struct, either a tagged array
(msgspec array_like) or a map whose first key is "type" (vLLM since #42892), fields in declaration
order, omit_defaults: fields whose value is their default are left out. Any violation exits 1.

Usage: kv_events_subscriber.py <pub endpoint> <replay endpoint> array|map
Protocol on stdout: a "BATCH <json>" line per batch, "READY" once replay from 0 is done, "LIVE" at the
first live batch; stdin "UNTIL <seq>" says which sequence number ends the run.
"""
import json
import os
import sys

import msgpack
import zmq

# vLLM's structs, one schema with the client package's tests (clients/python/tests/vllm_kv_event_schema.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../../clients/python/tests"))
from vllm_kv_event_schema import REQUIRED, STRUCTS as SCHEMA  # noqa: E402


def fail(message):
    print("SCHEMA ERROR: " + message, file=sys.stderr, flush=True)
    sys.exit(1)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check(kind, value, where):
    ok = {
        "int": is_int(value),
        "opt_int": value is None or is_int(value),
        "opt_str": value is None or isinstance(value, str),
        "opt_float": value is None or is_int(value) or isinstance(value, float),
        # one entry per block: a tuple (msgpack array) of keys, or None
        "opt_extra_keys": value is None or (isinstance(value, list)
                                            and all(k is None or isinstance(k, list) for k in value)),
        "ints": isinstance(value, list) and all(is_int(t) for t in value),
        "hashes": isinstance(value, list) and all(is_int(h) and 0 <= h < 2**64 for h in value),
        "opt_hash": value is None or (is_int(value) and 0 <= value < 2**64),
    }[kind]
    if not ok:
        fail("%s: %r is not %s" % (where, value, kind))


def decode_event(raw, encoding):
    if encoding == "array":
        if not isinstance(raw, list) or not raw or not isinstance(raw[0], str):
            fail("event is not a tagged array: %r" % (raw,))
        tag, values = raw[0], raw[1:]
        fields = SCHEMA.get(tag)
        if fields is None:
            fail("unknown tag %r" % tag)
        if len(values) > len(fields):
            fail("%s has %d fields, the schema %d" % (tag, len(values), len(fields)))
        named = dict(zip((f[0] for f in fields), values))
        # omit_defaults on an array: only trailing defaults may be left out, and the last one present
        # must differ from its default
        for name, kind, default in fields[len(values):]:
            if default is REQUIRED:
                fail("%s: required field %s missing" % (tag, name))
        if values and fields[len(values) - 1][2] is not REQUIRED and values[-1] == fields[len(values) - 1][2]:
            fail("%s: trailing default %s was not omitted" % (tag, fields[len(values) - 1][0]))
    else:
        if not isinstance(raw, dict):
            fail("event is not a map: %r" % (raw,))
        keys = list(raw.keys())
        if not keys or keys[0] != "type":
            fail("the tag is not the first key: %r" % keys)
        tag = raw["type"]
        fields = SCHEMA.get(tag)
        if fields is None:
            fail("unknown tag %r" % tag)
        order = [f[0] for f in fields]
        unknown = [k for k in keys[1:] if k not in order]
        if unknown:
            fail("%s: fields not in the schema: %r" % (tag, unknown))
        if keys[1:] != sorted(keys[1:], key=order.index):
            fail("%s: fields out of declaration order: %r" % (tag, keys[1:]))
        for name, kind, default in fields:
            if name not in raw and default is REQUIRED:
                fail("%s: required field %s missing" % (tag, name))
            if name in raw and default is not REQUIRED and raw[name] == default:
                fail("%s: default-valued %s was not omitted" % (tag, name))
        named = {k: raw[k] for k in keys[1:]}
    for name, kind, default in SCHEMA[tag]:
        if name in named:
            check(kind, named[name], tag + "." + name)
    if named.get("extra_keys") is not None and len(named["extra_keys"]) != len(named["block_hashes"]):
        fail("%s: extra_keys has %d entries for %d block hashes"
             % (tag, len(named["extra_keys"]), len(named["block_hashes"])))
    return tag, named


def decode_batch(topic, seq_bytes, payload, encoding):
    if len(seq_bytes) != 8:
        fail("sequence frame of %d bytes" % len(seq_bytes))
    seq = int.from_bytes(seq_bytes, "big", signed=True)
    batch = msgpack.unpackb(payload, raw=False)
    if not isinstance(batch, list) or len(batch) not in (2, 3):
        fail("KVEventBatch is not [ts, events, data_parallel_rank]: %r" % (batch,))
    ts, events = batch[0], batch[1]
    rank = batch[2] if len(batch) == 3 else None
    if not isinstance(ts, float):
        fail("ts %r is not a float" % (ts,))
    if not isinstance(events, list):
        fail("events is not a list")
    if rank is not None and not is_int(rank):
        fail("data_parallel_rank %r is not an int" % (rank,))
    out = []
    for raw in events:
        tag, f = decode_event(raw, encoding)
        out.append({
            "type": tag,
            "block_hashes": [str(h) for h in f.get("block_hashes", [])],
            "parent_block_hash": None if f.get("parent_block_hash") is None else str(f["parent_block_hash"]),
            "block_size": f.get("block_size", 0),
            "medium": f.get("medium"),
            "lora_name": f.get("lora_name"),
            "extra_keys": f.get("extra_keys"),  # absent (omitted default) reads as None
        })
    return {"seq": seq, "topic": topic.decode("utf-8"), "rank": rank, "events": out}


def replay(ctx, endpoint, start, encoding):
    # DEALER, not REQ: the answer is many messages, and a REQ socket takes one reply per request
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 30000)
    sock.connect(endpoint)
    sock.send_multipart([b"", start.to_bytes(8, "big")])
    batches = []
    while True:
        frames = sock.recv_multipart()
        if len(frames) != 4 or frames[0] != b"":
            fail("replay answer of %d frames, expected b'', topic, seq, payload" % len(frames))
        _, topic, seq_bytes, payload = frames
        if int.from_bytes(seq_bytes, "big", signed=True) == -1:
            if topic != b"" or payload != b"":
                fail("end of replay is not (b'', -1, b'')")
            sock.close()
            return batches
        batches.append(decode_batch(topic, seq_bytes, payload, encoding))


def main():
    endpoint, replay_endpoint, encoding = sys.argv[1], sys.argv[2], sys.argv[3]
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(endpoint)
    seen = {}
    for b in replay(ctx, replay_endpoint, 0, encoding):
        seen[b["seq"]] = b
    print("READY", flush=True)
    until = None
    live = False
    poller = zmq.Poller()
    poller.register(sub, zmq.POLLIN)
    poller.register(sys.stdin, zmq.POLLIN)
    while until is None or not all(s in seen for s in range(until + 1)):
        events = dict(poller.poll(60000))
        if not events:
            fail("nothing within 60 s (until=%r, seen up to %r)" % (until, max(seen, default=None)))
        if sub in events:
            topic, seq_bytes, payload = sub.recv_multipart()
            b = decode_batch(topic, seq_bytes, payload, encoding)
            if not live:
                live = True
                print("LIVE", flush=True)
            missing = [s for s in range(b["seq"]) if s not in seen]
            if missing:  # a gap: ask the replay socket, as vLLM's example subscriber does
                for r in replay(ctx, replay_endpoint, missing[0], encoding):
                    seen.setdefault(r["seq"], r)
            seen[b["seq"]] = b
        if sys.stdin.fileno() in events or sys.stdin in events:
            raw_line = sys.stdin.readline()
            if not raw_line:
                poller.unregister(sys.stdin)
            line = raw_line.split()
            if line and line[0] == "UNTIL":
                until = int(line[1])
    for s in sorted(seen):
        print("BATCH " + json.dumps(seen[s]), flush=True)
    ctx.destroy(linger=0)


if __name__ == "__main__":
    main()
