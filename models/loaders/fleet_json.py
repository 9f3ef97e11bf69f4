"""A fleet's JSON form: `{"clusters": {NAME: snapshot, …}, "jobs": snapshot}` → a merged `Fleet`.

Each snapshot is the Snapshot's own JSON form (`json_snapshot`), one per cluster, and `jobs`
(optional) what is submitted to the fleet; `models.clusters.merge_clusters` merges them.
Used by the HTTP fleet routes and the dashboard's upload, so both read a fleet one way.

Errors: `SnapshotError`s whose `location.source` says which input is at fault —
`clusters.gpu-west` (that cluster's snapshot, or a merge error about it), `jobs`, or
`clusters` (the map itself: not an object, no cluster, a name that is no DNS label) — and
whose path continues inside it.
"""

from __future__ import annotations

import json

from models.clusters import Fleet, merge_clusters
from models.errors import FieldError, InputFormatError, Location

from .json_snapshot import load_snapshot_json
from .raw import describe

__all__ = ["FLEET_KEYS", "load_fleet_json", "looks_like_fleet"]

FLEET_KEYS = frozenset({"clusters", "jobs"})


def looks_like_fleet(document: object) -> bool:
    """A JSON object whose top has `clusters` and nothing but the fleet's keys."""
    return isinstance(document, dict) and "clusters" in document and set(document) <= FLEET_KEYS


def load_fleet_json(text_or_obj: str | bytes | dict[str, object], *, source: str = "<input>") -> Fleet:
    data: object = text_or_obj
    if isinstance(text_or_obj, str | bytes):
        try:
            data = json.loads(text_or_obj)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:
            raise InputFormatError(f"not valid JSON: {error}", location=Location(source)) from None
    if not isinstance(data, dict):
        raise InputFormatError(f"expected a JSON object (a fleet), got {describe(data)}", location=Location(source))
    unknown = sorted(set(data) - FLEET_KEYS)
    if unknown:
        raise FieldError(f"unknown field; a fleet has {sorted(FLEET_KEYS)}", location=Location(source), path=(unknown[0],))
    clusters = data.get("clusters")
    if not isinstance(clusters, dict):
        raise FieldError(f"expected an object of cluster name → snapshot, got {describe(clusters)}",
                         location=Location("clusters"))
    snapshots = {str(name): load_snapshot_json(raw, source=f"clusters.{name}") for name, raw in clusters.items()}  # type: ignore[arg-type]
    jobs = data.get("jobs")
    return merge_clusters(snapshots, jobs=None if jobs is None else load_snapshot_json(jobs, source="jobs"))  # type: ignore[arg-type]
