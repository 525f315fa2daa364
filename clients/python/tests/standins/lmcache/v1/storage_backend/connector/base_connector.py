"""Stand-in for lmcache.v1.storage_backend.connector.base_connector (written for kvstore's tests, not
LMCache's code): RemoteConnector as in LMCache/LMCache main, versions read 2026-11-28 (index ids 55884380914
and 66823109016; the index names no commit for them):

- ``__init__(config, metadata)`` asserts a metadata and sets what other parts of LMCache read off a connector:
  ``save_chunk_meta``, ``meta_shapes``, ``meta_dtypes``, ``meta_fmt``, ``full_chunk_size_bytes``,
  ``single_token_size`` (RemoteBackendHealthCheck reads the first three when it checks a put and a get);
- ``batched_contains(keys) -> int``: how many leading keys are held (the older interface, at
  01712fbd51d033060d6a8851c06de0ebf351f74e, had ``batched_contains(keys, stop_after_first_not_exits=True)
  -> List[bool]`` and no ``__init__``: tests put that signature back on this class where they need it);
- ``support_batched_async_contains`` and ``support_batched_get_non_blocking`` default to True, with
  defaults built on ``exists`` and ``get``; ``support_ping``, ``support_batched_get``, ``support_batched_put``
  and ``support_batched_contains`` default to False.
"""

import abc
import asyncio
import logging
from typing import List, Optional

import numpy as np

from lmcache.v1.memory_management import MemoryFormat, MemoryObj

log = logging.getLogger(__name__)


def _dtype_size(dtype) -> int:
    return np.dtype(str(dtype).replace("torch.", "")).itemsize


class RemoteConnector(metaclass=abc.ABCMeta):
    def __init__(self, config, metadata):
        assert metadata is not None
        extra = config.extra_config
        self.save_chunk_meta = extra is None or extra.get("save_chunk_meta", True) or config.use_layerwise
        self.meta_shapes = metadata.get_shapes()
        self.meta_dtypes = metadata.get_dtypes()
        self.meta_fmt = MemoryFormat.KV_MLA_FMT if metadata.use_mla else MemoryFormat.KV_2LTD
        self.full_chunk_size_bytes = sum(
            int(np.prod(shape)) * _dtype_size(dtype) for shape, dtype in zip(self.meta_shapes, self.meta_dtypes)
        )
        assert self.full_chunk_size_bytes % metadata.chunk_size == 0
        self.single_token_size = self.full_chunk_size_bytes // metadata.chunk_size

    def post_init(self):
        pass

    @abc.abstractmethod
    async def exists(self, key) -> bool: ...

    @abc.abstractmethod
    def exists_sync(self, key) -> bool: ...

    @abc.abstractmethod
    async def get(self, key) -> Optional[MemoryObj]: ...

    @abc.abstractmethod
    async def put(self, key, memory_obj): ...

    @abc.abstractmethod
    async def list(self) -> List[str]: ...

    @abc.abstractmethod
    async def close(self): ...

    def support_ping(self) -> bool:
        return False

    async def ping(self) -> int:
        raise NotImplementedError

    def support_batched_get(self) -> bool:
        return False

    async def batched_get(self, keys) -> List[Optional[MemoryObj]]:
        raise NotImplementedError

    def support_batched_put(self) -> bool:
        return False

    async def batched_put(self, keys, memory_objs):
        raise NotImplementedError

    def support_batched_async_contains(self) -> bool:
        return True

    async def batched_async_contains(self, lookup_id: str, keys, pin: bool = False) -> int:
        held = await asyncio.gather(*(self.exists(k) for k in keys))
        return held.index(False) if False in held else len(held)

    def support_batched_get_non_blocking(self) -> bool:
        return True

    async def batched_get_non_blocking(self, lookup_id: str, keys) -> List[MemoryObj]:
        """The leading memory objects up to the first miss or error; later ones are released."""
        results = await asyncio.gather(*(self.get(k) for k in keys), return_exceptions=True)
        prefix: List[MemoryObj] = []
        missed = False
        for r in results:
            if missed:
                if isinstance(r, MemoryObj):
                    r.ref_count_down()
            elif isinstance(r, MemoryObj):
                prefix.append(r)
            else:
                missed = True
        return prefix

    def remove_sync(self, key) -> bool:
        raise NotImplementedError

    def support_batched_contains(self) -> bool:
        return False

    def batched_contains(self, keys) -> int:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"
