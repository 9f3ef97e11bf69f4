"""The `batchplace` command: solve, rebalance, snapshot, what-if, demo, bench, serve, controller, experiment.

Every command reads input through `models.loaders`, solves through `solver.place`, and
prints. Input errors (`SnapshotError`, unreadable files) print one line naming file,
document, object and field, and exit with status 2 — never a traceback.
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import replace
from pathlib import Path
from collections.abc import Callable
from typing import Annotated, Optional, TypeVar

import typer
from rich.console import Console

from batchplace.bench_command import bench
from batchplace.clusters_option import ClusterOptionError, fleet_of_options, fleet_table
from batchplace.controller_command import controller
from batchplace.demo import run_demo
from batchplace.experiment_command import experiment_app
from batchplace.options import (
    ColocationMarginOption,
    ColocationOption,
    PartitionPartsOption,
    RayAddressOption,
    SolverMemoryOption,
    TypicalShapesOption,
    UsageMaxAgeOption,
    UsageThresholdOption,
    UsageWeightOption,
    colocation_policy_of,
    ray_address_of,
    scheduler_names_of,
    solver_memory_bytes,
    typical_shapes_of_file,
    usage_policy_of,
)
from batchplace.render import advice_tables, decision_tables, print_error, print_warning
from batchplace.scale_up_command import ScaleUpOption, scale_up_tables
from batchplace.serve_command import serve
from batchplace.whatif_command import what_if
from models.errors import SnapshotError
from models.loaders import LoadResult, load_snapshot_files, snapshot_to_json
from models.loaders.kube_yaml import manifest_files
from models.node_templates import load_node_templates
from models.snapshot import ColocationPolicy, UsagePolicy
from solver.bound import lp_bound
from solver.fleet import place_fleet
from solver.place import ENGINES, SolveConfig, place
from solver.rebalance import RebalanceConfig, cycle_snapshot, plan_rebalance
from solver.scale_up import plan_scale_up

__all__ = ["app", "main"]

EXIT_INPUT_ERROR = 2
LiveResult = TypeVar("LiveResult")
DEFAULT_SCHEDULER_NAMES = ("batchplace", "volcano")

app = typer.Typer(
    name="batchplace",
    help=(
        "Batch placement for Kubernetes GPU clusters: each scheduling cycle solved as one "
        "optimization problem (gangs, queue quotas, fair shares, preemption, topology)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
stdout = Console(soft_wrap=False)
log = logging.getLogger("batchplace")

FilesArgument = Annotated[
    list[Path],
    typer.Argument(
        help="Kubernetes YAML files (multi-document or `kind: List`): Nodes, Pods, Volcano Jobs, "
        "PodGroups, Queues, HyperNodes, PriorityClasses, or directories of them (their .yaml, .yml and .json "
        "files). Use `-` for standard input.",
        show_default=False,
    ),
]
SchedulerNameOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--scheduler-name",
        help="Pending pods with this spec.schedulerName are placed (repeatable). "
        "Default: batchplace and volcano. Running pods of any scheduler always use capacity.",
    ),
]


def _load(files: list[Path], scheduler_names: list[str] | None) -> LoadResult:
    names = scheduler_names_of(scheduler_names, default=DEFAULT_SCHEDULER_NAMES)
    try:
        result = load_snapshot_files(files, scheduler_names=names)
    except SnapshotError as error:
        print_error(str(error))
        raise typer.Exit(EXIT_INPUT_ERROR) from None
    except OSError as error:
        print_error(f"{error.filename or ''}: {error.strerror}")
        raise typer.Exit(EXIT_INPUT_ERROR) from None
    for warning in result.warnings:
        print_warning(warning)
    return result


ClusterOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--cluster",
        help="NAME=FILE[,FILE...]: one cluster's YAML (repeat per cluster). With it, FILES are the jobs "
        "submitted to the fleet (and queues, priority classes); each job is placed inside one cluster.",
    ),
]


@app.command()
def solve(
    files: Annotated[
        Optional[list[Path]],
        typer.Argument(
            help="Kubernetes YAML files (multi-document or `kind: List`): Nodes, Pods, Volcano Jobs, PodGroups, "
            "Queues, HyperNodes, PriorityClasses, or directories of them (their .yaml, .yml and .json files, "
            "as `kubectl apply -f DIR` reads them). Use `-` for standard input. With --cluster: the submitted jobs.",
            show_default=False,
        ),
    ] = None,
    engine: Annotated[
        str,
        typer.Option(help=f"Placement engine: {', '.join(ENGINES)}. auto = CP-SAT with greedy fallback."),
    ] = "auto",
    output: Annotated[str, typer.Option(help="table (for people) or json (the output contract).")] = "table",
    time_limit: Annotated[
        float,
        typer.Option(
            "--time-limit",
            min=0.01,
            max=3600,
            help="Solver time budget in seconds, as an idle machine spends it: the same input gives the same "
            "answer every run; a busy machine takes longer, up to 10 times it.",
        ),
    ] = 5.0,
    scheduler_name: SchedulerNameOption = None,
    bound: Annotated[
        bool, typer.Option("--bound", help="Also report the LP relaxation's upper bound on throughput (pulp).")
    ] = False,
    solver_memory: SolverMemoryOption = None,
    typical_shapes: TypicalShapesOption = None,
    usage_threshold: UsageThresholdOption = None,
    usage_weight: UsageWeightOption = None,
    usage_max_age: UsageMaxAgeOption = None,
    colocation_margin: ColocationMarginOption = None,
    colocation: ColocationOption = True,
    cluster: ClusterOption = None,
    scale_up: ScaleUpOption = None,
    partition_parts: PartitionPartsOption = 1,
    ray_address: RayAddressOption = None,
) -> None:
    """Place the pending pods of FILES and print binds, evictions and the reason for each pending PodGroup.

    With --cluster, over several clusters at once: each job lands in one cluster (docs/multi-cluster.md).
    With --scale-up, also the nodes to buy so that waiting gangs start (docs/scale-up.md)."""
    if engine not in ENGINES:
        print_error(f"--engine: unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
        raise typer.Exit(EXIT_INPUT_ERROR)
    if output not in ("table", "json"):
        print_error(f"--output: must be table or json, got {output!r}")
        raise typer.Exit(EXIT_INPUT_ERROR)
    memory_limit_bytes = solver_memory_bytes(solver_memory)
    shapes = typical_shapes_of_file(typical_shapes)
    usage_policy = usage_policy_of(usage_threshold, usage_weight, usage_max_age)
    colocation_policy = colocation_policy_of(colocation_margin, colocation)
    config = SolveConfig(
        engine=engine,  # type: ignore[arg-type]
        time_limit_s=time_limit,
        memory_limit_bytes=memory_limit_bytes,
        typical_shapes=shapes,
        partition_parts=partition_parts,
        ray_address=ray_address_of(ray_address),
    )
    if cluster and scale_up is not None:
        print_error("--scale-up: not with --cluster (a plan is for one cluster)")
        raise typer.Exit(EXIT_INPUT_ERROR)
    templates = None
    if scale_up is not None:
        try:
            templates = load_node_templates(scale_up)
        except SnapshotError as error:
            print_error(str(error))
            raise typer.Exit(EXIT_INPUT_ERROR) from None
    if cluster:
        _solve_fleet(
            cluster,
            files or [],
            scheduler_name,
            config=config,
            usage_policy=usage_policy,
            colocation_policy=colocation_policy,
            output=output,
        )
        return
    if not files:
        print_error("FILES: give the YAML files to solve (or --cluster NAME=FILE for several clusters)")
        raise typer.Exit(EXIT_INPUT_ERROR)
    loaded = _load(files, scheduler_name)
    snapshot = loaded.snapshot.with_usage_policy(usage_policy).model_copy(update={"colocation_policy": colocation_policy})
    decision = place(snapshot, config)
    relaxation = lp_bound(snapshot) if bound else None
    plan = None
    if templates is not None:
        try:
            plan = plan_scale_up(snapshot, templates, config=config, decision=decision, source=str(scale_up))
        except SnapshotError as error:
            print_error(str(error))
            raise typer.Exit(EXIT_INPUT_ERROR) from None
    if output == "json":
        contract = decision.to_contract()
        if relaxation is not None:
            contract["lp_bound"] = relaxation
        if plan is not None:
            contract["scale_up"] = plan.to_contract()
        sys.stdout.write(json.dumps(contract, indent=2) + "\n")
    else:
        stdout.print(decision_tables(decision))
        if plan is not None:
            stdout.print(scale_up_tables(plan))
        if relaxation is not None:
            share = f" ({decision.objective / relaxation:.1%} of it)" if decision.objective and relaxation else ""
            stdout.print(f"LP bound on throughput: {relaxation:.0f}; this placement: {decision.objective or 0:.0f}{share}")


def _solve_fleet(
    cluster_options: list[str],
    jobs_files: list[Path],
    scheduler_names: list[str] | None,
    *,
    config: SolveConfig,
    usage_policy: UsagePolicy,
    colocation_policy: ColocationPolicy,
    output: str,
) -> None:
    """`solve --cluster …`: merge, solve once, print the merged decision and where each job went."""
    names = scheduler_names_of(scheduler_names, default=DEFAULT_SCHEDULER_NAMES)
    try:
        fleet, warnings = fleet_of_options(cluster_options, jobs_files, scheduler_names=names)
    except (SnapshotError, ClusterOptionError) as error:
        print_error(str(error))
        raise typer.Exit(EXIT_INPUT_ERROR) from None
    except OSError as error:
        print_error(f"{error.filename or ''}: {error.strerror}")
        raise typer.Exit(EXIT_INPUT_ERROR) from None
    for warning in warnings:
        print_warning(warning)
    snapshot = fleet.snapshot.with_usage_policy(usage_policy).model_copy(update={"colocation_policy": colocation_policy})
    fleet = replace(fleet, snapshot=snapshot)
    decided = place_fleet(fleet, config)
    if output == "json":
        sys.stdout.write(json.dumps(decided.to_contract(), indent=2) + "\n")
    else:
        stdout.print(decision_tables(decided.decision))
        stdout.print(fleet_table(fleet, decided))


@app.command()
def rebalance(
    files: FilesArgument,
    engine: Annotated[
        str,
        typer.Option(help=f"Engine of the solve and of the advice: {', '.join(ENGINES)}. auto = CP-SAT with greedy fallback."),
    ] = "auto",
    output: Annotated[str, typer.Option(help="table (for people) or json (what /v1/what-if returns as `rebalance`).")] = "table",
    time_limit: Annotated[
        float, typer.Option("--time-limit", min=0.01, max=3600, help="Time limit in seconds, of the solve and of the advice each.")
    ] = 5.0,
    scheduler_name: SchedulerNameOption = None,
    solver_memory: SolverMemoryOption = None,
    usage_threshold: UsageThresholdOption = None,
    usage_max_age: UsageMaxAgeOption = None,
) -> None:
    """Advise which running pods to move off the hot nodes of FILES, and where (batchplace evicts nothing).

    As `POST /v1/what-if` with `rebalance: true`: FILES' pending pods are solved first, and the
    advice is on the cluster as that cycle leaves it. Node usage comes from the
    `batchplace.io/usage` annotation."""
    if engine not in ENGINES:
        print_error(f"--engine: unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
        raise typer.Exit(EXIT_INPUT_ERROR)
    if output not in ("table", "json"):
        print_error(f"--output: must be table or json, got {output!r}")
        raise typer.Exit(EXIT_INPUT_ERROR)
    memory_limit_bytes = solver_memory_bytes(solver_memory)
    usage_policy = usage_policy_of(usage_threshold, None, usage_max_age)
    loaded = _load(files, scheduler_name)
    snapshot = loaded.snapshot.with_usage_policy(usage_policy)
    decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=time_limit, memory_limit_bytes=memory_limit_bytes))  # type: ignore[arg-type]
    config = RebalanceConfig(engine=engine, time_limit_s=time_limit, memory_limit_bytes=memory_limit_bytes)  # type: ignore[arg-type]
    advice = plan_rebalance(cycle_snapshot(snapshot, decision.placement), config)
    if output == "json":
        sys.stdout.write(advice.model_dump_json(indent=2) + "\n")
    else:
        stdout.print(advice_tables(advice))


@app.command()
def snapshot(files: FilesArgument, scheduler_name: SchedulerNameOption = None) -> None:
    """Print the validated snapshot of FILES as JSON (the form the HTTP API takes)."""
    loaded = _load(files, scheduler_name)
    sys.stdout.write(snapshot_to_json(loaded.snapshot) + "\n")


@app.command()
def demo(
    files: Annotated[
        Optional[list[Path]],
        typer.Argument(
            help="With --live: your own manifests (files or directories, as for solve) instead of the seed "
            "examples, applied to the local API server all at once; every pending pod is handed to batchplace.",
            show_default=False,
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the verdict lines.")] = False,
    live: Annotated[
        bool,
        typer.Option(
            "--live",
            help="Run the examples (or FILE...) on a local etcd and kube-apiserver with the real controller loop. "
            "The first run builds kube-apiserver (Debian, about 10 minutes, cached); "
            "BATCHPLACE_KUBE_APISERVER=PATH uses a kube-apiserver binary you have instead.",
        ),
    ] = False,
    clusters: Annotated[
        Optional[int],
        typer.Option("--clusters", min=2, max=3, help="With --live: the multi-cluster example on a manager and this "
                     "many worker clusters (each a local kube-apiserver), through the manager controller."),
    ] = None,
) -> None:
    """Solve every seed example (no cluster needed) and print expected vs got; with --live, run them
    (or your FILE...) on a local control plane."""
    if clusters is not None and not live:
        print_error("--clusters: only with --live (the multi-cluster demo runs real clusters)")
        raise typer.Exit(EXIT_INPUT_ERROR)
    if files and not live:
        print_error(f"{files[0]}: FILE only with --live (to place your own manifests without a cluster: batchplace solve FILE)")
        raise typer.Exit(EXIT_INPUT_ERROR)
    if files and clusters is not None:
        print_error(f"{files[0]}: FILE not with --clusters (the multi-cluster demo runs its own example)")
        raise typer.Exit(EXIT_INPUT_ERROR)
    if files:
        _live_manifests(files)
        return
    if clusters is not None:
        from batchplace.live_demo_fleet import run_live_fleet_demo  # imported here: it needs the Kubernetes client

        results = [(None, verdict) for verdict in _without_traceback(lambda: run_live_fleet_demo(stdout, clusters=clusters))]
        quiet = True
    elif live:
        from batchplace.live_demo import run_live_demo  # imported here: it needs the Kubernetes client

        results = [(None, verdict) for verdict in _without_traceback(lambda: run_live_demo(stdout))]
        quiet = True
    else:
        results = run_demo()
    for decision, verdict in results:
        if not quiet:
            stdout.rule(f"[bold]{verdict.scenario}")
            stdout.print(decision_tables(decision))
    stdout.rule("[bold]verdicts")
    for _, verdict in results:
        mark = "[green]OK  [/green]" if verdict.ok else "[red]FAIL[/red]"
        stdout.print(f"{mark} {verdict.scenario}: expected {verdict.expected}; got {verdict.got}", highlight=False)
    failed = sum(not verdict.ok for _, verdict in results)
    if failed:
        stdout.print(f"[red]{failed} of {len(results)} scenarios did not come out as expected[/red]")
        raise typer.Exit(1)
    stdout.print(f"[green]all {len(results)} scenarios came out as expected[/green]")


def _live_manifests(files: list[Path]) -> None:
    """`demo --live FILE...`: the files are read and checked as `solve` reads them first, so
    bad input stops before any server starts."""
    if any(str(path) == "-" for path in files):
        print_error("-: --live reads files (standard input is for solve)")
        raise typer.Exit(EXIT_INPUT_ERROR)
    loaded = _load(files, None)
    claimed = [pod.key for pod in loaded.snapshot.pods if pod.resource_claims]
    if claimed:
        # The local API server is v1.20: it drops a pod's spec.resourceClaims, so the pods
        # would be placed without their devices — refused rather than shown wrong.
        print_error(
            f"{files[0]}: pod {claimed[0]} names DRA resource claims, which the local API server of --live "
            "(Kubernetes 1.20) drops from pods; place the file with `batchplace solve`, or run the controller "
            "against a 1.34+ cluster (docs/dra.md)"
        )
        raise typer.Exit(EXIT_INPUT_ERROR)
    paths = [Path(path) for file in files for path in manifest_files(file)]
    from batchplace.live_demo import run_live_manifests  # imported here: it needs the Kubernetes client

    summaries = _without_traceback(lambda: run_live_manifests(stdout, paths))
    stdout.rule("[bold]bound")
    for line in summaries:
        stdout.print(line, highlight=False, soft_wrap=True)


def _without_traceback(run_live: Callable[[], LiveResult]) -> LiveResult:
    """A local control plane that cannot start (no etcd, no kube-apiserver, a failed build) is
    one line naming what is missing, exit status 2."""
    from controller.testing.control_plane import ControlPlaneError

    try:
        return run_live()
    except ControlPlaneError as error:
        print_error(f"--live: {error}")
        raise typer.Exit(EXIT_INPUT_ERROR) from None


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
    app()


app.command(name="bench")(bench)
app.command(name="serve")(serve)
app.command(name="what-if")(what_if)
app.command(name="controller")(controller)
app.add_typer(experiment_app, name="experiment")
