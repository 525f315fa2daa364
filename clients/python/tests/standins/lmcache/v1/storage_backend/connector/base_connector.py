"""Stand-in for lmcache.v1.storage_backend.connector.base_connector (written for kvstore's tests, not
LMCache's code): RemoteConnector's abstract methods and optional batched ones, with the names and
signatures of LMCache/LMCache 01712fbd51d033060d6a8851c06de0ebf351f74e."""

import abc
from typing import List, Optional


class RemoteConnector(metaclass=abc.ABCMeta):
    @abc.abstractmethod
    async def exists(self, key) -> bool: ...

    @abc.abstractmethod
    def exists_sync(self, key) -> bool: ...

    @abc.abstractmethod
    async def get(self, key) -> Optional[object]: ...

    @abc.abstractmethod
    async def put(self, key, memory_obj): ...

    @abc.abstractmethod
    async def list(self) -> List[str]: ...

    @abc.abstractmethod
    async def close(self): ...

    def support_batched_get(self) -> bool:
        return False

    async def batched_get(self, keys):
        raise NotImplementedError

    def support_batched_put(self) -> bool:
        return False

    async def batched_put(self, keys, memory_objs):
        raise NotImplementedError

    def support_batched_async_contains(self) -> bool:
        return False

    async def batched_async_contains(self, lookup_id: str, keys, pin: bool = False) -> int:
        raise NotImplementedError

    def remove_sync(self, key) -> bool:
        raise NotImplementedError
