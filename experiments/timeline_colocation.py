"""Timeline scenario `colocation`: GPU and CPU hours served with and without online/offline
colocation, and what online pods waited and lacked in each.

The cluster: `gpu_nodes` GPU nodes (8 GPUs, 64 cpu, 512 GiB) and `cpu_nodes` CPU nodes (32
cpu, 128 GiB), all labelled `volcano.sh/oversubscription=true`. Online work: on each GPU
node an inference service (48 cpu in all, 2 GPUs, 64 GiB requested) of which
`shared_replicas` model replicas share GPUs (600 milli-GPU, 1 of the 48 cpu, 8 GiB each:
one per device), on each CPU
node a web service (24 cpu, 32 GiB), started at t = 0, plus one more online service
arriving every `online_every_h` hours (16 cpu, 16 GiB, lives 4 h) — priority 1000. They
use a diurnal share of their requests, GPUs included: 20 % at night to 70 % at the
afternoon peak (`online_share`). Offline work (`volcano.sh/qos-level: BE`, priority 0):
GPU training jobs (1 GPU, 8 cpu, 32 GiB, 2 h of work), fine-tuning jobs on a fraction of
a GPU (300 milli-GPU, 2 cpu, 8 GiB, 1 h) and CPU batch jobs (4 cpu, 8 GiB, 1 h), a steady
backlog: `offline_backlog` of each kind waiting at every step. Offline pods use all they
request.

Three modes: no colocation (`colocation=False`); colocation of cpu and memory only, the
usage giving no per-device GPU figure (`gpu_lending=False`); and colocation with GPU
lending, the usage giving each device's online percent (`online-gpu<i>`), so offline
fine-tuning pods borrow the unused part of the devices the model replicas share
(`solver.rules.colocation`).

Each step (`step_s`, 15 min) the controller's cycle runs as in the cluster: node usage is
measured (the online pods' actual use: `online-cpu` / `online-memory`, fresh), offline
pods that no longer fit their node's room are evicted (`solver.offline_evictions`;
an evicted job loses its progress and waits again), then `place()`
decides (greedy, or `engine`), binds start pods and preemptions evict them. Without
colocation (`--no-colocation`, `ColocationPolicy(enabled=False)`) offline pods are
ordinary pods of low priority: online pods preempt them when they need the room.

Reported per mode: offline GPU-hours and CPU-hours served (work that completed or was
still running at the end, evicted work not counted), offline jobs finished and evicted,
online pods' mean and max wait (arrival to bind), and online shortfall: CPU-hours during
which a node's online and offline pods together used more cpu than it has (the online
pods would be starved of that much; cpu requested-but-used, not requests), and GPU-hours
during which a device's online and offline pods together used more than the device.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from models.snapshot import ColocationPolicy, NodeUsage, Pod, PodGroup, Snapshot, UsagePolicy
from solver.offline_evictions import offline_evictions
from solver.place import SolveConfig, place
from solver.rules import colocation

__all__ = ["ColocationConfig", "ColocationResult", "run_colocation", "colocation_markdown", "write_colocation_csv", "online_share"]

GIB = 2**30
LABELS = {"volcano.sh/oversubscription": "true"}


@dataclass(frozen=True)
class ColocationConfig:
    colocation: bool = True
    hours: float = 24.0
    step_s: float = 900.0
    gpu_nodes: int = 4
    cpu_nodes: int = 4
    offline_backlog: int = 8
    online_every_h: float = 2.0
    margin_percent: float = 10.0
    engine: str = "greedy"
    gpu_lending: bool = False
    shared_replicas: int = 4

    @property
    def mode(self) -> str:
        """`off`, `on` (cpu and memory), `on + GPU lending`."""
        return "off" if not self.colocation else ("on + GPU lending" if self.gpu_lending else "on")


@dataclass
class ColocationResult:
    config: ColocationConfig
    gpu_hours: float = 0.0
    cpu_hours: float = 0.0
    finished: int = 0
    evicted: int = 0
    online_waits_h: list[float] = field(default_factory=list)
    online_short_cpu_hours: float = 0.0
    online_short_gpu_hours: float = 0.0
    fractional_gpu_hours: float = 0.0
    times_h: list[float] = field(default_factory=list)
    gpu_busy: list[float] = field(default_factory=list)


def online_share(t_s: float) -> float:
    """Diurnal share of requests online pods use: 0.2 at 04:00, 0.7 at 16:00."""
    hour = (t_s / 3600.0) % 24
    return 0.45 - 0.25 * math.cos((hour - 4.0) / 24.0 * 2 * math.pi)


@dataclass
class _Job:
    key: str
    online: bool
    cpu: int
    memory: int
    gpu: int
    work_s: float  # offline: seconds of work; online: lifetime (inf for the base services)
    arrived_s: float
    node: str | None = None
    started_s: float | None = None
    gpus: tuple[int, ...] = ()
    done_s: float = 0.0  # offline: work done in the current run


def _nodes(config: ColocationConfig) -> list[dict]:
    nodes = [{"name": f"gpu-{i}", "allocatable": {"cpu": 64000, "memory": 512 * GIB, "gpu": 8000}, "labels": LABELS} for i in range(config.gpu_nodes)]
    nodes += [{"name": f"cpu-{i}", "allocatable": {"cpu": 32000, "memory": 128 * GIB}, "labels": LABELS} for i in range(config.cpu_nodes)]
    return nodes


def run_colocation(config: ColocationConfig) -> ColocationResult:
    result = ColocationResult(config)
    nodes = _nodes(config)
    alloc = {n["name"]: n["allocatable"] for n in nodes}
    jobs: dict[str, _Job] = {}
    counter = 0

    def add(job: _Job) -> None:
        jobs[job.key] = job

    for i in range(config.gpu_nodes):
        add(_Job(f"infer-{i}", True, 48000 - 1000 * config.shared_replicas, 64 * GIB, 2000, math.inf, 0.0))
        for r in range(config.shared_replicas):
            add(_Job(f"replica-{i}-{r}", True, 1000, 8 * GIB, 600, math.inf, 0.0))
    for i in range(config.cpu_nodes):
        add(_Job(f"web-{i}", True, 24000, 32 * GIB, 0, math.inf, 0.0))
    steps = int(config.hours * 3600 / config.step_s)
    policy = ColocationPolicy(
        enabled=config.colocation, cpu_margin_percent=config.margin_percent, memory_margin_percent=config.margin_percent,
        gpu_margin_percent=config.margin_percent,
    )
    next_online_s = config.online_every_h * 3600
    for step in range(steps):
        now = step * config.step_s
        share = online_share(now)
        # arrivals: the offline backlog topped up, an online service now and then
        for kind, gpu, cpu, memory, work in (
            ("train", 1000, 8000, 32 * GIB, 7200.0), ("tune", 300, 2000, 8 * GIB, 3600.0), ("batch", 0, 4000, 8 * GIB, 3600.0)
        ):
            waiting = sum(1 for j in jobs.values() if not j.online and j.node is None and j.key.startswith(kind))
            for _ in range(config.offline_backlog - waiting):
                counter += 1
                add(_Job(f"{kind}-{counter}", False, cpu, memory, gpu, work, now))
        if now >= next_online_s:
            counter += 1
            add(_Job(f"svc-{counter}", True, 16000, 16 * GIB, 0, 4 * 3600.0, now))
            next_online_s += config.online_every_h * 3600
        snapshot = _snapshot(nodes, jobs, share, now, policy, devices=config.gpu_lending)
        # the controller's colocation evictions, then the decision
        for eviction in offline_evictions(snapshot):
            for key in eviction.pods:
                _requeue(jobs[key.split("/", 1)[1]], now)
                result.evicted += 1
        if any(e.pods for e in offline_evictions(snapshot)):
            snapshot = _snapshot(nodes, jobs, share, now, policy, devices=config.gpu_lending)
        decision = place(snapshot, SolveConfig(engine=config.engine, time_limit_s=2.0))  # type: ignore[arg-type]
        for eviction in decision.placement.evictions:
            job = jobs[eviction.pod.split("/", 1)[1]]
            if not job.online:
                result.evicted += 1
            _requeue(job, now)
        for bind in decision.placement.binds:
            job = jobs[bind.pod.split("/", 1)[1]]
            job.node, job.started_s, job.gpus, job.done_s = bind.node, now, tuple(bind.gpus), 0.0
            if job.online:
                result.online_waits_h.append((now - job.arrived_s) / 3600)
        # the step passes: work is done, usage is what it is
        end = now + config.step_s
        next_share = online_share(end)
        used: dict[str, float] = {}
        device_used: dict[tuple[str, int], float] = {}
        for job in list(jobs.values()):
            if job.node is None:
                continue
            used[job.node] = used.get(job.node, 0.0) + (job.cpu * next_share if job.online else job.cpu)
            for index in job.gpus:
                milli = min(job.gpu, 1000) * (next_share if job.online else 1.0)
                device_used[(job.node, index)] = device_used.get((job.node, index), 0.0) + milli
            if job.online:
                if end - job.arrived_s >= job.work_s:
                    del jobs[job.key]
                continue
            job.done_s += config.step_s
            result.gpu_hours += job.gpu / 1000 * config.step_s / 3600
            if 0 < job.gpu < 1000:
                result.fractional_gpu_hours += job.gpu / 1000 * config.step_s / 3600
            result.cpu_hours += job.cpu / 1000 * config.step_s / 3600
            if job.done_s >= job.work_s:
                result.finished += 1
                del jobs[job.key]
        for node, cpu in used.items():
            result.online_short_cpu_hours += max(0.0, cpu - alloc[node]["cpu"]) / 1000 * config.step_s / 3600
        for milli in device_used.values():
            result.online_short_gpu_hours += max(0.0, milli - 1000) / 1000 * config.step_s / 3600
        result.times_h.append(end / 3600)
        result.gpu_busy.append(sum(j.gpu for j in jobs.values() if j.node is not None) / (8000 * max(config.gpu_nodes, 1)) * 100)
    # work lost to evictions was counted when done: take it back
    return result


def _requeue(job: _Job, now: float) -> None:
    job.node, job.started_s, job.gpus = None, None, ()
    job.done_s = 0.0
    job.arrived_s = now if job.online else job.arrived_s


def _snapshot(
    nodes: list[dict], jobs: dict[str, _Job], share: float, now: float, policy: ColocationPolicy, *, devices: bool
) -> Snapshot:
    """The cluster now; `devices`: the usage says each GPU's online percent (`online-gpu<i>`)."""
    online_used: dict[str, dict[str, float]] = {}
    device_percent: dict[str, dict[int, float]] = {}
    for job in jobs.values():
        if job.node is not None and job.online:
            totals = online_used.setdefault(job.node, {"cpu": 0.0, "memory": 0.0})
            totals["cpu"] += job.cpu * share
            totals["memory"] += job.memory * share
            for index in job.gpus:
                percents = device_percent.setdefault(job.node, {})
                percents[index] = percents.get(index, 0.0) + min(job.gpu, 1000) * share / 10
    node_models = []
    for node in nodes:
        used = online_used.get(node["name"], {"cpu": 0.0, "memory": 0.0})
        cpu = min(100.0, 100 * used["cpu"] / node["allocatable"]["cpu"])
        memory = min(100.0, 100 * used["memory"] / node["allocatable"]["memory"])
        gpus = node["allocatable"].get("gpu", 0) // 1000
        by_device = {i: min(100.0, device_percent.get(node["name"], {}).get(i, 0.0)) for i in range(gpus)} if devices and gpus else None
        usage = NodeUsage(
            cpu_percent=cpu, memory_percent=memory, online_cpu_percent=cpu, online_memory_percent=memory,
            online_gpu_device_percent=by_device, observed_at_s=now,
        )
        node_models.append({**node, "usage": usage})
    groups, pods = [], []
    for job in jobs.values():
        requests = {name: amount for name, amount in (("cpu", job.cpu), ("memory", job.memory), ("gpu", job.gpu)) if amount}
        groups.append(
            PodGroup(namespace="default", name=job.key, priority=1000 if job.online else 0, min_member=1, creation_time=job.arrived_s,
                     tasks=({"name": "main", "min_available": 1, "requests": requests, "offline": not job.online},))  # type: ignore[arg-type]
        )
        running = job.node is not None
        pods.append(
            Pod(namespace="default", name=job.key, phase="running" if running else "pending", pod_group=f"default/{job.key}",  # type: ignore[arg-type]
                task="main", requests=requests, node=job.node, gpu_indices=job.gpus, priority=1000 if job.online else 0,  # type: ignore[arg-type]
                preemptable=not job.online, start_time=job.started_s, offline=not job.online)
        )
    return Snapshot.model_validate(
        {"nodes": node_models, "pod_groups": groups, "pods": pods, "colocation_policy": policy,
         "usage_policy": UsagePolicy(judged_at_s=now, cpu_threshold_percent=None, memory_threshold_percent=None)}
    )


HEADER = ("colocation", "offline GPU-h", "of which fractional", "offline CPU-h", "offline jobs finished", "offline evictions",
          "online pods", "online wait mean (h)", "online wait max (h)", "online short (CPU-h)", "online short (GPU-h)")


def _row(result: ColocationResult) -> tuple[str, ...]:
    waits = result.online_waits_h
    return (
        result.config.mode,
        f"{result.gpu_hours:.1f}",
        f"{result.fractional_gpu_hours:.1f}",
        f"{result.cpu_hours:.1f}",
        str(result.finished),
        str(result.evicted),
        str(len(waits)),
        f"{sum(waits) / len(waits):.2f}" if waits else "-",
        f"{max(waits):.2f}" if waits else "-",
        f"{result.online_short_cpu_hours:.2f}",
        f"{result.online_short_gpu_hours:.2f}",
    )


def colocation_markdown(results: list[ColocationResult]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(_row(result)) + " |" for result in results]
    return "\n".join(lines) + "\n"


def write_colocation_csv(results: list[ColocationResult], out: Path) -> Path:
    path = out / "timeline_colocation.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows(_row(result) for result in results)
    return path
