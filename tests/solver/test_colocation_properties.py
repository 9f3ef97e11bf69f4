"""Property: on random snapshots with colocation nodes (fresh, stale and missing usage, some
measured apart from offline pods) and offline PodGroups and running pods, every engine's
placement passes the checker, and — recomputed here from the snapshot alone, not through
`solver.rules.colocation` — online pods never count offline pods, offline binds go to
colocation nodes only, and a node that takes an offline bind ends with its offline cpu
and memory within allocatable − online usage − margin (fresh usage) or allocatable −
online requests (otherwise)."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.snapshot import PodGroup, Snapshot, UsagePolicy
from solver.checker import check_placement
from solver.place import SolveConfig, place
from tests.strategies import snapshots

OBSERVED = 1_714_564_800.0


@st.composite
def colocation_snapshots(draw: st.DrawFn) -> Snapshot:
    base = draw(snapshots(max_nodes=8, max_groups=8))
    nodes = []
    for node in base.nodes:
        if draw(st.integers(0, 3)) != 0:
            labels = {**node.labels, draw(st.sampled_from(["volcano.sh/oversubscription", "volcano.sh/colocation"])): "true"}
            age = draw(st.sampled_from([0.0, 0.0, 0.0, 1000.0]))
            usage = None if draw(st.integers(0, 5)) == 0 else {
                "cpu_percent": draw(st.floats(0, 100)),
                "memory_percent": draw(st.floats(0, 100)),
                "online_cpu_percent": draw(st.one_of(st.none(), st.floats(0, 100))),
                "online_memory_percent": draw(st.one_of(st.none(), st.floats(0, 100))),
                "observed_at_s": OBSERVED - age,
            }
            node = node.model_copy(update={"labels": labels, "usage": None if usage is None else node.usage.model_validate(usage) if node.usage else _usage(usage)})
        nodes.append(node)
    offline_groups = {group.key for group in base.pod_groups if draw(st.booleans())}
    groups = [
        PodGroup.model_validate({**group.model_dump(), "tasks": [{**t, "offline": True} for t in group.model_dump()["tasks"]]})
        if group.key in offline_groups
        else group
        for group in base.pod_groups
    ]
    pods = [
        pod.model_copy(update={"offline": True})
        if (pod.pod_group in offline_groups) or (pod.pod_group is None and pod.phase == "running" and draw(st.booleans()))
        else pod
        for pod in base.pods
    ]
    margins = {"cpu_margin_percent": draw(st.sampled_from([0, 10, 30])), "memory_margin_percent": draw(st.sampled_from([0, 10]))}
    fields: dict[str, Any] = {name: getattr(base, name) for name in Snapshot.model_fields}
    fields.update(
        nodes=nodes, pod_groups=groups, pods=pods, usage_policy=UsagePolicy(judged_at_s=OBSERVED, cpu_threshold_percent=None, memory_threshold_percent=None),
        colocation_policy=margins,
    )
    return Snapshot.model_validate(fields)


def _usage(fields: dict[str, Any]) -> Any:
    from models.snapshot import NodeUsage

    return NodeUsage.model_validate(fields)


def _expected_room(snapshot: Snapshot, node_name: str, resource: str) -> int:
    node = snapshot.node_by_name[node_name]
    allocatable = node.allocatable.get(resource, 0)
    running = [p for p in snapshot.pods if p.phase == "running" and p.node == node_name]
    online_requests = sum(p.requests.get(resource, 0) for p in running if not p.offline)
    usage = node.usage
    fresh = usage is not None and OBSERVED - usage.observed_at_s <= snapshot.usage_policy.max_age_s
    percent = None
    if fresh:
        percent = getattr(usage, f"online_{resource}_percent")
        if percent is None and not any(p.offline for p in running):
            percent = getattr(usage, f"{resource}_percent")
    if percent is None:
        return max(0, allocatable - online_requests)
    margin = getattr(snapshot.colocation_policy, f"{resource}_margin_percent")
    return max(0, allocatable - math.ceil(percent * allocatable / 100) - math.ceil(margin * allocatable / 100))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(colocation_snapshots(), st.sampled_from(["greedy", "cpsat"]))
def test_engines_honour_colocation_as_the_checker_and_an_independent_count_judge_it(snapshot: Snapshot, engine: str) -> None:
    decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=2.0))  # type: ignore[arg-type]
    assert check_placement(snapshot, decision.placement) == ()
    bound_to: dict[str, list[str]] = {}
    for bind in decision.placement.binds:
        bound_to.setdefault(bind.node, []).append(bind.pod)
    evicted = {e.pod for e in decision.placement.evictions}
    for node_name, keys in bound_to.items():
        node = snapshot.node_by_name[node_name]
        new = [snapshot.pod_by_key[k] for k in keys]
        kept = [p for p in snapshot.pods if p.phase == "running" and p.node == node_name and p.key not in evicted]
        for resource in ("cpu", "memory"):
            if node.colocation:
                online = sum(p.requests.get(resource, 0) for p in (*kept, *new) if not p.offline)
                if any(not p.offline and p.requests.get(resource, 0) for p in new):
                    assert online <= node.allocatable.get(resource, 0)
                if any(p.offline and p.requests.get(resource, 0) for p in new):
                    offline = sum(p.requests.get(resource, 0) for p in (*kept, *new) if p.offline)
                    assert offline <= _expected_room(snapshot, node_name, resource)
            elif any(n.colocation for n in snapshot.nodes):  # colocation on: offline pods asking cpu/memory go to its nodes only
                assert not any(p.offline and (p.requests.get("cpu", 0) or p.requests.get("memory", 0)) for p in new)
