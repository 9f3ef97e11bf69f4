"""`--cluster NAME=FILE[,FILE…]`: the clusters `batchplace solve` places over, read into a `Fleet`.

Each cluster's files are read by `models.loaders` as one cluster's are (nodes, HyperNodes,
running and pending pods, its queues); the positional files are what is submitted and
belongs to no cluster yet (jobs, queues, priority classes). `models.clusters` merges them —
the one merge the API, what-if and the manager controller use too.

Errors: a malformed option, a cluster named twice, or a file error print one line naming
the option or the file and field, and exit 2 (`cli.EXIT_INPUT_ERROR`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text

from models.clusters import Fleet, merge_clusters
from models.errors import FieldError, Location, SnapshotError
from models.loaders import load_snapshot_files
from solver.fleet import FleetDecision

__all__ = ["ClusterOptionError", "fleet_of_options", "fleet_table"]


class ClusterOptionError(ValueError):
    """A `--cluster` value that is not NAME=FILE[,FILE…], or a cluster named twice."""


def parse_cluster_options(values: Sequence[str]) -> dict[str, list[Path]]:
    """`["gpu-west=w.yaml", "gpu-east=e1.yaml,e2.yaml"]` → `{"gpu-west": [w.yaml], "gpu-east": [e1, e2]}`."""
    clusters: dict[str, list[Path]] = {}
    for value in values:
        name, sep, files = value.partition("=")
        paths = [Path(f) for f in files.split(",") if f]
        if not sep or not name or not paths:
            raise ClusterOptionError(f"--cluster: expected NAME=FILE[,FILE...], got {value!r}")
        if name in clusters:
            raise ClusterOptionError(f"--cluster: cluster {name!r} given twice; list its files as {name}=FILE,FILE")
        clusters[name] = paths
    return clusters


def fleet_of_options(
    values: Sequence[str], jobs_files: Sequence[Path], *, scheduler_names: tuple[str, ...]
) -> tuple[Fleet, list[str]]:
    """The merged fleet and the loaders' warnings (each prefixed with its cluster)."""
    clusters = parse_cluster_options(values)
    snapshots = {}
    warnings: list[str] = []
    for name, paths in clusters.items():
        try:
            loaded = load_snapshot_files(paths, scheduler_names=scheduler_names)
        except SnapshotError as error:
            raise FieldError(str(error), location=Location(f"clusters.{name}")) from None
        snapshots[name] = loaded.snapshot
        warnings += [f"cluster {name}: {warning}" for warning in loaded.warnings]
    jobs = None
    if jobs_files:
        loaded = load_snapshot_files(list(jobs_files), scheduler_names=scheduler_names)
        jobs = loaded.snapshot
        warnings += list(loaded.warnings)
    return merge_clusters(snapshots, jobs=jobs), warnings


def fleet_table(fleet: Fleet, decided: FleetDecision) -> Group:
    """Where each submitted job went and why, and each cluster's binds in its own names."""
    jobs = Table(title="Dispatch", title_justify="left")
    for column in ("job", "cluster", "per cluster"):
        jobs.add_column(column, overflow="fold")
    for job in decided.jobs:
        jobs.add_row(job.pod_group, job.cluster or Text("pending", style="yellow"), Text("; ".join(job.clusters)))
    per_cluster = Table(title="Per cluster", title_justify="left")
    for column in ("cluster", "binds", "evictions"):
        per_cluster.add_column(column)
    for name in fleet.clusters:
        placement = decided.placements[name]
        per_cluster.add_row(name, str(len(placement.binds)), str(len(placement.evictions)))
    return Group(jobs, per_cluster)
