"""`batchplace experiment …`: trace replays comparing batchplace's engines with published
baselines (a thin CLI over `experiments.fgd`, `experiments.timeline`, `experiments.plots`).

- `batchplace experiment fgd` — the FGD protocol on Alibaba's openb trace: every policy ×
  seed × batch size × pod list, in `--jobs` worker processes (or on a Ray cluster with
  `--ray ADDRESS`), with a progress bar; then the offline bound once per (pod list, seed)
  (`experiments.offline_bound`, unless `--no-bound`); writes `runs.csv`, `curves.csv`,
  `bounds.csv`, `bound_shapes.csv`, `summary.md` and PNG plots under `--out`, and prints
  the tables and the validity gate.
- `batchplace experiment timeline` — arrivals, durations, gangs, queues: the synthetic LLM
  cluster mix at a chosen load, the openb pods with their own creation/deletion times, and
  the job streams of the Acme trace's gangs and of the openb pods as jobs; `--scenario
  autoscale` runs the LLM mix on a cluster an autoscaler grows (`experiments.timeline_autoscale`).
- `batchplace experiment subgroups` — nested gangs (`experiments.subgroup_stream`): sharded
  training and prefill/decode serving jobs, each sub-group inside one rack, on an
  NVL72-style tree and the Lingjun switch tree, greedy vs `auto` vs a Volcano-like baseline.

Exit status: 0 when the runs finished (and, for `fgd` with `--require-gate`, the gate
holds), 1 when the gate fails, 2 for bad arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from batchplace.options import PartitionPartsOption
from batchplace.render import print_error
from models.duration import DurationError, parse_go_duration
from solver.rules.reservation import DEFAULT_SLA_WAITING_S

__all__ = ["experiment_app"]

experiment_app = typer.Typer(
    name="experiment",
    help="Trace replays: the FGD protocol on Alibaba's openb GPU trace, and a timeline with gangs and queues.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console(soft_wrap=False)
EXIT_INPUT_ERROR = 2


def _ints(text: str, *, what: str) -> list[int]:
    """`"42-51"` → 42…51; `"1,8,64"` → [1, 8, 64]."""
    values: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part[1:]:
                low, high = part.split("-", 1)
                values.extend(range(int(low), int(high) + 1))
            elif part:
                values.append(int(part))
    except ValueError:
        print_error(f"{what}: expected numbers like 42-51 or 1,8,64, got {text!r}")
        raise typer.Exit(EXIT_INPUT_ERROR) from None
    return values


def _names(text: str, *, allowed: tuple[str, ...], what: str) -> list[str]:
    if text == "all":
        return list(allowed)
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in allowed]
    if unknown:
        print_error(f"{what}: unknown {', '.join(unknown)}; choose from {', '.join(allowed)} or all")
        raise typer.Exit(EXIT_INPUT_ERROR)
    return names


_ACME_DIR_HELP = (
    "acme: folder holding converted_kalos_trace.csv (the Acme trace's Kalos jobs, Hu et al., NSDI '24, as converted "
    "in the hyunnnchoi/AcmeTrace fork), or its third-party-derived/ subfolder. Default: $BATCHPLACE_ACME_DIR."
)
_TRACE_DIR_HELP = (
    "Folder holding the openb trace's CSVs (openb_node_list_gpu_node.csv, openb_pod_list_*.csv) from Alibaba's "
    "clusterdata repository, cluster-trace-gpu-v2023. Default: $BATCHPLACE_OPENB_DIR."
)


def _trace_folder(explicit: Path | None, pod_lists: list[str], *, hint: str = "") -> Path:
    """The trace folder, checked before any worker starts; else one line and exit 2."""
    from experiments.trace_openb import TRACE_ENV, TRACE_SOURCE, TraceNotFound, check_trace

    try:
        return check_trace(explicit, pod_lists)
    except TraceNotFound as error:
        print_error(f"{error}: pass --trace-dir DIR or set ${TRACE_ENV}{hint}; the trace is {TRACE_SOURCE}")
        raise typer.Exit(EXIT_INPUT_ERROR) from None


def _acme_file(explicit: Path | None, *, nodes: int | None) -> Path:
    """The acme trace file, found and read once before any worker starts (and its largest
    job checked against `--nodes`); else one line and exit 2."""
    from experiments.timeline_streams import (
        ACME_ENV,
        ACME_NODES,
        AcmeTraceError,
        AcmeTraceNotFound,
        acme_jobs,
        acme_trace_file,
        check_acme_cluster,
    )

    try:
        path = acme_trace_file(explicit)
        check_acme_cluster(acme_jobs(path), nodes=nodes or ACME_NODES)
    except AcmeTraceNotFound as error:
        print_error(f"{error}: pass --acme-dir DIR or set ${ACME_ENV}; the trace is the Acme trace (Hu et al., NSDI '24)")
        raise typer.Exit(EXIT_INPUT_ERROR) from None
    except (AcmeTraceError, ValueError) as error:
        print_error(str(error))
        raise typer.Exit(EXIT_INPUT_ERROR) from None
    return path


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[last]}"),
        console=console,
    )


@experiment_app.command()
def fgd(
    policies: Annotated[str, typer.Option(help="Comma-separated policies, or all.")] = "all",
    seeds: Annotated[str, typer.Option(help="Seeds, e.g. 42-51 (the paper's) or 42,43.")] = "42-51",
    trace: Annotated[str, typer.Option(help="openb pod lists (default, gpushare40, …), comma-separated, or all (24).")] = "default",
    batch_sizes: Annotated[str, typer.Option("--batch-sizes", help="Batch sizes k for batchplace policies; pod-by-pod baselines run at k=1 only.")] = "1,8,64",
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Worker processes.")] = 2,
    ray: Annotated[str | None, typer.Option("--ray", help="Run on the Ray cluster at ADDRESS (or 'local'); needs the ray extra.")] = None,
    time_limit: Annotated[float, typer.Option("--time-limit", min=0.01, help="CP-SAT time limit per solve (s).")] = 1.0,
    partition_parts: PartitionPartsOption = 1,
    out: Annotated[Path, typer.Option(help="Output folder for CSV, Markdown and PNG.")] = Path("results/fgd"),
    require_gate: Annotated[bool, typer.Option("--require-gate", help="Exit 1 unless the paper baselines reproduce within ±0.5 points.")] = False,
    trace_dir: Annotated[Path | None, typer.Option("--trace-dir", help=_TRACE_DIR_HELP)] = None,
    bound: Annotated[bool, typer.Option("--bound/--no-bound", help="Also compute each seed's offline bound (all its arrived pods known at once, an integer program per node class): the table's bound column.")] = True,
) -> None:
    """The FGD protocol (Weng et al., ATC '23) on the openb trace: allocation and fragmentation at 130 % demand,
    and how far each policy is from the offline bound (no policy can place more GPU on that seed).

    The trace is Alibaba's cluster-trace-gpu-v2023 (openb), not shipped with batchplace: download it and pass
    --trace-dir. The validity gate compares the six paper baselines with the paper's numbers; it is "not judged"
    unless all six ran (--policies all, or random,dotprod,gpuclustering,gpupacking,bestfit,fgd).
    """
    from experiments.baselines import BASELINES
    from experiments.fgd import FgdConfig, run_sweep
    from experiments.fgd_report import (
        Verdict,
        answers_table,
        bounds_table,
        gate,
        idle_means,
        idle_table,
        markdown_table,
        summarize,
        turned_away_table,
        write_bounds_csv,
        write_curves_csv,
        write_idle_csv,
        write_runs_csv,
        write_turned_away_csv,
    )
    from experiments.offline_bound import OfflineBound, seed_bounds
    from experiments.plots import plot_fgd_curves, plot_fgd_idle
    from experiments.policies import POLICIES
    from experiments.trace_openb import POD_LISTS

    chosen = _names(policies, allowed=POLICIES, what="--policies")
    traces = _names(trace, allowed=POD_LISTS, what="--trace")
    directory = _trace_folder(trace_dir, traces)
    seed_list = _ints(seeds, what="--seeds")
    ks = _ints(batch_sizes, what="--batch-sizes")
    configs = [
        FgdConfig(policy=policy, seed=seed, trace=name, batch_size=k, time_limit_s=time_limit, partition_parts=partition_parts)
        for name in traces
        for policy in chosen
        for k in ([1] if policy in BASELINES else ks)
        for seed in seed_list
    ]
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    with _progress() as progress:
        task = progress.add_task("FGD protocol", total=len(configs), last="")
        for run in run_sweep(configs, trace_dir=directory, jobs=jobs, ray_address=ray):
            runs.append(run)
            c = run.config
            progress.update(task, advance=1, last=f"{c.trace}/{c.policy}/k={c.batch_size}/seed {c.seed}: {run.alloc_at_130:.2f} %")
        bounds: dict[tuple[str, int], OfflineBound] = {}
        if bound:  # independent of policy and batch size: once per (pod list, seed)
            keys = sorted({(c.trace, c.seed) for c in configs})
            bound_task = progress.add_task("offline bound", total=len(keys), last="")
            for (name, seed), found in seed_bounds(keys, trace_dir=directory):
                bounds[name, seed] = found
                progress.update(bound_task, advance=1, last=f"{name}/seed {seed}: {found.bound_pct:.2f} % ({found.method})")
    summaries = summarize(runs, bounds=bounds)
    write_runs_csv(runs, out / "runs.csv", bounds=bounds)
    write_curves_csv(runs, out / "curves.csv")
    write_turned_away_csv(runs, out / "turned_away.csv")
    write_idle_csv(runs, out / "idle.csv")
    table = markdown_table(summaries)
    bound_lines = ""
    if bounds:
        write_bounds_csv(bounds, out / "bounds.csv", out / "bound_shapes.csv")
        bound_lines = bounds_table(bounds)
    answer_lines = answers_table(runs)
    away_lines = turned_away_table(runs)
    idle = idle_means(runs)
    idle_lines = idle_table(idle)
    verdict, gate_lines = gate(summaries)
    (out / "summary.md").write_text("## FGD protocol at 130 % arrived GPU demand\n\n" + table
                                    + (f"\n## Offline bound per seed\n\n{bound_lines}" if bound_lines else "")
                                    + (f"\n## Who answered each batch\n\n{answer_lines}" if answer_lines else "")
                                    + (f"\n## Pods turned away by 130 %\n\n{away_lines}" if away_lines else "")
                                    + (f"\n## GPU idle after the last arrival\n\n{idle_lines}" if idle_lines else "")
                                    + "\n## Validity gate\n\n"
                                    + f"{verdict}\n\n" + "\n".join(f"- {line}" for line in gate_lines) + "\n")  # fmt: skip
    for name in traces:
        plot_fgd_curves(summaries, out, trace=name)
        plot_fgd_idle(idle, out, trace=name)
    # markup=False: the header's "[min, max]" is text, not a rich style tag.
    console.print(table, highlight=False, markup=False)
    if bound_lines:
        console.print(bound_lines, highlight=False, markup=False)
    if answer_lines:
        console.print(answer_lines, highlight=False, markup=False)
    if away_lines:
        console.print(away_lines, highlight=False, markup=False)
    if idle_lines:
        console.print(idle_lines, highlight=False, markup=False)
    console.print(f"validity gate (paper baselines, default trace, k=1, ±0.5 points): {verdict}", markup=False)
    for line in gate_lines:
        console.print("  " + line, highlight=False, markup=False)
    console.print(f"wrote {out}/runs.csv, curves.csv, turned_away.csv, idle.csv, {'bounds.csv, bound_shapes.csv, ' if bounds else ''}summary.md and plots", markup=False)
    if require_gate and verdict is not Verdict.PASS:
        raise typer.Exit(1)


@experiment_app.command()
def timeline(
    scenario: Annotated[str, typer.Option(help="llm (synthetic gangs/queues on a leaf-spine cluster), openb (the trace's own times), acme (the Acme trace's Kalos gangs on a Kalos-like leaf-spine cluster), openb-jobs (the openb pods as jobs under the llm policies), colocation (offline GPU/CPU hours with and without online/offline colocation), autoscale (a cluster that grows under a Cluster-Autoscaler-like model: nodes bought, idle, waits per scheduler; default 24 h), or all (llm and openb).")] = "all",
    policies: Annotated[str, typer.Option(help="Comma-separated policies, or all.")] = "all",
    seeds: Annotated[str, typer.Option(help="Seeds of the synthetic workload (acme and openb-jobs are their trace's, the same for every seed).")] = "42",
    hours: Annotated[float, typer.Option(min=0.1, help="Simulated horizon of the llm, acme and openb-jobs scenarios (h); acme and openb-jobs keep the jobs arriving in it.")] = 12.0,
    nodes: Annotated[int | None, typer.Option(min=1, help="Cluster nodes of the llm (default 128), acme (default 304, at least 128) and openb-jobs (default all 1,213; fewer are spread over the node list) scenarios; autoscale: the base nodes that never leave (default 4).")] = None,
    load: Annotated[float, typer.Option(min=0.1, help="llm: offered load, the arrival rate × mean GPU-time per job over the cluster's GPUs (e.g. 0.9, 1.1, 1.3); the tables and CSV name it.")] = 1.1,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Worker processes.")] = 2,
    trace: Annotated[str, typer.Option(help="openb pod list for the openb scenario.")] = "default",
    compress: Annotated[float, typer.Option(min=1.0, help="openb, openb-jobs, acme: divide arrival times by this (durations kept); openb as recorded keeps < 1 % of GPUs busy; acme: 15 with --hours 144 asks ~1.1 × the Kalos-like cluster's GPU-time; openb-jobs: 300 with --hours 1 --nodes 200 keeps it busy.")] = 1.0,
    sla_waiting_time: Annotated[str, typer.Option("--sla-waiting-time", help="batchplace's default sla-waiting-time for every job (a Go duration), as the controller's flag: its default is the controller's; none turns the guard off (batchplace then preempts and reclaims). volcano runs with no sla, volcano-sla with its own 2h.")] = f"{DEFAULT_SLA_WAITING_S / 60:g}m",
    out: Annotated[Path, typer.Option(help="Output folder.")] = Path("results/timeline"),
    trace_dir: Annotated[Path | None, typer.Option("--trace-dir", help=_TRACE_DIR_HELP + " Read by --scenario openb and openb-jobs.")] = None,
    acme_dir: Annotated[Path | None, typer.Option("--acme-dir", help=_ACME_DIR_HELP)] = None,
    capability_gpus: Annotated[int, typer.Option("--capability-gpus", min=8, help="autoscale: the training queue's GPU capability (its gangs above it are left out).")] = 64,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=0.01, help="batchplace's budget per cycle (s) in every scenario but colocation (which keeps its own 2 s); default: the controller's, as shipped.")] = None,
) -> None:
    """Timeline protocol: utilization, queueing delay, JCT, fairness, evictions, HyperNodes per gang, solver time.

    The openb and openb-jobs scenarios replay Alibaba's cluster-trace-gpu-v2023 (pass --trace-dir), acme the Acme
    trace's Kalos jobs (pass --acme-dir); the llm scenario needs no trace.
    """
    import numpy as np

    from experiments.plots import plot_delay_by_size, plot_queueing_cdf, plot_timeline_series, plot_wait_classes
    from experiments.timeline import (
        LLM_POLICIES,
        OPENB_POLICIES,
        TimelineConfig,
        run_timelines,
        timeline_markdown,
        timeline_policy_summary,
        timeline_delay_breakdown,
        write_timeline_csv,
    )
    from experiments.timeline_streams import STREAMS

    if scenario == "colocation":
        _colocation_timeline(hours if hours != 12.0 else 24.0, out)
        return
    try:
        sla_waiting_s = None if sla_waiting_time == "none" else parse_go_duration(sla_waiting_time)
    except DurationError as error:
        print_error(f"--sla-waiting-time: {error}")
        raise typer.Exit(EXIT_INPUT_ERROR) from None
    budget = {} if time_limit is None else {"time_limit_s": time_limit}  # None: the configs' own, the controller's
    if scenario == "autoscale":
        from experiments.timeline_autoscale import AUTOSCALE_POLICIES, AutoscaleConfig

        chosen = _names(policies, allowed=AUTOSCALE_POLICIES, what="--policies") if policies != "all" else AUTOSCALE_POLICIES
        _autoscale_timeline([AutoscaleConfig(policy=policy, seed=seed, hours=hours if hours != 12.0 else 24.0, load=load,
                                             base_nodes=nodes or 4, training_capability_gpus=capability_gpus,
                                             sla_waiting_s=sla_waiting_s, **budget)
                             for policy in chosen for seed in _ints(seeds, what="--seeds")], out, jobs=jobs)  # fmt: skip
        return
    scenarios = ["llm", "openb"] if scenario == "all" else [scenario]
    if any(s not in ("llm", "openb", *STREAMS) for s in scenarios):
        print_error(f"--scenario: choose llm, openb, acme, openb-jobs, colocation or all, got {scenario!r}")
        raise typer.Exit(EXIT_INPUT_ERROR)
    directory = acme = None
    if "openb" in scenarios or "openb-jobs" in scenarios:
        directory = _trace_folder(trace_dir, [trace], hint=" (or --scenario llm, which needs none)")
    if "acme" in scenarios:
        acme = _acme_file(acme_dir, nodes=nodes)
    configs = []
    for name in scenarios:
        allowed = OPENB_POLICIES if name == "openb" else LLM_POLICIES
        for policy in _names(policies, allowed=allowed, what="--policies") if policies != "all" else allowed:
            for seed in _ints(seeds, what="--seeds"):
                configs.append(TimelineConfig(scenario=name, policy=policy, seed=seed, hours=hours, trace=trace,
                                              compress=compress, sla_waiting_s=sla_waiting_s, load=load, nodes=nodes,
                                              **budget))  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    results = []
    with _progress() as progress:
        task = progress.add_task("timeline", total=len(configs), last="")
        for result in run_timelines(configs, trace_dir=directory, acme_dir=acme, jobs=jobs):
            results.append(result)
            progress.update(task, advance=1, last=f"{result.config.scenario}/{result.config.policy}")
    write_timeline_csv(results, out)
    table = timeline_markdown(results) + "\n" + timeline_policy_summary(results) + "\n" + timeline_delay_breakdown(results)
    (out / "summary.md").write_text(table)
    for name in scenarios:
        chosen = [r for r in results if r.config.scenario == name and r.config.seed == results[0].config.seed]
        if chosen:
            plot_timeline_series({r.config.policy: (r.times_h, r.utilization_pct) for r in chosen},
                                 out / f"timeline_util_{name}.png", title=f"GPU allocated over time — {name}")  # fmt: skip
            plot_queueing_cdf({r.config.policy: r.delays_by_queue for r in chosen},
                              out / f"timeline_queueing_{name}.png", title=f"queueing delay — {name}")  # fmt: skip
        waits: dict[str, list] = {}  # policy → its jobs' delay rows, seeds pooled
        for r in results:
            if r.config.scenario == name:
                waits.setdefault(r.config.policy, []).extend(r.delay_rows)
        waits = {policy: rows for policy, rows in waits.items() if rows}
        if waits:
            plot_wait_classes(waits, out / f"timeline_wait_classes_{name}.png",
                              title=f"where a training job's wait goes — {name}, seeds pooled")  # fmt: skip
        if name in ("llm", "acme"):  # the streams of gangs
            runs = [r for r in results if r.config.scenario == name]
            pooled: dict[str, dict[int, list]] = {}
            for r in runs:
                for size, values in r.delays_by_gpus.items():
                    pooled.setdefault(r.config.policy, {}).setdefault(size, []).extend(values.tolist())
            plot_delay_by_size({p: {s: np.array(v) for s, v in by.items()} for p, by in pooled.items()},
                               out / f"timeline_delay_by_size_{name}.png", title=f"training delay by job size — {name}, seeds pooled")  # fmt: skip
            plot_timeline_series({r.config.policy: (r.times_h, r.reserved_pct) for r in chosen},
                                 out / f"timeline_reserved_{name}.png", ylabel="GPUs reserved (%)", ylim=None,
                                 title=f"GPUs reserved for overdue jobs — {name}, seed {results[0].config.seed}")  # fmt: skip
    console.print(table, highlight=False, markup=False)
    console.print(f"wrote {out}/timeline_*.csv, summary.md and plots", markup=False)


def _autoscale_timeline(configs: list, out: Path, *, jobs: int) -> None:  # list[AutoscaleConfig]
    """`timeline --scenario autoscale`: each policy and seed on the cluster that grows; the
    table, `timeline_autoscale*.csv`, and the bought and idle bought GPUs over time (first seed)."""
    from experiments.plots import plot_timeline_series
    from experiments.timeline_autoscale import autoscale_markdown, run_autoscales, write_autoscale_csv

    out.mkdir(parents=True, exist_ok=True)
    results = []
    with _progress() as progress:
        task = progress.add_task("autoscale", total=len(configs), last="")
        for result in run_autoscales(configs, jobs=jobs):
            results.append(result)
            progress.update(task, advance=1, last=f"{result.config.policy}/{result.config.seed}")
    results.sort(key=lambda r: (configs.index(r.config),))
    write_autoscale_csv(results, out)
    table = autoscale_markdown(results)
    (out / "summary_autoscale.md").write_text(table)
    first = [r for r in results if r.config.seed == results[0].config.seed]
    for series, name, ylabel in (("bought_gpus", "bought", "GPUs on bought nodes"), ("idle_bought_gpus", "idle", "idle GPUs on bought nodes")):
        plot_timeline_series({r.config.policy: (r.times_h, getattr(r, series)) for r in first}, out / f"timeline_autoscale_{name}.png",
                             ylabel=ylabel, ylim=None, title=f"{ylabel} — autoscale, seed {results[0].config.seed}")  # fmt: skip
    console.print(table, highlight=False, markup=False)
    console.print(f"wrote {out}/timeline_autoscale*.csv, summary_autoscale.md and timeline_autoscale_*.png", markup=False)


def _colocation_timeline(hours: float, out: Path) -> None:
    """`timeline --scenario colocation`: the same cluster and workload without colocation, with
    it for cpu and memory, and with GPU lending too."""
    from experiments.plots import plot_timeline_series
    from experiments.timeline_colocation import (
        ColocationConfig,
        colocation_markdown,
        run_colocation,
        write_colocation_csv,
    )

    out.mkdir(parents=True, exist_ok=True)
    modes = ((False, False), (True, False), (True, True))
    results = [run_colocation(ColocationConfig(colocation=on, gpu_lending=lending, hours=hours)) for on, lending in modes]
    write_colocation_csv(results, out)
    table = colocation_markdown(results)
    (out / "summary_colocation.md").write_text(table)
    plot_timeline_series(
        {f"colocation {r.config.mode}": (r.times_h, r.gpu_busy) for r in results},
        out / "timeline_util_colocation.png",
        title="GPUs allocated over time — colocation",
    )
    console.print(table, highlight=False, markup=False)
    console.print(f"wrote {out}/timeline_colocation.csv, summary_colocation.md and timeline_util_colocation.png", markup=False)


_LINGJUN_DIR_HELP = (
    "lingjun: folder holding topo.csv of Alibaba's Lingjun 2023 dataset (alibaba/alibaba-lingjun-dataset-2023, data/), "
    "or the file. Default: $BATCHPLACE_LINGJUN_DIR."
)


@experiment_app.command()
def subgroups(
    clusters: Annotated[str, typer.Option(help="nvl72 (racks of 18 × 4-GPU nodes under leaves and spines), lingjun (the Lingjun switch tree, needs --lingjun-dir), comma-separated, or all.")] = "all",
    policies: Annotated[str, typer.Option(help="greedy, auto, volcano (Volcano-like sub-groups one after another), comma-separated, or all.")] = "all",
    seeds: Annotated[str, typer.Option(help="Seeds of the job stream, e.g. 42 or 42-44.")] = "42",
    hours: Annotated[float, typer.Option(min=0.05, help="Simulated horizon (h): jobs arrive in it, the run stops at it.")] = 3.0,
    load: Annotated[float, typer.Option(min=0.1, help="Offered load: arrival rate × mean GPU-time per job over the cluster's GPUs.")] = 1.0,
    racks: Annotated[int, typer.Option(min=4, help="nvl72: racks of 18 nodes (56: 1,008 nodes).")] = 56,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=0.01, help="batchplace's budget per cycle (s); default: the solver's own default, as shipped.")] = None,
    out: Annotated[Path, typer.Option(help="Output folder.")] = Path("results/subgroups"),
    lingjun_dir: Annotated[Path | None, typer.Option("--lingjun-dir", help=_LINGJUN_DIR_HELP)] = None,
) -> None:
    """Nested gangs: a stream of sharded training and prefill/decode serving jobs, each shard or replica group inside
    one rack, on an NVL72-style tree and the Lingjun switch tree — sub-group domain violations (judged by the
    checker), jobs started, mean and longest wait, whole racks left free after each cycle, solve time p50/p99."""
    from experiments.plots import plot_timeline_series
    from experiments.subgroup_stream import (
        SUBGROUP_CLUSTERS,
        SUBGROUP_POLICIES,
        SubGroupConfig,
        make_cluster,
        run_subgroup_stream,
        subgroup_markdown,
        write_subgroup_csv,
    )
    from experiments.subgroup_workload import LINGJUN_ENV, LINGJUN_SOURCE, LingjunNotFound, lingjun_topology_file

    chosen_clusters = _names(clusters, allowed=SUBGROUP_CLUSTERS, what="--clusters")
    chosen_policies = _names(policies, allowed=SUBGROUP_POLICIES, what="--policies")
    seed_list = _ints(seeds, what="--seeds")
    lingjun_file = None
    if "lingjun" in chosen_clusters:
        try:
            lingjun_file = lingjun_topology_file(lingjun_dir)
        except LingjunNotFound as error:
            print_error(f"{error}: pass --lingjun-dir DIR or set ${LINGJUN_ENV} (or --clusters nvl72); the topology is {LINGJUN_SOURCE}")
            raise typer.Exit(EXIT_INPUT_ERROR) from None
    try:
        built = {name: make_cluster(name, racks=racks, lingjun_file=lingjun_file) for name in chosen_clusters}
    except ValueError as error:
        print_error(f"--lingjun-dir: {error}")
        raise typer.Exit(EXIT_INPUT_ERROR) from None
    configs = [SubGroupConfig(cluster=name, policy=policy, seed=seed, hours=hours, load=load, time_limit_s=time_limit, racks=racks)
               for name in chosen_clusters for seed in seed_list for policy in chosen_policies]  # fmt: skip
    results = []
    with _progress() as progress:
        runs = progress.add_task("runs", total=len(configs), last="")
        for config in configs:
            label = f"{config.cluster}/{config.policy}/seed {config.seed}"
            cycles = progress.add_task(label, total=None, last="")

            def advance(done: int, total: int, task: int = cycles) -> None:
                progress.update(task, completed=done, total=total)

            results.append(run_subgroup_stream(config, built[config.cluster], on_cycle=advance))
            progress.remove_task(cycles)
            progress.update(runs, advance=1, last=f"{label}: {results[-1].jobs_started} started")
    out.mkdir(parents=True, exist_ok=True)
    write_subgroup_csv(results, out)
    table = subgroup_markdown(results)
    (out / "summary_subgroups.md").write_text(table)
    for name in chosen_clusters:
        first = [r for r in results if r.config.cluster == name and r.config.seed == seed_list[0]]
        plot_timeline_series({r.config.policy: (r.times_h, r.racks_free.astype(float)) for r in first},
                             out / f"subgroups_racks_free_{name}.png", ylabel="whole racks free", ylim=None,
                             title=f"whole racks free after each cycle — {name}, seed {seed_list[0]}")  # fmt: skip
    console.print(table, highlight=False, markup=False)
    console.print(f"wrote {out}/subgroups.csv, subgroups_cycles.csv, summary_subgroups.md and subgroups_racks_free_*.png", markup=False)
