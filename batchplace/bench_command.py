"""`batchplace bench`: the solver benchmark on synthetic GPU clusters, as a command.

A thin shell over `experiments.bench`: parse the options, run with a rich progress bar
on standard error, print the summary table and the targets on standard output, and
write CSV, Markdown and PNG into `--out`. Bad options print one line and exit with 2;
runs that raised are listed and the exit status is 1 (after the files are written).
Registered in `batchplace.cli` as `app.command(name="bench")(bench)`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from batchplace.options import PartitionPartsOption, RayAddressOption, ray_address_of
from batchplace.render import print_error
from experiments.bench import (
    DEFAULT_SIZES,
    FAMILIES,
    BenchConfig,
    BenchRun,
    BenchSize,
    parse_engines,
    parse_family,
    parse_sizes,
    run_bench,
)
from experiments.bench_report import summary_table, write_bench_files
from solver.fragmentation import PACKINGS, PackingName

__all__ = ["bench"]

EXIT_INPUT_ERROR = 2
T = TypeVar("T")
# Piped or redirected output gets room for the whole table instead of rich's 80 columns.
stdout = Console(soft_wrap=False, width=None if sys.stdout.isatty() else 200)


class _ProgressObserver:
    """Moves the bar one step per timed run and says which run is going."""

    def __init__(self, progress: Progress, task_id: int):
        self.progress = progress
        self.task_id = task_id

    def started(self, size: BenchSize, repeat: int, engine: str) -> None:
        self.progress.update(self.task_id, description=f"{size.label} #{repeat + 1} {engine}")  # type: ignore[arg-type]

    def finished(self, run: BenchRun) -> None:
        self.progress.advance(self.task_id)  # type: ignore[arg-type]


def _parsed(option: str, parse: Callable[[str], T], text: str) -> T:
    try:
        return parse(text)
    except ValueError as error:
        print_error(f"{option}: {error}")
        raise typer.Exit(EXIT_INPUT_ERROR) from None


def _parse_packing(text: str) -> PackingName:
    if text not in PACKINGS:
        raise ValueError(f"unknown packing {text!r}; choose from {', '.join(PACKINGS)}")
    return text  # type: ignore[return-value]  # checked against PACKINGS above


def bench(
    sizes: Annotated[
        str,
        typer.Option(
            help="Comma-separated NODESxPODS: cluster nodes (8 GPUs each) x pending pods. "
            "The targets are quoted for 1000x1000 and 10000x5000.",
        ),
    ] = DEFAULT_SIZES,
    engines: Annotated[
        str,
        typer.Option(help="Comma-separated engines to time: greedy, cpsat, auto. Greedy always runs as the reference."),
    ] = "greedy,auto",
    repeats: Annotated[
        int,
        typer.Option(
            min=1, max=1000, help="Snapshots per size, seeded apart, preloaded evenly from 25 % to 75 % of the GPUs."
        ),
    ] = 5,
    time_limit: Annotated[
        Optional[float],  # noqa: UP007  # typer reads the annotation at runtime
        typer.Option(
            "--time-limit",
            min=0.01,
            max=3600,
            help="Time limit of each place() call, in seconds. Default: per size, as the targets are set "
            "(1 s up to 1,000 nodes, 5 s above).",
        ),
    ] = None,
    packing: Annotated[
        Optional[str],  # noqa: UP007
        typer.Option(help=f"Greedy node score: {', '.join(PACKINGS)}. Default: the solver's default."),
    ] = None,
    out: Annotated[
        Path, typer.Option(help="Directory for bench.csv, bench_summary.csv, bench.md and bench.png.")
    ] = Path("results/bench"),
    seed: Annotated[int, typer.Option(help="Base seed; the same seed gives the same snapshots.")] = 0,
    family: Annotated[
        str,
        typer.Option(
            help=f"Synthetic family: {', '.join(FAMILIES)}. standard: 25-75 % of GPUs running, gangs of 1-64 GPUs "
            "in 4 queues. tight: holes cut for a planted packing, ~95 % of free GPUs asked, in the order that "
            "makes greedy strand GPUs. mixed: 8-GPU, 4-GPU and CPU-only nodes in racks of 12, half the GPUs "
            "running, groups of 1-16 min members of shares, 1/2/4/8-GPU and CPU-only pods. dra, dra-nvlink: GPUs as "
            "DRA devices (8 per node, two NVLink domains), pods asking them through claim templates, some "
            "(dra-nvlink: all) on one NVLink domain.",
        ),
    ] = "standard",
    partition_parts: PartitionPartsOption = 1,
    ray_address: RayAddressOption = None,
) -> None:
    """Time the placement engines on synthetic GPU clusters and report speed and quality.

    Each size x repetition is one seeded snapshot (its build not timed): 8-GPU nodes, leaves of 16, spines of 8.

    standard family: 25-75 % of GPUs run already; pending gangs of 1-64 GPUs in 4 weighted queues, some with hard
    topology. tight family: 1/2/4/8-GPU pods, shares and leaf-bound gangs asking ~95 % of the free GPUs.
    dra, dra-nvlink families: DRA GPUs in ResourceSlices, claims from templates; reports whole NVLink domains left free.
    mixed family: three node kinds in racks of 12, half the GPUs running, groups of 1-16 min members of all
    shapes.

    Each engine solves it through place(), checker included, timed by the wall clock.

    Prints p50/p99 seconds, objective, gap, GPUs placed vs greedy and vs the LP bound, and evictions per size and engine.

    Example: batchplace bench --family tight --sizes 100x100,1000x1000 --engines greedy,auto --repeats 3
    """
    config = BenchConfig(
        sizes=_parsed("--sizes", parse_sizes, sizes),
        engines=_parsed("--engines", parse_engines, engines),
        repeats=repeats,
        time_limit_s=time_limit,
        seed=seed,
        packing=_parsed("--packing", _parse_packing, packing) if packing is not None else None,
        family=_parsed("--family", parse_family, family),
        partition_parts=partition_parts,
        ray_address=ray_address_of(ray_address),
    )
    total = len(config.sizes) * config.repeats * len(config.engines)
    with Progress(
        TextColumn("{task.description:<22}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    ) as progress:
        task_id = progress.add_task("warming up", total=total)
        result = run_bench(config, observer=_ProgressObserver(progress, task_id))  # type: ignore[arg-type]
    files = write_bench_files(result, out)
    stdout.print(summary_table(result))
    if result.greedy_pods_per_s is not None:
        stdout.print(
            f"greedy throughput at {result.greedy_pods_per_s_size}: "
            f"[bold]{result.greedy_pods_per_s:,.0f} pending pods/s[/bold] (pending pods / p50 wall seconds)",
            highlight=False,
        )
    for check in result.targets:
        if check.met is None:
            mark = "[dim]n/a    [/dim]"
        else:
            mark = "[green]met    [/green]" if check.met else "[red]not met[/red]"
        stdout.print(f"{mark} {check.target}: {check.measured}", highlight=False)
    stdout.print(
        f"wrote {files.runs_csv}, {files.summary_csv}, {files.markdown}, {files.plot}", highlight=False, soft_wrap=True
    )
    failed = [run for run in result.runs if run.status == "ERROR"]
    if failed:
        for run in failed:
            print_error(f"{run.size} #{run.repeat + 1} {run.engine} failed: {run.error}")
        raise typer.Exit(1)
