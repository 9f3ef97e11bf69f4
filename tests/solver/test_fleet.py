"""`solver.fleet`: one solve over several clusters — a gang lands in one cluster, quotas hold
fleet-wide, each submitted job's reasons name every cluster; what-if says why not the others."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.clusters import cluster_of_node, merge_clusters
from models.snapshot import Snapshot
from solver import reasons
from solver.checker import check_placement
from solver.fleet import fleet_what_if, place_fleet
from solver.place import SolveConfig
from solver.rules import quota, topology
from solver.whatif import Changes
from tests.builders import make_gang, make_node, make_queue, make_snapshot, resources
from tests.strategies import snapshots

ENGINES = ["greedy", "cpsat"]


def _solve(fleet: Any, engine: str) -> Any:
    decided = place_fleet(fleet, SolveConfig(engine=engine, time_limit_s=10))  # type: ignore[arg-type]
    assert check_placement(fleet.snapshot, decided.decision.placement) == ()
    return decided


def _cluster(gpu_nodes: int, *, busy: int = 0) -> Snapshot:
    """`gpu_nodes` 8-GPU nodes on one leaf; the first `busy` run an 8-GPU pod."""
    nodes = [make_node(f"n{i}", gpus=8, leaf="leaf") for i in range(gpu_nodes)]
    running = [make_gang("old", replicas=busy, gpus=8, running_on=[f"n{i}" for i in range(busy)], priority=10)] if busy else []
    return make_snapshot(nodes=nodes, groups=running)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_job_goes_to_the_cluster_where_its_gang_fits(engine: str) -> None:
    fleet = merge_clusters(
        {"gpu-west": _cluster(4, busy=2), "gpu-east": _cluster(4)},
        jobs=make_snapshot(groups=[make_gang("llm", replicas=4, gpus=8)]),
    )
    decided = _solve(fleet, engine)
    (job,) = decided.jobs
    assert job.cluster == "gpu-east"
    assert sorted(b.node for b in decided.placements["gpu-east"].binds) == ["n0", "n1", "n2", "n3"]
    assert decided.placements["gpu-west"].binds == ()
    assert job.clusters == ("gpu-west: 16 gpu short (16 free, 32 to start)", "gpu-east: placed, 32 gpu on 4 nodes")
    assert job.reason.code == reasons.cluster_dispatch.code and job.reason.rule in reasons.NOT_RULES
    assert job.reason.startswith("cluster: gpu-west: 16 gpu short")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gang_never_spans_two_clusters_though_their_sum_would_hold_it(engine: str) -> None:
    fleet = merge_clusters(
        {"gpu-west": _cluster(2), "gpu-east": _cluster(2)},
        jobs=make_snapshot(groups=[make_gang("llm", replicas=3, gpus=8)]),
    )
    decided = _solve(fleet, engine)
    assert decided.decision.placement.binds == ()
    (job,) = decided.jobs
    assert job.cluster is None
    assert job.clusters == (
        "gpu-west: 8 gpu short (16 free, 24 to start)",
        "gpu-east: 8 gpu short (16 free, 24 to start)",
    )
    (outcome,) = [o for o in decided.decision.podgroups if o.name == "default/llm"]
    assert outcome.state == "pending" and outcome.reasons


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pending_pod_group_already_in_a_cluster_stays_there(engine: str) -> None:
    west = make_snapshot(nodes=[make_node("n0", gpus=8)], groups=[make_gang("mine", gpus=8, running_on=[]), make_gang("x", gpus=8, running_on=["n0"])])
    fleet = merge_clusters({"gpu-west": west, "gpu-east": _cluster(2)})
    decided = _solve(fleet, engine)
    assert decided.decision.placement.binds == ()  # east has room, but `mine` was submitted to west
    assert decided.jobs == ()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_global_queue_quota_holds_over_all_clusters_together(engine: str) -> None:
    team = make_queue("team-a", capability=resources(gpus=16))
    west = make_snapshot(nodes=[make_node("n0", gpus=8)], groups=[make_gang("old", gpus=8, queue="team-a", running_on=["n0"])], queues=[team])
    fleet = merge_clusters(
        {"gpu-west": west, "gpu-east": _cluster(4)},
        jobs=make_snapshot(groups=[make_gang("llm", replicas=2, gpus=8, queue="team-a")], queues=[team]),
    )
    decided = _solve(fleet, engine)
    assert decided.decision.placement.binds == ()  # east is empty, but team-a may run 16 GPUs fleet-wide and runs 8
    (outcome,) = [o for o in decided.decision.podgroups if o.name == "default/llm"]
    assert any(r.rule == quota.NAME for r in outcome.reasons)
    assert decided.jobs[0].clusters[1] == "gpu-east: gang of 16 gpu fits in 32 free"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_job_pinned_by_the_cluster_label_goes_only_there(engine: str) -> None:
    fleet = merge_clusters(
        {"gpu-west": _cluster(1), "gpu-east": _cluster(4)},
        jobs=make_snapshot(groups=[make_gang("llm", gpus=8, node_selector={"batchplace.io/cluster": "gpu-west"})]),
    )
    decided = _solve(fleet, engine)
    assert decided.jobs[0].cluster == "gpu-west"


def test_the_contract_lists_each_clusters_binds_and_where_each_job_went() -> None:
    fleet = merge_clusters(
        {"gpu-west": _cluster(1), "gpu-east": _cluster(1)}, jobs=make_snapshot(groups=[make_gang("llm", gpus=8)])
    )
    contract = _solve(fleet, "greedy").to_contract()
    assert set(contract["clusters"]) == {"gpu-west", "gpu-east"}
    (dispatch,) = contract["dispatch"]
    cluster = dispatch["cluster"]
    assert [b["pod"] for b in contract["clusters"][cluster]["binds"]] == ["default/llm-worker-0"]
    assert len(dispatch["reasons"]) == 2


# ---- what-if across clusters ----


def _vcjob(name: str, *, replicas: int, gpus: int, priority_class: str | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {"containers": [{"name": "w", "image": "trainer", "resources": {
        "requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if priority_class:
        template["priorityClassName"] = priority_class
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minAvailable": replicas, "schedulerName": "batchplace",
                 "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": template}}]},
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_what_if_says_which_cluster_where_inside_it_and_why_not_the_others(engine: str) -> None:
    fleet = merge_clusters({"gpu-west": _cluster(4, busy=2), "gpu-east": _cluster(3), "gpu-north": _cluster(1)})
    changes = Changes(add_jobs=(("changes.add_jobs", 1, _vcjob("llm", replicas=3, gpus=8)),))
    answer = fleet_what_if(fleet, changes, config=SolveConfig(engine=engine, time_limit_s=10), submitted_at_s=1.0)  # type: ignore[arg-type]
    assert check_placement(answer.changed.snapshot, answer.decision.decision.placement) == ()
    (job,) = answer.jobs
    assert job.cluster == "gpu-east"
    by_cluster = {c.cluster: c for c in job.clusters}
    assert by_cluster["gpu-east"].chosen and by_cluster["gpu-east"].starts
    assert by_cluster["gpu-east"].nodes == ("n0", "n1", "n2")
    assert not by_cluster["gpu-west"].starts and by_cluster["gpu-west"].gpus_short == 8.0
    assert not by_cluster["gpu-north"].starts and by_cluster["gpu-north"].gpus_short == 16.0
    assert by_cluster["gpu-north"].blocking


@pytest.mark.parametrize("engine", ENGINES)
def test_what_if_names_the_victims_in_the_chosen_cluster_in_its_own_names(engine: str) -> None:
    west = make_snapshot(
        nodes=[make_node("n0", gpus=8)],
        groups=[make_gang("low", gpus=8, running_on=["n0"], priority=-5)],
    )
    fleet = merge_clusters({"gpu-west": west, "gpu-east": _cluster(0)})
    changes = Changes(add_jobs=(("changes.add_jobs", 1, _vcjob("llm", replicas=1, gpus=8)),))
    answer = fleet_what_if(fleet, changes, config=SolveConfig(engine=engine, time_limit_s=10), submitted_at_s=1.0)  # type: ignore[arg-type]
    (job,) = answer.jobs
    west_verdict = next(c for c in job.clusters if c.cluster == "gpu-west")
    assert job.cluster == "gpu-west" and west_verdict.starts
    assert [(e.pod, e.node, e.for_) for e in west_verdict.preempts] == [("default/low-worker-0", "n0", "default/llm")]
    east_verdict = next(c for c in job.clusters if c.cluster == "gpu-east")
    assert not east_verdict.starts and not east_verdict.chosen


# ---- properties ----


@st.composite
def fleets(draw: st.DrawFn) -> Any:
    """Two or three drawn clusters sharing the first one's queues, and the pending PodGroups
    of one more drawn snapshot as the submitted jobs."""
    count = draw(st.integers(2, 3))
    clusters = [draw(snapshots(max_nodes=8, max_groups=6)) for _ in range(count)]
    queues = clusters[0].queues
    clusters = [Snapshot(**{**dict(c), "queues": queues}) for c in clusters]
    source = draw(snapshots(max_nodes=1, max_groups=6))
    pending_groups = [g for g in source.pod_groups if all(p.phase == "pending" for p in source.pods_by_group[g.key])]
    keys = {g.key for g in pending_groups}
    jobs = Snapshot(
        queues=queues,
        pod_groups=tuple(pending_groups),
        pods=tuple(p for p in source.pods if p.pod_group in keys),
    )
    return merge_clusters({f"c{i}": c for i, c in enumerate(clusters)}, jobs=jobs)


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(fleet=fleets())
def test_every_engine_keeps_each_submitted_job_in_one_cluster_and_passes_the_checker(engine: str, fleet: Any) -> None:
    decided = place_fleet(fleet, SolveConfig(engine=engine, time_limit_s=2))  # type: ignore[arg-type]
    assert check_placement(fleet.snapshot, decided.decision.placement) == ()
    pods_of = {key: {p.key for p in fleet.snapshot.pods_by_group[key]} for key in fleet.jobs}
    for job in decided.jobs:
        clusters = {cluster_of_node(b.node) for b in decided.decision.placement.binds if b.pod in pods_of[job.pod_group]}
        assert clusters == ({job.cluster} if job.cluster else set())
        assert len(job.clusters) == len(fleet.clusters)
    split_binds = sum(len(p.binds) for p in decided.placements.values())
    assert split_binds == len(decided.decision.placement.binds)


# ---- reasons that name what the job asked (issue 29) ----


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cpu_only_job_too_big_for_any_one_cluster_says_so_per_cluster_without_a_tier_it_never_asked(engine: str) -> None:
    cpu_cluster = make_snapshot(nodes=[make_node(f"n{i}", cpu=8, leaf="leaf") for i in range(2)])
    fleet = merge_clusters(
        {"west": cpu_cluster, "east": cpu_cluster},
        jobs=make_snapshot(groups=[make_gang("etl", replicas=3, cpu=8)]),
    )
    decided = _solve(fleet, engine)
    assert decided.decision.placement.binds == ()
    (job,) = decided.jobs
    assert job.clusters == (
        "west: 8 cpu short (16 cpu free, 24 cpu to start)",
        "east: 8 cpu short (16 cpu free, 24 cpu to start)",
    )
    (outcome,) = [o for o in decided.decision.podgroups if o.name == "default/etl"]
    assert outcome.state == "pending"
    assert not any("tier" in r or r.rule == topology.NAME for r in outcome.reasons), outcome.reasons
    assert f"cluster: the gang fits in no one cluster: {'; '.join(job.clusters)}" in outcome.reasons
    assert reasons.no_one_cluster(job.clusters) in outcome.reasons


@pytest.mark.parametrize("engine", ENGINES)
def test_a_job_that_asks_a_topology_tier_keeps_its_topology_reason_in_a_fleet(engine: str) -> None:
    two_leaves = make_snapshot(nodes=[make_node("n0", cpu=8, leaf="a"), make_node("n1", cpu=8, leaf="b")])
    fleet = merge_clusters(
        {"west": two_leaves, "east": two_leaves},
        jobs=make_snapshot(groups=[make_gang("etl", replicas=2, cpu=8, topology_tier=1)]),
    )
    decided = _solve(fleet, engine)
    (outcome,) = [o for o in decided.decision.podgroups if o.name == "default/etl"]
    assert outcome.state == "pending"
    assert any(r.rule == topology.NAME and "tier ≤ 1" in r for r in outcome.reasons), outcome.reasons


@pytest.mark.parametrize("engine", ENGINES)
def test_fleet_what_if_gpus_short_at_the_top_is_the_fewest_of_the_clusters(engine: str) -> None:
    fleet = merge_clusters({"gpu-west": _cluster(2), "gpu-east": _cluster(3, busy=2)})
    changes = Changes(add_jobs=(("changes.add_jobs", 1, _vcjob("llm", replicas=3, gpus=8)),))
    answer = fleet_what_if(fleet, changes, config=SolveConfig(engine=engine, time_limit_s=10), submitted_at_s=1.0)  # type: ignore[arg-type]
    (job,) = answer.jobs
    assert job.cluster is None
    assert {c.cluster: c.gpus_short for c in job.clusters} == {"gpu-west": 8.0, "gpu-east": 16.0}
    assert job.verdict.gpus_short == 8.0  # 24 fleet-wide free would say 0: the gang runs in one cluster
    assert job.verdict.gpus_free_eligible == 16.0
    assert job.verdict.gpus_to_start - job.verdict.gpus_free_eligible == job.verdict.gpus_short
    for cluster in job.clusters:
        assert not any("tier" in r for r in cluster.blocking), cluster.blocking
