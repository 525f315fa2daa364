"""Stand-in for lmcache.v1.storage_backend.connector (written for kvstore's tests, not LMCache's code), as at
LMCache/LMCache 0109660ce57fe9c046eb7953dfb56fb1e3c6d9fd and unchanged in this respect in the newest version
read (2026-11-28, index id 55286677913, which also wraps a RemoteConnector class named by class_name in a
DynamicConnectorAdapter; a ConnectorAdapter class, as kvstore's, is loaded as before):

- ConnectorContext(url, loop, local_cpu_backend, config, metadata, plugin_name): a local CPU backend of None
  (the scheduler role) becomes a SafeLocalCPUBackend;
- ConnectorManager: the built-in adapters (none here), then one adapter per ``remote_storage_plugins`` entry
  from ``extra_config["remote_storage_plugin.<name>.module_path"]`` / ``[...class_name]``, instantiated with
  no arguments (an entry that fails to load is logged and skipped); the first adapter whose ``can_parse``
  accepts the URL creates the connector;
- CreateConnector: wraps it in an InstrumentedRemoteConnector.

A plugin backend's URL is ``plugin://<plugin name>`` with ``plugin_name`` set (RemoteBackend); the legacy
``remote_url`` backend passes that URL and no plugin name.
"""

import importlib
import logging
from abc import ABC, abstractmethod
from typing import List, Optional

from .base_connector import RemoteConnector
from .instrumented_connector import InstrumentedRemoteConnector

log = logging.getLogger(__name__)


def extract_plugin_type(plugin_name: str) -> str:
    """``"kvstore"`` and ``"kvstore.primary"`` are both of type ``"kvstore"``."""
    return plugin_name.partition(".")[0]


class SafeLocalCPUBackend:
    """What LMCache hands a connector in place of a missing local CPU backend (the scheduler role): it was
    never initialised, so asking it anything but allocate fails as on an uninitialised LocalCPUBackend, whose
    get_full_chunk_size_bytes reads self.metadata; allocate raises RuntimeError."""

    def __init__(self, config):
        pass

    def get_full_chunk_size_bytes(self) -> int:
        return self.metadata.get_full_chunk_size_bytes()  # AttributeError: never set

    def allocate(self, *args, **kwargs):
        raise RuntimeError("SafeLocalCPUBackend.allocate() should never be called (scheduler role)")


class ConnectorContext:
    def __init__(self, url, loop, local_cpu_backend, config, metadata, plugin_name: Optional[str] = None):
        self.url = url
        self.loop = loop
        self.local_cpu_backend = local_cpu_backend if local_cpu_backend is not None else SafeLocalCPUBackend(config)
        self.config = config
        self.metadata = metadata
        self.plugin_name = plugin_name

    def get_full_chunk_size_bytes(self) -> int:
        return self.local_cpu_backend.get_full_chunk_size_bytes()


class ConnectorAdapter(ABC):
    def __init__(self, schema: str = "") -> None:
        self.schema = schema

    def can_parse(self, url: str) -> bool:
        return self.schema != "" and url.startswith(self.schema)

    @abstractmethod
    def create_connector(self, context: ConnectorContext) -> RemoteConnector: ...


class ConnectorManager:
    def __init__(self, url, loop, local_cpu_backend, config=None, metadata=None, plugin_name=None):
        self.context = ConnectorContext(url, loop, local_cpu_backend, config, metadata, plugin_name)
        self.adapters: List[ConnectorAdapter] = []
        self._load_plugins(config)

    def _load_plugins(self, config) -> None:
        if config is None:
            return
        extra = config.extra_config or {}
        for name in set(config.remote_storage_plugins or []):
            module_path = extra.get(f"remote_storage_plugin.{name}.module_path")
            class_name = extra.get(f"remote_storage_plugin.{name}.class_name")
            if not module_path or not class_name:
                log.warning("Remote connector %s missing adapter module_path or class_name", name)
                continue
            try:
                adapter = getattr(importlib.import_module(module_path), class_name)()
            except Exception as e:  # upstream logs import, attribute and construction errors alike
                log.error("Failed to load remote connector %s: %s", name, e)
                continue
            if not isinstance(adapter, ConnectorAdapter):
                log.warning("Remote connector %s adapter is not a ConnectorAdapter", name)
                continue
            self.adapters.append(adapter)

    def create_connector(self) -> RemoteConnector:
        for adapter in self.adapters:
            if adapter.can_parse(self.context.url):
                return adapter.create_connector(self.context)
        raise ValueError(f"No adapter found for URL: {self.context.url}")


def CreateConnector(url, loop, local_cpu_backend, config=None, metadata=None, plugin_name=None):
    if "://" not in url:
        raise ValueError(f"Invalid remote url {url}: missing scheme")
    manager = ConnectorManager(url, loop, local_cpu_backend, config, metadata, plugin_name)
    return InstrumentedRemoteConnector(manager.create_connector())
