"""Rule pod_affinity, judged by the checker on hand-made placements: required anti-affinity
(own terms, a running pod's terms, per node and per zone, namespaces), required affinity
(to running and to co-bound pods, the first-of-series exception, a node without the key),
and the preferred terms' weight in the locality tier."""

from __future__ import annotations

import pytest

from models.pod_affinity import LabelSelector, PodAffinityTerm, WeightedPodAffinityTerm
from models.snapshot import Pod
from solver.objective import score
from solver.place import ENGINES
from solver.rules import pod_affinity
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

HOST = "kubernetes.io/hostname"
NODES = [make_node("n1", labels={"zone": "a"}), make_node("n2", labels={"zone": "a"}), make_node("n3", labels={"zone": "b"}), make_node("bare")]


def term(topology_key: str = HOST, *, namespaces: tuple[str, ...] = (), everywhere: bool = False, **labels: str) -> PodAffinityTerm:
    return PodAffinityTerm(
        label_selector=LabelSelector(match_labels=labels), topology_key=topology_key, namespaces=namespaces, all_namespaces=everywhere
    )


def running(name: str, node: str, *, namespace: str = "default", anti: tuple[PodAffinityTerm, ...] = (), **labels: str) -> Pod:
    return labelled(make_running(name, node=node, namespace=namespace), labels, anti_affinity=[t.model_dump() for t in anti])


def web(replicas: int = 2, **inter_pod: object) -> Gang:
    return with_pod_rules(make_gang("web", replicas=replicas, min_member=1), labels={"app": "web"}, **inter_pod)


def bind(gang: Gang, *nodes: str) -> list:
    return [make_bind(pod, node) for pod, node in zip(gang.pending, nodes, strict=False)]


def violations(gang: Gang, *nodes: str, others: tuple[Pod, ...] = ()) -> list[str]:
    snapshot = make_snapshot(nodes=NODES, groups=[gang], running=others)
    return [v.message for v in rule_violations(pod_affinity, snapshot, make_placement(binds=bind(gang, *nodes)))]


SELF_ANTI = {"required_anti_affinity": (term(app="web"),)}


def test_anti_affinity_per_node_allows_one_replica_per_node() -> None:
    assert violations(web(**SELF_ANTI), "n1", "n2") == []
    found = violations(web(**SELF_ANTI), "n1", "n1")
    assert len(found) == 2 and "kubernetes.io/hostname=n1 holds default/web-worker-1" in found[0]


def test_anti_affinity_per_zone_counts_the_whole_zone() -> None:
    gang = web(required_anti_affinity=(term("zone", app="web"),))
    assert violations(gang, "n1", "n3") == []
    assert len(violations(gang, "n1", "n2")) == 2  # both in zone a


def test_a_node_without_the_key_satisfies_anti_affinity_but_fails_affinity() -> None:
    assert violations(web(required_anti_affinity=(term("zone", app="web"),)), "bare", "bare") == []
    needs_db = web(replicas=1, required_affinity=(term("zone", app="db"),))
    (message,) = violations(needs_db, "bare", others=(running("db-0", "n1", app="db"),))
    assert "node bare has no zone label" in message


def test_a_running_pods_anti_affinity_keeps_selected_pods_out_of_its_domain() -> None:
    guard = running("guard", "n1", anti=(term(app="web"),), role="guard")
    (message,) = violations(web(replicas=1), "n1", others=(guard,))
    assert "pod default/guard in kubernetes.io/hostname=n1 has anti-affinity {app=web}, which selects it" in message
    assert violations(web(replicas=1), "n2", others=(guard,)) == []


def test_terms_select_only_in_their_namespaces() -> None:
    other_namespace = running("web-old", "n1", namespace="prod", app="web")
    assert violations(web(replicas=1, **SELF_ANTI), "n1", others=(other_namespace,)) == []
    everywhere = web(replicas=1, required_anti_affinity=(term(everywhere=True, app="web"),))
    assert len(violations(everywhere, "n1", others=(other_namespace,))) == 1
    listed = web(replicas=1, required_anti_affinity=(term(namespaces=("prod",), app="web"),))
    assert len(violations(listed, "n1", others=(other_namespace,))) == 1


def test_affinity_to_a_running_pod_in_a_zone() -> None:
    cache = web(replicas=1, required_affinity=(term("zone", app="db"),))
    db = running("db-0", "n3", app="db")
    assert violations(cache, "n3", others=(db,)) == []
    (message,) = violations(cache, "n1", others=(db,))
    assert "affinity {app=db} on zone: no pod it selects in zone=a" in message


def test_affinity_is_met_by_a_pod_bound_in_the_same_cycle() -> None:
    db = with_pod_rules(make_gang("db", replicas=1), labels={"app": "db"})
    cache = with_pod_rules(make_gang("cache", replicas=1), labels={"app": "cache"}, required_affinity=(term("zone", app="db"),))
    snapshot = make_snapshot(nodes=NODES, groups=[db, cache])
    together = make_placement(binds=[*bind(db, "n1"), *bind(cache, "n2")])
    apart = make_placement(binds=[*bind(db, "n3"), *bind(cache, "n2")])
    assert rule_violations(pod_affinity, snapshot, together) == []
    assert len(rule_violations(pod_affinity, snapshot, apart)) == 1


def test_the_first_of_a_self_selecting_series_goes_anywhere_and_the_rest_join_it() -> None:
    series = web(replicas=2, required_affinity=(term("zone", app="web"),))
    assert violations(series, "n3") == []  # alone, nothing matches anywhere: kube-scheduler lets it in
    assert violations(series, "n1", "n2") == []  # together in zone a
    assert len(violations(series, "n1", "n3")) == 2  # two zones: each lacks the other
    assert len(violations(series, "n3", others=(running("web-old", "n1", app="web"),))) == 1  # a match exists elsewhere


def test_preferred_terms_add_their_weight_to_the_locality_tier_where_missed() -> None:
    db = running("db-0", "n1", app="db")
    gang = web(
        replicas=1,
        preferred_affinity=(WeightedPodAffinityTerm(weight=30, term=term(app="db")),),
        preferred_anti_affinity=(WeightedPodAffinityTerm(weight=5, term=term("zone", app="db")),),
    )
    snapshot = make_snapshot(nodes=NODES, groups=[gang], running=(db,))
    locality = {node: score(snapshot, make_placement(binds=bind(gang, node))).locality for node in ("n1", "n2", "n3")}
    assert locality == {"n1": 5, "n2": 35, "n3": 30}


def test_several_affinity_terms_count_only_pods_that_match_them_all() -> None:
    # kube-scheduler: a pod counts for the terms only when it matches every one of them.
    two_terms = web(replicas=1, required_affinity=(term("zone", app="db"), term(HOST, tier="cache")))
    apart = (running("db-0", "n1", app="db"), running("cache-0", "n1", tier="cache"))
    assert len(violations(two_terms, "n1", others=apart)) == 2
    both = (running("db-cache", "n1", app="db", tier="cache"),)
    assert violations(two_terms, "n1", others=both) == []


def test_the_first_of_a_series_still_needs_a_node_with_the_key() -> None:
    series = web(replicas=1, required_affinity=(term("zone", app="web"),))
    (message,) = violations(series, "bare")
    assert "node bare has no zone label" in message


# ---- every engine, on hand-computed cases ----


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_puts_one_replica_per_node_and_leaves_the_third(engine: str) -> None:
    gang = web(replicas=3, **SELF_ANTI)
    snapshot = make_snapshot(nodes=NODES[:2], groups=[gang])  # n1, n2
    nodes = [b.node for b in solve_checked(snapshot, engine).placement.binds]
    assert sorted(nodes) == ["n1", "n2"]


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_follows_affinity_to_the_zone_of_a_running_pod(engine: str) -> None:
    cache = web(replicas=1, required_affinity=(term("zone", app="db"),))
    snapshot = make_snapshot(nodes=NODES, groups=[cache], running=(running("db-0", "n3", app="db"),))
    assert [b.node for b in solve_checked(snapshot, engine).placement.binds] == ["n3"]  # the only node of zone b


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_keeps_out_of_a_running_pods_anti_affinity_domain(engine: str) -> None:
    guard = running("guard", "n1", anti=(term("zone", app="web"),), role="guard")
    snapshot = make_snapshot(nodes=NODES[:3], groups=[web(replicas=2)], running=(guard,))
    assert [b.node for b in solve_checked(snapshot, engine).placement.binds] == ["n3", "n3"]  # zone a is guarded


def test_a_selector_mentioning_label_still_lets_the_first_of_a_series_in() -> None:
    # Whether the node lacks a key is a fact, not a word in the message: a selector on a key
    # named "label" must not read as a missing key.
    series = with_pod_rules(make_gang("s", replicas=1, min_member=1), labels={"label": "x"}, required_affinity=(term("zone", label="x"),))
    assert violations(series, "n3") == []
