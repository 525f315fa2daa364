"""Stand-in for vllm.v1.kv_offload.tiering.base (written for kvstore's tests, not vLLM's code): the
SecondaryTierManager interface with the method names, signatures and contracts of upstream commit
5ac2684976ee22c04fe0d2f968c6cf6096b383f2 (EmbeddedLLM/vllm, 2026-08-07): all methods run in the
scheduler process and must not block; submit_store/submit_load start async jobs; get_finished_jobs polls."""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Collection, Iterable, Optional

import numpy as np

from vllm.v1.kv_offload.base import Locality, LookupResult, Medium, ReqContext, RequestOffloadingContext

JobId = int


@dataclass
class JobMetadata:
    job_id: JobId
    keys: Collection[bytes]
    block_ids: np.ndarray
    is_promotion: bool
    req_context: ReqContext


TransferJob = JobMetadata


@dataclass
class JobResult:
    job_id: JobId
    success: bool
    successful_keys: Optional[Collection[bytes]] = None


class SecondaryTierManager(ABC):
    medium: ClassVar[Optional[Medium]] = None

    def __init__(self, offloading_spec: Any, primary_kv_view: memoryview, tier_type: str) -> None:
        self._offloading_spec = offloading_spec
        self._primary_kv_view = primary_kv_view
        self.tier_type = tier_type
        self.locality: Optional[Locality] = None

    @abstractmethod
    def lookup(self, key: bytes, req_context: ReqContext) -> LookupResult: ...

    @abstractmethod
    def submit_store(self, job_metadata: JobMetadata) -> None: ...

    @abstractmethod
    def submit_load(self, job_metadata: JobMetadata) -> None: ...

    @abstractmethod
    def get_finished_jobs(self) -> Iterable[JobResult]: ...

    def has_pending_work(self) -> bool:
        return False

    def take_events(self):
        return ()

    def touch(self, keys, req_context):
        return

    @abstractmethod
    def on_new_request(self, req_context: ReqContext) -> RequestOffloadingContext: ...

    def on_request_finished(self, req_context: ReqContext) -> None:
        return

    def serve_external_requests(self, parent) -> None:
        return

    def on_schedule_end(self, context) -> None:
        return

    @abstractmethod
    def drain_jobs(self) -> None: ...

    def shutdown(self) -> None:
        return
