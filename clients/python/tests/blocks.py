"""Test data: chained 32-byte block hashes and random block bytes, reproducible from a seed."""

from __future__ import annotations

import hashlib

import numpy as np

from kvstore import Block, Layout

# 2 layers x 2 KV heads x 64 dims x fp16 x 16 tokens = 16 KiB, as the service's own tests use
SMALL = Layout(layers=2, kv_heads=2, head_dim=64, dtype="float16", block_size=16)


def chain(n: int, seed: str) -> list:
    """n chained hashes: each the SHA-256 of its parent and its index."""
    out, parent = [], seed.encode()
    for i in range(n):
        h = hashlib.sha256(parent + i.to_bytes(4, "big")).digest()
        out.append(h)
        parent = h
    return out


def payloads(n: int, size: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size, dtype=np.uint8) for _ in range(n)]


def prompt(n: int, size: int, seed: int):
    """(hashes, data, blocks to store) of an n-block prompt."""
    hashes = chain(n, f"prompt-{seed}")
    data = payloads(n, size, seed)
    blocks = [Block(h, d, hashes[i - 1] if i else None) for i, (h, d) in enumerate(zip(hashes, data))]
    return hashes, data, blocks
