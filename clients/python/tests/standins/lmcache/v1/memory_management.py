"""Stand-in for lmcache.v1.memory_management (written for kvstore's tests, not LMCache's code): MemoryFormat,
and a memory object with what LMCache's connectors and its InstrumentedRemoteConnector use: the metadata
(shape, dtype, fmt), ``byte_array``, ``get_size()`` and reference counting."""

from dataclasses import dataclass
from enum import IntEnum

import numpy as np


class MemoryFormat(IntEnum):
    UNDEFINED = 0
    KV_2LTD = 1
    KV_T2D = 2
    BINARY = 3
    KV_MLA_FMT = 5


@dataclass
class MemoryObjMetadata:
    shape: tuple
    dtype: str
    fmt: MemoryFormat


class MemoryObj:
    """What LMCache's code tests returned objects against (``isinstance(result, MemoryObj)``)."""


class TensorMemoryObj(MemoryObj):
    def __init__(self, shape, dtype, fmt):
        self.metadata = MemoryObjMetadata(tuple(shape), dtype, fmt)
        n = int(np.prod(shape)) * np.dtype(dtype.replace("torch.", "")).itemsize
        self._buf = np.zeros(n, dtype=np.uint8)

    @property
    def byte_array(self):
        return memoryview(self._buf)

    def get_size(self) -> int:
        return self._buf.nbytes

    # reference counting as LMCache's MemoryObj has it: an object allocated from the local CPU backend starts
    # at 1 and goes back to the allocator's pool when it reaches 0
    ref_count = 1

    def ref_count_up(self):
        self.ref_count += 1

    def ref_count_down(self):
        self.ref_count -= 1

    def get_ref_count(self):
        return self.ref_count
