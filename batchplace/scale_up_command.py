"""`batchplace solve --scale-up TEMPLATES`: the option, reading the templates file, and the
plan's tables (`solver.scale_up.plan_scale_up`; the file format is `models.node_templates`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Group
from rich.table import Table
from rich.text import Text

from models.scale_up_plan import ScaleUpPlan

__all__ = ["ScaleUpOption", "scale_up_tables"]

ScaleUpOption = Annotated[
    Optional[Path],
    typer.Option(
        "--scale-up",
        help="Node templates (YAML or JSON, docs/scale-up.md): also plan the cheapest nodes to buy so that the "
        "waiting gangs the queues allow would start, and print the binds that would follow.",
    ),
]


def scale_up_tables(plan: ScaleUpPlan) -> Group:
    """The nodes to buy (template, domain, nodes, price), then the gangs they start, those that
    still wait and why, and those no node helps."""
    summary = Text(
        f"scale-up plan: {sum(len(row.nodes) for row in plan.bought)} node(s), {plan.price_per_hour:.2f} per hour, "
        f"starts {len(plan.started)} waiting PodGroup(s) ({plan.engine}, {plan.status})",
        style="bold",
    )
    bought = Table(title="Nodes to buy", title_justify="left")
    for column in ("template", "domain", "nodes", "price/h"):
        bought.add_column(column, overflow="fold")
    for row in plan.bought:
        bought.add_row(row.template, row.domain or "-", f"{len(row.nodes)}: {', '.join(row.nodes)}", f"{row.price_per_hour:.2f}")
    gangs = Table(title="Waiting PodGroups", title_justify="left")
    for column in ("podgroup", "with the plan", "why"):
        gangs.add_column(column, overflow="fold")
    for name in plan.started:
        gangs.add_row(name, Text("starts", style="green"), "")
    for waiting in plan.still_waiting:
        why = "; ".join([*(waiting.plan_note and [waiting.plan_note] or []), *waiting.reasons])
        gangs.add_row(waiting.pod_group, Text("still waits", style="yellow"), Text(why))
    for waiting in plan.not_planned:
        why = "; ".join([*(waiting.plan_note and [waiting.plan_note] or []), *waiting.reasons])
        gangs.add_row(waiting.pod_group, Text("no node helps", style="yellow"), Text(why))
    binds = Table(title="Binds with the bought nodes", title_justify="left")
    for column in ("pod", "node", "gpus"):
        binds.add_column(column)
    for bind in plan.binds:
        binds.add_row(bind.pod, bind.node, ",".join(map(str, bind.gpus)) or "-")
    return Group(summary, bought, gangs, binds)
