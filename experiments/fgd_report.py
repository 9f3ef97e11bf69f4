"""Tables and CSVs from FGD-protocol runs: per-run rows, per-bin curves, a summary with
the spread over seeds, and the validity gate against the paper's published numbers.

Input: `FgdRun`s from `experiments.fgd`, and the offline bound per (pod list, seed) from
`experiments.offline_bound` when it was computed. Output: CSV files and Markdown tables
(strings and files only — printing is the CLI's). The gate: on the default trace, each of the six
paper baselines must be within ±0.5 points of the paper's allocation ratio at 130 %
(mean over seeds 42–51); until it holds no comparison is quoted. A sweep without all six
is "not judged", never "not met".
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import numpy as np

from experiments.fgd import BINS, LEFTOVER_BUCKETS, PAPER_ALLOC_AT_130, PAPER_FRAG_AT_130, FgdRun, IdleGpus, TurnedAway
from experiments.offline_bound import OfflineBound
from experiments.policies import POLICIES, policy_label

__all__ = [
    "GATE_TOLERANCE", "Summary", "Verdict", "summarize", "summaries_from_csv", "gate", "write_runs_csv",
    "write_curves_csv", "write_bounds_csv", "write_turned_away_csv", "markdown_table", "bounds_table", "answers_table",
    "turned_away_table", "idle_table", "idle_means", "IdleMeans", "write_idle_csv",
]  # fmt: skip

Bounds = Mapping[tuple[str, int], OfflineBound]
"""(pod list, seed) → the offline bound of that seed's arrivals."""

GATE_TOLERANCE = 0.5


@dataclass(frozen=True)
class Summary:
    """One (trace, policy, batch size) over its seeds."""

    trace: str
    policy: str
    batch_size: int
    seeds: int
    alloc_mean: float
    alloc_std: float
    alloc_min: float
    alloc_max: float
    frag_mean: float
    frag_std: float
    wall_seconds_mean: float
    solve_ms_mean: float
    alloc_curve: np.ndarray  # [131] mean over seeds
    frag_curve: np.ndarray
    bound_mean: float | None = None  # the offline bound at 130 % (% of capacity), mean over the same seeds

    @property
    def paper_alloc(self) -> float | None:
        return PAPER_ALLOC_AT_130.get(self.policy) if self.trace == "default" and self.batch_size == 1 else None

    @property
    def paper_frag(self) -> float | None:
        return PAPER_FRAG_AT_130.get(self.policy) if self.trace == "default" and self.batch_size == 1 else None


def summarize(runs: Iterable[FgdRun], *, bounds: Bounds | None = None) -> list[Summary]:
    """Group by (trace, policy, batch size); order by trace, then `POLICIES`, then k. With
    `bounds`, each group gets the mean bound over its seeds."""
    groups: dict[tuple[str, str, int], list[FgdRun]] = defaultdict(list)
    for run in runs:
        groups[(run.config.trace, run.config.policy, run.config.batch_size)].append(run)
    rank = {name: i for i, name in enumerate(POLICIES)}
    out = []
    for (trace, policy, k), group in sorted(groups.items(), key=lambda item: (item[0][0], rank.get(item[0][1], 99), item[0][2])):
        alloc = np.array([run.alloc_at_130 for run in group])
        frag = np.array([run.frag_at_130 for run in group])
        out.append(
            Summary(
                trace=trace,
                policy=policy,
                batch_size=k,
                seeds=len(group),
                alloc_mean=float(alloc.mean()),
                alloc_std=float(alloc.std()),
                alloc_min=float(alloc.min()),
                alloc_max=float(alloc.max()),
                frag_mean=float(frag.mean()),
                frag_std=float(frag.std()),
                wall_seconds_mean=float(np.mean([run.wall_seconds for run in group])),
                solve_ms_mean=1000.0 * float(np.mean([run.solve_seconds.mean() for run in group])),
                alloc_curve=np.nanmean(np.vstack([run.alloc_curve for run in group]), axis=0),
                frag_curve=np.nanmean(np.vstack([run.frag_curve for run in group]), axis=0),
                bound_mean=_bound_mean(bounds, trace, [run.config.seed for run in group]),
            )
        )
    return out


def _bound_mean(bounds: Bounds | None, trace: str, seeds: Sequence[int]) -> float | None:
    """Mean bound over `seeds`, None unless every one of them has a bound."""
    if not bounds or any((trace, seed) not in bounds for seed in seeds):
        return None
    return float(np.mean([bounds[trace, seed].bound_pct for seed in seeds]))


class Verdict(StrEnum):
    """The gate's answer. `NOT_JUDGED` when some paper baseline was not run on the default
    trace at k=1: a sweep of batchplace's policies alone says nothing about the reproduction."""

    PASS = "PASS"
    NOT_MET = "NOT MET"
    NOT_JUDGED = "not judged"


def gate(summaries: Sequence[Summary], *, tolerance: float = GATE_TOLERANCE) -> tuple[Verdict, list[str]]:
    """(the verdict, one line per paper baseline run, then one naming those not run)."""
    lines, within_all, missing = [], True, []
    found = {s.policy: s for s in summaries if s.trace == "default" and s.batch_size == 1}
    for policy, paper in PAPER_ALLOC_AT_130.items():
        summary = found.get(policy)
        if summary is None:
            missing.append(policy)
            continue
        delta = summary.alloc_mean - paper
        within = abs(delta) <= tolerance
        within_all = within_all and within
        lines.append(
            f"{policy_label(policy)}: {summary.alloc_mean:.2f} % vs paper {paper:.2f} % "
            f"({delta:+.2f}, {'ok' if within else 'OUT'}; {summary.seeds} seeds)"
        )
    if missing:
        lines.append(f"not run on the default trace at k=1: {', '.join(missing)}")
        return Verdict.NOT_JUDGED, lines
    return (Verdict.PASS if within_all else Verdict.NOT_MET), lines


def write_runs_csv(runs: Iterable[FgdRun], path: Path, *, bounds: Bounds | None = None) -> None:
    """One row per run: configuration and the numbers at 130 %, with its seed's offline
    bound (empty when not computed)."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["trace", "policy", "batch_size", "seed", "pods", "placed", "alloc_at_130_pct", "frag_at_130_pct",
             "frag_rate_at_130_pct", "final_alloc_pct", "wall_s", "solve_ms_mean", "solve_ms_p99", "bound_pct"]
        )  # fmt: skip
        for run in runs:
            c = run.config
            writer.writerow(
                [c.trace, c.policy, c.batch_size, c.seed, run.pods, run.placed, f"{run.alloc_at_130:.3f}",
                 f"{run.frag_at_130:.3f}", f"{run.frag_rate_curve[130]:.3f}", f"{run.final_alloc:.3f}",
                 f"{run.wall_seconds:.2f}", f"{1000 * run.solve_seconds.mean():.3f}",
                 f"{1000 * np.percentile(run.solve_seconds, 99):.3f}", _bound_cell(bounds, c.trace, c.seed)]
            )  # fmt: skip


def _bound_cell(bounds: Bounds | None, trace: str, seed: int) -> str:
    bound = (bounds or {}).get((trace, seed))
    return f"{bound.bound_pct:.3f}" if bound is not None else ""


def write_bounds_csv(bounds: Bounds, path: Path, shapes_path: Path) -> None:
    """The offline bound per (pod list, seed) to `path`, and per shape to `shapes_path`:
    how many arrived, how many the bound's optimum places, the most the empty cluster holds
    of it alone — where the GPU demand the bound leaves out goes."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["trace", "seed", "bound_pct", "bound_milli", "capacity_milli", "method", "solve_s"])
        for (trace, seed), bound in sorted(bounds.items()):
            writer.writerow([trace, seed, f"{bound.bound_pct:.3f}", f"{bound.bound_milli:.0f}", bound.capacity_milli,
                             bound.method, f"{bound.solve_seconds:.2f}"])  # fmt: skip
    with open(shapes_path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["trace", "seed", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "arrived", "in_bound", "at_most"])
        for (trace, seed), bound in sorted(bounds.items()):
            for shape in bound.shapes:
                writer.writerow([trace, seed, shape.cpu_milli, shape.memory_mib, shape.num_gpu, shape.gpu_milli, shape.spec,
                                 shape.arrived, f"{shape.in_bound:g}", shape.at_most])  # fmt: skip


def write_curves_csv(runs: Iterable[FgdRun], path: Path) -> None:
    """Per run and metric, the value in each 1 % bin of arrived demand (0–130), like the
    artifact's `analysis_*_discrete.csv`."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["metric", "trace", "policy", "batch_size", "seed", *[str(b) for b in BINS]])
        for run in runs:
            c = run.config
            for metric, curve in (("alloc", run.alloc_curve), ("frag_amount", run.frag_curve), ("frag_rate", run.frag_rate_curve)):
                writer.writerow([metric, c.trace, c.policy, c.batch_size, c.seed, *[f"{v:.3f}" for v in curve]])


def markdown_table(summaries: Sequence[Summary]) -> str:
    """The results table: allocation and fragmentation at 130 % with spread over seeds, and
    the offline bound (mean over the same seeds) with the policy's distance to it."""
    lines = [
        "| trace | policy | k | GPU allocated at 130 % (mean ± sd, [min, max]) | paper | offline bound | below bound "
        "| fragmented GPU at 130 % | paper | runtime / run |",
        "|---|---|---:|---|---:|---:|---:|---|---:|---:|",
    ]
    for s in summaries:
        paper = f"{s.paper_alloc:.2f}" if s.paper_alloc is not None else ""
        paper_frag = f"{s.paper_frag:.2f}" if s.paper_frag is not None else ""
        bound = f"{s.bound_mean:.2f}" if s.bound_mean is not None else ""
        below = f"{s.bound_mean - s.alloc_mean:.2f}" if s.bound_mean is not None else ""
        lines.append(
            f"| {s.trace} | {policy_label(s.policy)} | {s.batch_size} | {s.alloc_mean:.2f} ± {s.alloc_std:.2f} "
            f"[{s.alloc_min:.2f}, {s.alloc_max:.2f}] | {paper} | {bound} | {below} | {s.frag_mean:.2f} ± {s.frag_std:.2f} | "
            f"{paper_frag} | {s.wall_seconds_mean:.1f} s |"
        )
    return "\n".join(lines) + "\n"


def answers_table(runs: Iterable[FgdRun]) -> str:
    """Per run of an engine that may answer with CP-SAT (`cpsat`, `auto`): who answered its
    batches, how often CP-SAT placed more GPU than greedy would have on the same batch, and
    `place()`'s time per batch. Empty when no such run is in `runs`."""
    lines = [
        "| trace | policy | k | seed | batches | CP-SAT answered | FALLBACK (causes) | beat greedy | behind greedy "
        "| place() p50 | place() p99 |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    ordered = sorted(runs, key=lambda r: (r.config.trace, r.config.policy, r.config.batch_size, r.config.seed))
    for run in ordered:
        answers, c = run.answers, run.config
        if answers is None or c.policy not in ("cpsat", "auto") or not answers.batches:
            continue
        cpsat = sum(n for key, n in answers.answered_by.items() if key.startswith(("cpsat:", "cpsat-partitioned:")))
        causes = ", ".join(f"{key.rsplit(':', 1)[-1]} {n}" for key, n in sorted(answers.answered_by.items()) if ":FALLBACK" in key)
        seconds = np.array(answers.place_seconds)
        lines.append(
            f"| {c.trace} | {policy_label(c.policy)} | {c.batch_size} | {c.seed} | {answers.batches} | "
            f"{cpsat} ({100 * cpsat / answers.batches:.0f} %) | {answers.fallbacks}{f' ({causes})' if causes else ''} | "
            f"{answers.beat_greedy} | {answers.behind_greedy} | {np.percentile(seconds, 50):.3f} s | {np.percentile(seconds, 99):.3f} s |"
        )
    return "\n".join(lines) + "\n" if len(lines) > 2 else ""


_AWAY_COLUMNS = ("pods", "gpu_milli", "gpu_milli_cpu_blocked", "gpu_milli_model_blocked")
"""`TurnedAway`'s counts, in the order the CSV and the table give them."""


def write_turned_away_csv(runs: Iterable[FgdRun], path: Path) -> None:
    """Per run and pod shape: pods turned away, their GPU milli, and the parts turned away
    while the devices were free on a node of their model, or only on other models (`TurnedAway`)."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["trace", "policy", "batch_size", "seed", "shape", *_AWAY_COLUMNS])
        for run in runs:
            c = run.config
            for shape, away in sorted(run.turned_away.items()):
                writer.writerow([c.trace, c.policy, c.batch_size, c.seed, shape, *(getattr(away, name) for name in _AWAY_COLUMNS)])


def turned_away_table(runs: Iterable[FgdRun]) -> str:
    """Where the GPU not placed goes: per pod list, policy and k, the pods of each shape
    turned away by 130 % (mean per seed), most GPU first, and of their GPU what was turned
    away while the devices were idle: on a node of its model (CPU or memory short there) or
    only on models it does not allow — the pods a packing that kept CPU beside free GPUs, or
    those GPUs for the pods that need them, would have placed."""
    groups: dict[tuple[str, str, int], list[FgdRun]] = defaultdict(list)
    for run in runs:
        groups[run.config.trace, run.config.policy, run.config.batch_size].append(run)
    lines = [
        "| trace | policy | k | pod shape | pods turned away | GPUs turned away | % of capacity "
        "| of which idle beside short CPU/memory | idle on other GPU models |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for (trace, policy, k), group in sorted(groups.items()):
        shapes = sorted({shape for run in group for shape in run.turned_away})
        mean = {}  # shape → mean per seed of `_AWAY_COLUMNS`; 0 in a seed without it
        for shape in shapes:
            away = [run.turned_away.get(shape, TurnedAway()) for run in group]
            mean[shape] = [float(np.mean([getattr(a, name) for a in away])) for name in _AWAY_COLUMNS]
        capacity = float(np.mean([run.capacity_milli for run in group]))
        for shape in sorted(shapes, key=lambda name: (-mean[name][1], name)):
            pods, milli, cpu_blocked, model_blocked = mean[shape]
            lines.append(
                f"| {trace} | {policy_label(policy)} | {k} | {shape} | {pods:.1f} | {milli / 1000:.1f} | "
                f"{100 * milli / capacity:.2f} | {cpu_blocked / 1000:.1f} | {model_blocked / 1000:.1f} |"
            )
    return "\n".join(lines) + "\n" if len(lines) > 2 else ""


def write_idle_csv(runs: Iterable[FgdRun], path: Path) -> None:
    """Per run: the GPU idle after the last arrival (`IdleGpus`) — whole devices, milli left
    on partly used devices by size, and the most common leftovers as "milli×devices"."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        buckets = [f"leftover_milli {name}" for name, _, _ in LEFTOVER_BUCKETS]
        writer.writerow(["trace", "policy", "batch_size", "seed", "idle_milli", "whole_devices", *buckets, "common_leftovers"])
        for run in runs:
            idle, c = run.idle_at_end, run.config
            if idle is None:
                continue
            common = " ".join(f"{milli}×{devices}" for milli, devices in idle.common_leftovers)
            writer.writerow([c.trace, c.policy, c.batch_size, c.seed, idle.total_milli, idle.whole_devices, *idle.leftover_milli, common])


@dataclass(frozen=True)
class IdleMeans:
    """`IdleGpus` of one pod list, policy and k, as mean % of GPU capacity over its seeds;
    `common_leftover` is the first seed's most common leftover (milli, devices), if any."""

    seeds: int
    idle_pct: float
    whole_pct: float
    leftover_pct: tuple[float, ...]  # per `LEFTOVER_BUCKETS`
    common_leftover: tuple[int, int] | None


def idle_means(runs: Iterable[FgdRun]) -> dict[tuple[str, str, int], IdleMeans]:
    """(trace, policy, k) → `IdleMeans`, in that key order: what the idle table and plot show."""
    groups: dict[tuple[str, str, int], list[tuple[IdleGpus, int]]] = defaultdict(list)
    for run in runs:
        if run.idle_at_end is not None:
            groups[run.config.trace, run.config.policy, run.config.batch_size].append((run.idle_at_end, run.capacity_milli))
    means = {}
    for key, group in sorted(groups.items()):
        capacity = float(np.mean([capacity for _, capacity in group]))
        idle = [found for found, _ in group]

        def pct(milli: Iterable[int]) -> float:
            return 100 * float(np.mean(list(milli))) / capacity

        means[key] = IdleMeans(
            seeds=len(idle),
            idle_pct=pct(i.total_milli for i in idle),
            whole_pct=pct(i.whole_milli for i in idle),
            leftover_pct=tuple(pct(i.leftover_milli[b] for i in idle) for b in range(len(LEFTOVER_BUCKETS))),
            common_leftover=idle[0].common_leftovers[0] if idle[0].common_leftovers else None,
        )
    return means


def idle_table(means: Mapping[tuple[str, str, int], IdleMeans]) -> str:
    """Where the idle GPU is after the last arrival, per pod list, policy and k (`idle_means`:
    mean per seed, % of capacity): on whole devices, or left on partly used devices by size — a
    leftover below every share the list asks is GPU no later pod can take. The last column
    is the leftover most devices show in the first seed's run, with its device count."""
    names = [name for name, _, _ in LEFTOVER_BUCKETS]
    lines = [
        "| trace | policy | k | idle GPU % | whole devices % | " + " | ".join(f"left {name} %" for name in names)
        + " | most common leftover |",
        "|---|---|---:|---:|---:|" + "---:|" * len(names) + "---|",
    ]  # fmt: skip
    for (trace, policy, k), idle in means.items():
        common = "none" if idle.common_leftover is None else "{} m on {} devices".format(*idle.common_leftover)
        lines.append(
            f"| {trace} | {policy_label(policy)} | {k} | {idle.idle_pct:.2f} | {idle.whole_pct:.2f} | "
            + " | ".join(f"{value:.2f}" for value in idle.leftover_pct) + f" | {common} |"
        )
    return "\n".join(lines) + "\n" if len(lines) > 2 else ""


def bounds_table(bounds: Bounds) -> str:
    """The offline bound per seed and its mean per pod list (% of GPU capacity at 130 %)."""
    lines = ["| trace | seed | offline bound at 130 % | method | solve |", "|---|---:|---:|---|---:|"]
    by_trace: dict[str, list[float]] = defaultdict(list)
    for (trace, seed), bound in sorted(bounds.items()):
        by_trace[trace].append(bound.bound_pct)
        lines.append(f"| {trace} | {seed} | {bound.bound_pct:.2f} | {bound.method} | {bound.solve_seconds:.1f} s |")
    for trace, values in by_trace.items():
        lines.append(f"| {trace} | mean of {len(values)} | {np.mean(values):.2f} | | |")
    return "\n".join(lines) + "\n"


def summaries_from_csv(runs_csv: Path, curves_csv: Path) -> list[Summary]:
    """Rebuild the summaries from a sweep's `runs.csv` and `curves.csv` (to re-plot or
    re-table without re-running)."""
    rows: dict[tuple[str, str, int], list[dict[str, str]]] = defaultdict(list)
    with open(runs_csv, newline="") as handle:
        for row in csv.DictReader(handle):
            rows[(row["trace"], row["policy"], int(row["batch_size"]))].append(row)
    curves: dict[tuple[str, str, str, int], list[np.ndarray]] = defaultdict(list)
    with open(curves_csv, newline="") as handle:
        for row in csv.DictReader(handle):
            values = np.array([float(row[str(b)]) for b in BINS])
            curves[(row["metric"], row["trace"], row["policy"], int(row["batch_size"]))].append(values)
    rank = {name: i for i, name in enumerate(POLICIES)}
    out = []
    for (trace, policy, k), group in sorted(rows.items(), key=lambda item: (item[0][0], rank.get(item[0][1], 99), item[0][2])):
        alloc = np.array([float(r["alloc_at_130_pct"]) for r in group])
        frag = np.array([float(r["frag_at_130_pct"]) for r in group])
        bound = [float(r["bound_pct"]) for r in group if r.get("bound_pct")]
        out.append(
            Summary(
                trace=trace, policy=policy, batch_size=k, seeds=len(group),
                alloc_mean=float(alloc.mean()), alloc_std=float(alloc.std()),
                alloc_min=float(alloc.min()), alloc_max=float(alloc.max()),
                frag_mean=float(frag.mean()), frag_std=float(frag.std()),
                wall_seconds_mean=float(np.mean([float(r["wall_s"]) for r in group])),
                solve_ms_mean=float(np.mean([float(r["solve_ms_mean"]) for r in group])),
                alloc_curve=np.nanmean(np.vstack(curves[("alloc", trace, policy, k)]), axis=0),
                frag_curve=np.nanmean(np.vstack(curves[("frag_amount", trace, policy, k)]), axis=0),
                bound_mean=float(np.mean(bound)) if len(bound) == len(group) else None,
            )
        )  # fmt: skip
    return out
