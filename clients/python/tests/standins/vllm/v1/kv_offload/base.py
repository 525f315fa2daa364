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


class TierMatcher(NamedTuple):
    medium: Optional[Medium] = None
    locality: Optional[Locality] = None

    def matches(self, medium, locality) -> bool:
        """A field left None on either side matches anything."""
        return (self.medium is None or medium is None or self.medium == medium) and (
            self.locality is None or locality is None or self.locality == locality
        )


@dataclass(frozen=True)
class TierFilter:
    """Per-request filter of the tiers a load may use (the tiering manager skips a tier it does not allow)."""

    matchers: tuple = ()

    def allows(self, medium, locality) -> bool:
        if self is TierFilter.ALL:
            return True
        return any(m.matches(medium, locality) for m in self.matchers)


TierFilter.ALL = TierFilter(matchers=(TierMatcher(),))


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
