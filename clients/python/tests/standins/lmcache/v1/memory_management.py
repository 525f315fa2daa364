"""Stand-in for lmcache.v1.memory_management (written for kvstore's tests): MemoryFormat, and a memory
object with the metadata (shape, dtype, fmt) and byte_array LMCache's connectors use."""

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


class TensorMemoryObj:
    def __init__(self, shape, dtype, fmt):
        self.metadata = MemoryObjMetadata(tuple(shape), dtype, fmt)
        n = int(np.prod(shape)) * np.dtype(dtype.replace("torch.", "")).itemsize
        self._buf = np.zeros(n, dtype=np.uint8)

    @property
    def byte_array(self):
        return memoryview(self._buf)
