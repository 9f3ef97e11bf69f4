"""The job streams of the timeline: which cluster and which `Job`s the llm event loop
(`experiments.timeline.run_llm_timeline`) runs, so every llm policy (`cycle(world)`) runs on
every stream unchanged.

Input: a `TimelineConfig` (scenario, seed, horizon `hours`, `load`, `compress`, `nodes`) and, for the
trace streams, the trace's folder. Output: a `JobStream` — the nodes, each node's leaf and
spine, and the jobs in arrival order, all arriving within the horizon. Three streams:

- `llm` — the synthetic mix of `experiments.timeline_llm` on its leaf-spine cluster
  (`TimelineConfig.nodes`, 128 by default), Poisson arrivals at `load` × capacity (0.9,
  1.1, 1.3, …).
- `acme` — the gang arrivals of the Acme trace's Kalos cluster (Hu et al., "Characterization
  of Large Language Model Development in the Datacenter", NSDI '24; 319 jobs of 1–1,024 GPUs
  over 90 days in `converted_kalos_trace.csv`, a third-party conversion of the trace's
  `trace_kalos.csv`), found by `acme_trace_file` (an explicit folder or file, else
  `$BATCHPLACE_ACME_DIR`; nothing is shipped). Each row is one job: `gpu_workers` pods of
  `gpu_per_worker` whole GPUs (12 cores and 125,000 MiB per GPU, as the llm training
  pods), running `num_iteration` × 0.5 s (the converter's unit), arriving at
  `arrival_time` / `compress`; the jobs arriving within `hours` are kept. The converter's
  other columns (CPUs per worker, iteration split, tensor sizes) are its own inventions and
  are not read.
  Cluster: Kalos-like, `ACME_NODES` = 304 nodes of 8 GPUs by default (2,432 GPUs; Kalos
  has about 300 8-A100 nodes, rounded up to whole leaves) under leaves of 8 nodes and
  spines of 8 leaves as the llm cluster; at least 128 nodes, so the 1,024-GPU jobs (16
  leaves, 2 spines) start on the empty cluster.
  Queues: a job of ≥ 64 GPUs is `training` (weight 4), a smaller one `finetune` (weight
  2); `inference` stays empty. Topology (the trace records none; this is what a user of a
  leaf-spine cluster would ask): hard tier 1 when the gang fits a leaf (≤ 64 GPUs), else
  hard tier 2 when it fits a spine (≤ 512 GPUs), else soft (tier 1 preferred); a one-pod
  job none. Time limits: `limit_class_s` of the duration, as every job of the timeline.
  Load: 456,843 GPU-hours over 90 days, so `--compress 15 --hours 144` replays the whole
  trace with a window load (`window_load`) of 1.09 on the 2,432 GPUs. The trace is fixed:
  the seed changes nothing.
- `openb-jobs` — the openb pods (`experiments.trace_openb`, folder `trace_dir`) as
  single-pod jobs: a pod arrives at `creation_time` / `compress`, runs its lifetime
  (`deletion − creation`, as the `openb` scenario) and is never withdrawn. The window is
  the last `hours` of the compressed trace, shifted to start at 0; a pod alive at its start
  arrives at 0 with the rest of its lifetime. Why the end: 97 % of the pods arrive in the
  trace's last 34 of 149 days, so a window from its start would be mostly idle.
  Cluster: the 1,213 openb GPU nodes, or `nodes` of them spread evenly over the node list
  (which keeps its mix of GPU models and sizes); no topology (every node in leaf 0, spine
  0). Why fewer nodes: as recorded the trace never loads the cluster (< 1 % of the GPUs,
  `docs/results.md`), and compression alone cannot keep it loaded — lifetimes are kept, so
  a large `compress` turns the pods into one burst that drains (all 1,213 nodes,
  `--compress 3000 --hours 1`: a brief peak, a low mean, no pod waiting past a cycle). The
  trace's arrivals on fewer nodes load it: `--compress 300 --hours 1 --nodes 200` (the last
  12.5 days on 200 nodes) keeps most of the GPUs allocated with pods waiting (measured:
  docs/results.md, "The openb-jobs stream").
  Queues: a pod of ≥ 2 whole GPUs `training` (the trace's multi-GPU pods, its nearest to
  training gangs), of 1 whole GPU `finetune`, a GPU share or no GPU `inference`.
  Not expressed: a pod's `gpu_spec` (allowed GPU models) — a `Job` states no model and the
  timeline's batchplace snapshot has no node labels, so such a pod may land on any model
  (the `default` pod list restricts none; the `gpuspec*` lists do). The seed changes
  nothing.

Errors: a missing acme trace raises `AcmeTraceNotFound` (the caller says which option or
variable to set); a bad row raises `AcmeTraceError` naming the file, the line and the column;
a cluster too small for the trace's largest gang, or an openb pod without a lifetime, a
`ValueError` saying which.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from experiments.cluster_state import WHOLE
from experiments.timeline_llm import LEAF_NODES, SPINE_LEAVES, Job, llm_cluster, llm_workload
from experiments.trace_openb import OpenbNodes, load_nodes, load_pods

__all__ = [
    "ACME_ENV",
    "ACME_FILE",
    "ACME_NODES",
    "LLM_NODES",
    "STREAMS",
    "AcmeTraceError",
    "AcmeTraceNotFound",
    "JobStream",
    "StreamConfig",
    "acme_jobs",
    "acme_trace_file",
    "check_acme_cluster",
    "job_stream",
    "openb_jobs",
    "openb_node_sample",
    "window_load",
]

STREAMS: tuple[str, ...] = ("llm", "acme", "openb-jobs")
"""The scenarios the llm event loop runs (the `openb` scenario has its own pod loop)."""

ACME_ENV = "BATCHPLACE_ACME_DIR"
ACME_FILE = "converted_kalos_trace.csv"
ACME_SUBFOLDER = "third-party-derived"  # where the trace's snapshot keeps the converted file
LLM_NODES = 128
ACME_NODES = 304
ACME_COLUMNS = ("arrival_time", "gpu_workers", "gpu_per_worker", "num_iteration")
ACME_SECONDS_PER_ITERATION = 0.5  # the converter's: num_iteration = duration_s / 0.5
ACME_TRAINING_GPUS = 64  # a job of at least this many GPUs joins `training`
NODE_GPUS = 8
CPU_MILLI_PER_GPU = 12_000
MEMORY_MIB_PER_GPU = 125_000


class AcmeTraceNotFound(FileNotFoundError):
    """No acme trace where `acme_trace_file` looked: set the option or `$BATCHPLACE_ACME_DIR`."""


class AcmeTraceError(ValueError):
    """A row of the acme trace the stream cannot use: the message names file, line and column."""


class StreamConfig(Protocol):
    """What a stream reads of `experiments.timeline.TimelineConfig` (which imports this module)."""

    @property
    def scenario(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def hours(self) -> float: ...
    @property
    def load(self) -> float: ...
    @property
    def compress(self) -> float: ...
    @property
    def nodes(self) -> int | None: ...
    @property
    def trace(self) -> str: ...


@dataclass(frozen=True, eq=False)
class JobStream:
    """What the llm event loop runs: nodes, each node's leaf and spine id, jobs by arrival."""

    nodes: OpenbNodes
    leaf: np.ndarray  # [N]
    spine: np.ndarray  # [N]
    jobs: list[Job]


def job_stream(config: StreamConfig, *, trace_dir: Path | None = None, acme_dir: Path | None = None) -> JobStream:
    """The stream `config.scenario` names (one of `STREAMS`)."""
    if config.scenario == "llm":
        nodes, leaf, spine = llm_cluster(config.nodes or LLM_NODES)
        jobs = llm_workload(config.seed, hours=config.hours, capacity_gpus=int(nodes.gpus.sum()), load=config.load)
        return JobStream(nodes, leaf, spine, jobs)
    if config.scenario == "acme":
        nodes, leaf, spine = llm_cluster(config.nodes or ACME_NODES)
        jobs = acme_jobs(acme_trace_file(acme_dir), compress=config.compress, hours=config.hours)
        check_acme_cluster(jobs, nodes=nodes.count)
        return JobStream(nodes, leaf, spine, jobs)
    if config.scenario == "openb-jobs":
        nodes = openb_node_sample(load_nodes(trace_dir), config.nodes)
        flat = np.zeros(nodes.count, dtype=np.int64)
        return JobStream(nodes, flat, flat, openb_jobs(config.trace, trace_dir, compress=config.compress, hours=config.hours))
    raise ValueError(f"unknown job stream {config.scenario!r}; choose one of {', '.join(STREAMS)}")


def window_load(jobs: list[Job], *, capacity_gpu_milli: float, hours: float) -> float:
    """GPU-time the jobs ask within the horizon (a job running past it counted to the
    horizon) over the GPU-time the cluster has in it: above 1, no policy can keep up.
    Example: 80 GPUs, 1 h; 10 jobs of 8 GPUs × 1 h at 0 s → 1.0; at 1,800 s → 0.5. Clipped,
    unlike `llm_workload`'s load (arrival rate × mean GPU-time), because a trace's months-
    long pods would otherwise count months into an hour's window."""
    horizon_s = hours * 3600.0
    asked = sum(job.gpus_milli * min(job.duration_s, horizon_s - job.arrival_s) for job in jobs if job.arrival_s <= horizon_s)
    return asked / (capacity_gpu_milli * horizon_s) if capacity_gpu_milli and horizon_s else 0.0


# ---- acme ----


def check_acme_cluster(jobs: list[Job], *, nodes: int) -> None:
    """Every job must fit the empty cluster: a 1,024-GPU gang needs 128 nodes of 8 GPUs."""
    largest = max((job.gpus_milli // WHOLE for job in jobs), default=0)
    if largest > nodes * NODE_GPUS:
        raise ValueError(f"acme: {nodes} nodes of {NODE_GPUS} GPUs cannot host the trace's largest job ({largest} GPUs); "
                         f"use at least {math.ceil(largest / NODE_GPUS)} nodes")  # fmt: skip


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
    """The pods of openb pod list `trace` as single-pod jobs, in arrival order, over the last
    `hours` of the compressed trace (its end: the trace's last arrival), shifted to start at
    0; a pod created before the window and alive at its start arrives at 0 with what is left
    of its lifetime. Example: `compress` 100, `hours` 1, last creation at 720,000 s → the
    window is 7,200 − 3,600 … 7,200 s; a pod created at 350,000 s (3,500 s) living
    1,000 s arrives at 0 for 900 s."""
    pods = load_pods(trace, trace_dir)
    if np.isnan(pods.creation_time).all():
        raise ValueError(f"pod list {trace!r} has no times (the multigpu variants have none)")
    lifetimes_s = pods.deletion_time - pods.creation_time
    bad = np.flatnonzero(~(lifetimes_s >= 0.0))  # NaN or negative: a pod the replay cannot time
    if bad.size:
        raise ValueError(f"openb pod list {trace!r}, pod {pods.names[bad[0]]}: deletion_time missing or before creation_time")
    arrivals_s = pods.creation_time / compress
    start_s = max(0.0, float(np.nanmax(arrivals_s)) - hours * 3600.0)
    jobs: list[Job] = []
    for p in np.argsort(pods.creation_time, kind="stable").tolist():
        arrival_s, lifetime_s = float(arrivals_s[p]) - start_s, float(lifetimes_s[p])
        if arrival_s < 0.0:  # before the window: in it only if still alive at its start
            if arrival_s + lifetime_s <= 0.0:
                continue
            arrival_s, lifetime_s = 0.0, arrival_s + lifetime_s
        num_gpu, gpu_milli = int(pods.num_gpu[p]), int(pods.gpu_milli[p])
        jobs.append(Job(len(jobs), _openb_queue(num_gpu, gpu_milli), arrival_s, lifetime_s, 1, int(pods.cpu_milli[p]),
                        int(pods.memory_mib[p]), num_gpu, gpu_milli))  # fmt: skip
    return jobs


def openb_node_sample(nodes: OpenbNodes, count: int | None) -> OpenbNodes:
    """`count` nodes spread evenly over the list (all when None or more): 10 of 1,213 →
    rows 0, 135, 270, …, 1,212."""
    if count is None or count >= nodes.count:
        return nodes
    if count < 1:
        raise ValueError(f"openb-jobs: the cluster needs at least one node, got {count}")
    rows = np.unique(np.linspace(0, nodes.count - 1, count).round().astype(np.int64))
    return OpenbNodes(names=tuple(nodes.names[r] for r in rows.tolist()), cpu_milli=nodes.cpu_milli[rows],
                      memory_mib=nodes.memory_mib[rows], gpus=nodes.gpus[rows], model=nodes.model[rows])  # fmt: skip


def _openb_queue(num_gpu: int, gpu_milli: int) -> str:
    """2 × 1000 → training; 1 × 1000 → finetune; 1 × 500 or no GPU → inference."""
    if gpu_milli == WHOLE and num_gpu >= 2:
        return "training"
    if gpu_milli == WHOLE and num_gpu == 1:
        return "finetune"
    return "inference"
