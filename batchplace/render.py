"""What the CLI shows people: tables of a `Decision` (with the DRA claims it allocates) and
of a `RebalanceAdvice`, and error and warning lines.

Input: a `Decision` or a `RebalanceAdvice`. Output: rich renderables; the caller prints
them. JSON output does not go through here — it is `Decision.to_contract()` or the
advice's `model_dump` as it is.

Errors and warnings go to stderr through `print_error` / `print_warning`, one line each
whatever the width: rich wraps at 80 columns when stderr is not a terminal (a pipe, a CI
log), and the CLI promises one line per error, which scripts read with `grep` or `head -1`.
The message is printed as plain text, never as rich markup, so a field path such as
`spec.tasks[0]` or a name in brackets prints as it is.
"""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from models.placement import Decision, PodGroupOutcome
from models.quantity import format_bytes, format_milli
from models.rebalance import RebalanceAdvice
from models.snapshot import CPU, GPU, MEMORY
from solver.reasons import waiting_task

__all__ = [
    "decision_tables",
    "advice_tables",
    "format_resources",
    "print_error",
    "print_warning",
]

_stderr = Console(stderr=True, soft_wrap=True, highlight=False)


def print_error(message: str) -> None:
    """`error: <message>` on stderr, one line."""
    _stderr.print(Text.assemble(("error:", "red"), " ", message))


def print_warning(message: str) -> None:
    """`warning: <message>` on stderr, one line."""
    _stderr.print(Text.assemble(("warning:", "yellow"), " ", message))


def format_resources(resources: dict[str, int]) -> str:
    """`{"cpu": 2500, "memory": 1073741824, "gpu": 8000}` → `"2.5 cpu, 1Gi, 8 gpu"`; a DRA device
    class by its count: `{"gpu.nvidia.com": 16}` → `"16 gpu.nvidia.com"`."""
    parts = []
    if resources.get(CPU):
        parts.append(f"{format_milli(resources[CPU])} cpu")
    if resources.get(MEMORY):
        parts.append(format_bytes(resources[MEMORY]))
    if resources.get(GPU):
        parts.append(f"{format_milli(resources[GPU])} gpu")
    # DRA device classes (a queue's share of devices, `QueueShare`): a count each
    parts += [f"{amount} {name}" for name, amount in resources.items() if name not in (CPU, MEMORY, GPU) and amount]
    return ", ".join(parts) or "-"


def _summary(decision: Decision) -> Text:
    line = f"engine {decision.engine} · status {decision.status} · {decision.solve_seconds * 1000:.1f} ms"
    if decision.objective is not None:
        line += f" · objective {decision.objective:g}"
    if decision.bound is not None:
        line += f" · bound {decision.bound:g}"
    if decision.gap is not None:
        line += f" · gap {decision.gap:.2%}"
    binds, evictions = len(decision.placement.binds), len(decision.placement.evictions)
    summary = Text(f"{line} · {binds} binds · {evictions} evictions", style="bold")
    if decision.fallback is not None:
        summary.append(f"\nfallback ({decision.fallback.cause}): {decision.fallback.reason}", style="yellow")
    if not decision.reproducible:
        summary.append("\nnot reproducible: the search ran by the wall clock; another run may answer otherwise", style="yellow")
    return summary


def decision_tables(decision: Decision) -> Group:
    """Summary line, then PodGroups, binds, evictions and queues as tables."""
    groups = Table(title="PodGroups", title_justify="left")
    for column in ("podgroup", "queue", "placed/min", "state", "reason"):
        groups.add_column(column, overflow="fold")
    for outcome in decision.podgroups:
        style = "green" if outcome.state == "scheduled" else "yellow"
        groups.add_row(
            outcome.name,
            outcome.queue,
            f"{outcome.placed}/{outcome.min_member}",
            Text(_state(outcome), style=style),
            Text("; ".join(outcome.reasons)),  # plain text: "gpu In [h100]" is not markup
        )

    binds = Table(title="Binds", title_justify="left")
    for column in ("pod", "node", "gpus"):
        binds.add_column(column)
    for bind in decision.placement.binds:
        gpus = ",".join(map(str, bind.gpus)) if bind.gpus else "-"
        binds.add_row(bind.pod, bind.node, gpus)

    parts: list[Table | Text] = [_summary(decision), groups, binds]
    if decision.placement.claims:
        claims = Table(title="DRA claims allocated", title_justify="left")
        for column in ("claim", "node", "devices"):
            claims.add_column(column, overflow="fold")
        for allocation in decision.placement.claims:  # a claim not made yet is labelled with its pod
            claims.add_row(allocation.label, allocation.node, Text(allocation.devices_by_request))
        parts.append(claims)
    unplaced = [(pod.pod, pod.reason) for outcome in decision.podgroups for pod in outcome.unplaced_pods]
    if unplaced:
        left = Table(title="Pods of started PodGroups left pending", title_justify="left")
        for column in ("pod", "reason"):
            left.add_column(column, overflow="fold")
        for pod, reason in unplaced:
            left.add_row(pod, Text(reason))
        parts.append(left)
    if decision.placement.evictions:
        evictions = Table(title="Evictions", title_justify="left")
        for column in ("pod", "node", "reason", "for"):
            evictions.add_column(column)
        for eviction in decision.placement.evictions:
            evictions.add_row(eviction.pod, eviction.node, eviction.reason, eviction.for_)
        parts.append(evictions)

    queues = Table(title="Queues", title_justify="left")
    for column in ("queue", "allocated", "deserved"):
        queues.add_column(column)
    for share in decision.queues:
        queues.add_row(share.name, format_resources(share.allocated), format_resources(share.deserved))
    parts.append(queues)
    return Group(*parts)


def _state(outcome: PodGroupOutcome) -> str:
    """"scheduled", "pending", or for a started gang whose tasks wait on others, what it is:
    "started, task-b waiting on dependency task-a" — beside placed/min 1/3, "scheduled" read
    as a contradiction (the waiting task's pods count towards min but cannot start yet)."""
    waits = [found for reason in outcome.reasons if (found := waiting_task(reason)) is not None]
    if outcome.state != "scheduled" or not waits:
        return outcome.state
    return "started, " + ", ".join(f"{task} waiting on dependency {dependency}" for task, dependency in waits)


def _percents(values: dict[str, float]) -> str:
    return ", ".join(f"{resource} {percent:.1f}%" for resource, percent in values.items()) or "-"


def advice_tables(advice: RebalanceAdvice) -> Group:
    """Summary line, then the moves, the hot nodes left hot, and every judged node before → after."""
    line = (
        f"engine {advice.engine} · status {advice.status} · {advice.solve_seconds * 1000:.1f} ms · "
        f"{advice.hot_before} hot → {advice.hot_after} after {len(advice.moves)} moves"
    )
    if advice.not_judged.get("stale") or advice.not_judged.get("missing"):
        line += f" · not judged: {advice.not_judged.get('stale', 0)} stale, {advice.not_judged.get('missing', 0)} missing"
    summary = Text(line, style="bold")
    if advice.fallback is not None:
        summary.append(f"\nfallback ({advice.fallback.cause}): {advice.fallback.reason}", style="yellow")
    summary.append("\nadvice only: batchplace evicts nothing for balance; usage after a move is an estimate", style="dim")
    parts: list[Table | Text] = [summary]

    moves = Table(title="Moves", title_justify="left")
    for column in ("pod", "from", "to", "estimated usage moved"):
        moves.add_column(column, overflow="fold")
    for move in advice.moves:
        pod = move.pod + (" (whole gang)" if move.whole_gang else "")
        moved = ", ".join(f"{u.resource} -{u.from_percent:.2f}% → +{u.to_percent:.2f}%" for u in move.usage)
        to = move.to_node + (f" gpus {','.join(map(str, move.gpus))}" if move.gpus else "")
        moves.add_row(pod, move.from_node, to, moved or "-")
    parts.append(moves)

    if advice.uncooled:
        uncooled = Table(title="Hot nodes that stay hot", title_justify="left")
        for column in ("node", "cause", "reason"):
            uncooled.add_column(column, overflow="fold")
        for node in advice.uncooled:
            uncooled.add_row(node.node, node.cause, Text(node.reason))
        parts.append(uncooled)

    nodes = Table(title="Nodes judged", title_justify="left")
    for column in ("node", "verdict", "before", "after", "thresholds", "out/in"):
        nodes.add_column(column, overflow="fold")
    styles = {"cooled": "green", "still_hot": "red", "cool": ""}
    for row in advice.nodes:
        nodes.add_row(
            row.node,
            Text(row.verdict, style=styles.get(row.verdict, "")),
            _percents(row.before),
            _percents(row.after),
            _percents(row.thresholds),
            f"{row.moves_out}/{row.moves_in}",
        )
    parts.append(nodes)
    return Group(*parts)
