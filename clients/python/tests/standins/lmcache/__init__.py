"""Stand-ins for the parts of LMCache (LMCache/LMCache) that drive a remote storage plugin, written for
kvstore's tests (not LMCache's code).

Which upstream versions they reproduce (each module names its own):

- the connector package (``lmcache/v1/storage_backend/connector/__init__.py``): ConnectorContext with
  ``plugin_name``, ``extract_plugin_type`` and the plugin loading of ConnectorManager as at commit
  0109660ce57fe9c046eb7953dfb56fb1e3c6d9fd (that file is clean there; the same commit's
  ``storage_backend/__init__.py`` has unresolved merge markers, so nothing else is pinned to it);
- everything newer (RemoteConnector with ``__init__(config, metadata)`` and an int ``batched_contains``,
  InstrumentedRemoteConnector, RemoteBackend with ``plugin_name``, CreateStorageBackends making one
  RemoteBackend per ``remote_storage_plugins`` entry, StorageManager): LMCache/LMCache main as read on
  2026-11-28 through a source index that names no commit for these versions; the modules give the
  index ids of the versions read.
"""
