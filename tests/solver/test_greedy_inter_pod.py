"""The greedy engine under pod affinity, anti-affinity and topology spread: the binds each
scenario must get and the reasons for what waits. Every placement also passes the
independent checker (rules `pod_affinity` and `topology_spread` judge the end state)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.placement import Decision, PodGroupOutcome
from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.greedy import solve_greedy
from solver.rules import topology_spread as spread_rule
from tests.builders import (
    Gang,
    labelled,
    make_gang,
    make_node,
    make_running,
    make_snapshot,
    pod_term,
    spread,
    with_pod_rules,
)

HOST = "kubernetes.io/hostname"
WEB = {"app": "web"}


def solve(snapshot: Snapshot) -> Decision:
    decision = solve_greedy(snapshot)
    assert check_placement(snapshot, decision.placement) == ()
    for outcome in decision.podgroups:
        assert outcome.state == "scheduled" or outcome.reasons, outcome
    return decision


def nodes_of(decision: Decision) -> dict[str, str]:
    return {bind.pod: bind.node for bind in decision.placement.binds}


def outcome(decision: Decision, gang: Gang) -> PodGroupOutcome:
    return next(o for o in decision.podgroups if o.name == gang.key)


def zone(name: str, zone_name: str, **kwargs: Any):  # noqa: ANN201 - a NodeSpec
    return make_node(name, labels={"zone": zone_name, **kwargs.pop("labels", {})}, **kwargs)


def web_pod(name: str, node: str, **labels: str):  # noqa: ANN201 - a Pod
    return labelled(make_running(name, node=node), {**WEB, **labels})


# ---- required anti-affinity ----


def test_anti_affinity_puts_one_replica_per_node_and_the_third_waits_beside_a_started_gang() -> None:
    web = with_pod_rules(
        make_gang("web", replicas=3, min_member=2), labels=WEB, required_anti_affinity=[pod_term(app="web")]
    )
    decision = solve(make_snapshot(nodes=[make_node("n1"), make_node("n2")], groups=[web]))
    assert sorted(nodes_of(decision).values()) == ["n1", "n2"]
    assert outcome(decision, web).placed == 2


def test_anti_affinity_gang_that_cannot_be_whole_waits_and_says_which_term() -> None:
    web = with_pod_rules(make_gang("web", replicas=3), labels=WEB, required_anti_affinity=[pod_term(app="web")])
    decision = solve(make_snapshot(nodes=[make_node("n1"), make_node("n2")], groups=[web]))
    assert decision.placement.binds == ()
    assert (
        f"pod_affinity: task worker: 0/2 nodes fit another pod: 2 anti-affinity {{app=web}} on {HOST}"
        in outcome(decision, web).reasons
    )


def test_a_rolled_back_gang_leaves_no_pods_behind_in_the_counts() -> None:
    """web-a (older) cannot be whole and rolls back; web-b then finds both nodes free of web pods."""
    rules = {"labels": WEB, "required_anti_affinity": [pod_term(app="web")]}
    first = with_pod_rules(make_gang("web-a", replicas=3), **rules)
    second = with_pod_rules(make_gang("web-b", replicas=2), **rules)
    second = Gang(group=second.group.model_copy(update={"creation_time": 10.0}), pods=second.pods)
    decision = solve(make_snapshot(nodes=[make_node("n1"), make_node("n2")], groups=[first, second]))
    assert outcome(decision, first).placed == 0
    assert sorted(nodes_of(decision).values()) == ["n1", "n2"]


def test_a_running_pods_anti_affinity_keeps_matching_pods_off_its_node() -> None:
    guard = labelled(make_running("guard", node="n1"), {"app": "db"}, anti_affinity=[pod_term(app="web")])
    web = with_pod_rules(make_gang("web"), labels=WEB)  # no constraint of its own
    decision = solve(make_snapshot(nodes=[make_node("n1"), make_node("n2")], groups=[web], running=[guard]))
    assert nodes_of(decision) == {"default/web-worker-0": "n2"}


def test_a_running_pods_anti_affinity_on_zone_keeps_the_whole_zone() -> None:
    guard = labelled(make_running("guard", node="n1"), {"app": "db"}, anti_affinity=[pod_term("zone", app="web")])
    web = with_pod_rules(make_gang("web"), labels=WEB)
    nodes = [zone("n1", "a"), zone("n2", "a"), zone("n3", "b")]
    decision = solve(make_snapshot(nodes=nodes, groups=[web], running=[guard]))
    assert nodes_of(decision) == {"default/web-worker-0": "n3"}


# ---- required affinity ----


def test_affinity_follows_a_running_pod_into_its_zone() -> None:
    cache = labelled(make_running("cache", node="n3"), {"app": "cache"})
    web = with_pod_rules(make_gang("web", replicas=2), labels=WEB, required_affinity=[pod_term("zone", app="cache")])
    nodes = [zone("n1", "a", cpu=2), zone("n2", "a", cpu=2), zone("n3", "b"), zone("n4", "b")]
    decision = solve(make_snapshot(nodes=nodes, groups=[web], running=[cache]))
    assert set(nodes_of(decision).values()) <= {"n3", "n4"} and len(nodes_of(decision)) == 2


def test_affinity_to_pods_that_exist_nowhere_waits_with_the_term() -> None:
    web = with_pod_rules(make_gang("web"), labels=WEB, required_affinity=[pod_term("zone", app="cache")])
    decision = solve(make_snapshot(nodes=[zone("n1", "a"), zone("n2", "b")], groups=[web]))
    assert decision.placement.binds == ()
    assert (
        f"pod_affinity: task worker: 0/2 nodes fit another pod: 2 affinity {{app=cache}} on zone"
        in outcome(decision, web).reasons
    )


def test_first_of_a_self_affine_series_goes_anywhere_and_the_rest_join_it() -> None:
    """One pod per node fits (1 CPU); packing alone would spread the pair over zones a and b."""
    web = with_pod_rules(make_gang("web", replicas=2), labels=WEB, required_affinity=[pod_term("zone", app="web")])
    nodes = [zone("n1", "a", cpu=1), zone("n2", "b", cpu=1), zone("n3", "a", cpu=1)]
    decision = solve(make_snapshot(nodes=nodes, groups=[web]))
    assert sorted(nodes_of(decision).values()) == ["n1", "n3"]


def test_a_series_started_elsewhere_later_is_joined_after_a_second_round() -> None:
    """web-a (older, self-affine) starts a series alone in zone a; web-b, matching it but
    bound to zone b by its node selector, then takes the exception away. The end state
    check places web-a again after web-b: into zone b, beside it."""
    first = with_pod_rules(make_gang("web-a"), labels=WEB, required_affinity=[pod_term("zone", app="web")])
    second = with_pod_rules(make_gang("web-b", node_selector={"zone": "b"}), labels=WEB)
    second = Gang(group=second.group.model_copy(update={"creation_time": 10.0}), pods=second.pods)
    decision = solve(make_snapshot(nodes=[zone("n1", "a"), zone("n2", "b")], groups=[first, second]))
    assert nodes_of(decision) == {"default/web-a-worker-0": "n2", "default/web-b-worker-0": "n2"}


def test_preemption_does_not_evict_the_pod_a_bound_pods_affinity_needs() -> None:
    low = labelled(make_running("cache", node="n1", cpu=1, priority=0), {"app": "cache"})
    owner = make_gang("cache-owner", priority=0)
    low = low.model_copy(update={"pod_group": owner.group.key, "task": "worker"})
    owner = Gang(group=owner.group, pods=(low,))
    web = with_pod_rules(make_gang("web", priority=20), labels=WEB, required_affinity=[pod_term("zone", app="cache")])
    big = make_gang("big", priority=10)
    decision = solve(make_snapshot(nodes=[zone("n1", "a", cpu=2)], groups=[owner, web, big]))
    assert nodes_of(decision) == {"default/web-worker-0": "n1"}
    assert decision.placement.evictions == ()
    assert outcome(decision, big).state == "pending"


# ---- DoNotSchedule spread ----


def test_spread_fills_the_emptier_zone_first_against_existing_skew() -> None:
    running = [web_pod("old-0", "n1"), web_pod("old-1", "n2")]
    web = with_pod_rules(make_gang("web", replicas=2), labels=WEB, topology_spread=[spread("zone", app="web")])
    nodes = [zone("n1", "a"), zone("n2", "a"), zone("n3", "b")]
    decision = solve(make_snapshot(nodes=nodes, groups=[web], running=running))
    assert sorted(nodes_of(decision).values()) == ["n3", "n3"]


def test_spread_past_max_skew_waits_with_the_domain_and_the_numbers() -> None:
    running = [web_pod(f"old-{i}", "n1") for i in range(3)]
    web = with_pod_rules(
        make_gang("web", node_selector={"zone": "a"}), labels=WEB,
        topology_spread=[spread("zone", app="web", node_affinity_policy="Ignore")],
    )
    decision = solve(make_snapshot(nodes=[zone("n1", "a"), zone("n2", "b")], groups=[web], running=running))
    assert decision.placement.binds == ()
    assert (
        f"topology_spread: task worker: 0/2 nodes fit another pod: 1 spread {{app=web}} over zone "
        "(maxSkew 1): zone=a would end 4 above the emptiest"
    ) in outcome(decision, web).reasons


def test_min_domains_counts_missing_domains_as_empty() -> None:
    """Two zones, minDomains 3: the minimum is 0, so each zone takes at most maxSkew (1) pod."""
    web = with_pod_rules(
        make_gang("web", replicas=3, min_member=1), labels=WEB, topology_spread=[spread("zone", app="web", min_domains=3)]
    )
    decision = solve(make_snapshot(nodes=[zone("n1", "a"), zone("n2", "b")], groups=[web]))
    assert sorted(nodes_of(decision).values()) == ["n1", "n2"]


def _policy_snapshot(policy: str) -> tuple[Snapshot, Gang]:
    """Zones a (2 web pods), b (1), c (none; its node is not in the task's pool)."""
    nodes = [
        zone("n1", "a", labels={"pool": "main"}),
        zone("n2", "b", labels={"pool": "main"}),
        zone("n3", "c", labels={"pool": "other"}),
    ]
    running = [web_pod("old-0", "n1"), web_pod("old-1", "n1"), web_pod("old-2", "n2")]
    web = with_pod_rules(
        make_gang("web", node_selector={"pool": "main"}), labels=WEB,
        topology_spread=[spread("zone", app="web", node_affinity_policy=policy)],
    )
    return make_snapshot(nodes=nodes, groups=[web], running=running), web


def test_node_affinity_policy_honor_leaves_out_domains_the_pod_cannot_reach() -> None:
    snapshot, _ = _policy_snapshot("Honor")
    assert nodes_of(solve(snapshot)) == {"default/web-worker-0": "n2"}


def test_node_affinity_policy_ignore_counts_the_unreachable_empty_domain() -> None:
    snapshot, web = _policy_snapshot("Ignore")
    decision = solve(snapshot)
    assert decision.placement.binds == ()
    assert any(r.rule == spread_rule.NAME for r in outcome(decision, web).reasons)


def test_pods_without_the_constraint_do_not_push_a_bound_pods_zone_past_its_skew() -> None:
    """spread (older) goes first into zone a; other-web, matching its selector with no
    constraint of its own, must not pile two more pods into zone a."""
    first = with_pod_rules(make_gang("spread"), labels=WEB, topology_spread=[spread("zone", app="web")])
    second = with_pod_rules(make_gang("other-web", replicas=2), labels=WEB)
    second = Gang(group=second.group.model_copy(update={"creation_time": 10.0}), pods=second.pods)
    decision = solve(make_snapshot(nodes=[zone("n1", "a"), zone("n2", "b")], groups=[first, second]))
    assert len(nodes_of(decision)) == 3


# ---- preferences ----


def test_preferred_anti_affinity_picks_the_node_without_a_match_and_never_costs_the_placement() -> None:
    web = with_pod_rules(
        make_gang("web"), labels=WEB, preferred_anti_affinity=[{"weight": 50, "term": pod_term(app="web")}]
    )
    snapshot = make_snapshot(nodes=[make_node("n1"), make_node("n2")], groups=[web], running=[web_pod("old", "n1")])
    assert nodes_of(solve(snapshot)) == {"default/web-worker-0": "n2"}
    alone = make_snapshot(nodes=[make_node("n1")], groups=[web], running=[web_pod("old", "n1")])
    assert nodes_of(solve(alone)) == {"default/web-worker-0": "n1"}


def test_preferred_affinity_picks_the_zone_of_its_match() -> None:
    cache = labelled(make_running("cache", node="n2"), {"app": "cache"})
    web = with_pod_rules(
        make_gang("web"), labels=WEB, preferred_affinity=[{"weight": 10, "term": pod_term("zone", app="cache")}]
    )
    snapshot = make_snapshot(nodes=[zone("n1", "a"), zone("n2", "b", cpu=64)], groups=[web], running=[cache])
    assert nodes_of(solve(snapshot)) == {"default/web-worker-0": "n2"}


def test_schedule_anyway_spread_prefers_the_emptier_zone() -> None:
    running = [web_pod("old-0", "n1"), web_pod("old-1", "n1")]
    web = with_pod_rules(make_gang("web"), labels=WEB, topology_spread=[spread("zone", hard=False, app="web")])
    snapshot = make_snapshot(nodes=[zone("n1", "a"), zone("n2", "b")], groups=[web], running=running)
    assert nodes_of(solve(snapshot)) == {"default/web-worker-0": "n2"}


# ---- any snapshot ----

LABELS = [{"app": "web"}, {"app": "db"}, {"app": "web", "tier": "front"}, {}]


@st.composite
def inter_pod_snapshots(draw: st.DrawFn) -> Snapshot:
    """Up to 6 nodes over zones a–c (some without a zone), running pods with labels and
    anti-affinity (some of a low-priority PodGroup, which preemption may evict), and up to 5
    PodGroups whose task carries labels and random constraints."""
    node_count = draw(st.integers(1, 6))
    nodes = []
    for i in range(node_count):
        labels = {} if draw(st.integers(0, 5)) == 0 else {"zone": draw(st.sampled_from("abc"))}
        if draw(st.booleans()):
            labels["pool"] = "main"
        nodes.append(make_node(f"n{i}", cpu=draw(st.sampled_from([2, 4])), labels=labels))

    def term() -> dict[str, Any]:
        return pod_term(draw(st.sampled_from([HOST, "zone"])), **draw(st.sampled_from(LABELS[:3])))

    running = []
    for i in range(draw(st.integers(0, 4))):
        anti = [term()] if draw(st.integers(0, 3)) == 0 else []
        running.append(
            labelled(make_running(f"run-{i}", node=f"n{draw(st.integers(0, node_count - 1))}"), draw(st.sampled_from(LABELS)), anti_affinity=anti)
        )
    groups = []
    victims = draw(st.integers(0, 3))  # running pods of a low-priority PodGroup: what preemption may evict
    if victims:
        low = make_gang(
            "low", replicas=victims, min_member=1, running_on=[f"n{draw(st.integers(0, node_count - 1))}" for _ in range(victims)]
        )
        labels = draw(st.sampled_from(LABELS))
        groups.append(Gang(group=low.group, pods=tuple(labelled(pod, labels) for pod in low.pods)))
    for g in range(draw(st.integers(1, 5))):
        replicas = draw(st.integers(1, 3))
        gang = make_gang(
            f"g{g}",
            replicas=replicas,
            min_member=draw(st.integers(1, replicas)),
            priority=draw(st.sampled_from([0, 0, 10])),
            node_selector=draw(st.sampled_from([None, None, {"pool": "main"}])),
        )
        rules: dict[str, Any] = {}
        for field_name in ("required_affinity", "required_anti_affinity"):
            if draw(st.integers(0, 2)) == 0:
                rules[field_name] = [term()]
        for field_name in ("preferred_affinity", "preferred_anti_affinity"):
            if draw(st.integers(0, 3)) == 0:
                rules[field_name] = [{"weight": draw(st.integers(1, 100)), "term": term()}]
        if draw(st.integers(0, 1)) == 0:
            rules["topology_spread"] = [
                spread(
                    draw(st.sampled_from([HOST, "zone"])),
                    max_skew=draw(st.integers(1, 2)),
                    hard=draw(st.booleans()),
                    **draw(st.sampled_from(LABELS[:3])),
                    **({"node_affinity_policy": "Ignore"} if draw(st.booleans()) else {}),
                )
            ]
            if draw(st.integers(0, 3)) == 0 and rules["topology_spread"][0]["when_unsatisfiable"] == "DoNotSchedule":
                rules["topology_spread"][0]["min_domains"] = draw(st.integers(1, 4))
        groups.append(with_pod_rules(gang, labels=draw(st.sampled_from(LABELS)), **rules))
    return make_snapshot(nodes=nodes, groups=groups, running=running)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inter_pod_snapshots())
def test_greedy_placements_under_inter_pod_constraints_pass_the_checker(snapshot: Snapshot) -> None:
    solve(snapshot)
