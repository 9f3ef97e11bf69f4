"""The job streams of the timeline: which cluster and which `Job`s the llm event loop
(`experiments.timeline.run_llm_timeline`) runs, so every llm policy (`cycle(world)`) runs on
every stream unchanged.

Input: a `TimelineConfig` (scenario, seed, horizon `hours`, `load`, `compress`) and, for the
trace streams, the trace's folder. Output: a `JobStream` — the nodes, each node's leaf and
spine, and the jobs in arrival order, all arriving within the horizon. Three streams:

- `llm` — the synthetic mix of `experiments.timeline_llm` on its leaf-spine cluster
  (`TimelineConfig.nodes`), Poisson arrivals at `load` × capacity (0.9, 1.1, 1.3, …).
- `acme` — the gang arrivals of the Acme trace's Kalos cluster (Hu et al., "Characterization
  of Large Language Model Development in the Datacenter", NSDI '24; 319 jobs of 1–1,024 GPUs
  over 90 days in `converted_kalos_trace.csv`, a third-party conversion of the trace's
  `trace_kalos.csv`), found by `acme_trace_file` (an explicit folder or file, else
  `$BATCHPLACE_ACME_DIR`; nothing is shipped). Each row is one job: `gpu_workers` pods of `gpu_per_worker` whole
  GPUs (12 cores and 125,000 MiB per GPU, as the llm training pods), running
  `num_iteration` × 0.5 s (the converter's unit), arriving at `arrival_time` / `compress`.
  The converter's other columns (CPUs per worker, iteration split, tensor sizes) are its
  own inventions and are not read. Cluster: Kalos-like, `ACME_NODES` = 304 nodes of 8
  GPUs (2,432 GPUs; Kalos has about 300 8-A100 nodes, rounded up to whole leaves) under
  leaves of 8 nodes and spines of 8 leaves as the llm cluster — so a 1,024-GPU job
  (16 leaves, 2 spines) starts on the empty cluster. Queues: a job of ≥ 64 GPUs is
  `training` (weight 4), a smaller one `finetune` (weight 2); `inference` stays empty.
  Topology, the tightest domain it fits: hard tier 1 when it fits a leaf (≤ 64 GPUs),
  else hard tier 2 when it fits a spine (≤ 512 GPUs), else soft (tier 1 preferred) — the
  trace records none, and this is what a user of a leaf-spine cluster would ask. Time
  limits: `limit_class_s` of the duration, as every job of the timeline. Load: the trace's
  GPU-time is 456,843 GPU-hours over 90 days, so `--compress 12.7 --hours 171` replays the
  whole trace at an offered load of ~1.1 on the 2,432 GPUs; a shorter `hours` keeps the
  jobs arriving in that window (the offered load of the window is reported, not promised:
  the trace is bursty). The trace is fixed: the seed changes nothing.
- `openb-jobs` — the openb pods (`experiments.trace_openb`, folder `trace_dir`) as
  single-pod jobs on the openb GPU nodes: a pod arrives at `creation_time` / `compress`,
  runs its lifetime (`deletion − creation`, as the `openb` scenario) and is never withdrawn;
  only pods arriving within `hours` are kept. No topology (every node in leaf 0, spine 0).
  Queues: a pod of ≥ 2 whole GPUs `training` (the trace's multi-GPU pods, its nearest to
  training gangs), of 1 whole GPU `finetune`, a GPU share or no GPU `inference`. Not
  expressed: the pod's `gpu_spec` (allowed GPU models) — a `Job` states no model and the
  batchplace snapshot of the timeline has no node labels, so a restricted pod may land on
  any model (the `default` pod list restricts none; the `gpuspec*` lists do). As recorded
  the trace never loads the cluster (see `docs/results.md`, openb timeline) and compressing
  arrivals cannot make it stay loaded: lifetimes are kept, and 97 % of the pods arrive in
  the last 34 days, so a large `compress` turns them into one burst that then drains
  (`--compress 3000 --hours 2`: the burst peaks at ~60 % of the GPUs). The seed changes
  nothing.

Errors: a missing acme trace raises `AcmeTraceNotFound` (the caller says which option or
variable to set); a bad row raises `AcmeTraceError` naming the file, the line and the column.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from experiments.cluster_state import WHOLE
from experiments.timeline_llm import LEAF_NODES, SPINE_LEAVES, Job, llm_cluster, llm_workload
from experiments.trace_openb import OpenbNodes, load_nodes, load_pods

__all__ = [
    "ACME_ENV",
    "ACME_FILE",
    "ACME_NODES",
    "STREAMS",
    "AcmeTraceError",
    "AcmeTraceNotFound",
    "JobStream",
    "acme_trace_file",
    "acme_jobs",
    "job_stream",
    "offered_load",
    "openb_jobs",
]

STREAMS: tuple[str, ...] = ("llm", "acme", "openb-jobs")
"""The scenarios the llm event loop runs (the `openb` scenario has its own pod loop)."""

ACME_ENV = "BATCHPLACE_ACME_DIR"
ACME_FILE = "converted_kalos_trace.csv"
ACME_SUBFOLDER = "third-party-derived"  # where the trace's snapshot keeps the converted file
ACME_NODES = 304
ACME_COLUMNS = ("arrival_time", "gpu_workers", "gpu_per_worker", "num_iteration")
ACME_SECONDS_PER_ITERATION = 0.5  # the converter's: num_iteration = duration_s / 0.5
ACME_TRAINING_GPUS = 64  # a job of at least this many GPUs joins `training`
NODE_GPUS = 8
CPU_MILLI_PER_GPU = 12_000
MEMORY_MIB_PER_GPU = 125_000


class AcmeTraceNotFound(FileNotFoundError):
    """No acme trace where `acme_dir` looked: set the option or `$BATCHPLACE_ACME_DIR`."""


class AcmeTraceError(ValueError):
    """A row of the acme trace the stream cannot use: the message names file, line and column."""


@dataclass(frozen=True, eq=False)
class JobStream:
    """What the llm event loop runs: nodes, each node's leaf and spine id, jobs by arrival."""

    nodes: OpenbNodes
    leaf: np.ndarray  # [N]
    spine: np.ndarray  # [N]
    jobs: list[Job]


def job_stream(config, *, trace_dir: Path | None = None, acme_dir: Path | None = None) -> JobStream:  # noqa: ANN001
    """The stream `config.scenario` names (one of `STREAMS`); `config` is a `TimelineConfig`."""
    if config.scenario == "llm":
        nodes, leaf, spine = llm_cluster(config.nodes)
        jobs = llm_workload(config.seed, hours=config.hours, capacity_gpus=int(nodes.gpus.sum()), load=config.load)
        return JobStream(nodes, leaf, spine, jobs)
    if config.scenario == "acme":
        nodes, leaf, spine = llm_cluster(ACME_NODES)
        return JobStream(nodes, leaf, spine, acme_jobs(acme_trace_file(acme_dir), compress=config.compress, hours=config.hours))
    if config.scenario == "openb-jobs":
        nodes = load_nodes(trace_dir)
        flat = np.zeros(nodes.count, dtype=np.int64)
        return JobStream(nodes, flat, flat, openb_jobs(config.trace, trace_dir, compress=config.compress, hours=config.hours))
    raise ValueError(f"unknown job stream {config.scenario!r}; choose one of {', '.join(STREAMS)}")


def offered_load(jobs: list[Job], *, capacity_gpu_milli: float, hours: float) -> float:
    """GPU-time asked by the jobs arriving within the horizon over the GPU-time the cluster
    has in it (durations not clipped, as `llm_workload`'s load): 10 jobs × 8 GPUs × 1 h on
    80 GPUs over 1 h → 1.0."""
    horizon_s = hours * 3600.0
    asked = sum(job.gpus_milli * job.duration_s for job in jobs if job.arrival_s <= horizon_s)
    return asked / (capacity_gpu_milli * horizon_s) if capacity_gpu_milli and horizon_s else 0.0


# ---- acme ----


def acme_trace_file(explicit: str | Path | None = None) -> Path:
    """The file `converted_kalos_trace.csv` in folder `explicit` (or its
    `third-party-derived/`), else in the folder `$BATCHPLACE_ACME_DIR` names; a path to a
    CSV file is returned as is."""
    if explicit is not None and Path(explicit).is_file():
        return Path(explicit)
    folder = Path(explicit) if explicit is not None else None
    if folder is None and os.environ.get(ACME_ENV):
        folder = Path(os.environ[ACME_ENV])
    if folder is None:
        raise AcmeTraceNotFound(f"acme trace not found (no folder holding {ACME_FILE} given, and ${ACME_ENV} is not set)")
    for candidate in (folder / ACME_FILE, folder / ACME_SUBFOLDER / ACME_FILE):
        if candidate.is_file():
            return candidate
    raise AcmeTraceNotFound(f"acme trace file {ACME_FILE} not found in {folder} (nor in its {ACME_SUBFOLDER}/)")


def acme_jobs(path: Path, *, compress: float = 1.0, hours: float = math.inf) -> list[Job]:
    """One `Job` per row of the converted Kalos trace at `path` arriving within `hours`
    after compression, in arrival order; see the module docstring. Example: the row
    `arrival_time 1200, gpu_workers 16, gpu_per_worker 8, num_iteration 7200` with
    `compress` 10 → a job at 120 s of 16 pods × 8 GPUs for 3,600 s, `training`, hard tier 2."""
    rows = _acme_rows(path)
    jobs: list[Job] = []
    for arrival_s, workers, per_worker, duration_s in sorted(rows, key=lambda row: row[0]):
        arrival_s /= compress
        if arrival_s > hours * 3600.0:
            break
        gpus = workers * per_worker
        topology, tier = _acme_topology(gpus, workers)
        jobs.append(Job(len(jobs), "training" if gpus >= ACME_TRAINING_GPUS else "finetune", arrival_s, duration_s,
                        workers, CPU_MILLI_PER_GPU * per_worker, MEMORY_MIB_PER_GPU * per_worker, per_worker, WHOLE,
                        topology=topology, tier=tier))  # fmt: skip
    return jobs


def _acme_topology(gpus: int, pods: int) -> tuple[str, int]:
    """The tightest domain a gang fits: 64 GPUs → hard tier 1, 512 → hard tier 2, 1,024 → soft."""
    if pods == 1:
        return "none", 0
    if gpus <= LEAF_NODES * NODE_GPUS:
        return "hard", 1
    if gpus <= LEAF_NODES * SPINE_LEAVES * NODE_GPUS:
        return "hard", 2
    return "soft", 1


def _acme_rows(path: Path) -> list[tuple[float, int, int, float]]:
    """(arrival s, pods, GPUs per pod, duration s) per row, each value checked."""
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [column for column in ACME_COLUMNS if column not in (reader.fieldnames or ())]
        if missing:
            raise AcmeTraceError(f"{path} line 1: missing column {', '.join(map(repr, missing))}; "
                                 f"the acme stream reads {', '.join(ACME_COLUMNS)}")  # fmt: skip
        rows = []
        for line, row in enumerate(reader, start=2):
            arrival_s = _number(row, "arrival_time", path, line, least=0.0)
            workers = _count(row, "gpu_workers", path, line, least=1, most=None)
            per_worker = _count(row, "gpu_per_worker", path, line, least=1, most=NODE_GPUS)
            duration_s = _number(row, "num_iteration", path, line, least=0.0) * ACME_SECONDS_PER_ITERATION
            rows.append((arrival_s, workers, per_worker, duration_s))
    return rows


def _number(row: dict[str, str], column: str, path: Path, line: int, *, least: float) -> float:
    text = (row.get(column) or "").strip()
    try:
        value = float(text)
    except ValueError:
        raise AcmeTraceError(f"{path} line {line}, column {column!r}: expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < least:
        raise AcmeTraceError(f"{path} line {line}, column {column!r}: must be a finite number ≥ {least:g}, got {text!r}")
    return value


def _count(row: dict[str, str], column: str, path: Path, line: int, *, least: int, most: int | None) -> int:
    """A whole number in [least, most]; "8.0" (the converter writes floats) reads as 8."""
    value = _number(row, column, path, line, least=float(least))
    if value != int(value) or (most is not None and value > most):
        bound = f"a whole number from {least} to {most}" if most is not None else f"a whole number ≥ {least}"
        why = f" (a pod's GPUs are on one node of {NODE_GPUS})" if most == NODE_GPUS else ""
        raise AcmeTraceError(f"{path} line {line}, column {column!r}: must be {bound}{why}, got {row[column]!r}")
    return int(value)


# ---- openb ----


def openb_jobs(trace: str, trace_dir: Path | None = None, *, compress: float = 1.0, hours: float = math.inf) -> list[Job]:
    """The pods of openb pod list `trace` as single-pod jobs arriving within `hours` after
    compression, in arrival order; see the module docstring."""
    pods = load_pods(trace, trace_dir)
    if np.isnan(pods.creation_time).all():
        raise ValueError(f"pod list {trace!r} has no times (the multigpu variants have none)")
    jobs: list[Job] = []
    for p in np.argsort(pods.creation_time, kind="stable").tolist():
        arrival_s = float(pods.creation_time[p]) / compress
        if arrival_s > hours * 3600.0:
            break
        lifetime_s = float(pods.deletion_time[p] - pods.creation_time[p])
        if not lifetime_s >= 0.0:  # NaN or negative: a row the replay cannot time
            raise ValueError(f"openb pod list {trace!r}, pod {pods.names[p]}: deletion_time before creation_time or missing")
        num_gpu, gpu_milli = int(pods.num_gpu[p]), int(pods.gpu_milli[p])
        jobs.append(Job(len(jobs), _openb_queue(num_gpu, gpu_milli), arrival_s, lifetime_s, 1, int(pods.cpu_milli[p]),
                        int(pods.memory_mib[p]), num_gpu, gpu_milli))  # fmt: skip
    return jobs


def _openb_queue(num_gpu: int, gpu_milli: int) -> str:
    """2 × 1000 → training; 1 × 1000 → finetune; 1 × 500 or no GPU → inference."""
    if gpu_milli == WHOLE and num_gpu >= 2:
        return "training"
    if gpu_milli == WHOLE and num_gpu == 1:
        return "finetune"
    return "inference"
