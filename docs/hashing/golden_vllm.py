#!/usr/bin/env python3
"""Golden vectors for kvstore's vllm:* block-hash schemes, computed outside Java.

Written from vLLM's algorithm (vllm/v1/core/kv_cache_utils.py, vllm/utils/hashing.py) with Debian's
Python 3 and its packages only:

    sudo apt-get install -y python3-cbor2 python3-xxhash
    python3 docs/hashing/golden_vllm.py

The four hash functions of --prefix-caching-hash-algo:

    sha256       sha256(pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL))
    sha256_cbor  sha256(cbor2.dumps(x, canonical=True))
    xxhash       xxhash.xxh3_128_digest(pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL))
    xxhash_cbor  xxhash.xxh3_128_digest(cbor2.dumps(x, canonical=True))

NONE_HASH = hash_fn(PYTHONHASHSEED) (the seed string; "" is a valid seed), and each full block is
hash_fn((parent or NONE_HASH, tuple(block_tokens), extra_keys)), where extra_keys is None or a tuple
of: the LoRA name (every block, when the request has a LoRA), (identifier, item_offset - block_start)
for each multimodal item overlapping the block, the cache salt (first block only, when truthy), and
the block's prompt-embedding hash (sha256 of that block's slice of the embedding tensor).

Prints one line per case: the case name, then the scheme and its block hashes in hex. The Java test
io.kvstore.hashing.VllmHasherGoldenTest holds the same values.
"""

import hashlib
import pickle

import cbor2
import xxhash

HASH_FNS = {
    "vllm:sha256": lambda x: hashlib.sha256(pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL)).digest(),
    "vllm:sha256_cbor": lambda x: hashlib.sha256(cbor2.dumps(x, canonical=True)).digest(),
    "vllm:xxhash": lambda x: xxhash.xxh3_128_digest(pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL)),
    "vllm:xxhash_cbor": lambda x: xxhash.xxh3_128_digest(cbor2.dumps(x, canonical=True)),
}


def fresh(s):
    """A new str object equal to s, as a request field is: literals in one script would be shared."""
    return None if s is None else s.encode("utf-8").decode("utf-8")


def block_extra_keys(index, start, end, lora, salt, mm, embeds):
    keys = []
    if lora is not None:
        keys.append(lora)
    for identifier, offset, length in sorted(mm, key=lambda m: m[1]):
        if offset < end and offset + length > start:
            keys.append((identifier, offset - start))
    if index == 0 and salt:
        keys.append(salt)
    if embeds is not None:
        keys.append(embeds[index])
    return tuple(keys) if keys else None


def prompt_hashes(hash_fn, seed, tokens, block_size, lora=None, salt=None, mm=(), embeds=None):
    lora, salt = fresh(lora), fresh(salt)
    mm = [(fresh(i), o, n) for i, o, n in mm]
    parent = hash_fn(fresh(seed))
    out = []
    for index in range(len(tokens) // block_size):
        start, end = index * block_size, (index + 1) * block_size
        extra = block_extra_keys(index, start, end, lora, salt, mm, embeds)
        parent = hash_fn((parent, tuple(tokens[start:end]), extra))
        out.append(parent.hex())
    return out


WIDE = [0, 23, 24, 255, 256, 65535, 65536, 70000, 16777216, 2**31 - 2, 2**31 - 1, 100000, 131072, 1, 2, 3]
EMBEDS = [hashlib.sha256(("embeds of block %d" % i).encode()).digest() for i in range(3)]

CASES = [
    ("one block, seed 0", dict(seed="0", tokens=list(range(16)), block_size=16)),
    ("empty PYTHONHASHSEED", dict(seed="", tokens=list(range(16)), block_size=16)),
    ("three blocks and a partial one, seed 42", dict(seed="42", tokens=list(range(1000, 1053)), block_size=16)),
    ("every int width, block size 4", dict(seed="0", tokens=WIDE, block_size=4)),
    ("lora and cache salt", dict(seed="0", tokens=list(range(32)), block_size=16, lora="sql-lora", salt="tenant-a")),
    ("empty lora kept, empty salt dropped", dict(seed="0", tokens=list(range(32)), block_size=16, lora="", salt="")),
    ("one-character lora and salt (one object to CPython)",
     dict(seed="0", tokens=list(range(32)), block_size=16, lora="a", salt="a")),
    ("multimodal items on the blocks they overlap",
     dict(seed="0", tokens=list(range(64)), block_size=16, lora="sql-lora", salt="tenant-a",
          mm=[("img-c", 40, 24), ("img-a", 4, 20), ("img-b", 24, 8)])),
    ("prompt embeddings", dict(seed="0", tokens=[0] * 50, block_size=16, embeds=EMBEDS)),
    ("a block over 64 KiB of pickle (several frames)",
     dict(seed="0", tokens=[(i * 7919) % 200000 for i in range(20000)], block_size=20000, lora="l", salt="s")),
]


def main():
    for name, case in CASES:
        print(name)
        for scheme, fn in HASH_FNS.items():
            args = dict(case)
            print("  %s %s" % (scheme, " ".join(prompt_hashes(fn, **args))))


if __name__ == "__main__":
    main()
