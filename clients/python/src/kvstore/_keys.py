"""Engine keys as kvstore block hashes (32 bytes, the size of a ``sha256``-family namespace's hashes)."""

from __future__ import annotations

import hashlib
import re

HASH_BYTES = 32


def block_hash(key: bytes) -> bytes:
    """The engine's own key when it is 32 bytes (SHA-256 based engine hashes), else its SHA-256."""
    key = bytes(key)
    return key if len(key) == HASH_BYTES else hashlib.sha256(key).digest()


def namespace_name(*parts) -> str:
    """A namespace name from free-form parts (model names, ranks): letters, digits, '.', '_', '-'."""
    raw = "-".join(str(p) for p in parts if p is not None and str(p) != "")
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", raw).strip("_.-")
    if len(name) > 100:
        name = name[:80] + "-" + hashlib.sha256(raw.encode()).hexdigest()[:16]
    return name or "default"
