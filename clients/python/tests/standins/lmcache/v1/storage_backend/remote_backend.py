"""Stand-in for lmcache.v1.storage_backend.remote_backend (written for kvstore's tests, not LMCache's code):
RemoteBackend as in LMCache/LMCache main, version read 2026-11-28 (index id 57576816655, no commit named),
without serde (naive: the object itself), MLA worker-0 mode and metrics.

- With ``plugin_name`` its URL is ``plugin://<plugin_name>``, else ``config.remote_url``; the connection is
  ``CreateConnector(url, loop, local_cpu_backend, config, metadata, plugin_name=...)``. A failure to create it
  is logged ("Failed to initialize/re-establish remote connection: ...") and leaves ``connection`` None.
- ``batched_contains`` returns the connector's ``batched_contains(keys)`` (0 on an exception), or asks
  ``contains`` key by key when the connector does not support it; ``batched_async_contains`` and
  ``batched_get_non_blocking`` await the connector's under ``blocking_timeout_secs`` (0 / [] on a timeout);
  ``batched_get_blocking`` waits as long for ``batched_get`` (or one ``get`` per key) and insists on one
  result per key.
- The calls are run on LMCache's event loop (``run_coroutine_threadsafe``), which runs on a thread of its own.
  Unlike upstream, ``batched_submit_put_task`` returns its future, so a test can wait for the put.
"""

import asyncio
import logging
from concurrent.futures import TimeoutError as FutureTimeout
from typing import List, Optional

from lmcache.v1.storage_backend.connector import CreateConnector

log = logging.getLogger(__name__)


class RemoteBackend:
    def __init__(self, config, metadata, loop, local_cpu_backend, dst_device="cpu", plugin_name=None):
        self.plugin_name = plugin_name
        if plugin_name is not None:
            self.remote_url = f"plugin://{plugin_name}"
        elif config.remote_url is None:
            raise ValueError("remote_url must be provided when not using plugin_name")
        else:
            self.remote_url = config.remote_url
        self.config, self.metadata, self.loop = config, metadata, loop
        self.local_cpu_backend = local_cpu_backend
        self.connection = None
        self.init_connection()

    def __str__(self):
        return type(self).__name__

    def init_connection(self) -> None:
        if self.connection is not None:
            return
        try:
            self.connection = CreateConnector(self.remote_url, self.loop, self.local_cpu_backend, self.config,
                                              self.metadata, plugin_name=self.plugin_name)
        except Exception as e:
            log.warning("Failed to initialize/re-establish remote connection: %s", e)
            self.connection = None

    def _wait(self, coro, timeout=None):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def contains(self, key, pin: bool = False) -> bool:
        if self.connection is None:
            return False
        try:
            return self._wait(self.connection.exists(key))
        except Exception as e:
            log.warning("Remote connection failed in contains: %s", e)
            return False

    def batched_contains(self, keys, pin: bool = False) -> int:
        if self.connection is None:
            return 0
        if not self.connection.support_batched_contains():
            n = 0
            for key in keys:  # StorageBackendInterface's default: a prefix, key by key
                if not self.contains(key, pin):
                    break
                n += 1
            return n
        try:
            return self.connection.batched_contains(keys)
        except Exception as e:
            log.warning("Remote connection failed in batched_contains: %s", e)
            return 0

    def batched_submit_put_task(self, keys, memory_objs):
        if self.connection is None:
            return None
        if self.connection.support_batched_put():
            return asyncio.run_coroutine_threadsafe(self.connection.batched_put(keys, memory_objs), self.loop)
        futures = [asyncio.run_coroutine_threadsafe(self.connection.put(k, o), self.loop)
                   for k, o in zip(keys, memory_objs)]
        return futures[-1] if futures else None

    def get_blocking(self, key):
        if self.local_cpu_backend is None or self.connection is None:
            return None
        future = asyncio.run_coroutine_threadsafe(self.connection.get(key), self.loop)
        try:
            return future.result(self.config.blocking_timeout_secs)
        except Exception as e:
            if isinstance(e, FutureTimeout):
                future.cancel()
            log.warning("Error occurred in get_blocking: %s, return None", e)
            return None

    def batched_get_blocking(self, keys) -> List[Optional[object]]:
        if self.local_cpu_backend is None or self.connection is None:
            return [None] * len(keys)
        if not self.connection.support_batched_get():
            return [self.get_blocking(k) for k in keys]
        future = asyncio.run_coroutine_threadsafe(self.connection.batched_get(keys), self.loop)
        try:
            objs = future.result(self.config.blocking_timeout_secs)
        except Exception as e:
            if isinstance(e, FutureTimeout):
                future.cancel()
            log.warning("Error occurred in batched_get_blocking: %s, returning None list", e)
            objs = [None] * len(keys)
        assert len(objs) == len(keys), f"keys length: {len(keys)}, memory objs length: {len(objs)}"
        return objs

    async def batched_async_contains(self, lookup_id: str, keys, pin: bool = False) -> int:
        if self.connection is None:
            return 0
        try:
            assert self.connection.support_batched_async_contains()
            return await asyncio.wait_for(self.connection.batched_async_contains(lookup_id, keys, pin),
                                          self.config.blocking_timeout_secs)
        except Exception as e:  # asyncio.TimeoutError included
            log.warning("Error occurred in batched_async_contains: %s", e)
            return 0

    async def batched_get_non_blocking(self, lookup_id: str, keys, transfer_spec=None) -> list:
        if self.local_cpu_backend is None or self.connection is None:
            return []
        try:
            return await asyncio.wait_for(self.connection.batched_get_non_blocking(lookup_id, keys),
                                          self.config.blocking_timeout_secs)
        except Exception as e:  # asyncio.TimeoutError included
            log.warning("Error occurred in batched_get_non_blocking: %s", e)
            return []

    def close(self) -> None:
        if self.connection is not None:
            self._wait(self.connection.close(), 60)
