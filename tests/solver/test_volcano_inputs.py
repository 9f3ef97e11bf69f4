"""Volcano's own keys, from the manifest through every engine: what they protect, which
queue they count in, how much of a GPU they take. Each case loads Kubernetes objects with
the YAML loader, solves with every engine and has the checker judge the answer."""

from __future__ import annotations

import pytest

from models.placement import Decision
from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.place import ENGINES, SolveConfig, place
from tests.models._kube_builders import node, pod, pod_group, snapshot

PREEMPTABLE = "volcano.sh/preemptable"


def _solve(loaded: Snapshot, engine: str) -> Decision:
    decision = place(loaded, SolveConfig(engine=engine, time_limit_s=10))  # type: ignore[arg-type]
    assert check_placement(loaded, decision.placement) == ()
    return decision


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
