"""Typed, path-aware reading of one raw Kubernetes object (a parsed YAML/JSON mapping).

Input: whatever `yaml.safe_load` or `json.loads` produced, which may be any shape at all.
Output: plain Python values of the expected type, or a `FieldError` that names the file,
document, object and field path (`spec.tasks[0].replicas: expected an integer, got a
string '3'`). Loader code reads every field through `RawObject`, so a list where a mapping
belongs, a string where a number belongs or a null `spec` never becomes a `KeyError`,
`TypeError` or `AttributeError`.

Conventions, as the Kubernetes API reads them: an absent key and an explicit `null` are the
same thing (the default applies); an empty string in an optional string field means unset.
It does not promise to check what Kubernetes' own OpenAPI schema would (name syntax,
label value length): only what batchplace reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from models.errors import FieldError, Location, PathPart

__all__ = [
    "RawObject",
    "Metadata",
    "Warnings",
    "RecordedWarnings",
    "read_metadata",
    "describe",
    "build_model",
    "pydantic_message",
    "DEFAULT_NAMESPACE",
]

Model = TypeVar("Model", bound=BaseModel)

DEFAULT_NAMESPACE = "default"


def describe(value: object) -> str:
    """A short phrase for an unexpected value: `a list`, `a string 'abc'`, `null`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean {value}"
    if isinstance(value, int | float):
        return f"a number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string {shown!r}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


@dataclass(frozen=True)
class RawObject:
    """A mapping inside a raw object, with where it sits (`location`, `path`) for errors."""

    data: Mapping[str, object]
    location: Location
    path: tuple[PathPart, ...] = ()

    # ---- errors and raw access ----

    def error(self, key: PathPart | None, message: str) -> FieldError:
        path = self.path if key is None else (*self.path, key)
        return FieldError(message, location=self.location, path=path)

    def raw(self, key: str) -> object:
        """The value under `key` as parsed, `None` when absent."""
        return self.data.get(key)

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    # ---- nested structures ----

    def child(self, key: str) -> RawObject:
        """The mapping under `key`; an absent or null one reads as empty."""
        value = self.data.get(key)
        if value is None:
            return RawObject({}, self.location, (*self.path, key))
        if not isinstance(value, Mapping):
            raise self.error(key, f"expected a mapping, got {describe(value)}")
        return RawObject(value, self.location, (*self.path, key))

    def children(self, key: str) -> tuple[RawObject, ...]:
        """The list of mappings under `key`; absent or null reads as empty."""
        items = self._list(key)
        result = []
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise self.error(key, f"item {index}: expected a mapping, got {describe(item)}")
            result.append(RawObject(item, self.location, (*self.path, key, index)))
        return tuple(result)

    def entries(self, key: str) -> tuple[tuple[str, object], ...]:
        """The `(name, value)` pairs of the mapping under `key`, names checked to be strings."""
        mapping = self.child(key)
        pairs = []
        for name, value in mapping.data.items():
            if not isinstance(name, str):
                raise mapping.error(None, f"keys must be strings, got {describe(name)}")
            pairs.append((name, value))
        return tuple(pairs)

    def numbered_children(self, key: str) -> tuple[tuple[int, RawObject], ...]:
        """A mapping keyed by numbers (`MemoryDetail`): YAML writes `0:`, JSON writes `"0":`."""
        mapping = self.child(key)
        result = []
        for number, value in mapping.data.items():
            text = str(number)
            if isinstance(number, bool) or not text.isdigit():
                raise mapping.error(text, f"keys must be numbers, got {describe(number)}")
            if not isinstance(value, Mapping):
                raise mapping.error(text, f"expected a mapping, got {describe(value)}")
            result.append((int(text), RawObject(value, self.location, (*mapping.path, text))))
        return tuple(sorted(result, key=lambda pair: pair[0]))

    def _list(self, key: str) -> list[object]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list | tuple):
            raise self.error(key, f"expected a list, got {describe(value)}")
        return list(value)

    # ---- scalars ----

    def optional_string(self, key: str) -> str | None:
        """A string, or None when absent, null or empty."""
        value = self.data.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise self.error(key, f"expected a string, got {describe(value)}")
        return value

    def string(self, key: str, default: str) -> str:
        value = self.optional_string(key)
        return default if value is None else value

    def required_string(self, key: str) -> str:
        value = self.optional_string(key)
        if value is None:
            raise self.error(key, "required, got nothing")
        return value

    def optional_integer(self, key: str, *, minimum: int | None = None) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(key, f"expected an integer, got {describe(value)}")
        if isinstance(value, float):
            if not value.is_integer():
                raise self.error(key, f"expected an integer, got {value}")
            value = int(value)
        if minimum is not None and value < minimum:
            raise self.error(key, f"must be >= {minimum}, got {value}")
        return value

    def integer(self, key: str, default: int, *, minimum: int | None = None) -> int:
        value = self.optional_integer(key, minimum=minimum)
        return default if value is None else value

    def boolean(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {describe(value)}")
        return value

    def string_map(self, key: str) -> dict[str, str]:
        """A `string: string` mapping such as labels, annotations or a node selector."""
        result = {}
        mapping = self.child(key)
        for name, value in self.entries(key):
            if not isinstance(value, str):
                raise mapping.error(name, f"expected a string (quote it in YAML), got {describe(value)}")
            result[name] = value
        return result

    def string_list(self, key: str) -> tuple[str, ...]:
        items = self._list(key)
        for index, item in enumerate(items):
            if not isinstance(item, str):
                raise FieldError(
                    f"expected a string, got {describe(item)}",
                    location=self.location,
                    path=(*self.path, key, index),
                )
        return tuple(str(item) for item in items)

    def timestamp(self, key: str) -> float | None:
        """An RFC 3339 time (`2024-05-01T12:00:00Z`) as unix seconds; naive times are UTC."""
        value = self.data.get(key)
        if value is None or value == "":
            return None
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value.strip())
            except ValueError:
                message = f"expected an RFC 3339 time such as 2024-05-01T12:00:00Z, got {value!r}"
                raise self.error(key, message) from None
        if isinstance(value, date) and not isinstance(value, datetime):
            value = datetime(value.year, value.month, value.day)
        if not isinstance(value, datetime):
            raise self.error(key, f"expected an RFC 3339 time, got {describe(value)}")
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.timestamp()


@dataclass(frozen=True)
class Metadata:
    """The parts of `metadata` batchplace reads."""

    name: str
    namespace: str = DEFAULT_NAMESPACE
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    creation_time: float | None = None

    def tag(self, key: str) -> str | None:
        """An annotation, else a label of that key (for keys people set either way)."""
        return self.annotations.get(key) or self.labels.get(key) or None


def read_metadata(obj: RawObject) -> Metadata:
    meta = obj.child("metadata")
    return Metadata(
        name=meta.required_string("name"),
        namespace=meta.string("namespace", DEFAULT_NAMESPACE),
        labels=meta.string_map("labels"),
        annotations=meta.string_map("annotations"),
        creation_time=meta.timestamp("creationTimestamp"),
    )


class Warnings:
    """Collects the one-line notes a load returns (`file: document n (Kind ns/name): …`), each once.

    A note that can repeat on every object of a large input (the same unknown field on
    5,000 generated pods) is added with `like`, a text naming the kind of note: the first
    `PER_KIND` are listed, the rest counted in one closing line per kind,
    `<like> (and 4,997 more)`, so the lines say everything without flooding a terminal.
    """

    PER_KIND = 3

    def __init__(self) -> None:
        self._lines: dict[str, None] = {}
        self._more: dict[str, int] = {}

    def add(self, location: Location, message: str, *, like: str | None = None) -> None:
        where = str(location)
        line = f"{where}: {message}" if where else message
        if like is not None and line not in self._lines:
            seen = self._more.get(like, 0)
            self._more[like] = seen + 1
            if seen >= self.PER_KIND:
                return
        self._lines[line] = None

    @property
    def lines(self) -> tuple[str, ...]:
        counted = [(like, count - self.PER_KIND) for like, count in self._more.items() if count > self.PER_KIND]
        return (*self._lines, *(f"{like} (and {unlisted:,} more)" for like, unlisted in counted))


class RecordedWarnings(Warnings):
    """Warnings that keep each `add` call, to be replayed into a load's own `Warnings`."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Location, str, str | None]] = []

    def add(self, location: Location, message: str, *, like: str | None = None) -> None:
        self.calls.append((location, message, like))

    def replay(self, warnings: Warnings) -> None:
        for location, message, like in self.calls:
            warnings.add(location, message, like=like)


def pydantic_message(error: ValidationError) -> tuple[tuple[PathPart, ...], str]:
    """The first error's `loc` and message, without pydantic's "Value error, " prefix."""
    details = error.errors()
    first = details[0]
    message = str(first["msg"]).removeprefix("Value error, ")
    if len(details) > 1:
        message += f" (and {len(details) - 1} more error{'s' if len(details) > 2 else ''})"
    path = tuple(part for part in first["loc"] if isinstance(part, str | int))
    return path, message


def build_model(model: type[Model], location: Location, **fields: object) -> Model:
    """Construct a snapshot model; a rule it enforces becomes a FieldError at `location`."""
    try:
        return model.model_validate(fields)
    except ValidationError as error:
        path, message = pydantic_message(error)
        raise FieldError(message, location=location, path=path) from None
