"""Loaders: every input dialect ends in the same validated `Snapshot`.

    kube_yaml       Kubernetes / Volcano / Kubeflow YAML (files, text, parsed documents) → LoadResult
    json_snapshot   the Snapshot's own JSON form (`Snapshot.model_dump(mode="json")`)

Errors are `models.errors.SnapshotError`s (`InputFormatError`, `FieldError`), each naming
file, document, object and field path; no `KeyError`, `TypeError`, YAML or pydantic error
escapes. Warnings (skipped kinds, unknown fields and apiVersions, unknown priority classes, …) come back in
`LoadResult.warnings`; nothing is printed or logged.

Labels and annotations batchplace defines (full list, with those of Volcano and Kubernetes
it honours, in `models.loaders.keys`):

    batchplace.io/gpu-milli     extended resource: a fraction of one GPU, 1-999 milli-GPU
    batchplace.io/gpus          Pod: "0,1", device indices a running pod holds
    batchplace.io/gpu-numa      Node: "0,0,0,0,1,1,1,1", NUMA cell of each GPU index
    batchplace.io/numa-policy   Pod: none | best-effort | restricted | single-numa-node
    batchplace.io/task          Pod: its task inside a plain PodGroup
    batchplace.io/last-checkpoint   Pod: RFC 3339 time of its last checkpoint (what an eviction loses runs from it)
    volcano.sh/preemptable      Pod / PodGroup / vcjob: "false" = never a victim
    sla-waiting-time            vcjob / PodGroup / Queue: a Go duration; past it, nodes are held for the PodGroup
    scheduling.k8s.io/group-name        Pod: its Volcano PodGroup
    scheduling.x-k8s.io/pod-group       Pod label: its scheduler-plugins PodGroup
"""

from __future__ import annotations

from .json_snapshot import load_snapshot_json, snapshot_to_json
from .kube_yaml import (
    DEFAULT_SCHEDULER_NAMES,
    LoadResult,
    load_snapshot_documents,
    load_snapshot_files,
    load_snapshot_yaml_text,
)

__all__ = [
    "DEFAULT_SCHEDULER_NAMES",
    "LoadResult",
    "load_snapshot_documents",
    "load_snapshot_files",
    "load_snapshot_json",
    "load_snapshot_yaml_text",
    "snapshot_to_json",
]
