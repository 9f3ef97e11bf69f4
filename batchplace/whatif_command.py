"""`batchplace what-if`: "if I submit these jobs now (or add or drain these nodes), what happens?"

The question `POST /v1/what-if` answers, asked of YAML files: FILES are the base cluster (as
`batchplace solve` reads them), `--add-jobs` and `--add-nodes` the objects to add, `--drain`
the nodes to drain. It is answered by the service's own `service.jobs.answer_what_if`, so
`--output json` is the API's response body for the same input (`base` is `posted_yaml`:
the base came as YAML) and the table shows the same verdicts. Options are validated by the
API's own `WhatIfOptions`. Bad input is one line naming file, document, object and field,
or the flag, and exit status 2. The service is imported when the command runs, so other
commands start without it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from pydantic import ValidationError
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from batchplace.options import SolverMemoryOption, TypicalShapesOption, solver_memory_bytes, typical_shapes_of_file
from batchplace.scale_up_command import ScaleUpOption, scale_up_tables
from batchplace.render import advice_tables, decision_tables, print_error, print_warning
from models.errors import Location, SnapshotError
from models.loaders import load_snapshot_documents
from models.loaders.kube_yaml import read_manifest_documents
from models.node_templates import load_node_templates
from solver.place import ENGINES, SolveConfig
from solver.whatif import Changes, JobVerdict

if TYPE_CHECKING:
    from service.jobs import WhatIfAnswer

__all__ = ["what_if"]

EXIT_INPUT_ERROR = 2
DRAIN_FLAG = "--drain"
_FLAGS = {"engine": "--engine", "time_limit_s": "--time-limit", "objective_order": "--objective-order"}
stdout = Console(soft_wrap=False)


def what_if(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="The base cluster: Kubernetes YAML files (Nodes, running and pending Pods, Volcano Jobs, PodGroups, "
            "Queues, HyperNodes, PriorityClasses) or directories of them, as `solve` reads them. `-` for standard input.",
            show_default=False,
        ),
    ],
    add_jobs: Annotated[
        Optional[list[Path]],
        typer.Option(
            "--add-jobs",
            metavar="FILE",
            help="FILE of jobs to submit now (repeatable): Volcano Jobs, Kubeflow PyTorchJobs, PodGroups with their "
            "pending Pods, or bare pending Pods, with the DRA ResourceClaims or ResourceClaimTemplates their pods name. "
            "A directory: its .yaml, .yml and .json files.",
        ),
    ] = None,
    add_nodes: Annotated[
        Optional[list[Path]],
        typer.Option("--add-nodes", metavar="FILE", help="FILE of Nodes (and Numatopology) to add (repeatable)."),
    ] = None,
    drain: Annotated[
        Optional[list[str]],
        typer.Option(
            DRAIN_FLAG,
            metavar="NODE",
            help="NODE to drain (repeatable): cordoned, its running pods evicted — a PodGroup's pods pending again, "
            "others dropped — as `kubectl drain`.",
        ),
    ] = None,
    rebalance: Annotated[
        bool,
        typer.Option(
            "--rebalance",
            help="Also advise which running pods to move off hot nodes, and where, on the cluster as this solve "
            "leaves it (advice only: nothing is evicted).",
        ),
    ] = False,
    engine: Annotated[str, typer.Option(help=f"Placement engine: {', '.join(ENGINES)}. auto = CP-SAT with greedy fallback.")] = "auto",
    time_limit: Annotated[float, typer.Option("--time-limit", help="Solver time limit in seconds (0-3600).")] = 5.0,
    objective_order: Annotated[
        Optional[str],
        typer.Option(
            "--objective-order",
            metavar="TIER,TIER,...",
            help="Objective tiers, most important first, comma-separated (fairness, throughput, disruption, locality, "
            "usage, packing); unlisted tiers follow in that order.",
        ),
    ] = None,
    typical_shapes: TypicalShapesOption = None,
    solver_memory: SolverMemoryOption = None,
    scale_up: ScaleUpOption = None,
    output: Annotated[str, typer.Option(help="table (for people) or json (the body `POST /v1/what-if` returns).")] = "table",
) -> None:
    """Would these jobs start now? POST /v1/what-if, asked of YAML files.

    Per added job: does it start this cycle, on which nodes, whom it preempts — and if not, the
    blocking rules with their numbers and how many GPUs it is short. The same question and
    answer as `POST /v1/what-if` (docs/service.md). Example:
    batchplace what-if cluster.yaml --add-jobs finetune.yaml --drain gpu-3"""
    if output not in ("table", "json"):
        print_error(f"--output: must be table or json, got {output!r}")
        raise typer.Exit(EXIT_INPUT_ERROR)
    config = _solve_config(engine, time_limit, objective_order, typical_shapes, solver_memory)
    from service.jobs import answer_what_if  # here: the service (FastAPI) loads only for this command
    from service.metrics import ServiceMetrics

    try:
        base_documents = read_manifest_documents(files)
        loaded = load_snapshot_documents(base_documents)
        changes = Changes(
            add_jobs=tuple(read_manifest_documents(add_jobs)) if add_jobs else (),
            add_nodes=tuple(read_manifest_documents(add_nodes)) if add_nodes else (),
            drain_nodes=tuple(drain or ()),
            drain_source=DRAIN_FLAG,
        )
        templates = load_node_templates(scale_up) if scale_up is not None else None
        answer = answer_what_if(
            loaded.snapshot, changes, base_kind="posted_yaml", warnings=loaded.warnings, rebalance=rebalance,
            config=config, metrics=ServiceMetrics.create(), submitted_at_s=time.time(), scale_up=templates,
        )
    except SnapshotError as error:
        if error.location.source == DRAIN_FLAG:  # one flag value, not a document
            error = error.at(Location(DRAIN_FLAG))
        print_error(str(error))
        raise typer.Exit(EXIT_INPUT_ERROR) from None
    for warning in answer.body["placement"]["warnings"]:
        print_warning(warning)
    if output == "json":
        sys.stdout.write(json.dumps(answer.body, indent=2) + "\n")
        return
    stdout.print(what_if_tables(answer))
    if answer.plan is not None:
        stdout.print(scale_up_tables(answer.plan))


def _solve_config(
    engine: str, time_limit_s: float, objective_order: str | None, typical_shapes: Path | None, solver_memory: str | None
) -> SolveConfig:
    """The options, read by the API's `WhatIfOptions` (the same limits and words); a bad one
    is one line naming its flag, exit 2."""
    from service.schemas import WhatIfOptions

    fields: dict[str, object] = {"engine": engine, "time_limit_s": time_limit_s}
    if objective_order is not None:
        fields["objective_order"] = [tier.strip() for tier in objective_order.split(",") if tier.strip()]
    try:
        options = WhatIfOptions.model_validate(fields)
    except ValidationError as error:
        first = error.errors()[0]
        flag = _FLAGS.get(str(first["loc"][0]), str(first["loc"][0]))
        given = f" (got {first['input']!r})" if "input" in first and not isinstance(first["input"], dict) else ""
        print_error(f"{flag}: {first['msg']}{given}")
        raise typer.Exit(EXIT_INPUT_ERROR) from None
    return SolveConfig(
        engine=options.engine,
        time_limit_s=time_limit_s,
        objective_order=options.full_objective_order(),
        memory_limit_bytes=solver_memory_bytes(solver_memory),
        typical_shapes=typical_shapes_of_file(typical_shapes),
    )


def what_if_tables(answer: WhatIfAnswer) -> Group:
    """A sentence per added job, the drained nodes, the whole placement, and the advice if asked."""
    parts: list[Text | Table | Group] = [Text("Added jobs", style="italic")]
    for verdict in answer.verdicts:
        parts.append(_verdict_line(verdict))
    if not answer.verdicts:
        parts.append(Text("  none (the base's own pending jobs are below)"))
    if answer.drained:
        drained = Table(title="Drained nodes", title_justify="left")
        for column in ("node", "pending again", "dropped"):
            drained.add_column(column, overflow="fold")
        for node in answer.drained:
            drained.add_row(node.node, ", ".join(node.requeued_pods) or "-", ", ".join(node.removed_pods) or "-")
        parts.append(drained)
    parts.append(decision_tables(answer.decision))
    if answer.advice is not None:
        parts.append(advice_tables(answer.advice))
    return Group(*parts)


def _verdict_line(verdict: JobVerdict) -> Text:
    """`default/llm starts: 2/2 pods placed on gpu-0, gpu-1; preempts nothing` (then a line per
    DRA claim: `claim ml/llm-0-gpus on gpu-0: gpus: gpu-0, gpu-1`) or
    `default/big does not start: 0/8 placed; GPUs: 64 to start, 56 free, 8 short; gang: …`."""
    placed = f"{verdict.placed}/{verdict.min_member} pods placed"
    if verdict.starts:
        where = f" on {', '.join(verdict.nodes)}" if verdict.nodes else ""
        preempts = ", ".join(eviction.pod for eviction in verdict.preempts) or "nothing"
        line = Text.assemble("  ", (verdict.name, "bold"), " ", ("starts", "green"), f": {placed}{where}; preempts {preempts}")
        for claim in verdict.claims:
            line.append(f"\n    claim {claim.label} on {claim.node}: {claim.devices_by_request}")
        return line
    gpus = (
        f"; GPUs: {verdict.gpus_to_start:g} to start, {verdict.gpus_free_eligible:g} free, {verdict.gpus_short:g} short"
        if verdict.gpus_to_start
        else ""
    )
    why = "; ".join(verdict.blocking)
    return Text.assemble("  ", (verdict.name, "bold"), " ", ("does not start", "yellow"), f": {placed}{gpus}; {why}")
