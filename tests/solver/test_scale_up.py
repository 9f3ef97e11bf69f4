"""The scale-up plan on hand-computed cases (`solver.scale_up.plan_scale_up`): every plan's
binds are judged by the checker on the snapshot with its bought nodes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from models.errors import FieldError
from models.node_templates import NodeTemplates, read_node_templates
from models.placement import Placement
from models.scale_up_plan import ScaleUpPlan
from models.snapshot import Snapshot
from solver import scale_up
from solver.checker import check_placement
from solver.place import SolveConfig
from solver.scale_up import extended_by_plan, plan_scale_up
from tests.builders import GIB, NodeSpec, make_gang, make_node, make_queue, make_snapshot, resources

CONFIG = SolveConfig(time_limit_s=1.0)
GPU_NODE = {"cpu": 192_000, "memory": 1024 * GIB, "gpu": 8000}


def template(name: str, *, price: float = 10.0, max_count: int = 8, **fields: Any) -> dict[str, Any]:
    return {"name": name, "allocatable": GPU_NODE, "price_per_hour": price, "max_count": max_count, **fields}


def templates(*entries: dict[str, Any]) -> NodeTemplates:
    return read_node_templates(list(entries), source="templates.yaml")


def full_cluster(*groups: Any, extra_nodes: Sequence[NodeSpec] = (), **snapshot_fields: Any) -> Snapshot:
    """Four 8-GPU nodes in two leaves under one spine, all taken by a running gang."""
    nodes = [*(make_node(f"n{i}", gpus=8, leaf=f"leaf-{i // 2}", spine="spine") for i in range(4)), *extra_nodes]
    busy = make_gang("busy", replicas=4, gpus=8, running_on=[f"n{i}" for i in range(4)], preemptable=False)
    return make_snapshot(nodes=nodes, groups=[busy, *groups], **snapshot_fields)


def checked(snapshot: Snapshot, chosen: NodeTemplates, plan: ScaleUpPlan) -> ScaleUpPlan:
    """The plan, after the checker found its binds valid on the snapshot with its nodes."""
    bigger = extended_by_plan(snapshot, chosen, plan)
    assert check_placement(bigger, Placement(binds=plan.binds, evictions=plan.evictions)) == ()
    bought = {name for row in plan.bought for name in row.nodes}
    assert bought <= {node.name for node in bigger.nodes}
    return plan


def test_hard_leaf_gang_of_32_gpus_gets_4_nodes_in_one_leaf() -> None:
    llm = make_gang("llm", replicas=4, gpus=8, topology_tier=1)
    snapshot = full_cluster(llm)
    chosen = templates(template("p5", hypernodes=["leaf-0", "leaf-1"]))
    plan = checked(snapshot, chosen, plan_scale_up(snapshot, chosen, config=CONFIG))
    assert plan.started == ("default/llm",)
    assert [(row.template, len(row.nodes)) for row in plan.bought] == [("p5", 4)]
    assert plan.bought[0].domain in ("leaf-0", "leaf-1")
    assert plan.price_per_hour == pytest.approx(40.0)


def test_hard_leaf_gang_fills_a_new_leaf_under_the_spine() -> None:
    llm = make_gang("llm", replicas=4, gpus=8, topology_tier=1)
    snapshot = full_cluster(llm)
    chosen = templates(template("p5", new_hypernode={"tier": 1, "size": 4, "parent": "spine"}))
    plan = checked(snapshot, chosen, plan_scale_up(snapshot, chosen, config=CONFIG))
    assert plan.started == ("default/llm",)
    assert [(row.domain, len(row.nodes)) for row in plan.bought] == [("p5-domain-1", 4)]


def test_hard_leaf_gang_is_not_spread_over_leaves_too_small_for_it() -> None:
    """New leaves hold 2 nodes each: 4 nodes anywhere would be cheap, but no leaf holds 4."""
    llm = make_gang("llm", replicas=4, gpus=8, topology_tier=1)
    snapshot = full_cluster(llm)
    chosen = templates(template("p5", new_hypernode={"tier": 1, "size": 2, "parent": "spine"}))
    plan = plan_scale_up(snapshot, chosen, config=CONFIG)
    assert plan.started == ()
    assert plan.bought == ()
    assert [w.pod_group for w in plan.still_waiting] == ["default/llm"]
    assert "tier <= 1" in (plan.still_waiting[0].plan_note or "")


def test_quota_blocked_gang_gets_no_nodes() -> None:
    """Its queue is at its capability: the solve says quota, and no node is bought."""
    capped = make_gang("capped", replicas=1, gpus=8, queue="small")
    held = make_gang("held", replicas=1, gpus=8, queue="small", running_on=["n9"], preemptable=False)
    small = make_queue("small", capability=resources(gpus=8))
    snapshot = full_cluster(capped, held, extra_nodes=[make_node("n9", gpus=8)], queues=[small])
    chosen = templates(template("p5"))
    plan = plan_scale_up(snapshot, chosen, config=CONFIG)
    assert plan.bought == () and plan.engine == "none"
    assert [w.pod_group for w in plan.not_planned] == ["default/capped"]
    assert plan.not_planned[0].reasons[0].rule == "quota"


def test_gang_asking_more_than_its_queue_has_left_gets_no_nodes() -> None:
    """The cluster is full, but 16 GPUs past a cap of 8 is a wait no node ends: the solve
    says the quota beside the capacity (`solver.greedy` judges the gang's whole minimum
    against the capability), so the gang is never a candidate."""
    capped = make_gang("capped", replicas=2, gpus=8, queue="small")
    snapshot = full_cluster(capped, queues=[make_queue("small", capability=resources(gpus=8))])
    plan = plan_scale_up(snapshot, templates(template("p5")), config=CONFIG)
    assert plan.bought == () and plan.engine == "none"
    assert [w.pod_group for w in plan.not_planned] == ["default/capped"]
    assert "quota" in {reason.rule for reason in plan.not_planned[0].reasons}


def test_a_gang_asking_none_of_a_resource_its_queue_is_over_gets_nodes() -> None:
    """Queue small runs 16 GPUs past its cap of 8 (a cap lowered under running pods). A
    CPU-only gang of it asks no GPU, so that cap does not hold it: it gets a node for the
    100 cores no node has. (The capability check read its GPU request and raised KeyError:
    drawn by the scale-up property.)"""
    cpu_only = make_gang("etl", cpu=100, queue="small")
    held = make_gang("held", replicas=2, gpus=8, queue="small", running_on=["n8", "n9"], preemptable=False)
    small = make_queue("small", capability=resources(gpus=8))
    extra = [make_node("n8", gpus=8), make_node("n9", gpus=8)]
    snapshot = full_cluster(cpu_only, held, extra_nodes=extra, queues=[small])
    chosen = templates(template("p5"))
    plan = checked(snapshot, chosen, plan_scale_up(snapshot, chosen, config=CONFIG))
    assert plan.started == ("default/etl",)
    assert [(row.template, len(row.nodes)) for row in plan.bought] == [("p5", 1)]


def test_two_gangs_of_one_queue_get_nodes_for_what_its_capability_leaves() -> None:
    """Each fits the queue's 16 GPUs alone, not both: nodes for one only."""
    a = make_gang("a", replicas=2, gpus=8, queue="team", priority=5)
    b = make_gang("b", replicas=2, gpus=8, queue="team")
    snapshot = full_cluster(a, b, queues=[make_queue("team", capability=resources(gpus=16))])
    chosen = templates(template("p5"))
    plan = checked(snapshot, chosen, plan_scale_up(snapshot, chosen, config=CONFIG))
    assert plan.started == ("default/a",)
    assert sum(len(row.nodes) for row in plan.bought) == 2


def test_the_cheaper_of_two_fitting_templates_is_bought() -> None:
    job = make_gang("job", replicas=2, gpus=8)
    snapshot = full_cluster(job)
    chosen = templates(template("dear", price=30.0), template("cheap", price=12.5))
    plan = checked(snapshot, chosen, plan_scale_up(snapshot, chosen, config=CONFIG))
    assert plan.started == ("default/job",)
    assert [(row.template, len(row.nodes)) for row in plan.bought] == [("cheap", 2)]
    assert plan.price_per_hour == pytest.approx(25.0)


def test_max_count_is_respected_and_the_higher_priority_gang_gets_the_nodes() -> None:
    first = make_gang("first", replicas=2, gpus=8, priority=10)
    second = make_gang("second", replicas=2, gpus=8)
    snapshot = full_cluster(first, second)
    chosen = templates(template("p5", max_count=3))
    plan = checked(snapshot, chosen, plan_scale_up(snapshot, chosen, config=CONFIG))
    assert plan.started == ("default/first",)
    assert sum(len(row.nodes) for row in plan.bought) == 2
    assert [w.pod_group for w in plan.still_waiting] == ["default/second"]
    assert "max counts" in (plan.still_waiting[0].plan_note or "")


def test_a_gang_no_template_can_host_stays_waiting_with_why() -> None:
    picky = make_gang("picky", replicas=1, gpus=8, node_selector={"gpu": "h200"})
    snapshot = full_cluster(picky)
    chosen = templates(template("p5", labels={"gpu": "h100"}), template("small", allocatable={"cpu": 8000}))
    plan = plan_scale_up(snapshot, chosen, config=CONFIG)
    assert plan.bought == () and plan.started == ()
    note = plan.still_waiting[0].plan_note or ""
    assert "p5: node selector mismatch" in note
    assert "small: node selector mismatch" in note


def test_a_node_too_small_is_named_by_what_it_lacks() -> None:
    big = make_gang("big", replicas=1, gpus=8)
    snapshot = full_cluster(big)
    chosen = templates(template("small", allocatable={"cpu": 8000, "gpu": 4000}))
    plan = plan_scale_up(snapshot, chosen, config=CONFIG)
    assert plan.still_waiting[0].plan_note == "no template's node holds a pod of task worker (small: insufficient gpu)"


def test_two_gangs_share_bought_nodes_when_they_fit_together() -> None:
    """Two 4-GPU gangs need one 8-GPU node, not two."""
    a = make_gang("a", replicas=1, gpus=4)
    b = make_gang("b", replicas=1, gpus=4)
    snapshot = full_cluster(a, b)
    chosen = templates(template("p5"))
    plan = checked(snapshot, chosen, plan_scale_up(snapshot, chosen, config=CONFIG))
    assert set(plan.started) == {"default/a", "default/b"}
    assert sum(len(row.nodes) for row in plan.bought) == 1


def test_same_input_same_plan() -> None:
    llm = make_gang("llm", replicas=4, gpus=8, topology_tier=1)
    job = make_gang("job", replicas=3, gpus=4)
    snapshot = full_cluster(llm, job)
    chosen = templates(template("p5", hypernodes=["leaf-0", "leaf-1"]), template("g4", price=4.0, allocatable={"cpu": 32000, "gpu": 4000}))
    assert plan_scale_up(snapshot, chosen, config=CONFIG) == plan_scale_up(snapshot, chosen, config=CONFIG)


def test_greedy_chooses_when_the_model_is_too_large(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scale_up.cpsat_choice, "MAX_MODELLED_NODES", 0)
    llm = make_gang("llm", replicas=4, gpus=8, topology_tier=1)
    snapshot = full_cluster(llm)
    chosen = templates(template("p5", hypernodes=["leaf-0", "leaf-1"]), template("loose", price=1.0))
    plan = checked(snapshot, chosen, plan_scale_up(snapshot, chosen, config=CONFIG))
    assert plan.engine == "greedy"
    assert plan.started == ("default/llm",)
    assert [(row.template, len(row.nodes)) for row in plan.bought] == [("p5", 4)]


def test_a_template_naming_an_unknown_hypernode_is_an_error_naming_it() -> None:
    snapshot = full_cluster(make_gang("job", replicas=1, gpus=8))
    chosen = templates(template("p5", hypernodes=["leaf-9"]))
    with pytest.raises(FieldError, match=r"templates.yaml: templates\[0\].hypernodes\[0\]: no HyperNode 'leaf-9'"):
        plan_scale_up(snapshot, chosen, config=CONFIG, source="templates.yaml")


def test_hard_leaf_gang_takes_the_dearer_leaf_rather_than_two_cheap_halves() -> None:
    """Two nodes in leaf-0 are cheap, but the gang needs 4 in one leaf: 4 in leaf-1."""
    llm = make_gang("llm", replicas=4, gpus=8, topology_tier=1)
    snapshot = full_cluster(llm)
    chosen = templates(
        template("cheap", price=1.0, max_count=2, hypernodes=["leaf-0"]),
        template("dear", price=10.0, hypernodes=["leaf-1"]),
    )
    plan = checked(snapshot, chosen, plan_scale_up(snapshot, chosen, config=CONFIG))
    assert plan.started == ("default/llm",)
    assert [(row.template, row.domain, len(row.nodes)) for row in plan.bought] == [("dear", "leaf-1", 4)]


def test_nodes_go_to_the_gang_its_queue_leaves_room_for() -> None:
    """a and c share a 16-GPU cap: both cannot run, so the 5 nodes allowed start a and b
    (a and c would take 4 of them, and c would not start)."""
    a = make_gang("a", replicas=2, gpus=8, queue="team", priority=5)
    c = make_gang("c", replicas=2, gpus=8, queue="team", priority=4)
    b = make_gang("b", replicas=3, gpus=8)
    snapshot = full_cluster(a, b, c, queues=[make_queue("team", capability=resources(gpus=16))])
    chosen = templates(template("p5", max_count=5))
    plan = checked(snapshot, chosen, plan_scale_up(snapshot, chosen, config=CONFIG))
    assert set(plan.started) == {"default/a", "default/b"}
    assert [(w.pod_group, w.plan_note) for w in plan.still_waiting] == [
        ("default/c", "queue team capability leaves 0 gpu, the gang needs 16 gpu once the gangs the plan starts run")
    ]
