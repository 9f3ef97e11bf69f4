"""Question: how does the cost of one `place()` call grow with the cluster's nodes, its
running pods and its pending pods — and where does `auto` stop answering with CP-SAT's own
placement? (Issue 35, item 5: the three axes apart, on one plot.)

Data: the bench's standard synthetic family (`experiments.synthetic.synthetic_snapshot`:
8-GPU nodes in leaves of 16 and spines of 8, `preload` of the GPU milli running in packed
pods, pending gangs of 1–64 GPUs in 4 weighted queues, some with hard topology), seeded.
Three sweeps, each moving one axis from a base point (10,000 nodes, half the GPUs running,
1,000 pending pods):
  - nodes: `--nodes` (1,000 … 50,000), the running share and the pending pods fixed;
  - running pods: `--preloads` (the share of GPU milli running: 0.1 … 0.9) at the base nodes;
  - pending pods: `--pending` (100 … 5,000) at the base nodes and share.
Each point is one snapshot (its build not timed) solved by each of `--engines` through
`place()` with the product's defaults and the bench's time limit for its size (1 s up to
1,000 nodes, 5 s above), checker included.

Metrics per point and engine: `place()` wall seconds and CPU seconds (this process and the
search's child process), who
answered (`engine:status`), GPUs placed. Baseline: greedy, the engine `auto` falls back to.

Output: a table printed; under `--out` (default results/scaling/): scaling.csv and
scaling.png (seconds against each axis, one panel per axis; a hollow marker where `auto`
answered with greedy's placement).
Run: `python -m experiments.scaling` (about 10 minutes on 2 cores); small:
`python -m experiments.scaling --nodes 1000,2000 --preloads 0.3,0.6 --pending 100,200 --base-nodes 1000`.

Not promised: quiet numbers — seconds are the wall clock of a machine that may be busy;
the CPU column is steadier. The answers themselves are deterministic.
"""

from __future__ import annotations

import argparse
import csv
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: E402
from rich.table import Table  # noqa: E402

from experiments.bench import BenchSize, default_time_limit  # noqa: E402
from experiments.synthetic import synthetic_snapshot  # noqa: E402
from models.snapshot import Snapshot  # noqa: E402
from solver.outcome import bound_gpu_milli  # noqa: E402
from solver.place import ENGINES, EngineName, SolveConfig, place  # noqa: E402

__all__ = ["ScalingPoint", "ScalingRun", "sweep_points", "run_scaling", "write_scaling_files", "main"]

AXES = ("nodes", "running pods", "pending pods")
DEFAULT_NODES = (1_000, 5_000, 10_000, 20_000, 30_000, 50_000)
DEFAULT_PRELOADS = (0.1, 0.3, 0.5, 0.7, 0.9)
DEFAULT_PENDING = (100, 500, 1_000, 2_000, 5_000)
BASE_NODES, BASE_PRELOAD, BASE_PENDING = 10_000, 0.5, 1_000


@dataclass(frozen=True)
class ScalingPoint:
    """One snapshot of a sweep: the axis it moves along and the three sizes."""

    axis: str
    nodes: int
    preload: float
    pending_pods: int
    seed: int

    def snapshot(self) -> Snapshot:
        return synthetic_snapshot(
            nodes=self.nodes, pending_pods=self.pending_pods, preload=self.preload, seed=self.seed
        )


@dataclass(frozen=True)
class ScalingRun:
    """One engine on one point: a row of scaling.csv."""

    axis: str
    nodes: int
    running_pods: int
    pending_pods: int
    preload: float
    engine: str
    answered_by: str
    time_limit_s: float
    wall_seconds: float
    cpu_seconds: float
    gpus_placed: float


def sweep_points(
    nodes: Sequence[int], preloads: Sequence[float], pending: Sequence[int], *, base_nodes: int, seed: int
) -> list[ScalingPoint]:
    """The three sweeps' points, each moving one axis from the base (module docstring)."""
    points = [ScalingPoint("nodes", n, BASE_PRELOAD, BASE_PENDING, seed + n) for n in nodes]
    points += [ScalingPoint("running pods", base_nodes, p, BASE_PENDING, seed + int(p * 1_000)) for p in preloads]
    points += [ScalingPoint("pending pods", base_nodes, BASE_PRELOAD, k, seed + 7 * k) for k in pending]
    return points


def run_scaling(
    points: Sequence[ScalingPoint],
    engines: Sequence[EngineName],
    *,
    on_run: Callable[[ScalingRun], None] = lambda run: None,
) -> list[ScalingRun]:
    """Every point × engine, timed (module docstring), after one small solve per engine (the
    first call's imports and warm-up are not a size's cost)."""
    warm = ScalingPoint("warm-up", 16, BASE_PRELOAD, 8, 0).snapshot()
    for engine in engines:
        place(warm, SolveConfig(engine=engine, time_limit_s=1.0))
    runs: list[ScalingRun] = []
    for point in points:
        snapshot = point.snapshot()
        running = sum(1 for pod in snapshot.pods if pod.phase == "running")
        pending = sum(1 for pod in snapshot.pods if pod.phase == "pending")
        limit = default_time_limit(BenchSize(point.nodes, point.pending_pods))
        for engine in engines:
            wall, cpu = time.perf_counter(), _cpu_seconds()
            decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=limit))
            wall, cpu = time.perf_counter() - wall, _cpu_seconds() - cpu
            run = ScalingRun(
                axis=point.axis,
                nodes=point.nodes,
                running_pods=running,
                pending_pods=pending,
                preload=point.preload,
                engine=engine,
                answered_by=f"{decision.engine}:{decision.status}",
                time_limit_s=limit,
                wall_seconds=round(wall, 3),
                cpu_seconds=round(cpu, 3),
                gpus_placed=bound_gpu_milli(snapshot, decision.placement) / 1000,
            )
            runs.append(run)
            on_run(run)
    return runs


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its children waited for: CP-SAT searches in a
    forked child (`solver.isolation`)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _x(run: ScalingRun) -> int:
    return {"nodes": run.nodes, "running pods": run.running_pods, "pending pods": run.pending_pods}[run.axis]


def write_scaling_files(runs: Sequence[ScalingRun], out: Path) -> tuple[Path, Path]:
    """scaling.csv (one row per run) and scaling.png (seconds against each axis)."""
    out.mkdir(parents=True, exist_ok=True)
    table = out / "scaling.csv"
    with table.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=[field.name for field in fields(ScalingRun)])
        writer.writeheader()
        writer.writerows(asdict(run) for run in runs)
    figure, panels = plt.subplots(1, len(AXES), figsize=(14, 4), sharey=True)
    for panel, axis in zip(panels, AXES, strict=True):
        for engine in sorted({run.engine for run in runs}):
            mine = sorted((run for run in runs if run.axis == axis and run.engine == engine), key=_x)
            if not mine:
                continue
            xs, seconds = [_x(run) for run in mine], [run.wall_seconds for run in mine]
            line = panel.plot(xs, seconds, marker="o", label=engine)[0]
            fallen = [run for run in mine if run.answered_by.endswith(":FALLBACK")]
            panel.scatter(
                [_x(run) for run in fallen], [run.wall_seconds for run in fallen], s=90,
                facecolors="white", edgecolors=line.get_color(), zorder=3,
            )  # fmt: skip
        panel.set_xlabel(axis)
        panel.grid(alpha=0.3)
    panels[0].set_ylabel("place() wall seconds")
    panels[0].legend(title="engine (hollow: greedy's answer)")
    figure.suptitle("Cost of one cycle by nodes, running pods and pending pods (standard family)")
    figure.tight_layout()
    plot = out / "scaling.png"
    figure.savefig(plot, dpi=110)
    plt.close(figure)
    return table, plot


def _table(runs: Sequence[ScalingRun]) -> Table:
    table = Table(title="place() by size (seconds: wall clock, checker included)")
    columns = ("axis", "nodes", "running pods", "pending pods", "engine", "answered by", "limit s", "wall s", "CPU s")
    for column in (*columns, "GPUs placed"):
        table.add_column(column, justify="left" if column in ("axis", "engine", "answered by") else "right")
    for run in runs:
        table.add_row(
            run.axis, f"{run.nodes:,}", f"{run.running_pods:,}", f"{run.pending_pods:,}", run.engine, run.answered_by,
            f"{run.time_limit_s:g}", f"{run.wall_seconds:.2f}", f"{run.cpu_seconds:.2f}", f"{run.gpus_placed:,.0f}",
        )  # fmt: skip
    return table


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def _floats(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.scaling",
        description="Time place() as nodes, running pods and pending pods grow, one axis at a time, and plot it.",
    )
    parser.add_argument(
        "--nodes", type=_ints, default=list(DEFAULT_NODES), help="Nodes of the nodes sweep (comma-separated)."
    )
    parser.add_argument(
        "--preloads", type=_floats, default=list(DEFAULT_PRELOADS),
        help="Shares of GPU milli running, 0-1, of the running-pods sweep (comma-separated).",
    )  # fmt: skip
    parser.add_argument(
        "--pending", type=_ints, default=list(DEFAULT_PENDING), help="Pending pods of the pending sweep."
    )
    parser.add_argument("--base-nodes", type=int, default=BASE_NODES, help="Nodes of the running and pending sweeps.")
    parser.add_argument("--engines", default="greedy,auto", help=f"Comma-separated engines: {', '.join(ENGINES)}.")
    parser.add_argument("--seed", type=int, default=0, help="Base seed; the same seed gives the same snapshots.")
    parser.add_argument(
        "--out", type=Path, default=Path("results/scaling"), help="Directory for scaling.csv and scaling.png."
    )
    args = parser.parse_args(argv)
    engines = [engine.strip() for engine in args.engines.split(",") if engine.strip()]
    unknown = [engine for engine in engines if engine not in ENGINES]
    if unknown:
        parser.error(f"--engines: unknown {', '.join(unknown)}; choose from {', '.join(ENGINES)}")
    if any(not 0 < preload < 1 for preload in args.preloads):
        parser.error("--preloads: each share must be between 0 and 1")
    if any(count < 1 for count in [*args.nodes, *args.pending, args.base_nodes]):
        parser.error("--nodes, --pending, --base-nodes: at least 1")
    points = sweep_points(args.nodes, args.preloads, args.pending, base_nodes=args.base_nodes, seed=args.seed)
    console = Console(stderr=True)
    columns = (TextColumn("{task.description:<34}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("scaling", total=len(points) * len(engines))

        def advance(run: ScalingRun) -> None:
            bar.update(task, advance=1, description=f"{run.axis} {_x(run):,} {run.engine}")

        runs = run_scaling(points, engines, on_run=advance)  # type: ignore[arg-type]
    Console().print(_table(runs))
    table, plot = write_scaling_files(runs, args.out)
    Console().print(f"wrote {table}, {plot}", highlight=False, soft_wrap=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
