"""The one error tree of `controller`: what went wrong talking to the API server, and what to do.

`controller.kube` (the only module that imports `kubernetes`) turns every `ApiException`
and every transport failure into one of these, chained `from` the original, so no other
module sees the client library's exceptions. Each class says whether to retry:

    ApiError                    base; `.retry` says whether the same call may succeed later
    ├── Conflict       409      retry=False  the object changed, or is already in the asked-for
    │                                        state (a pod already bound): re-read, then decide
    ├── NotFound       404      retry=False  the object is gone: drop the action
    ├── Gone           410      retry=True   a watch's resourceVersion is too old: relist
    ├── TooManyRequests 429     retry=True   throttled, or an eviction a PodDisruptionBudget
    │                                        refuses now (`.retry_after_s` when the server says)
    ├── ServerError    5xx      retry=True   the server failed; the call may not have happened
    ├── Unavailable    —        retry=True   no HTTP answer (refused, reset, timed out, stream
    │                                        cut): the call may or may not have happened
    ├── Forbidden      401/403  retry=False  RBAC or credentials: report, an operator must act
    └── Invalid        400/422… retry=False  the request is wrong (a bug) or the object invalid

Every error names the call (`verb`, `what`: "bind default/job-0 to node-1") and the HTTP
status when there was one. A `ServerError` or `Unavailable` after a write means the write
may have landed: callers re-read before repeating a non-idempotent call (a bind answered by
409 is checked against the pod's `spec.nodeName`).
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "ApiError",
    "Conflict",
    "NotFound",
    "Gone",
    "TooManyRequests",
    "ServerError",
    "Unavailable",
    "Forbidden",
    "Invalid",
    "error_for_status",
]


class ApiError(Exception):
    """A call to the API server failed. `retry`: may the same call succeed later?"""

    retry: ClassVar[bool] = False

    def __init__(self, message: str, *, verb: str = "", what: str = "", status: int | None = None) -> None:
        self.message = message
        self.verb = verb
        self.what = what
        self.status = status
        super().__init__(str(self))

    def __str__(self) -> str:
        call = " ".join(part for part in (self.verb, self.what) if part)
        code = f"HTTP {self.status}: " if self.status is not None else ""
        return f"{call}: {code}{self.message}" if call else f"{code}{self.message}"


class Conflict(ApiError):
    """409: the object changed under us, or is already in the state asked for."""


class NotFound(ApiError):
    """404: the object (or the API) does not exist."""


class Gone(ApiError):
    """410: the resourceVersion a watch started from is compacted away; relist."""

    retry = True


class TooManyRequests(ApiError):
    """429: throttled, or an eviction refused by a PodDisruptionBudget right now."""

    retry = True

    def __init__(self, message: str, *, retry_after_s: float | None = None, **kwargs: object) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(message, **kwargs)  # type: ignore[arg-type]


class ServerError(ApiError):
    """5xx: the server failed the call; it may or may not have taken effect."""

    retry = True


class Unavailable(ApiError):
    """No HTTP answer at all: connection refused or reset, timeout, a stream cut short."""

    retry = True


class Forbidden(ApiError):
    """401/403: the credentials or the RBAC role do not allow the call."""


class Invalid(ApiError):
    """Any other 4xx: a malformed request or an object the server rejects."""


def error_for_status(
    status: int, message: str, *, verb: str = "", what: str = "", retry_after_s: float | None = None
) -> ApiError:
    """The error class for an HTTP status: `error_for_status(409, …)` → `Conflict`."""
    if status == 429:
        return TooManyRequests(message, retry_after_s=retry_after_s, verb=verb, what=what, status=status)
    kind: type[ApiError]
    if status == 409:
        kind = Conflict
    elif status == 404:
        kind = NotFound
    elif status == 410:
        kind = Gone
    elif status in (401, 403):
        kind = Forbidden
    elif status >= 500:
        kind = ServerError
    else:
        kind = Invalid
    return kind(message, verb=verb, what=what, status=status)
