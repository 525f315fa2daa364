"""Stand-in for vllm.v1.kv_offload.base (written for kvstore's tests, not vLLM's code): the types a
secondary tier uses, with the names, members and fields of upstream commit
5ac2684976ee22c04fe0d2f968c6cf6096b383f2 (EmbeddedLLM/vllm, 2026-08-07)."""

from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Any, Collection, NamedTuple, NewType, Optional

OffloadKey = NewType("OffloadKey", bytes)


def make_offload_key(block_hash: bytes, group_idx: int) -> OffloadKey:
    return OffloadKey(block_hash + group_idx.to_bytes(4, "big", signed=False))


class Medium(Enum):
    CPU = "CPU"
    STORAGE = "STORAGE"


class Locality(Enum):
    LOCAL = "LOCAL"
    REMOTE = "REMOTE"


class TierFilter:
    def allows(self, medium, locality) -> bool:
        return True


TierFilter.ALL = TierFilter()


@dataclass
class ReqContext:
    req_id: str
    kv_transfer_params: Optional[dict] = None
    load_tier_filter: TierFilter = TierFilter.ALL
    _state: dict = field(default_factory=dict, repr=False, init=False)


class LookupResult(Enum):
    MISS = auto()
    HIT = auto()
    HIT_PENDING = auto()
    RETRY = auto()


class OffloadPolicy(Enum):
    BLOCK_LEVEL = "block_level"
    REQUEST_LEVEL = "request_level"


@dataclass
class RequestOffloadingContext:
    policy: OffloadPolicy = OffloadPolicy.BLOCK_LEVEL


class ScheduleEndContext(NamedTuple):
    new_req_ids: Collection[str]
    preempted_req_ids: Collection[str]
