"""Exceptions the client raises. A refused request carries the fields of kvstore's RFC 9457 problem JSON."""

from __future__ import annotations

from typing import Any, Mapping, Optional

__all__ = [
    "KvStoreError",
    "KvStoreUnavailable",
    "ProblemError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "RequestTimeout",
    "Conflict",
    "PayloadTooLarge",
    "MisdirectedRequest",
    "TooManyRequests",
    "InsufficientStorage",
    "ServiceUnavailable",
    "ChecksumMismatch",
]


class KvStoreError(Exception):
    """Base of every error the kvstore client raises."""


class KvStoreUnavailable(KvStoreError):
    """The service could not be reached (connection refused, reset, or timed out)."""


class ChecksumMismatch(KvStoreError):
    """Bytes copied out of shared memory did not have the CRC32C kvstore recorded: never use them."""


class ProblemError(KvStoreError):
    """kvstore answered with an error status; the problem JSON's fields are attributes.

    ``status``, ``title``, ``detail``, ``type``, ``instance`` and ``field`` (the input at fault, when
    kvstore names one); ``problem`` is the whole JSON object (or ``{}`` when the body was not JSON).
    """

    def __init__(self, status: int, problem: Mapping[str, Any], method: str = "", path: str = ""):
        self.status = status
        self.problem = dict(problem)
        self.title: Optional[str] = problem.get("title")
        self.detail: Optional[str] = problem.get("detail")
        self.type: Optional[str] = problem.get("type")
        self.instance: Optional[str] = problem.get("instance")
        self.field: Optional[str] = problem.get("field")
        where = f"{method} {path}: " if method else ""
        super().__init__(f"{where}{status} {self.title or ''}: {self.detail or ''}".strip())


class BadRequest(ProblemError):
    """400: the request was malformed; ``field`` names the input at fault."""


class Unauthorized(ProblemError):
    """401: a token is required."""


class Forbidden(ProblemError):
    """403: the token may not do this."""


class NotFound(ProblemError):
    """404: no such namespace, block, lease or reservation."""


class RequestTimeout(ProblemError):
    """408: a store's body stalled or arrived too slowly (``kvstore.limits.frame-timeout``, ``upload-deadline``);
    frames before it stay stored, the rest of the request was not."""


class Conflict(ProblemError):
    """409: a different declaration exists, the blocks are pinned or leased, or the namespace is being deleted."""


class PayloadTooLarge(ProblemError):
    """413: the body is larger than ``kvstore.max-request-size`` (a store), ``kvstore.limits.max-json-body``
    (a JSON call) or carries more frames than ``kvstore.limits.max-frames-per-upload``."""


class MisdirectedRequest(ProblemError):
    """421: in a cluster, a reserve went to a node that does not own the blocks; ``detail`` names the owner(s)."""


class TooManyRequests(ProblemError):
    """429: a per-tenant limit was reached (uncommitted reservations, leased blocks); ``detail`` names it. Retry
    once the tenant holds less (commit, cancel or release)."""


class InsufficientStorage(ProblemError):
    """507: no room can be made (everything left is pinned or leased), or the tenant's quota of a tier is
    reached (``kvstore.tenants.<tenant>.<tier>``, ``kvstore.limits.tier-fraction-per-tenant``)."""


class ServiceUnavailable(ProblemError):
    """503: e.g. the data path asked for is not available on this service."""


_BY_STATUS = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    408: RequestTimeout,
    409: Conflict,
    413: PayloadTooLarge,
    421: MisdirectedRequest,
    429: TooManyRequests,
    503: ServiceUnavailable,
    507: InsufficientStorage,
}


def problem_error(status: int, problem: Mapping[str, Any], method: str = "", path: str = "") -> ProblemError:
    """The exception for an error answer, by status."""
    return _BY_STATUS.get(status, ProblemError)(status, problem, method, path)
