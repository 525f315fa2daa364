"""Stand-in for lmcache.v1.storage_backend.storage_manager (written for kvstore's tests, not LMCache's code):
how StorageManager uses a backend's answers, as in LMCache/LMCache main, version read 2026-11-28 (index id
10374439230, no commit named).

- ``batched_contains``: each backend in turn is asked for its hit count on the keys left, and those keys are
  sliced with it (``keys[:hit_chunks]``): an answer that is not an int fails as upstream does (TypeError).
- ``async_lookup_and_prefetch`` (without the event bookkeeping): each backend's ``batched_async_contains``
  count, then its ``batched_get_non_blocking`` on that many keys, zipped with them: the chunks retrieved,
  in order. Every returned object is used as a memory object (a None fails here); a tier that returns fewer
  than it counted ends the prefix.
"""

from typing import Dict, List, Tuple

from lmcache.v1.memory_management import MemoryObj


class StorageManager:
    def __init__(self, storage_backends):
        self.storage_backends = storage_backends

    def batched_contains(self, keys: list, search_range=None, pin: bool = False) -> Tuple[int, Dict[str, list]]:
        total_keys, total_hit, block_mapping = len(keys), 0, {}
        for name, backend in self.storage_backends.items():
            if search_range and name not in search_range:
                continue
            hit_chunks = backend.batched_contains(keys, pin)
            if hit_chunks == 0:
                continue
            block_mapping[name] = keys[:hit_chunks]
            total_hit += hit_chunks
            if total_hit == total_keys:
                break
            keys = keys[hit_chunks:]
        return total_hit, block_mapping

    async def async_lookup_and_prefetch(self, lookup_id: str, keys: list, pin: bool = False) -> List[tuple]:
        retrieved: List[tuple] = []
        for backend in self.storage_backends.values():
            hit = await backend.batched_async_contains(lookup_id, keys, pin)
            if hit == 0:
                continue
            objs = await backend.batched_get_non_blocking(lookup_id, keys[:hit])
            assert all(isinstance(o, MemoryObj) for o in objs), f"not memory objects: {objs}"
            retrieved += list(zip(keys[:hit], objs))
            if len(objs) < hit:
                break
            keys = keys[hit:]
            if not keys:
                break
        return retrieved
