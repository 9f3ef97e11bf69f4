"""Rule topology_spread, judged by the checker on hand-made placements: DoNotSchedule skew
over zones and nodes counted on the end state, existing skew, minDomains, the namespace,
nodeAffinityPolicy and nodeTaintsPolicy, a node without the key; ScheduleAnyway's excess in
the locality tier."""

from __future__ import annotations

import pytest

from models.pod_affinity import LabelSelector, TopologySpreadConstraint
from models.snapshot import Pod
from solver.objective import score
from solver.place import ENGINES
from solver.rules import topology_spread
from tests.builders import (
    Gang,
    labelled,
    make_bind,
    make_gang,
    make_node,
    make_placement,
    make_running,
    make_snapshot,
    rule_violations,
    solve_checked,
    with_pod_rules,
)

NODES = [
    make_node("a1", labels={"zone": "a"}),
    make_node("a2", labels={"zone": "a"}),
    make_node("b1", labels={"zone": "b"}),
    make_node("c1", labels={"zone": "c", "pool": "spare"}, taints=["spare=yes:NoSchedule"]),
    make_node("bare"),
]


def spread(max_skew: int = 1, key: str = "zone", *, when: str = "DoNotSchedule", **extra: object) -> TopologySpreadConstraint:
    return TopologySpreadConstraint(
        max_skew=max_skew, topology_key=key, when_unsatisfiable=when, label_selector=LabelSelector(match_labels={"app": "web"}), **extra
    )


def web(replicas: int, *constraints: TopologySpreadConstraint, node_selector: dict[str, str] | None = None) -> Gang:
    gang = make_gang("web", replicas=replicas, min_member=1, node_selector=node_selector)
    return with_pod_rules(gang, labels={"app": "web"}, topology_spread=constraints)


def running_web(name: str, node: str, *, namespace: str = "default") -> Pod:
    return labelled(make_running(name, node=node, namespace=namespace), {"app": "web"})


def judged(gang: Gang, *nodes: str, others: tuple[Pod, ...] = (), rule=topology_spread) -> list[str]:
    snapshot = make_snapshot(nodes=NODES, groups=[gang], running=others)
    placement = make_placement(binds=[make_bind(pod, node) for pod, node in zip(gang.pending, nodes, strict=False)])
    return [v.message for v in rule_violations(rule, snapshot, placement)]


def test_pods_spread_over_zones_within_max_skew() -> None:
    # zones a, b and c: c's taint is ignored by default (nodeTaintsPolicy Ignore), so c counts too
    assert judged(web(3, spread()), "a1", "b1", "c1") == []
    found = judged(web(3, spread()), "a1", "a2", "b1")
    assert len(found) == 2 and "zone=a ends with 2 matching pods, 2 above the emptiest domain's 0" in found[0]


def test_existing_skew_is_counted_and_only_the_emptier_domains_may_grow() -> None:
    others = (running_web("old-0", "a1"), running_web("old-1", "a2"))
    assert judged(web(2, spread()), "b1", "c1", others=others) == []
    assert len(judged(web(1, spread()), "a1", others=others)) == 1


def test_pods_of_other_namespaces_are_not_counted() -> None:
    others = (running_web("old-0", "a1", namespace="prod"), running_web("old-1", "a2", namespace="prod"))
    assert judged(web(1, spread()), "a1", others=others) == []


def test_min_domains_makes_the_minimum_zero_when_fewer_domains_are_eligible() -> None:
    two_domains = spread(max_skew=1, key="zone", min_domains=4)
    assert len(judged(web(2, two_domains), "a1", "a2")) == 2  # 3 domains < 4: minimum 0, zone a at 2
    assert judged(web(3, two_domains), "a1", "b1", "c1") == []


def test_node_affinity_policy_honor_leaves_unselected_nodes_out() -> None:
    gang = web(2, spread(), node_selector={"zone": "a"})
    assert judged(gang, "a1", "a2") == []  # only zone a is eligible: skew 0
    ignore = web(2, spread(node_affinity_policy="Ignore"), node_selector={"zone": "a"})
    assert len(judged(ignore, "a1", "a2")) == 2  # zones b and c count with 0


def test_node_taints_policy_honor_leaves_untolerated_nodes_out() -> None:
    assert judged(web(2, spread(node_taints_policy="Honor")), "a1", "b1") == []
    assert len(judged(web(2, spread()), "a1", "a2")) == 2


def test_a_node_without_the_key_is_refused() -> None:
    (message,) = judged(web(1, spread()), "bare")
    assert "node bare has no zone label" in message


def test_schedule_anyway_is_not_a_rule_but_counts_its_excess_in_the_locality_tier() -> None:
    gang = web(3, spread(when="ScheduleAnyway"))
    assert judged(gang, "a1", "a2", "a1") == []
    snapshot = make_snapshot(nodes=NODES, groups=[gang])
    bunched = make_placement(binds=[make_bind(p, "a1") for p in gang.pending])
    spread_out = make_placement(binds=[make_bind(p, n) for p, n in zip(gang.pending, ("a1", "b1", "c1"), strict=True)])
    assert score(snapshot, spread_out).locality == 0
    assert score(snapshot, bunched).locality == 3 * (3 - 0 - 1)


def test_a_node_counts_only_with_the_keys_of_every_constraint_of_its_kind() -> None:
    # kube-scheduler counts a node for DoNotSchedule spreads only when it has all their keys:
    # `bare` has a hostname but no zone, so the per-node spread does not count it either.
    per_node = spread(max_skew=1, key="kubernetes.io/hostname")
    messages = judged(web(1, spread(max_skew=5), per_node), "bare")
    assert len(messages) == 2 and "node bare has no zone label" in messages[0]
    assert "node bare is not an eligible node" in messages[1]
    gang = web(2, per_node)
    assert judged(gang, "bare", "a1") == []  # alone, the hostname spread counts bare
    with_zone = web(2, spread(max_skew=5), per_node)
    assert any("not an eligible node" in m for m in judged(with_zone, "a1", "bare"))


# ---- every engine, on hand-computed cases ----
# Zone a holds 2 web pods, b none; c's only node is tainted (web does not tolerate it).


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_counts_an_untolerated_zone_under_the_default_taints_policy(engine: str) -> None:
    # nodeTaintsPolicy Ignore: c counts with 0 and keeps the minimum at 0, so b may reach 1.
    others = (running_web("old-0", "a1"), running_web("old-1", "a2"))
    snapshot = make_snapshot(nodes=NODES[:4], groups=[web(2, spread())], running=others)
    assert [b.node for b in solve_checked(snapshot, engine).placement.binds] == ["b1"]


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_fills_the_emptier_zone_when_taints_are_honoured(engine: str) -> None:
    # nodeTaintsPolicy Honor: only a and b count; b may catch up with a's 2.
    others = (running_web("old-0", "a1"), running_web("old-1", "a2"))
    snapshot = make_snapshot(nodes=NODES[:4], groups=[web(2, spread(node_taints_policy="Honor"))], running=others)
    assert [b.node for b in solve_checked(snapshot, engine).placement.binds] == ["b1", "b1"]
