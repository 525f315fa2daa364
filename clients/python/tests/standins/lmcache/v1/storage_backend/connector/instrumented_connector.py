"""Stand-in for lmcache.v1.storage_backend.connector.instrumented_connector (written for kvstore's tests, not
LMCache's code): InstrumentedRemoteConnector as in LMCache/LMCache main, version read 2026-11-28 (index id
13175691436, no commit named), without the metrics. What a connector notices of it:

- ``get_size()`` is called on the object ``put`` is given and on every object (not None) that ``get``,
  ``batched_get`` and ``batched_get_non_blocking`` return;
- after ``put`` (even a failed one) the object's reference count is dropped once, after ``batched_put`` every
  object's is; an error of ``batched_put`` is logged, not raised;
- every other call (``batched_contains(keys) -> int`` included) is passed through; the wrapped connector is
  ``getWrappedConnector()``. Like upstream, it never calls ``RemoteConnector.__init__``.
"""

import logging
from typing import List, Optional

from lmcache.v1.memory_management import MemoryObj

from .base_connector import RemoteConnector

log = logging.getLogger(__name__)


def _sized(objs):
    return sum(o.get_size() for o in objs if o is not None)


class InstrumentedRemoteConnector(RemoteConnector):
    def __init__(self, connector: RemoteConnector):
        self._connector = connector

    def getWrappedConnector(self) -> RemoteConnector:
        return self._connector

    async def put(self, key, memory_obj) -> None:
        memory_obj.get_size()
        try:
            await self._connector.put(key, memory_obj)
        finally:
            memory_obj.ref_count_down()

    async def get(self, key) -> Optional[MemoryObj]:
        obj = await self._connector.get(key)
        _sized([obj])
        return obj

    async def batched_get(self, keys) -> List[Optional[MemoryObj]]:
        objs = await self._connector.batched_get(keys)
        _sized(objs)
        return objs

    async def batched_get_non_blocking(self, lookup_id: str, keys) -> List[MemoryObj]:
        objs = await self._connector.batched_get_non_blocking(lookup_id, keys)
        _sized(objs)
        return objs

    async def batched_put(self, keys, memory_objs):
        _sized(memory_objs)
        try:
            await self._connector.batched_put(keys, memory_objs)
        except Exception as e:
            log.warning("batched put error: %s", e)
        finally:
            for obj in memory_objs:
                obj.ref_count_down()

    async def exists(self, key) -> bool:
        return await self._connector.exists(key)

    def exists_sync(self, key) -> bool:
        return self._connector.exists_sync(key)

    async def list(self) -> List[str]:
        return await self._connector.list()

    async def close(self) -> None:
        await self._connector.close()

    def support_ping(self) -> bool:
        return self._connector.support_ping()

    async def ping(self) -> int:
        return await self._connector.ping()

    def support_batched_put(self) -> bool:
        return self._connector.support_batched_put()

    def support_batched_get(self) -> bool:
        return self._connector.support_batched_get()

    def support_batched_async_contains(self) -> bool:
        return self._connector.support_batched_async_contains()

    async def batched_async_contains(self, lookup_id: str, keys, pin: bool = False) -> int:
        return await self._connector.batched_async_contains(lookup_id, keys, pin)

    def support_batched_get_non_blocking(self) -> bool:
        return self._connector.support_batched_get_non_blocking()

    def remove_sync(self, key) -> bool:
        return self._connector.remove_sync(key)

    def support_batched_contains(self) -> bool:
        return self._connector.support_batched_contains()

    def batched_contains(self, keys) -> int:
        return self._connector.batched_contains(keys)

    def post_init(self):
        return self._connector.post_init()

    def __repr__(self) -> str:
        return f"InstrumentedRemoteConnector({self._connector})"
