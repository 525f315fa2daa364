"""Stand-in for lmcache.v1.config (written for kvstore's tests, not LMCache's code): the fields of
LMCacheEngineConfig that the remote-storage path reads."""

from dataclasses import dataclass, field
from typing import List, Optional


@dataclass
class LMCacheEngineConfig:
    remote_url: Optional[str] = None
    remote_storage_plugins: Optional[List[str]] = None
    extra_config: Optional[dict] = field(default_factory=dict)
    remote_serde: str = "naive"
    blocking_timeout_secs: float = 10.0
    use_layerwise: bool = False

    def get_extra_config_value(self, key, default=None):
        return (self.extra_config or {}).get(key, default)
