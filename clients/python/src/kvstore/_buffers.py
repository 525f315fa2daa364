"""Block data as the adapters hand it over: one buffer, or several (e.g. a page's K and V) that together
form the block, in order."""

from __future__ import annotations

import ctypes
import sys
from typing import Any, List

import numpy as np


def as_bytes(buf: Any) -> np.ndarray:
    """A flat uint8 view of one buffer (numpy array, bytes-like, anything with ``.numpy()`` such as a CPU
    torch tensor, bfloat16 and float8 ones included), without copying."""
    if isinstance(buf, np.ndarray):
        if not buf.flags.c_contiguous:
            raise ValueError("block data must be contiguous")
        return buf.reshape(-1).view(np.uint8)
    if hasattr(buf, "numpy") and not isinstance(buf, (bytes, bytearray, memoryview)):
        try:
            return as_bytes(buf.numpy())
        except TypeError:
            # torch has no numpy dtype for bfloat16 / float8 (".numpy()" raises TypeError): the same bytes,
            # viewed as uint8 first, without copying
            torch = sys.modules.get("torch")
            if torch is None or not isinstance(buf, torch.Tensor):
                raise
            if not buf.is_contiguous():
                raise ValueError("block data must be contiguous")
            return as_bytes(buf.detach().view(torch.uint8).numpy())
    return np.frombuffer(memoryview(buf).cast("B"), dtype=np.uint8)


def parts(data: Any) -> List[np.ndarray]:
    """The pieces of a block: a list or tuple of buffers, or one buffer."""
    if isinstance(data, (list, tuple)):
        return [as_bytes(p) for p in data]
    return [as_bytes(data)]


def at_address(address: int, size: int) -> np.ndarray:
    """A writable uint8 view of ``size`` bytes of this process's memory at ``address``."""
    return np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(address))


def address(arr: np.ndarray) -> int:
    return arr.__array_interface__["data"][0]
