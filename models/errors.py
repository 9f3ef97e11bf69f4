"""The one error tree of `models`.

    SnapshotError                  the input cannot become a valid Snapshot: report, never retry
    ├── InputFormatError           not YAML / JSON at all, or not the shape of a Kubernetes object
    └── FieldError                 a field has a bad value; carries the field path

Every error says *where*: file, document number and object (`jobs.yaml: document 3 (Job
default/job-a-1)`), then the field path in the shape of FastAPI's 422 `loc`
(`spec.tasks[0].replicas`), then the problem. The CLI prints `str(error)` and exits 2;
the HTTP service will map the same fields to a 422 body.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["SnapshotError", "InputFormatError", "FieldError", "Location", "format_path"]

PathPart = str | int


def format_path(path: Sequence[PathPart]) -> str:
    """`("spec", "tasks", 0, "replicas")` → `"spec.tasks[0].replicas"`."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


@dataclass(frozen=True)
class Location:
    """Which input an error is about: file, 1-based document number, `Kind ns/name`."""

    source: str | None = None
    document: int | None = None
    object_ref: str | None = None

    def __str__(self) -> str:
        parts = []
        if self.source:
            parts.append(self.source)
        where = []
        if self.document is not None:
            where.append(f"document {self.document}")
        if self.object_ref:
            where.append(f"({self.object_ref})")
        if where:
            parts.append(" ".join(where))
        return ": ".join(parts)


class SnapshotError(ValueError):
    """Input that cannot become a Snapshot. `str()` is the one line a user reads."""

    def __init__(self, message: str, *, location: Location | None = None, path: Sequence[PathPart] = ()):
        self.message = message
        self.location = location or Location()
        self.path = tuple(path)
        super().__init__(self.__str__())

    def __str__(self) -> str:
        prefix = str(self.location)
        field_text = format_path(self.path)
        body = f"{field_text}: {self.message}" if field_text else self.message
        return f"{prefix}: {body}" if prefix else body

    def at(self, location: Location) -> "SnapshotError":
        """The same error, placed in a file/document when the caller knows it."""
        return type(self)(self.message, location=location, path=self.path)


class InputFormatError(SnapshotError):
    """Not parseable, or not shaped like the object it claims to be."""


class FieldError(SnapshotError):
    """One field's value is wrong; `path` names it."""
