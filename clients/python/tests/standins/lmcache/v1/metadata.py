"""Stand-in for lmcache.v1.metadata (written for kvstore's tests, not LMCache's code): the fields and methods
of LMCacheMetadata that a remote connector reads. ``kv_shape`` is (layers, 2, chunk tokens, kv heads, head
size); a chunk's memory object is [2, layers, tokens, heads x head size] (KV_2LTD); one layer group."""

from dataclasses import dataclass
from typing import Optional


@dataclass
class LMCacheMetadata:
    model_name: str
    world_size: int
    worker_id: int
    kv_dtype: str
    kv_shape: tuple
    use_mla: bool = False
    role: Optional[str] = None
    chunk_size: int = 256

    def get_shapes(self) -> list:
        layers, two, tokens, heads, head_size = self.kv_shape
        return [(1 if self.use_mla else two, layers, tokens, heads * head_size)]

    def get_dtypes(self) -> list:
        return [self.kv_dtype]

    def get_num_groups(self) -> int:
        return 1
