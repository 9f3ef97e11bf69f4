"""The bench's report: `bench.csv`, `bench_summary.csv`, `bench.md`, `bench.png`, and the
rich table `batchplace bench` prints — everything `experiments.bench` measured, written down.

Input: a `BenchResult`. Output: files in the directory given (`write_bench_files`, the
only function here that does I/O) or a rich `Table` the caller prints. The PNG is drawn
with matplotlib's Agg backend, so no display is needed. Split from `bench.py` by concern
(measuring vs. writing), as STYLE.md asks of modules past ~500 lines.

Not promised: a stable Markdown layout; the CSV columns are `RUN_COLUMNS` and
`SUMMARY_COLUMNS` of `experiments.bench`.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from rich.table import Table

from experiments.bench import RUN_COLUMNS, SUMMARY_COLUMNS, BenchConfig, BenchResult, format_number, format_percent

__all__ = ["BenchFiles", "write_bench_files", "summary_table", "TABLE_HEADERS", "CONSOLE_HEADERS"]


@dataclass(frozen=True)
class BenchFiles:
    runs_csv: Path
    summary_csv: Path
    markdown: Path
    plot: Path


def write_bench_files(result: BenchResult, out_dir: Path) -> BenchFiles:
    """Write `bench.csv` (runs), `bench_summary.csv`, `bench.md` and `bench.png` into `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = BenchFiles(
        runs_csv=out_dir / "bench.csv",
        summary_csv=out_dir / "bench_summary.csv",
        markdown=out_dir / "bench.md",
        plot=out_dir / "bench.png",
    )
    _write_csv(files.runs_csv, RUN_COLUMNS, [asdict(r) for r in result.runs])
    _write_csv(files.summary_csv, SUMMARY_COLUMNS, [asdict(s) for s in result.summaries])
    files.markdown.write_text(_markdown(result), encoding="utf-8")
    _plot(result, files.plot)
    return files


def _write_csv(path: Path, columns: Sequence[str], rows: Sequence[dict[str, object]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else v for k, v in row.items()})


TABLE_HEADERS = (
    "size", "engine", "answered by", "runs", "p50 s", "p99 s", "p50 solve s", "p50 CPU s", "pods/s", "pods/CPU s",
    "objective", "gap p50", "gap max", "GPUs placed", "vs greedy", "worst vs greedy", "GPU bound", "gap closed",
    "worst gap closed", "whole domains free", "evictions", "limit s", "load",
)


def _table_rows(result: BenchResult) -> list[tuple[str, ...]]:
    rows = []
    for s in result.summaries:
        rows.append(
            (
                s.size,
                s.engine,
                s.answered_by or "-",
                f"{s.runs}" + (f" ({s.errors} failed)" if s.errors else ""),
                format_number(s.p50_wall_s, ".3f"),
                format_number(s.p99_wall_s, ".3f"),
                format_number(s.p50_solve_s, ".3f"),
                format_number(s.p50_cpu_s, ".3f"),
                format_number(s.pods_per_s, ",.0f"),
                format_number(s.pods_per_cpu_s, ",.0f"),
                format_number(s.objective_p50, ".6g"),
                format_percent(s.gap_p50),
                format_percent(s.gap_max),
                format_number(s.gpus_placed_mean, ",.0f"),
                format_number(s.gpus_vs_greedy_pct, ".1f") + (" %" if s.gpus_vs_greedy_pct is not None else ""),
                format_number(s.gpus_vs_greedy_min, "+.0f"),
                format_number(s.gpu_bound_mean, ",.0f"),
                _share(s.gap_closed_mean),
                _share(s.gap_closed_min),
                format_number(s.whole_domains_free_mean, ",.1f"),
                format_number(s.evictions_mean, ".1f"),
                format_number(s.time_limit_s, "g"),
                format_number(s.load_1m_max, ".2f"),
            )
        )
    return rows


def _share(fraction: float | None) -> str:
    """0.754 → "75 %"; None → "-"."""
    return format_number(None if fraction is None else 100 * fraction, ".0f") + (" %" if fraction is not None else "")


CONSOLE_HEADERS = (
    "size", "engine", "answered by", "p50 s", "p99 s", "p50 CPU s", "pods/s", "gap max", "GPUs placed", "vs greedy",
    "worst vs greedy", "GPU bound", "gap closed", "whole domains free", "evictions", "load",
)
"""The columns the terminal gets (bench.md has them all): what fits in about 200 columns."""


def summary_table(result: BenchResult) -> Table:
    """The summary as a rich table (the caller prints it)."""
    table = Table(title="batchplace bench (seconds: place() wall clock, checker included)", title_justify="left")
    keep = [TABLE_HEADERS.index(header) for header in CONSOLE_HEADERS]
    for header in CONSOLE_HEADERS:
        table.add_column(header, justify="left" if header in ("size", "engine", "answered by") else "right")
    for row in _table_rows(result):
        table.add_row(*(row[i] for i in keep))
    return table


def _limits(config: BenchConfig) -> str:
    """"1 s" for one limit; "1 s (1000x1000), 5 s (10000x5000)" when they differ per size."""
    limits = {size.label: config.time_limit(size) for size in config.sizes}
    if len(set(limits.values())) <= 1:
        return f"{next(iter(limits.values()), 0):g} s"
    return ", ".join(f"{limit:g} s ({label})" for label, limit in limits.items())


def _markdown(result: BenchResult) -> str:
    config, env = result.config, result.environment
    if config.family == "tight":
        load = "load: what the holes leave, pending pods asking ~95 % of the free GPUs"
    else:
        load = f"preload {', '.join(f'{config.preload(i):.0%}' for i in range(config.repeats))}"
    lines = [
        "# batchplace bench",
        "",
        f"Family {config.family}; sizes (nodes x pending pods): {', '.join(s.label for s in config.sizes)}; engines: "
        f"{', '.join(config.engines)}; {config.repeats} repetitions per size ({load}); time limit "
        f"{_limits(config)}; greedy packing {config.packing or 'default'}; seed {config.seed}.",
        f"Machine: {env.get('cpus', '?')} CPUs ({env.get('machine', '?')}), 1-min load average at the end "
        f"{env.get('load_average_1m', '?')}; Python {env.get('python', '?')}, numpy {env.get('numpy', '?')}, "
        f"OR-Tools {env.get('ortools', '?')}. Shared machine: expect noise of tens of percent; 'load' is the "
        "highest 1-minute load average a run of the row started at.",
        "",
        "Times are wall seconds of `place()` (problem build, engine, checker); p99 over "
        f"{config.repeats} runs is in effect the slowest run. 'vs greedy' is GPUs placed as a "
        "percentage of greedy's on the same snapshot; 'worst vs greedy' the worst difference in GPUs. "
        "'GPU bound' is the LP relaxation's bound on the GPUs placed (mean over snapshots); 'gap closed' the "
        "share of greedy's distance to it the engine wins back, (GPUs − greedy's) / (bound − greedy's), mean "
        "and worst snapshot; '-' where greedy is at the bound. 'whole domains free' (dra families): NVLink "
        "domains none of whose devices are held or allocated after the placement (mean over snapshots).",
        "",
        "| " + " | ".join(TABLE_HEADERS) + " |",
        "|" + "|".join("---" if h in ("size", "engine", "answered by") else "---:" for h in TABLE_HEADERS) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in _table_rows(result)]
    if result.greedy_pods_per_s is not None:
        lines += [
            "",
            f"Greedy throughput at {result.greedy_pods_per_s_size}: **{result.greedy_pods_per_s:,.0f} pending "
            "pods/s** (pending pods / p50 wall; kube-scheduler's CI floor: ~680 pods/s at 5,000 nodes).",
        ]
    if result.targets:
        lines += ["", "| target | measured | met |", "|---|---|---|"]
        lines += [f"| {t.target} | {t.measured} | {_verdict(t.met)} |" for t in result.targets]
    errors = [r for r in result.runs if r.status == "ERROR"]
    if errors:
        lines += ["", "Failed runs:", ""]
        lines += [f"- {r.size} repeat {r.repeat} {r.engine}: {r.error}" for r in errors]
    return "\n".join(lines) + "\n"


def _verdict(met: bool | None) -> str:
    return "not judged" if met is None else "yes" if met else "**no**"


def _bound_vs_greedy(result: BenchResult) -> dict[str, float]:
    """Per size: the GPU bound as a percentage of greedy's GPUs placed, the mean over its
    snapshots — as the bars average each engine's percentage, so an engine at the bound
    on every snapshot meets the mark."""
    ratios: dict[str, dict[int, float]] = {}
    for run in result.runs:
        if run.gpu_bound is not None and run.greedy_gpus_placed:
            ratios.setdefault(run.size, {})[run.repeat] = 100.0 * run.gpu_bound / run.greedy_gpus_placed
    return {size: float(np.mean(list(by_repeat.values()))) for size, by_repeat in ratios.items()}


def _plot(result: BenchResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({(s.nodes, s.pending_pods, s.size) for s in result.summaries})
    labels = [label for _, _, label in sizes]
    position = {label: i for i, label in enumerate(labels)}
    engines = list(dict.fromkeys(s.engine for s in result.summaries))
    figure, (times, quality) = plt.subplots(1, 2, figsize=(12, 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, engine in enumerate(engines):
        rows = [s for s in result.summaries if s.engine == engine and s.p50_wall_s is not None]
        # One line per node count (more pods, same cluster); no line from 100 to 1,000 nodes.
        for n, nodes in enumerate(sorted({s.nodes for s in rows})):
            same = [s for s in rows if s.nodes == nodes]
            p50 = np.array([s.p50_wall_s for s in same], dtype=float)
            p99 = np.array([s.p99_wall_s for s in same], dtype=float)
            times.errorbar(
                [position[s.size] for s in same],
                p50,
                yerr=[np.zeros_like(p50), p99 - p50],
                marker="o",
                capsize=4,
                color=colors[k % len(colors)],
                label=f"{engine} (p50, bar to p99)" if n == 0 else None,
            )
    for limit in (1.0, 5.0):
        times.axhline(limit, color="grey", linestyle=":", linewidth=1)
        times.annotate(f"{limit:g} s target", (0, limit), xytext=(2, 2), textcoords="offset points", fontsize=7)
    times.set_yscale("log")
    rotation = 0 if len(labels) <= 4 else 40
    times.set_xticks(range(len(labels)), labels, rotation=rotation, ha="right" if rotation else "center")
    times.set_xlabel("nodes x pending pods")
    times.set_ylabel("wall seconds of place() (log)")
    times.set_title("Solve time")
    times.legend(fontsize=8)
    width = 0.8 / max(1, len(engines))
    for k, engine in enumerate(engines):
        rows = [s for s in result.summaries if s.engine == engine and s.gpus_vs_greedy_pct is not None]
        x = [position[s.size] - 0.4 + width * (k + 0.5) for s in rows]
        quality.bar(x, [s.gpus_vs_greedy_pct for s in rows], width=width, label=engine)
    quality.axhline(100.0, color="grey", linestyle=":", linewidth=1)
    ratios = [s.gpus_vs_greedy_pct for s in result.summaries if s.gpus_vs_greedy_pct is not None]
    bounds = _bound_vs_greedy(result)
    if bounds:
        quality.scatter(
            [position[size] for size in bounds], list(bounds.values()), marker="_", s=600, color="black", label="LP bound"
        )
        ratios += list(bounds.values())
    quality.set_ylim(min([*ratios, 100.0]) - 5, max([*ratios, 100.0]) + 5)  # differences of a few % must show
    quality.set_xticks(range(len(labels)), labels, rotation=rotation, ha="right" if rotation else "center")
    quality.set_xlabel("nodes x pending pods")
    quality.set_ylabel("GPUs placed, % of greedy's (mean)")
    quality.set_title("GPUs placed vs greedy, same snapshots")
    quality.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
