#!/usr/bin/env python3
"""Golden vectors for kvstore's dynamo:* block-hash schemes, computed outside Java.

Written from Dynamo's algorithms with Debian's Python 3 and python3-xxhash
(sudo apt-get install -y python3-xxhash; python3 docs/hashing/golden_dynamo.py).

dynamo:kvbm_v1 (KvbmRequest::new in lib/bindings/kvbm/src/block_manager/vllm/request.rs,
TokenBlock::from_chunk in lib/llm/src/tokens.rs):

    salt_hash = xxh3_64(serde_json.to_vec({"salt": salt, "lora_name": lora}), seed=0)
                (compact JSON, that field order, None fields skipped, "" kept)
    block[i]  = xxh3_64(u32-LE tokens of block i, seed=salt_hash)
    seq[0]    = block[0];  seq[i] = xxh3_64(u64-LE seq[i-1] + u64-LE block[i], seed=salt_hash)

dynamo:router (compute_salt_hash in lib/kv-hashing/src/salt.rs, compute_block_hash_for_seq and
compute_next_seq_hash in lib/kv-router/src/protocols.rs, CHAIN_XXH3_SEED in lib/tokens):

    salt_hash = 1337 (+ xxh3_64(lora, seed=0) if lora) (+ xxh3_64(salt, seed=1) if salt), mod 2^64
                ("" counts as absent)
    block[i]  = xxh3_64(u32-LE tokens of block i, seed=salt_hash)
    seq[0]    = block[0];  seq[i] = xxh3_64(u64-LE seq[i-1] + u64-LE block[i], seed=1337)

The key of block i is seq[i], printed as 16 hex digits (the u64 big-endian). Prints one line per
case; io.kvstore.hashing.DynamoGoldenTest holds the same values.
"""

import json
import struct

import xxhash

MASK = (1 << 64) - 1


def kvbm_v1_salt(salt, lora):
    payload = {}
    if salt is not None:
        payload["salt"] = salt
    if lora is not None:
        payload["lora_name"] = lora
    raw = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return xxhash.xxh3_64_intdigest(raw, seed=0)


def router_salt(salt, lora):
    seed = 1337
    if lora:
        seed = (seed + xxhash.xxh3_64_intdigest(lora.encode("utf-8"), seed=0)) & MASK
    if salt:
        seed = (seed + xxhash.xxh3_64_intdigest(salt.encode("utf-8"), seed=1)) & MASK
    return seed


def sequence_hashes(tokens, block_size, salt_hash, chain_seed):
    out = []
    for i in range(len(tokens) // block_size):
        chunk = tokens[i * block_size:(i + 1) * block_size]
        block = xxhash.xxh3_64_intdigest(struct.pack("<%dI" % len(chunk), *chunk), seed=salt_hash)
        seq = block if not out else xxhash.xxh3_64_intdigest(struct.pack("<QQ", out[-1], block), seed=chain_seed)
        out.append(seq)
    return ["%016x" % h for h in out]


def kvbm_v1(tokens, block_size, salt=None, lora=None):
    s = kvbm_v1_salt(salt, lora)
    return sequence_hashes(tokens, block_size, s, s)


def router(tokens, block_size, salt=None, lora=None):
    return sequence_hashes(tokens, block_size, router_salt(salt, lora), 1337)


CASES = [
    ("tokens [0], block size 1, cacheSalt \"\"", dict(tokens=[0], block_size=1, salt="")),
    ("tokens [0], block size 1, no salt", dict(tokens=[0], block_size=1)),
    ("three blocks and a partial one", dict(tokens=list(range(1000, 1053)), block_size=16)),
    ("lora and cache salt", dict(tokens=list(range(32)), block_size=16, salt="tenant-a", lora="sql-lora")),
    ("lora only", dict(tokens=list(range(32)), block_size=16, lora="sql-lora")),
    ("salt only", dict(tokens=list(range(32)), block_size=16, salt="tenant-a")),
    ("empty lora and empty salt", dict(tokens=list(range(32)), block_size=16, salt="", lora="")),
]


def main():
    for name, case in CASES:
        print(name)
        print("  dynamo:kvbm_v1 " + " ".join(kvbm_v1(**case)))
        print("  dynamo:router " + " ".join(router(**case)))


if __name__ == "__main__":
    main()
