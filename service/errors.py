"""The service's error tree and the ONE table that maps errors to HTTP responses.

    ServiceError                  a request the service refuses before, or instead of, solving
    ├── Unauthorized      401     no bearer token, or the wrong one: send the right one
    ├── BodyTooLarge      413     the body passes `max_body_bytes`: send less (never retry as is)
    ├── UnsupportedMedia  415     a body that is neither JSON nor YAML: fix Content-Type
    ├── InvalidRequest    422     a field is wrong: `problems` say which (loc, JSON pointer, msg)
    ├── NoSolverSlot      429     every solver slot and queue place is taken: retry after
    │                             `retry_after_s` (the Retry-After header says the same)
    └── LiveSnapshotUnavailable 503  no snapshot posted and the live one is not there yet: retry,
                                     or post one (a server with no live source answers 422 instead)

From the layers below, mapped by the same table:

    models.errors.SnapshotError          422   the snapshot cannot be read; its field path → loc
    fastapi RequestValidationError       422   a field of the request envelope / query; loc → pointer
    solver.checker.PlacementRejected     500   an engine produced an invalid placement: a bug, logged
    any other Exception                  500   a bug, logged with its traceback; tests assert none

Every 422 body has FastAPI's shape plus a JSON pointer (RFC 6901) into the request body:

    {"detail": [{"loc": ["body", "pod_groups", 3, "tasks", 0, "requests"],
                 "pointer": "/pod_groups/3/tasks/0/requests",
                 "msg": "gpu request of 1500 milli-GPU is neither whole devices …",
                 "type": "snapshot_field"}]}

For YAML (a YAML body, or a YAML string field) the pointer names the body or the field, and
`document` (1-based), `object` (`Job default/gang-job`) and `path` (`spec.tasks[0].replicas`)
say where inside the YAML.
For a query parameter `loc` is `["query", name]` and `pointer` is null. Client input never
appears in an error body (no `input` echo: it can be megabytes), nor does the token.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from models.errors import InputFormatError, SnapshotError, format_path
from solver.checker import PlacementRejected

__all__ = [
    "ServiceError",
    "Unauthorized",
    "BodyTooLarge",
    "UnsupportedMedia",
    "InvalidRequest",
    "NoSolverSlot",
    "LiveSnapshotUnavailable",
    "FieldProblem",
    "ERROR_TABLE",
    "EMPTY_BODY",
    "json_pointer",
    "problem_from_snapshot_error",
    "error_response",
    "install_error_handlers",
]

log = logging.getLogger("batchplace.service")

LocPart = str | int
InputForm = Literal["json", "items", "yaml"]


class ServiceError(Exception):
    """A refused request; `str()` is the `detail` the client reads."""


class Unauthorized(ServiceError):
    def __init__(self) -> None:
        super().__init__("missing or wrong bearer token (Authorization: Bearer <token>)")


class BodyTooLarge(ServiceError):
    def __init__(self, *, limit_bytes: int, received_bytes: int, declared: bool) -> None:
        self.limit_bytes = limit_bytes
        self.received_bytes = received_bytes
        size = f"{received_bytes} bytes" if declared else f"more than {received_bytes - 1} bytes"
        super().__init__(f"request body is {size}; this server takes at most {limit_bytes} bytes")


class UnsupportedMedia(ServiceError):
    def __init__(self, media_type: str, *, accepted: Sequence[str]) -> None:
        super().__init__(f"Content-Type {media_type or '(none)'} is not accepted here; send one of {', '.join(accepted)}")


@dataclass(frozen=True)
class FieldProblem:
    """One wrong field. `loc` starts at the request root (`"body"` or `"query"`)."""

    loc: tuple[LocPart, ...]
    msg: str
    type: str
    document: int | None = None
    object: str | None = None
    path: str | None = None

    def to_json(self) -> dict[str, object]:
        item: dict[str, object] = {"loc": list(self.loc), "pointer": json_pointer(self.loc), "msg": self.msg, "type": self.type}
        if self.document is not None:
            item["document"] = self.document
        if self.object is not None:
            item["object"] = self.object
        if self.path is not None:
            item["path"] = self.path
        return item


class InvalidRequest(ServiceError):
    def __init__(self, problems: Sequence[FieldProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(f"{json_pointer(p.loc) or '/'}: {p.msg}" for p in self.problems))


class NoSolverSlot(ServiceError):
    def __init__(self, *, retry_after_s: int, slots: int, queued: int) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(
            f"all {slots} solver slots are busy and {queued} requests already wait; retry after {retry_after_s} s"
        )


class LiveSnapshotUnavailable(ServiceError):
    def __init__(self, *, retry_after_s: int) -> None:
        self.retry_after_s = retry_after_s
        super().__init__("the live cluster snapshot is not ready yet; retry, or post `snapshot` or `snapshot_yaml`")


def json_pointer(loc: Sequence[LocPart]) -> str | None:
    """`("body", "pods", 3, "requests")` → `"/pods/3/requests"`; `("query", "engine")` → None.

    RFC 6901: `~` is written `~0` and `/` is written `~1`, so a label key
    `("body", "nodes", 0, "labels", "nvidia.com/gpu")` → `"/nodes/0/labels/nvidia.com~1gpu"`.
    """
    if not loc or loc[0] != "body":
        return None
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in loc[1:])


def problem_from_snapshot_error(
    error: SnapshotError, *, at: Sequence[LocPart] = ("body",), form: InputForm = "json"
) -> FieldProblem:
    """The `FieldProblem` for a loader error about the input that sat at `at` in the request.

    `form` says how that input was fed to the loader:
      - "json": a snapshot in JSON form; the error's field path continues `at`;
      - "items": a JSON array of Kubernetes objects fed as documents 1, 2, …, so document n
        is index n − 1: `("body", "changes", "add_jobs", 0, "spec", "tasks", 0, "replicas")`;
      - "yaml": YAML text; `loc` stops at `at` (the pointer cannot enter a string) and
        `document`, `object` and `path` (`spec.tasks[0].replicas`) say where inside it.
    """
    kind = "snapshot_format" if isinstance(error, InputFormatError) else "snapshot_field"
    location = error.location
    if form == "items" and location.document is not None:
        loc = (*at, location.document - 1, *error.path)
        return FieldProblem(loc=loc, msg=error.message, type=kind, object=location.object_ref)
    if form == "yaml":
        return FieldProblem(
            loc=tuple(at), msg=error.message, type=kind, document=location.document,
            object=location.object_ref, path=format_path(error.path) or None,
        )
    return FieldProblem(loc=(*at, *error.path), msg=error.message, type=kind, object=location.object_ref)


EMPTY_BODY = "the request body is empty"
"""FastAPI's "Field required" at `body` says nothing to someone who sent no body at all."""


def _validation_problems(error: RequestValidationError) -> list[FieldProblem]:
    problems = []
    for item in error.errors():
        loc = tuple(part if isinstance(part, int | str) else str(part) for part in item.get("loc", ()))
        message = str(item.get("msg", "invalid"))
        if loc == ("body",) and item.get("type") == "missing":
            message = f"{EMPTY_BODY}: post a JSON object (its fields and an example are in /docs)"
        problems.append(FieldProblem(loc=loc, msg=message, type=str(item.get("type", "value_error"))))
    return problems


# ---- the table: error class → status, metrics reason, body ----

ERROR_TABLE: tuple[tuple[type[Exception], int, str], ...] = (
    (Unauthorized, 401, "unauthorized"),
    (BodyTooLarge, 413, "too_large"),
    (UnsupportedMedia, 415, "media_type"),
    (InvalidRequest, 422, "invalid"),
    (SnapshotError, 422, "invalid"),
    (RequestValidationError, 422, "invalid"),
    (NoSolverSlot, 429, "no_slot"),
    (LiveSnapshotUnavailable, 503, "no_live_snapshot"),
    (PlacementRejected, 500, "bug"),
    (Exception, 500, "bug"),
)
"""First matching row wins; order subclasses before their bases."""


def _row(error: Exception) -> tuple[int, str]:
    for cls, status, reason in ERROR_TABLE:
        if isinstance(error, cls):
            return status, reason
    raise AssertionError("the table ends with Exception")  # pragma: no cover


def error_response(error: Exception) -> tuple[JSONResponse, str]:
    """The response for `error`, and the reason label `batchplace_rejected_requests_total` counts."""
    status, reason = _row(error)
    headers: dict[str, str] = {}
    detail: object
    if isinstance(error, RequestValidationError):
        detail = [problem.to_json() for problem in _validation_problems(error)]
    elif isinstance(error, InvalidRequest):
        detail = [problem.to_json() for problem in error.problems]
    elif isinstance(error, SnapshotError):
        detail = [problem_from_snapshot_error(error).to_json()]
    elif isinstance(error, ServiceError):
        detail = str(error)
    elif isinstance(error, PlacementRejected):
        detail = {
            "error": "the engine produced a placement that breaks hard rules; nothing is returned (a bug, logged)",
            "violations": [{"rule": v.rule, "subject": v.subject, "message": v.message} for v in error.violations],
        }
    else:
        detail = "internal error (a bug, logged)"
    if isinstance(error, NoSolverSlot | LiveSnapshotUnavailable):
        headers["Retry-After"] = str(error.retry_after_s)
    if isinstance(error, Unauthorized):
        headers["WWW-Authenticate"] = "Bearer"
    if isinstance(error, BodyTooLarge):
        headers["Connection"] = "close"
    return JSONResponse({"detail": detail}, status_code=status, headers=headers), reason


async def _handle(request: Request, error: Exception) -> JSONResponse:
    response, reason = error_response(error)
    if response.status_code == 500:
        log.error(
            "request failed: %s", error.__class__.__name__, exc_info=error,
            extra={"route": request.url.path, "method": request.method, "status": response.status_code},
        )
    metrics = getattr(request.app.state, "metrics", None)
    if metrics is not None:
        metrics.rejected.labels(reason=reason).inc()
    return response


def install_error_handlers(app: FastAPI) -> None:
    """Register `_handle` for every class of `ERROR_TABLE` (Exception last: a bug signal)."""
    for cls, _, _ in ERROR_TABLE:
        app.add_exception_handler(cls, _handle)
