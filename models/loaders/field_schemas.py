"""Warn about fields and API versions an object's schema does not have.

Why: YAML takes any key, and a loader reads only the keys it knows, so `minAvaliable: 4`
used to be dropped without a word and the job ran with Volcano's default. Kubernetes
itself refuses such an object (`kubectl apply` checks fields strictly), so batchplace says
so too, as one warning line per field with the nearest known name:

    jobs.yaml: document 1 (Job default/llm): spec.minAvaliable: not a field of a Volcano Job;
    did you mean minAvailable?

Input: a raw object whose (group, kind) the loader reads. Output: warnings only; the object
is read as before. The schemas come from `field_schemas.json`, written by
`scripts/generate_field_schemas.py` from the `kubernetes` client's models and the upstream
Volcano, scheduler-plugins, Kubeflow (PyTorchJob), LeaderWorkerSet and JobSet CRDs (models
may not import the client itself).

An apiVersion the group does not serve for the kind (`batch.volcano.sh/v1beta1` Job) is a
warning naming the served ones, and the object is still read, by the served version's
schema. A cluster would refuse it, but the table may lag behind a newer Volcano that does
serve the version, and then dropping the object would change every placement over a stale
table; the warning alone tells the user what `kubectl apply` will say.

Not checked: keys of maps (labels, resources, annotations, a PyTorchJob's replica types:
each map value that is an object is checked), free-form objects, and values (the readers
check those they use). A repeated note (the same unknown field on thousands
of generated pods) is listed three times, then counted (`Warnings(like=…)`).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

from models.errors import PathPart, format_path

from .raw import RawObject, Warnings

__all__ = ["KindSchema", "kind_schema", "warn_unknown_fields"]

_TABLE_FILE = "field_schemas.json"


@dataclass(frozen=True)
class KindSchema:
    """What the table knows of one kind: its name for messages, served versions, root type."""

    label: str
    versions: tuple[str, ...]
    type_name: str
    version_types: Mapping[str, str] = dataclasses.field(default_factory=dict)  # a version of another shape → its type

    def type_of(self, version: str) -> str:
        return self.version_types.get(version, self.type_name)


@cache
def _table() -> dict[str, dict]:
    text = resources.files(__package__).joinpath(_TABLE_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def kind_schema(group: str, kind: str) -> KindSchema:
    """The table's entry for a kind the loader reads; a LookupError if the table lacks it."""
    entry = _table()["kinds"].get(group, {}).get(kind)
    if entry is None:
        raise LookupError(f"{_TABLE_FILE} has no {kind} of group {group!r}: run scripts/generate_field_schemas.py")
    return KindSchema(
        label=entry["label"],
        versions=tuple(entry["versions"]),
        type_name=entry["type"],
        version_types=entry.get("version_types", {}),
    )


def warn_unknown_fields(obj: RawObject, schema: KindSchema, warnings: Warnings) -> None:
    """Add a warning per apiVersion or field `schema` does not know (see the module docstring)."""
    api_version = str(obj.raw("apiVersion"))
    group, _, version = api_version.rpartition("/")
    if version not in schema.versions:
        served = [f"{group}/{known}" if group else known for known in schema.versions]
        message = (
            f"apiVersion {api_version}: not served for a {schema.label} (served: {', '.join(served)}); "
            f"a cluster would refuse it, read as {served[-1]}"
        )
        warnings.add(obj.location, message, like=f"apiVersion {api_version} of a {schema.label}")
    for path, key, known in _unknown(obj.data, schema.type_of(version), ()):
        nearest = difflib.get_close_matches(key, known, n=1)
        note = f"not a field of a {schema.label}" + (f"; did you mean {nearest[0]}?" if nearest else "")
        where = format_path((*obj.path, *path, key))
        warnings.add(obj.location, f"{where}: {note}", like=f"{_pattern((*path, key))}: {note}")


def _pattern(path: tuple[PathPart, ...]) -> str:
    """`("spec", "tasks", 0, "x")` → `spec.tasks[].x`: the same field on every item."""
    return "".join("[]" if isinstance(part, int) else f".{part}" for part in path).removeprefix(".")


def _unknown(
    value: object, type_name: str | None, path: tuple[PathPart, ...]
) -> Iterator[tuple[tuple[PathPart, ...], str, list[str]]]:
    """(path of the mapping, the unknown key, the keys its type has) for each unknown key."""
    if type_name is None:
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from _unknown(item, type_name, (*path, index))
        return
    if not isinstance(value, Mapping):
        return
    entry = _table()["types"][type_name]
    if "values" in entry:
        for key, child in value.items():
            yield from _unknown(child, entry["values"], (*path, str(key)))
        return
    fields: dict[str, str | None] = entry["fields"]
    for key, child in value.items():
        name = str(key)
        if name in fields:
            yield from _unknown(child, fields[name], (*path, name))
        elif not entry.get("open"):
            yield path, name, list(fields)
