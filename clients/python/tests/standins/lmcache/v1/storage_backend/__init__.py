"""Stand-in for lmcache.v1.storage_backend (written for kvstore's tests, not LMCache's code): the remote part of
CreateStorageBackends as in LMCache/LMCache main, version read 2026-11-28 (index id 63775808610, no commit
named):

- one ``RemoteBackend(..., plugin_name=name)`` per ``remote_storage_plugins`` entry, named
  ``RemoteBackend-<name>``, each after ``assert local_cpu_backend is not None`` (outside any try: in the
  scheduler role, which has no local CPU backend, a plugin backend is an AssertionError);
- then, when ``remote_url`` is set (deprecated upstream, and logged so), one more legacy ``RemoteBackend``
  without a plugin name, named ``RemoteBackend``, whatever the local CPU backend.

Upstream creates the local CPU backend itself (none in the scheduler role); here the test hands it in (None
when ``metadata.role == "scheduler"``) and it is not listed among the returned backends.
"""

import logging
from collections import OrderedDict

from .remote_backend import RemoteBackend

log = logging.getLogger(__name__)


def CreateStorageBackends(config, metadata, loop, local_cpu_backend) -> "OrderedDict[str, RemoteBackend]":
    if metadata.role == "scheduler":
        local_cpu_backend = None
    backends: "OrderedDict[str, RemoteBackend]" = OrderedDict()
    for name in config.remote_storage_plugins or []:
        assert local_cpu_backend is not None, "Remote backend requires local CPU backend as a buffer."
        try:
            backends[f"RemoteBackend-{name}"] = RemoteBackend(config, metadata, loop, local_cpu_backend,
                                                              plugin_name=name)
        except Exception as e:
            log.error("Failed to create remote backend for plugin %s: %s", name, e)
    if config.remote_url is not None:
        log.warning("remote_url is deprecated; use remote_storage_plugins")
        backend = RemoteBackend(config, metadata, loop, local_cpu_backend)
        backends[str(backend)] = backend
    return backends
