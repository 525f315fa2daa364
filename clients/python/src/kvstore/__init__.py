"""Python client of the kvstore tiered KV-cache service.

``KvStoreClient`` speaks the HTTP engine API; ``LocalDataPath`` (``kvstore.shm``) copies blocks
straight into and out of the service's DRAM tier on the same host. Engine adapters: ``kvstore.vllm``,
``kvstore.sglang``, ``kvstore.lmcache``.
"""

from .client import Block, KvStoreClient, Layout, Lease, Location, LookupResult
from . import crc32c
from .errors import (
    BadRequest,
    ChecksumMismatch,
    Conflict,
    Forbidden,
    InsufficientStorage,
    KvStoreError,
    KvStoreUnavailable,
    MisdirectedRequest,
    NotFound,
    PayloadTooLarge,
    ProblemError,
    RequestTimeout,
    ServiceUnavailable,
    TooManyRequests,
    Unauthorized,
)

__version__ = "0.1.0"

__all__ = [
    "Block",
    "KvStoreClient",
    "Layout",
    "Lease",
    "Location",
    "LookupResult",
    "BadRequest",
    "ChecksumMismatch",
    "Conflict",
    "Forbidden",
    "InsufficientStorage",
    "KvStoreError",
    "KvStoreUnavailable",
    "MisdirectedRequest",
    "NotFound",
    "PayloadTooLarge",
    "ProblemError",
    "RequestTimeout",
    "ServiceUnavailable",
    "TooManyRequests",
    "Unauthorized",
]
