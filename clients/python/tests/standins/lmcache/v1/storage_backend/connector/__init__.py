"""Stand-in for lmcache.v1.storage_backend.connector (written for kvstore's tests, not LMCache's code):
ConnectorContext and ConnectorAdapter as at LMCache/LMCache 0109660ce57fe9c046eb7953dfb56fb1e3c6d9fd, and
the plugin loading of ConnectorManager (remote_storage_plugins + module_path/class_name in extra_config,
the first adapter whose can_parse accepts the URL creates the connector)."""

import importlib
from abc import ABC, abstractmethod
from typing import Optional


class ConnectorContext:
    def __init__(self, url, loop, local_cpu_backend, config, metadata, plugin_name: Optional[str] = None):
        self.url = url
        self.loop = loop
        self.local_cpu_backend = local_cpu_backend
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
    def create_connector(self, context: ConnectorContext): ...


def create_plugin_connector(url, loop, local_cpu_backend, config, metadata):
    """ConnectorManager's plugin path: load each configured plugin's adapter, ask each in turn."""
    adapters = []
    for name in config.remote_storage_plugins or []:
        module_path = config.extra_config.get(f"remote_storage_plugin.{name}.module_path")
        class_name = config.extra_config.get(f"remote_storage_plugin.{name}.class_name")
        adapter = getattr(importlib.import_module(module_path), class_name)()
        assert isinstance(adapter, ConnectorAdapter)
        adapters.append((name, adapter))
    for name, adapter in adapters:
        if adapter.can_parse(url):
            return adapter.create_connector(ConnectorContext(url, loop, local_cpu_backend, config, metadata, name))
    raise ValueError(f"No adapter found for URL: {url}")
