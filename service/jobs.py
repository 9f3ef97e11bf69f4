"""The work a request hands the solver pool: read the input, solve, check, shape the answer.

Everything CPU-bound of a request runs here, on a solver thread, never on the event loop:
JSON/YAML parsing, snapshot validation, `solver.place` (the one solve entry point the
controller also calls), the independent `solver.checker`, and building the response.
Input errors leave as `service.errors.InvalidRequest` with JSON pointers into the request
body; nothing here knows about HTTP beyond that.

A YAML input is Kubernetes / Volcano manifests (multi-document, as `batchplace solve`
reads them), or a snapshot in its own form written as YAML: one document, no
`apiVersion`/`kind`, with `nodes`, `pods` or `pod_groups` at the top. YAML with no object
at all is a 422 ("no objects passed"), as `batchplace solve` refuses it; an empty cluster
on purpose is the JSON form `{}`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from models.errors import InputFormatError, Location, SnapshotError
from models.loaders import load_snapshot_documents, load_snapshot_json
from models.loaders.kube_yaml import Document, parse_yaml_documents, require_objects
from models.placement import Decision
from models.node_templates import NodeTemplates, read_node_templates
from models.rebalance import RebalanceAdvice
from models.scale_up_plan import ScaleUpPlan
from models.snapshot import Snapshot
from service.dependencies import Media
from service.errors import EMPTY_BODY, FieldProblem, InputForm, InvalidRequest, LocPart, problem_from_snapshot_error
from service.metrics import ServiceMetrics
from service.schemas import Changes as RequestChanges
from service.schemas import WhatIfRequest
from solver.checker import check_placement
from solver.place import SolveConfig, place
from solver.rebalance import RebalanceConfig, cycle_snapshot, plan_rebalance
from solver.scale_up import plan_scale_up
from solver.whatif import Changes, DrainedNode, JobVerdict, apply_changes, job_verdicts

__all__ = ["solve_posted", "solve_what_if", "answer_what_if", "WhatIfAnswer", "read_yaml_snapshot", "check_alias_expansion", "placement_response",
           "request_changes", "change_problem"]

log = logging.getLogger("batchplace.service")

_SNAPSHOT_KEYS = ("nodes", "pods", "pod_groups")
SCALE_UP_SOURCE = "scale_up"
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_ALIAS_SLACK_NODES = 100_000
_LIST_SOURCES: dict[str, tuple[LocPart, ...]] = {
    "changes.add_jobs": ("body", "changes", "add_jobs"),
    "changes.add_nodes": ("body", "changes", "add_nodes"),
    "changes.drain_nodes": ("body", "changes", "drain_nodes"),
}
_YAML_SOURCES: dict[str, tuple[LocPart, ...]] = {
    "changes.add_jobs_yaml": ("body", "changes", "add_jobs_yaml"),
    "changes.add_nodes_yaml": ("body", "changes", "add_nodes_yaml"),
}


def solve_posted(body: bytes, *, media: Media, config: SolveConfig, metrics: ServiceMetrics) -> dict[str, Any]:
    """`POST /v1/placements`: the body is the snapshot (JSON form, or YAML)."""
    if not body.strip():
        message = f"{EMPTY_BODY}: post a snapshot (JSON, or Kubernetes YAML with Content-Type: application/yaml)"
        raise InvalidRequest([FieldProblem(loc=("body",), msg=message, type="missing")])
    try:
        if media == "json":
            snapshot, warnings = load_snapshot_json(body, source="body"), ()
        else:
            snapshot, warnings = read_yaml_snapshot(_utf8(body, at=("body",)), source="body")
    except SnapshotError as error:
        raise InvalidRequest([problem_from_snapshot_error(error, at=("body",), form=media)]) from None
    _, response = _decide(snapshot, config, metrics, warnings=warnings)
    return response


def solve_what_if(
    request: WhatIfRequest,
    *,
    live: Snapshot | None,
    config: SolveConfig,
    metrics: ServiceMetrics,
    submitted_at_s: float,
) -> dict[str, Any]:
    """`POST /v1/what-if`: the request's base and changes, answered by `answer_what_if`."""
    templates = None
    try:
        if request.scale_up is not None:
            templates = read_node_templates(request.scale_up, source=SCALE_UP_SOURCE)
        base, base_kind, warnings = _read_base(request, live)
        answer = answer_what_if(
            base, _changes(request), base_kind=base_kind, warnings=warnings, rebalance=request.rebalance,
            config=config, metrics=metrics, submitted_at_s=submitted_at_s, scale_up=templates,
        )
    except SnapshotError as error:
        if error.location.source == SCALE_UP_SOURCE:
            raise InvalidRequest([_scale_up_problem(error)]) from None
        raise InvalidRequest([change_problem(error)]) from None
    return answer.body


@dataclass(frozen=True)
class WhatIfAnswer:
    """One what-if answered: the response body (`WhatIfResponse`), and the decision, verdicts
    and advice it was made of, for a caller that shows them otherwise (`batchplace what-if`)."""

    body: dict[str, Any]
    decision: Decision
    verdicts: tuple[JobVerdict, ...]
    drained: tuple[DrainedNode, ...]
    advice: RebalanceAdvice | None
    plan: ScaleUpPlan | None = None


def answer_what_if(
    base: Snapshot,
    changes: Changes,
    *,
    base_kind: str,
    warnings: Sequence[str],
    rebalance: bool,
    config: SolveConfig,
    metrics: ServiceMetrics,
    submitted_at_s: float,
    scale_up: NodeTemplates | None = None,
) -> WhatIfAnswer:
    """Base snapshot + changes → one solve → a verdict per added job; with `rebalance`, advice
    on the cluster as that solve leaves it (`solver.rebalance.cycle`); with `scale_up`
    templates, the plan of the nodes to buy on the changed cluster (`solver.scale_up`). The
    one way a what-if is answered, over HTTP and on the command line; a bad change is a
    `SnapshotError`."""
    changed = apply_changes(base, changes, submitted_at_s=submitted_at_s)
    decision, placement = _decide(changed.snapshot, config, metrics, warnings=(*warnings, *changed.warnings))
    advice = None
    if rebalance:
        advice = plan_rebalance(cycle_snapshot(changed.snapshot, decision.placement), rebalance_config(config))
    plan = None
    if scale_up is not None:
        plan = plan_scale_up(changed.snapshot, scale_up, config=config, decision=decision, source=SCALE_UP_SOURCE)
    verdicts = job_verdicts(changed, decision)
    body = {
        "base": base_kind,
        "jobs": [verdict.model_dump(by_alias=True) for verdict in verdicts],
        "drained": [drained.model_dump() for drained in changed.drained],
        "added_nodes": list(changed.added_nodes),
        "placement": placement,
        "rebalance": None if advice is None else advice.model_dump(),
        "scale_up": None if plan is None else plan.to_contract(),
    }
    return WhatIfAnswer(body=body, decision=decision, verdicts=verdicts, drained=changed.drained, advice=advice, plan=plan)


def rebalance_config(config: SolveConfig) -> RebalanceConfig:
    """The request's engine, time limit (its own, on top of the solve's) and memory ceiling."""
    return RebalanceConfig(
        engine=config.engine,
        time_limit_s=config.time_limit_s,
        workers=config.workers,
        memory_limit_bytes=config.memory_limit_bytes,
    )


def read_yaml_snapshot(text: str, *, source: str) -> tuple[Snapshot, tuple[str, ...]]:
    """A snapshot from YAML text: Kubernetes manifests, or the snapshot form as YAML (module docstring)."""
    check_alias_expansion(text, source=source)
    documents = parse_yaml_documents(text, source=source)
    require_objects(documents, source=source)
    if len(documents) == 1 and _looks_like_snapshot(documents[0][2]):
        return load_snapshot_json(documents[0][2], source=source), ()  # type: ignore[arg-type]
    result = load_snapshot_documents(documents)
    return result.snapshot, result.warnings


def _looks_like_snapshot(document: object) -> bool:
    return (
        isinstance(document, Mapping)
        and "kind" not in document
        and "apiVersion" not in document
        and any(key in document for key in _SNAPSHOT_KEYS)
    )


def _utf8(body: bytes, *, at: tuple[LocPart, ...]) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidRequest([problem_from_snapshot_error(InputFormatError(f"not UTF-8 text: {error.reason}"), at=at)]) from None


def _decide(
    snapshot: Snapshot, config: SolveConfig, metrics: ServiceMetrics, *, warnings: Sequence[str]
) -> tuple[Decision, dict[str, Any]]:
    decision = place(snapshot, config)
    return decision, placement_response(snapshot, decision, metrics, warnings=warnings)


def placement_response(
    snapshot: Snapshot, decision: Decision, metrics: ServiceMetrics, *, warnings: Sequence[str]
) -> dict[str, Any]:
    """The placement response of a solve of `snapshot`: the contract, the checker's verdict,
    the warnings; the solve counted in the metrics."""
    violations = check_placement(snapshot, decision.placement)
    metrics.solve_time.labels(engine=decision.engine, status=decision.status).observe(decision.solve_seconds)
    if decision.fallback is not None:
        metrics.fallbacks.labels(cause=decision.fallback.cause).inc()
    if violations:  # place() promises a checked placement: this is a bug below, shown, never hidden
        log.error("placement breaks %d hard rules", len(violations), extra={"engine": decision.engine})
    return {
        **decision.to_contract(),
        "valid": not violations,
        "violations": [{"rule": v.rule, "subject": v.subject, "message": v.message} for v in violations],
        "warnings": list(warnings),
    }


def _read_base(request: WhatIfRequest, live: Snapshot | None) -> tuple[Snapshot, str, tuple[str, ...]]:
    try:
        if request.snapshot is not None:
            return load_snapshot_json(request.snapshot, source="snapshot"), "posted", ()  # type: ignore[arg-type]
        if request.snapshot_yaml is not None:
            snapshot, warnings = read_yaml_snapshot(request.snapshot_yaml, source="snapshot_yaml")
            return snapshot, "posted_yaml", warnings
    except SnapshotError as error:
        at: tuple[LocPart, ...] = ("body", "snapshot") if request.snapshot is not None else ("body", "snapshot_yaml")
        form: InputForm = "json" if request.snapshot is not None else "yaml"
        raise InvalidRequest([problem_from_snapshot_error(error, at=at, form=form)]) from None
    assert live is not None, "the route resolves the live snapshot before it calls this"
    return live, "live", ()


def _changes(request: WhatIfRequest) -> Changes:
    return request_changes(request.changes)


def request_changes(changes: RequestChanges) -> Changes:
    """A request's `changes` as `solver.whatif.Changes`, each document named by where it sat."""
    return Changes(
        add_jobs=(*_items(changes.add_jobs, "changes.add_jobs"), *_yaml(changes.add_jobs_yaml, "changes.add_jobs_yaml")),
        add_nodes=(
            *_items(changes.add_nodes, "changes.add_nodes"),
            *_yaml(changes.add_nodes_yaml, "changes.add_nodes_yaml"),
        ),
        drain_nodes=tuple(changes.drain_nodes),
        drain_source="changes.drain_nodes",
    )


def _items(objects: Sequence[object], source: str) -> list[Document]:
    return [(source, index + 1, obj) for index, obj in enumerate(objects)]


def _yaml(text: str | None, source: str) -> list[Document]:
    if not text:
        return []
    check_alias_expansion(text, source=source)
    return parse_yaml_documents(text, source=source)


def check_alias_expansion(text: str, *, source: str) -> None:
    """Refuse YAML whose aliases expand it past what its text could hold without them.

    The body cap bounds the text, not what `*alias` makes of it: nine lines of anchors
    that each repeat the previous one nine times are 9⁹ ≈ 387 million list items once read
    (a "billion laughs"), and the loader would walk them all. The composed node graph
    shares aliased nodes, so its expanded size is counted once per distinct node: at most
    `len(text) + 100,000` nodes are accepted — a manifest that reuses a label block or a
    pod template through aliases stays far below. Syntax errors are left to the parse
    that follows, which reports them with their line.
    """
    if "*" not in text:
        return
    limit = len(text) + _ALIAS_SLACK_NODES
    try:
        for number, root in enumerate(yaml.compose_all(text, Loader=_YAML_LOADER), start=1):
            if root is not None and _expanded_nodes(root, {}, limit) > limit:
                message = f"YAML aliases expand this document past {limit} nodes; write it out without aliases"
                raise InputFormatError(message, location=Location(source, number))
    except yaml.YAMLError:
        return
    except RecursionError:
        raise InputFormatError("YAML nested too deeply", location=Location(source)) from None


def _expanded_nodes(node: yaml.Node, memo: dict[int, int], limit: int) -> int:
    """Nodes of `node` with every alias written out, stopping early once past `limit`."""
    known = memo.get(id(node))
    if known is not None:
        return known
    total = 1
    if isinstance(node, yaml.SequenceNode):
        children: list[yaml.Node] = list(node.value)
    elif isinstance(node, yaml.MappingNode):
        children = [part for pair in node.value for part in pair]
    else:
        children = []
    for child in children:
        total += _expanded_nodes(child, memo, limit)
        if total > limit:
            break
    memo[id(node)] = total
    return total


def _scale_up_problem(error: SnapshotError) -> FieldProblem:
    """A template error, at its place in the request: `("templates", 3, "max_count")` is `scale_up[3].max_count`."""
    path = error.path[1:] if error.path[:1] == ("templates",) else error.path
    return problem_from_snapshot_error(type(error)(error.message, path=path), at=("body", SCALE_UP_SOURCE))


def change_problem(error: SnapshotError) -> FieldProblem:
    source = error.location.source or ""
    if source in _LIST_SOURCES:
        return problem_from_snapshot_error(error, at=_LIST_SOURCES[source], form="items")
    if source in _YAML_SOURCES:
        return problem_from_snapshot_error(error, at=_YAML_SOURCES[source], form="yaml")
    # the base's priority classes or the merged snapshot: about the changes as a whole
    return problem_from_snapshot_error(error.at(Location()), at=("body", "changes"), form="yaml")
