"""Volcano's own keys, from the manifest through every engine: what they protect, which
queue they count in, how much of a GPU they take. Each case loads Kubernetes objects with
the YAML loader, solves with every engine and has the checker judge the answer."""

from __future__ import annotations

import pytest

from models.placement import Decision
from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.place import ENGINES, SolveConfig, place
from solver.reasons import QUOTA
from tests.models._kube_builders import node, pod, pod_group, queue, snapshot

PREEMPTABLE = "volcano.sh/preemptable"
QUEUE_NAME = "scheduling.volcano.sh/queue-name"


def _solve(loaded: Snapshot, engine: str) -> Decision:
    decision = place(loaded, SolveConfig(engine=engine, time_limit_s=10))  # type: ignore[arg-type]
    assert check_placement(loaded, decision.placement) == ()
    return decision


def _bound_by_queue(loaded: Snapshot, decision: Decision) -> dict[str, int]:
    counts: dict[str, int] = {}
    for bind in decision.placement.binds:
        group = loaded.pod_by_key[bind.pod].pod_group
        queue_name = loaded.pod_group_by_key[group].queue  # type: ignore[index]
        counts[queue_name] = counts.get(queue_name, 0) + 1
    return counts


# ---- volcano.sh/preemptable as a label ----


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("labels", "evicted"),
    [({PREEMPTABLE: "false"}, False), ({PREEMPTABLE: "no"}, False), ({}, True)],
    ids=["a label false protects the pod", "a label that is no boolean protects it", "without it the pod is taken"],
)
def test_a_preemptable_label_keeps_a_running_pod_from_preemption(
    engine: str, labels: dict[str, str], evicted: bool
) -> None:
    loaded = snapshot(
        node("n1", cpu="2"),
        pod_group("low", minMember=1),
        pod("low-0", cpu="2", node="n1", group="low", priority=1, labels=labels),
        pod("high-0", cpu="2", priority=100),
    )
    decision = _solve(loaded, engine)
    assert [e.pod for e in decision.placement.evictions] == (["default/low-0"] if evicted else [])
    assert [b.pod for b in decision.placement.binds] == (["default/high-0"] if evicted else [])


# ---- a running pod counted by its queue-name annotation ----


@pytest.mark.parametrize("engine", ENGINES)
def test_a_running_pod_named_only_by_its_queue_counts_against_the_queue_capability(engine: str) -> None:
    loaded = snapshot(
        node("n1", cpu="8"),
        queue("q", capability={"cpu": "4"}),
        pod("running", cpu="3", node="n1", annotations={QUEUE_NAME: "q"}),
        pod("waiting", cpu="2", annotations={QUEUE_NAME: "q"}),
    )
    decision = _solve(loaded, engine)
    assert decision.placement.binds == ()
    (outcome,) = [o for o in decision.podgroups if o.name == "default/podgroup-waiting"]
    assert any(reason.startswith(QUOTA) and "4 cpu, 3 in use, job needs 2" in reason for reason in outcome.reasons)
    (held,) = [q for q in decision.queues if q.name == "q"]
    assert held.allocated["cpu"] == 3000


@pytest.mark.parametrize("engine", ENGINES)
def test_a_running_pod_named_only_by_its_queue_counts_toward_the_queues_fair_share(engine: str) -> None:
    """4 CPUs, queues a and b of weight 1: a already runs 2 through a plain annotated pod,
    so the 2 free CPUs go to b (2 and 2), not one each (3 and 1)."""
    loaded = snapshot(
        node("n1", cpu="4"),
        queue("a"),
        queue("b"),
        pod("a-running", cpu="2", node="n1", annotations={QUEUE_NAME: "a"}),
        *(pod(f"a-{i}", cpu="1", annotations={QUEUE_NAME: "a"}) for i in range(2)),
        *(pod(f"b-{i}", cpu="1", annotations={QUEUE_NAME: "b"}) for i in range(2)),
    )
    assert _bound_by_queue(loaded, _solve(loaded, engine)) == {"b": 2}
