"""CRC32C (Castagnoli), the checksum kvstore keeps for every block.

Computed by ISA-L's ``crc32_iscsi`` (Debian's ``libisal2``, which ``./kvstore deps`` installs) through
ctypes, at several GB/s; where libisal is absent a table-driven Python fallback gives the same values at
a few MB/s, so large blocks should not rely on it (``ACCELERATED`` says which one is in use).
"""

from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["crc32c", "crc32c_address", "ACCELERATED"]


def _load_isal():
    for name in ("libisal.so.2", ctypes.util.find_library("isal")):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
            fn = lib.crc32_iscsi
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_uint32
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
        return fn
    return None


_isal = _load_isal()
ACCELERATED = _isal is not None

_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)

_CHUNK = 1 << 30  # crc32_iscsi takes an int length


def crc32c_address(address: int, length: int, crc: int = 0) -> int:
    """CRC32C of ``length`` bytes at a raw address (ISA-L only), continuing from ``crc``."""
    if _isal is None:
        raise RuntimeError("libisal (crc32_iscsi) is not available")
    state = (~crc) & 0xFFFFFFFF
    done = 0
    while done < length:
        n = min(_CHUNK, length - done)
        state = _isal(address + done, n, state)
        done += n
    return (~state) & 0xFFFFFFFF


def crc32c(data, crc: int = 0) -> int:
    """CRC32C of a bytes-like object (bytes, bytearray, memoryview, numpy array), continuing from ``crc``."""
    view = memoryview(data).cast("B")
    if _isal is not None and len(view) > 0:
        if view.readonly:
            # ctypes cannot take the address of a read-only buffer; numpy can, without copying
            import numpy as np

            address = np.frombuffer(view, dtype=np.uint8).ctypes.data
        else:
            address = ctypes.addressof(ctypes.c_char.from_buffer(view))
        return crc32c_address(address, len(view), crc)
    state = (~crc) & 0xFFFFFFFF
    table = _TABLE
    for b in view:
        state = table[(state ^ b) & 0xFF] ^ (state >> 8)
    return (~state) & 0xFFFFFFFF
