"""Rule 2, eligibility: node selector, taints/tolerations, cordoned nodes."""

from __future__ import annotations

import pytest

from models.snapshot import Toleration
from solver.place import ENGINES
from solver.rules import eligibility
from tests.builders import (
    make_bind,
    make_gang,
    make_node,
    make_placement,
    make_snapshot,
    rule_violations,
    solve_checked,
)

NODES = [
    make_node("plain"),
    make_node("labelled", labels={"pool": "infer"}),
    make_node("tainted", taints=["dedicated=infer:NoSchedule"]),
    make_node("evicting", taints=["maintenance=:NoExecute"]),
    make_node("preferring", taints=["spot=:PreferNoSchedule"]),
    make_node("cordoned", unschedulable=True),
]


def _violations(node: str, **gang_options: object) -> list:
    job = make_gang("job", **gang_options)  # type: ignore[arg-type]
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    return rule_violations(eligibility, snapshot, make_placement(binds=[make_bind(job.pods[0], node)]))


def test_a_plain_pod_on_a_plain_node_is_eligible() -> None:
    assert _violations("plain") == []


@pytest.mark.parametrize(
    ("node", "options", "reason"),
    [
        ("plain", {"node_selector": {"pool": "infer"}}, eligibility.REASON_SELECTOR),
        ("labelled", {"node_selector": {"pool": "train"}}, eligibility.REASON_SELECTOR),
        ("tainted", {}, eligibility.REASON_TAINT),
        ("evicting", {}, eligibility.REASON_TAINT),
        (
            "tainted",
            {"tolerations": [Toleration(key="dedicated", value="train", effect="NoSchedule")]},
            eligibility.REASON_TAINT,
        ),
        ("cordoned", {}, eligibility.REASON_UNSCHEDULABLE),
    ],
    ids=[
        "a selector the node lacks",
        "a selector with another value",
        "an untolerated NoSchedule taint",
        "an untolerated NoExecute taint",
        "a toleration for another value",
        "a cordoned node",
    ],
)
def test_an_ineligible_node_is_reported_with_its_reason(node: str, options: dict, reason: str) -> None:
    (violation,) = _violations(node, **options)
    assert violation.rule == eligibility.NAME
    assert violation.subject == "default/job-worker-0"
    assert violation.message.endswith(f"({reason})")
    assert f"node {node}" in violation.message


@pytest.mark.parametrize(
    ("node", "options"),
    [
        ("labelled", {"node_selector": {"pool": "infer"}}),
        ("tainted", {"tolerations": [Toleration(key="dedicated", value="infer", effect="NoSchedule")]}),
        ("tainted", {"tolerations": [Toleration(key="dedicated", operator="Exists")]}),
        ("evicting", {"tolerations": [Toleration(operator="Exists")]}),
        ("preferring", {}),
        ("cordoned", {"tolerations": [Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule")]}),
        ("cordoned", {"tolerations": [Toleration(operator="Exists")]}),
    ],
    ids=[
        "a matching selector",
        "an Equal toleration",
        "an Exists toleration for the key",
        "a tolerate-everything toleration",
        "a PreferNoSchedule taint, which only prefers",
        "a cordoned node, its unschedulable taint tolerated",
        "a cordoned node, every taint tolerated",
    ],
)
def test_an_eligible_node_is_accepted(node: str, options: dict) -> None:
    assert _violations(node, **options) == []


def test_running_pods_on_a_node_tainted_since_are_not_judged() -> None:
    old = make_gang("old", running_on=["tainted"])
    snapshot = make_snapshot(nodes=NODES, groups=[old])
    assert rule_violations(eligibility, snapshot, make_placement()) == []


# ---- every engine, on hand-computed cases ----


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_sends_a_selected_pod_to_the_only_node_it_admits(engine: str) -> None:
    # Of the six nodes only `labelled` has pool=infer; it is untainted and schedulable.
    job = make_gang("job", node_selector={"pool": "infer"})
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    assert [b.node for b in solve_checked(snapshot, engine).placement.binds] == ["labelled"]


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_keeps_an_untolerating_pod_off_tainted_and_cordoned_nodes(engine: str) -> None:
    # Four pods, each asking a whole 32-CPU node: three may run — on plain, labelled and
    # preferring (PreferNoSchedule does not filter) — never on tainted, evicting or cordoned.
    job = make_gang("job", replicas=4, cpu=32, min_member=1)
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    nodes = {b.node for b in solve_checked(snapshot, engine).placement.binds}
    assert nodes == {"plain", "labelled", "preferring"}
