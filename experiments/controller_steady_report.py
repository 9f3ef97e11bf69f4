"""What `experiments.controller_steady` measured, summed up and written down: latency
percentiles per pod and per gang, the controller's cycle times, CPU per process, and the
JSON, CSVs, PNG and table of a run.

Pure but for `write_outputs` (the only function that writes files). Percentiles are
numpy's linear interpolation, so p50 ≤ p90 ≤ p99 ≤ max always holds; a pod never seen bound
counts in `pods_submitted` and not in the latencies, and a gang not bound whole counts in
`gangs_submitted` and not in the gang latencies.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from experiments.controller_steady_records import GANG_PODS, SteadyRun
from experiments.live_cluster import CORES, MACHINE

__all__ = ["Percentiles", "SteadySummary", "percentiles", "summarize", "table", "write_outputs"]


@dataclass(frozen=True)
class Percentiles:
    count: int
    p50_s: float
    p90_s: float
    p99_s: float
    max_s: float


def percentiles(values_s: Sequence[float]) -> Percentiles:
    """Example: [0.2, 0.4, 1.0] → count 3, p50 0.4, max 1.0; none → all 0."""
    if not values_s:
        return Percentiles(count=0, p50_s=0.0, p90_s=0.0, p99_s=0.0, max_s=0.0)
    p50, p90, p99 = np.percentile(np.asarray(values_s, dtype=float), [50, 90, 99])
    return Percentiles(count=len(values_s), p50_s=round(float(p50), 4), p90_s=round(float(p90), 4),
                       p99_s=round(float(p99), 4), max_s=round(float(max(values_s)), 4))  # fmt: skip


@dataclass(frozen=True)
class SteadySummary:
    nodes: int
    running_pods: int
    gpu_running_pods: int
    engine: str
    interval_s: float
    duration_s: float
    running_pods_per_s: float  # creation rate: create + status Running, per pod
    warm_up_seconds: float
    window_seconds: float
    gangs_submitted: int
    gangs_bound_whole: int
    gangs_finished: int
    pods_submitted: int
    pods_bound: int
    pod_latency: Percentiles  # create returned → first seen bound
    gang_latency: Percentiles  # first pod's create returned → last pod seen bound
    cycles: int  # cycles that bound, in the window
    cycle_seconds: Percentiles
    cycle_observe_seconds: Percentiles
    cycle_solve_seconds: Percentiles
    cycle_act_seconds: Percentiles
    engines: dict[str, int]  # engine that answered → cycles
    cpu_seconds: dict[str, float]  # per process and the machine's, in the window
    cpu_share_of_cores: dict[str, float]  # cpu_seconds / (window × cores)
    requests: dict[str, int]  # `VERB resource` → served in the window, the bench's own included
    warm_up_requests: dict[str, int]  # controller start → warm-up gang bound and writes settled


def gang_latencies(run: SteadyRun) -> dict[str, float]:
    """Gang → seconds from its first pod's create to its last pod bound, for gangs bound whole."""
    by_gang: dict[str, list] = {}
    for pod in run.pods:
        by_gang.setdefault(pod.gang, []).append(pod)
    return {
        gang: max(p.bound_unix for p in pods) - min(p.created_unix for p in pods)  # type: ignore[type-var]
        for gang, pods in by_gang.items()
        if len(pods) == GANG_PODS and all(p.bound_unix is not None for p in pods)
    }


def summarize(run: SteadyRun) -> SteadySummary:
    config = run.config
    bound = [p for p in run.pods if p.bound_unix is not None]
    gangs = gang_latencies(run)
    window_s = max(run.window_end_unix - run.window_start_unix, 1e-9)
    running = run.gpu_running_pods + run.cpu_running_pods
    return SteadySummary(
        nodes=config.nodes,
        running_pods=running,
        gpu_running_pods=run.gpu_running_pods,
        engine=config.engine,
        interval_s=config.interval_s,
        duration_s=config.duration_s,
        running_pods_per_s=round(running / max(run.running_create_seconds, 1e-9), 1),
        warm_up_seconds=run.warm_up_seconds,
        window_seconds=round(window_s, 2),
        gangs_submitted=config.gangs(),
        gangs_bound_whole=len(gangs),
        gangs_finished=run.gangs_finished,
        pods_submitted=len(run.pods),
        pods_bound=len(bound),
        pod_latency=percentiles([p.bound_unix - p.created_unix for p in bound]),  # type: ignore[operator]
        gang_latency=percentiles(list(gangs.values())),
        cycles=len(run.cycles),
        cycle_seconds=percentiles([c.seconds for c in run.cycles]),
        cycle_observe_seconds=percentiles([c.observe_seconds for c in run.cycles]),
        cycle_solve_seconds=percentiles([c.solve_seconds for c in run.cycles]),
        cycle_act_seconds=percentiles([c.act_seconds for c in run.cycles]),
        engines=dict(Counter(c.engine for c in run.cycles).most_common()),
        cpu_seconds=run.cpu_seconds,
        cpu_share_of_cores={name: round(s / (window_s * CORES), 3) for name, s in run.cpu_seconds.items()},
        requests=run.requests,
        warm_up_requests=run.warm_up_requests,
    )


def table(summary: SteadySummary) -> str:
    """The Markdown tables the CLI prints."""
    lines = [
        f"{summary.nodes} nodes, {summary.running_pods} running pods ({summary.gpu_running_pods} on GPUs; created at "
        f"{summary.running_pods_per_s} pods/s), engine {summary.engine}: a gang of {GANG_PODS} every {summary.interval_s:g} s "
        f"for {summary.duration_s:g} s; gangs bound whole {summary.gangs_bound_whole}/{summary.gangs_submitted}, "
        f"pods bound {summary.pods_bound}/{summary.pods_submitted}, old gangs finished {summary.gangs_finished}; "
        f"warm-up {summary.warm_up_seconds:g} s",
        "",
        "| latency (s) | count | p50 | p90 | p99 | max |",
        "|---|---|---|---|---|---|",
    ]
    rows = (
        ("pod: created → bound", summary.pod_latency),
        ("gang: first pod created → last bound", summary.gang_latency),
        ("controller cycle (cycles that bound)", summary.cycle_seconds),
        ("  observe", summary.cycle_observe_seconds),
        ("  solve", summary.cycle_solve_seconds),
        ("  act", summary.cycle_act_seconds),
    )
    for label, p in rows:
        lines.append(f"| {label} | {p.count} | {p.p50_s:.3f} | {p.p90_s:.3f} | {p.p99_s:.3f} | {p.max_s:.3f} |")
    engines = ", ".join(f"{engine} {n}" for engine, n in summary.engines.items()) or "none"
    lines += ["", f"Engines that answered: {engines}.", "",
              f"| process | CPU s in the {summary.window_seconds:g} s window | share of {CORES} cores |", "|---|---|---|"]  # fmt: skip
    named = {name: s for name, s in summary.cpu_seconds.items() if name != MACHINE}
    machine = summary.cpu_seconds.get(MACHINE, 0.0)
    rows_cpu = {**named, "other work": round(max(0.0, machine - sum(named.values())), 2), MACHINE: machine}
    capacity = max(summary.window_seconds * CORES, 1e-9)
    for name, seconds in rows_cpu.items():
        lines.append(f"| {name} | {seconds:.1f} | {100 * seconds / capacity:.0f}% |")
    return "\n".join(lines)


def write_outputs(run: SteadyRun, summary: SteadySummary, out: Path) -> list[Path]:
    """steady.json (config + summary), steady_pods.csv, steady_cycles.csv, steady_latency.png."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "steady.json", out / "steady_pods.csv", out / "steady_cycles.csv", out / "steady_latency.png"]
    paths[0].write_text(json.dumps({"config": asdict(run.config), "summary": asdict(summary)}, indent=2) + "\n")
    start = run.window_start_unix
    with paths[1].open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["gang", "pod", "created_s", "creation_timestamp", "bound_s", "latency_s", "node"])
        for p in run.pods:
            bound = "" if p.bound_unix is None else round(p.bound_unix - start, 4)
            latency = "" if p.bound_unix is None else round(p.bound_unix - p.created_unix, 4)
            writer.writerow([p.gang, p.pod, round(p.created_unix - start, 4), p.creation_timestamp, bound, latency, p.node or ""])
    with paths[2].open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["finished_s", "seconds", "observe_seconds", "solve_seconds", "act_seconds", "bound", "engine"])
        for c in run.cycles:
            writer.writerow([round(c.finished_unix - start, 4), c.seconds, c.observe_seconds, c.solve_seconds, c.act_seconds, c.bound, c.engine])
    _plot(run, summary, paths[3])
    return paths


def _plot(run: SteadyRun, summary: SteadySummary, path: Path) -> None:
    """Latency over the window: each pod at its creation, each gang at its first pod's, and
    the controller's cycles at their end."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    start = run.window_start_unix
    figure, axes = plt.subplots(figsize=(9, 4.5))
    bound = [p for p in run.pods if p.bound_unix is not None]
    axes.scatter([p.created_unix - start for p in bound], [p.bound_unix - p.created_unix for p in bound],  # type: ignore[operator]
                 s=6, alpha=0.5, label="pod: created → bound")  # fmt: skip
    first_created = {}
    for p in run.pods:
        first_created[p.gang] = min(first_created.get(p.gang, p.created_unix), p.created_unix)
    gangs = gang_latencies(run)
    axes.plot([first_created[g] - start for g in gangs], list(gangs.values()), "o-", markersize=3, linewidth=1,
              label="gang: first created → last bound")  # fmt: skip
    axes.plot([c.finished_unix - start for c in run.cycles], [c.seconds for c in run.cycles], "x", markersize=4,
              label="controller cycle (s), at its end")  # fmt: skip
    axes.set_xlabel("seconds since the first submission")
    axes.set_ylabel("seconds")
    axes.set_ylim(bottom=0)
    axes.set_title(f"{summary.nodes} nodes, {summary.running_pods} running pods, engine {summary.engine}: "
                   f"a gang of {GANG_PODS} every {summary.interval_s:g} s", fontsize=10)  # fmt: skip
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
