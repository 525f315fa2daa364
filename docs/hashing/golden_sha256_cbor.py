#!/usr/bin/env python3
"""Golden vectors for kvstore's sha256_cbor block hash, computed the way vLLM does it.

vLLM: hash = sha256(cbor2.dumps((parent_or_NONE_HASH, tuple(token_ids), extra_keys), canonical=True)),
NONE_HASH = sha256(cbor2.dumps(seed, canonical=True)). cbor2 is not needed: the canonical CBOR of these
values (ints, bytes, str, tuples, None) is written out below with the standard library only.
Run: python3 docs/hashing/golden_sha256_cbor.py
"""
import hashlib
import struct


def head(major, n):
    m = major << 5
    if n < 24:
        return bytes([m | n])
    if n < 0x100:
        return bytes([m | 24, n])
    if n < 0x10000:
        return bytes([m | 25]) + struct.pack(">H", n)
    if n < 0x100000000:
        return bytes([m | 26]) + struct.pack(">I", n)
    return bytes([m | 27]) + struct.pack(">Q", n)


def cbor(v):
    if v is None:
        return b"\xf6"
    if isinstance(v, bool):
        raise TypeError("no bools here")
    if isinstance(v, int):
        return head(0, v) if v >= 0 else head(1, -1 - v)
    if isinstance(v, bytes):
        return head(2, len(v)) + v
    if isinstance(v, str):
        b = v.encode("utf-8")
        return head(3, len(b)) + b
    if isinstance(v, (tuple, list)):
        return head(4, len(v)) + b"".join(cbor(x) for x in v)
    raise TypeError(type(v))


def sha256_cbor(v):
    return hashlib.sha256(cbor(v)).digest()


def extra_keys(block_index, lora=None, salt=None, more=()):
    keys = ([lora] if lora is not None else []) + list(more)
    if block_index == 0 and salt is not None:
        keys.append(salt)
    return tuple(keys) if keys else None


def hash_prompt(tokens, block_size, seed, lora=None, salt=None, more=()):
    parent = sha256_cbor(seed)
    out = []
    for b in range(len(tokens) // block_size):
        block = tuple(tokens[b * block_size:(b + 1) * block_size])
        parent = sha256_cbor((parent, block, extra_keys(b, lora, salt, more)))
        out.append(parent.hex())
    return out


if __name__ == "__main__":
    print("none_hash seed 0:", sha256_cbor("0").hex())
    print("one block:", hash_prompt(list(range(16)), 16, "0"))
    print("three blocks:", hash_prompt([i * 7 + 1 for i in range(48)], 16, "0"))
    print("extra keys:", hash_prompt(list(range(100, 132)), 16, "0", lora="my-lora", salt="tenant-a",
                                     more=("mm-hash-1", 42)))
    big = [65536, 2147483647, 100000, 4294967295 // 2, 70000, 65535, 255, 256, 23, 24, 0, 1, 2147483646, 131072, 99, 1 << 20]
    print("large ids:", hash_prompt(big, 16, "0"))
    print("seed 42, partial tail:", hash_prompt(list(range(40)), 16, "42"))
