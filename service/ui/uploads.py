"""Uploaded snapshots: read one from a file's bytes, and hold the last few in memory.

Input: the bytes of a file a person picked (or pasted) — Kubernetes / Volcano YAML as
`batchplace solve` reads it, the snapshot's JSON form as `batchplace snapshot` prints
it, or that form as YAML, or a fleet's JSON (`{"clusters": {NAME: snapshot, …}, "jobs": …}`,
merged by `models.clusters`, each cluster the top of the HyperNode tree) — and its file name. `read_upload` returns the validated
`Snapshot` and the loader's warnings, or raises `models.errors.SnapshotError` whose
`str()` names the file, the document, the object and the field: the page shows that
sentence. JSON is told from YAML by the name (`.json`) or by a leading `{`.

`UploadStore` keeps the last `max_entries` uploads of this process, keyed by the first
16 hex digits of the SHA-256 of the bytes (the same file uploaded twice is one entry),
each with its `Analysis` once a page has computed it. Pages name an upload by that key
(`?s=…`).

Not promised: uploads outlive the process, or are seen by another uvicorn worker — a
dashboard that takes uploads wants one worker (`batchplace serve`'s default); a page
naming an upload this process does not hold says so and offers the upload form.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from models.errors import InputFormatError, Location
from models.loaders import load_snapshot_json
from models.loaders.fleet_json import load_fleet_json, looks_like_fleet
from models.snapshot import Snapshot
from service.jobs import read_yaml_snapshot
from service.ui.analysis import Analysis

__all__ = ["Upload", "UploadStore", "read_upload", "upload_key"]


@dataclass
class Upload:
    key: str
    name: str
    size_bytes: int
    snapshot: Snapshot
    warnings: tuple[str, ...]
    uploaded_at_s: float
    analysis: Analysis | None = field(default=None, repr=False)


def upload_key(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()[:16]


def read_upload(content: bytes, *, name: str) -> tuple[Snapshot, tuple[str, ...]]:
    """The snapshot in `content` (see the module docstring); `SnapshotError` when it is not one."""
    source = name or "upload"
    if not content.strip():
        raise InputFormatError("the file is empty: pick a YAML or JSON file with nodes, or paste one", location=Location(source))
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputFormatError(f"not UTF-8 text ({error.reason} at byte {error.start}): pick a YAML or JSON file",
                               location=Location(source)) from None
    if name.lower().endswith(".json") or text.lstrip().startswith("{"):
        parsed = _json_object(text)
        if looks_like_fleet(parsed):  # several clusters: each the top of the tree (models.clusters)
            return load_fleet_json(parsed, source=source).snapshot, ()  # type: ignore[arg-type]
        return load_snapshot_json(content, source=source), ()
    return read_yaml_snapshot(text, source=source)


def _json_object(text: str) -> object:
    """The parsed JSON, or None when it is not JSON (the snapshot loader then says why)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


class UploadStore:
    """The last `max_entries` uploads, most recently used last; safe across threads."""

    def __init__(self, *, max_entries: int = 8) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[str, Upload] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Upload | None:
        with self._lock:
            upload = self._entries.get(key)
            if upload is not None:
                self._entries.move_to_end(key)
            return upload

    def put(self, upload: Upload) -> None:
        with self._lock:
            self._entries[upload.key] = upload
            self._entries.move_to_end(upload.key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
