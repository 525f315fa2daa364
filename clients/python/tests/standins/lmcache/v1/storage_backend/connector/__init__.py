"""Stand-in for lmcache.v1.storage_backend.connector (written for kvstore's tests, not LMCache's code):
ConnectorContext (with SafeLocalCPUBackend for the scheduler role, whose local CPU backend is None) and
ConnectorAdapter as at LMCache/LMCache 0109660ce57fe9c046eb7953dfb56fb1e3c6d9fd, and
the plugin loading of ConnectorManager (remote_storage_plugins + module_path/class_name in extra_config,
the first adapter whose can_parse accepts the URL creates the connector)."""

import importlib
from abc import ABC, abstractmethod
from typing import Optional


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
        # None (the scheduler role) is wrapped as upstream wraps it
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
