"""Overcommitted nodes repaired, pure stages: which bound pods `controller.repair` evicts,
how `observe` counts them (never left out) and what `plan` writes first.

The live fault (an overcommitted node created before the controller starts) is in
`test_controller_fault_repair.py`.
"""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.observe import ClusterView, observe
from controller.plan import OVERCOMMITTED, plan
from controller.repair import HeldPod, repair_evictions
from models.snapshot import GPU, Node, NodeName, PodGroupKey, PodKey
from tests.builders import solve_checked
from tests.controller._controller_builders import node, pod, pod_group

GPU_1 = 1000


def _node(name: str = "n1", *, gpus: int = 8, cpu_milli: int = 64000) -> Node:
    return Node(name=NodeName(name), allocatable={"cpu": cpu_milli, GPU: gpus * GPU_1})


def _held(
    name: str, at: float, *, node: str = "n1", gpus: int = 0, indices: tuple[int, ...] | None = None,
    cpu_milli: int = 1000, group: str | None = None,
) -> HeldPod:
    requests = {"cpu": cpu_milli, **({GPU: gpus * GPU_1} if gpus else {})}
    return HeldPod(
        key=PodKey(f"ns/{name}"), node=NodeName(node), requests=requests, gpus=indices, bound_at_s=at,
        group=PodGroupKey(f"ns/{group}") if group else None,
    )


def test_the_pod_bound_last_that_does_not_fit_is_evicted_and_a_later_one_that_fits_stays() -> None:
    pods = [_held("a", 10, gpus=6), _held("b", 11, gpus=4), _held("c", 12, gpus=1)]
    (repair,) = repair_evictions({NodeName("n1"): _node()}, pods, {})
    assert (repair.pod, repair.node, repair.overflow) == ("ns/b", "n1", "gpu 11000 > 8000")


def test_a_gpu_index_held_twice_evicts_the_pod_bound_later() -> None:
    pods = [_held("late", 20, gpus=1, indices=(2,)), _held("early", 10, gpus=1, indices=(2,)), _held("other", 30, gpus=1, indices=(3,))]
    (repair,) = repair_evictions({NodeName("n1"): _node()}, pods, {})
    assert repair.pod == "ns/late"
    assert "GPU 2 of node n1 is already taken" in repair.overflow


def test_a_node_over_its_cpu_evicts_the_pod_bound_last() -> None:
    pods = [_held("b", 2, cpu_milli=3000), _held("a", 1, cpu_milli=3000)]
    (repair,) = repair_evictions({NodeName("n1"): _node(cpu_milli=4000, gpus=0)}, pods, {})
    assert (repair.pod, repair.overflow) == ("ns/b", "cpu 6000 > 4000")


def test_a_gang_cut_below_its_min_member_is_evicted_whole_on_every_node() -> None:
    pods = [
        _held("solo", 1, gpus=8),
        _held("g-0", 5, gpus=2, group="g"),  # overcommits n1
        _held("g-1", 5, node="n2", gpus=2, group="g"),
        _held("g-2", 5, node="n2", gpus=2, group="g"),
        _held("h-0", 6, node="n2", gpus=2, group="h"),
    ]
    nodes = {NodeName("n1"): _node(), NodeName("n2"): _node("n2")}
    repairs = repair_evictions(nodes, pods, {PodGroupKey("ns/g"): 3, PodGroupKey("ns/h"): 1})
    assert [(r.pod, r.node, r.overcommitted) for r in repairs] == [("ns/g-0", "n1", "n1"), ("ns/g-1", "n2", "n1"), ("ns/g-2", "n2", "n1")]
    assert "cut to 2 bound pod(s), below its minMember 3" in repairs[1].message


def test_a_gang_still_at_its_min_member_keeps_its_other_pods() -> None:
    pods = [_held("solo", 1, gpus=8), _held("g-0", 5, gpus=2, group="g"), _held("g-1", 5, node="n2", gpus=2, group="g")]
    nodes = {NodeName("n1"): _node(), NodeName("n2"): _node("n2")}
    assert [r.pod for r in repair_evictions(nodes, pods, {PodGroupKey("ns/g"): 1})] == ["ns/g-0"]


def test_nothing_is_evicted_from_a_node_that_fits() -> None:
    pods = [_held(f"p{i}", i, gpus=1, indices=(i,)) for i in range(8)]
    assert repair_evictions({NodeName("n1"): _node()}, pods, {}) == ()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 1), st.integers(0, 4), st.booleans(), st.integers(0, 3), st.integers(0, 2)),
        min_size=1, max_size=10,
    )
)
def test_after_the_repair_every_node_fits_and_no_gang_is_left_below_its_minimum(shapes: list[tuple[int, int, bool, int, int]]) -> None:
    """Whatever is bound: the pods kept fit each node (GPUs in total and no device twice,
    counted here on their own), and a gang that lost a pod keeps at least its minMember."""
    pods = []
    for number, (on, gpus, annotated, first, group) in enumerate(shapes):
        indices = tuple(range(first, first + gpus)) if annotated and gpus and first + gpus <= 4 else None
        pods.append(_held(f"p{number}", number % 3, node=f"n{on}", gpus=gpus, indices=indices, group=f"g{group}" if group else None))
    nodes = {NodeName(f"n{i}"): _node(f"n{i}", gpus=4) for i in range(2)}
    minimum = {PodGroupKey("ns/g1"): 2, PodGroupKey("ns/g2"): 1}
    evicted = {r.pod for r in repair_evictions(nodes, pods, minimum)}
    kept = [p for p in pods if p.key not in evicted]
    for name in nodes:
        there = [p for p in kept if p.node == name]
        assert sum(p.requests.get(GPU, 0) for p in there) <= 4 * GPU_1
        devices = [i for p in there for i in (p.gpus or ())]
        assert len(devices) == len(set(devices)), f"{name}: a GPU held twice: {devices}"
    for group, at_least in minimum.items():
        members = [p for p in pods if p.group == group]
        left = [p for p in members if p.key not in evicted]
        if len(left) < len(members):
            assert left == [] or len(left) >= at_least, f"{group} cut to {len(left)}"


def _running(name: str, *, on: str, gpus: int, index: int, created: str, group: str | None = None) -> dict:  # type: ignore[type-arg]
    obj = pod(name, node_name=on, gpus=gpus, phase="Running", group=group)
    obj["metadata"]["annotations"]["batchplace.io/gpus"] = ",".join(str(i) for i in range(index, index + gpus))
    obj["metadata"]["creationTimestamp"] = created
    return obj


def test_observe_counts_every_bound_pod_and_plan_evicts_the_one_bound_last_first() -> None:
    """Two running pods on GPU 2 of node n1, and a pending one-GPU gang: the later pod is a
    victim, terminating until gone (its GPU counted), not left out with the loader's warning."""
    view = ClusterView(
        nodes=(node("n1", cpu=16, gpus=4),),
        pods=(
            _running("early", on="n1", gpus=1, index=2, created="2025-01-01T00:00:00Z"),
            _running("late", on="n1", gpus=1, index=2, created="2025-01-01T00:00:05Z"),
            pod("new-0", group="new", gpus=3),
        ),
        volcano_pod_groups=(pod_group("new", min_member=1),),
    )
    observation = observe(view, scheduler_names=("batchplace",))
    assert observation.rejected == ()
    assert [r.pod for r in observation.repairs] == ["ns/late"]
    assert {p.key for p in observation.snapshot.pods} == {"ns/early", "ns/new-0"}
    assert [(t.key, t.node, t.gpus) for t in observation.terminating] == [("ns/late", "n1", (2,))]
    decision = solve_checked(observation.snapshot, "greedy", time_limit_s=5)
    the_plan = plan(observation, decision)
    repair = the_plan.gangs[0]
    assert [(e.pod, e.reason) for e in repair.evictions] == [("ns/late", "repair")]
    assert [(e.kind, e.name, e.reason, e.type) for e in repair.events] == [("Node", "n1", OVERCOMMITTED, "Warning")]
    assert repair.evictions[0].event.reason == OVERCOMMITTED and repair.evictions[0].event.kind == "Pod"
    (new,) = [g for g in the_plan.gangs if g.group == "ns/new"]
    assert new.binds == (), "bound onto the GPUs the victim still holds"


def test_observe_of_a_node_that_fits_repairs_nothing() -> None:
    view = ClusterView(
        nodes=(node("n1", cpu=16, gpus=4),),
        pods=(
            _running("a", on="n1", gpus=1, index=1, created="2025-01-01T00:00:00Z"),
            _running("b", on="n1", gpus=2, index=2, created="2025-01-01T00:00:05Z"),
        ),
    )
    observation = observe(view, scheduler_names=("batchplace",))
    assert observation.repairs == () and observation.terminating == ()
    assert len(observation.snapshot.pods) == 2


def test_observe_repairs_a_node_over_its_cpu_that_the_loader_reads_whole() -> None:
    """Two running 3-cpu pods on a 4-cpu node: no object is refused (nothing the loader checks
    clashes), the sum over the node's allocatable finds it; the pod bound last leaves."""
    early, late = (pod(name, cpu="3", node_name="n1", phase="Running") for name in ("early", "late"))
    early["metadata"]["creationTimestamp"], late["metadata"]["creationTimestamp"] = "2025-01-01T00:00:00Z", "2025-01-01T00:00:05Z"
    observation = observe(ClusterView(nodes=(node("n1", cpu=4),), pods=(early, late)), scheduler_names=("batchplace",))
    assert observation.rejected == ()
    assert [(r.pod, r.overflow) for r in observation.repairs] == [("ns/late", "cpu 6000 > 4000")]
    assert [t.key for t in observation.terminating] == ["ns/late"]


def _half_gang_view(*, gpus: int) -> ClusterView:
    """Gang old (minMember 3, one GPU a pod): old-0 bound on n1, old-1 and old-2 pending;
    n1 has `gpus` GPUs, 3 of them held by another scheduler's pod."""
    return ClusterView(
        nodes=(node("n1", cpu=16, gpus=gpus),),
        pods=(
            _running("big", on="n1", gpus=3, index=0, created="2025-01-01T00:00:00Z"),
            _running("old-0", on="n1", gpus=1, index=3, created="2025-01-01T00:00:01Z", group="old"),
            pod("old-1", group="old", gpus=1),
            pod("old-2", group="old", gpus=1),
        ),
        volcano_pod_groups=(pod_group("old", min_member=3),),
    )


def test_a_partly_bound_gang_past_its_time_is_released_with_a_reason_that_says_so() -> None:
    observation = observe(_half_gang_view(gpus=4), scheduler_names=("batchplace",))
    decision = solve_checked(observation.snapshot, "greedy", time_limit_s=5)
    (kept,) = plan(observation, decision).gangs
    assert kept.evictions == () and kept.status is not None and kept.status.status.phase == "Inqueue"
    (gang,) = plan(observation, decision, release={PodGroupKey("ns/old"): 61.0}).gangs
    assert [(e.pod, e.reason) for e in gang.evictions] == [("ns/old-0", "release")]
    assert gang.status is not None
    assert (gang.status.status.phase, gang.status.status.reason) == ("Pending", "GangReleased")
    assert gang.status.status.message.endswith("gang: 1 of min 3 bound for 61 s; released to be placed whole")
    assert [(e.kind, e.reason) for e in gang.events] == [("PodGroup", "GangReleased")]


def test_a_partly_bound_gang_the_solver_completes_is_not_released() -> None:
    observation = observe(_half_gang_view(gpus=6), scheduler_names=("batchplace",))
    for engine in ("greedy", "cpsat"):
        decision = solve_checked(observation.snapshot, engine, time_limit_s=5)
        (gang,) = plan(observation, decision, release={PodGroupKey("ns/old"): 61.0}).gangs
        assert gang.evictions == () and len(gang.binds) == 2, engine


def test_a_released_gang_keeps_the_reason_while_it_waits() -> None:
    view = _half_gang_view(gpus=4)
    view = ClusterView(nodes=view.nodes, pods=tuple(p for p in view.pods if p["metadata"]["name"] != "old-0"),
                       volcano_pod_groups=view.volcano_pod_groups)
    observation = observe(view, scheduler_names=("batchplace",))
    decision = solve_checked(observation.snapshot, "greedy", time_limit_s=5)
    why = "gang: 1 of min 3 bound for 61 s; released to be placed whole"
    (gang,) = plan(observation, decision, released={PodGroupKey("ns/old"): why}).gangs
    assert gang.status is not None and gang.status.status.message.endswith(why)


def test_another_schedulers_pod_is_counted_first_and_never_evicted() -> None:
    daemon = HeldPod(key=PodKey("kube-system/agent"), node=NodeName("n1"), requests={"cpu": 3000}, gpus=None, bound_at_s=50, ours=False)
    pods = [_held("a", 10, cpu_milli=2000), daemon]
    (repair,) = repair_evictions({NodeName("n1"): _node(cpu_milli=4000, gpus=0)}, pods, {})
    assert repair.pod == "ns/a", "ours goes, though bound first"


def test_a_pod_that_adds_nothing_to_what_overflows_is_kept() -> None:
    """Another scheduler's pods overflow the node's cpu and hold GPU 0 twice; our GPU pod on
    device 1 asks no cpu: it adds to neither, so it stays (evicted, the solver would place
    it there again), and theirs are not ours to evict."""
    others = [
        HeldPod(key=PodKey(f"kube-system/agent-{i}"), node=NodeName("n1"), requests={"cpu": 3000, GPU: GPU_1}, gpus=(0,),
                bound_at_s=i, ours=False)
        for i in range(2)
    ]
    ours = HeldPod(key=PodKey("ns/trainer"), node=NodeName("n1"), requests={GPU: GPU_1}, gpus=(1,), bound_at_s=9)
    assert repair_evictions({NodeName("n1"): _node(cpu_milli=4000, gpus=3)}, [*others, ours], {}) == ()
    clashing = HeldPod(key=PodKey("ns/late"), node=NodeName("n1"), requests={GPU: GPU_1}, gpus=(0,), bound_at_s=10)
    (repair,) = repair_evictions({NodeName("n1"): _node(cpu_milli=4000, gpus=3)}, [*others, ours, clashing], {})
    assert repair.pod == "ns/late", "ours on a device theirs hold goes"


def test_offline_pods_on_a_colocation_node_are_colocations_to_judge() -> None:
    """16 cpu, an online pod requesting 12 and offline pods 3 + 5: over the requests by
    design (they use what the online pod does not); `offline_evictions` judges them."""
    colocation = Node(name=NodeName("n1"), allocatable={"cpu": 16000}, labels={"volcano.sh/oversubscription": "true"})
    pods = [
        _held("web", 1, cpu_milli=12000),
        dataclasses.replace(_held("batch-small", 2, cpu_milli=3000), offline=True),
        dataclasses.replace(_held("batch-big", 3, cpu_milli=5000), offline=True),
    ]
    assert repair_evictions({NodeName("n1"): colocation}, pods, {}) == ()
    plain = colocation.model_copy(update={"labels": {}})
    assert [r.pod for r in repair_evictions({NodeName("n1"): plain}, pods, {})] == ["ns/batch-big"]
