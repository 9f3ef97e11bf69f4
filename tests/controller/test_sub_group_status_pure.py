"""Status per sub-group (`solver.sub_group_report`, `controller.sub_group_status`, `controller.plan` rule 9) at the pure
seam, with hand-computed answers: which sub-group started, placed/min, the domain it landed
in, why one waits — on a Volcano PodGroup's annotation, in its condition's message, and in
the PodScheduled message of each pending pod of a sub-group."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from controller import status as status_text
from controller.observe import Observation, PodGroupRef, PodRef
from controller.plan import plan
from controller.sub_group_status import SUB_GROUPS_ANNOTATION, annotation_value, read_annotation
from models.placement import Decision, Placement, PodGroupOutcome, UnplacedPod
from models.reason import Reason
from solver.sub_group_report import SubGroupStatus, sub_group_statuses
from tests.builders import bind_gang, make_bind, make_gang, make_node, make_snapshot, with_sub_groups

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
SHORT = Reason("gang: subgroup job-1 of default/job: 1 of min 2 pods fit in any tier-1 domain", rule="gang", code="subgroup")


def _cluster(gang):
    """Two leaves of two nodes under one spine: leaf-a {a1, a2}, leaf-b {b1, b2}."""
    nodes = [
        make_node(name, cpu=4, leaf=leaf, spine="spine")
        for name, leaf in (("a1", "leaf-a"), ("a2", "leaf-a"), ("b1", "leaf-b"), ("b2", "leaf-b"))
    ]
    return make_snapshot(nodes=nodes, groups=[gang])


def test_each_sub_group_says_started_placed_min_and_the_closest_domain_holding_its_pods() -> None:
    gang = with_sub_groups(make_gang("job", replicas=6, cpu=1), 2, tier=1)  # job-0, job-1, job-2
    snapshot = _cluster(gang)
    group = snapshot.pod_group_by_key[gang.key]
    binds = bind_gang(gang, ["a1", "a2", "b1", "b1"])[:4]  # job-0 over leaf-a's two nodes, job-1 both on b1
    statuses = sub_group_statuses(snapshot, group, binds, [SHORT])
    assert statuses == (
        SubGroupStatus(name="job-0", policy="shard", started=True, placed=2, minimum=2, domain="leaf-a"),
        SubGroupStatus(name="job-1", policy="shard", started=True, placed=2, minimum=2, domain="leaf-b"),  # one node: its rack
        SubGroupStatus(name="job-2", policy="shard", started=False, placed=0, minimum=2, domain=None,
                       reason="gang: subgroup job-1 of default/job: 1 of min 2 pods fit in any tier-1 domain"),
    )


def test_a_sub_group_not_started_gives_the_reason_naming_it_else_its_pod_group_s_first() -> None:
    gang = with_sub_groups(make_gang("job", replicas=4, cpu=1), 2)
    snapshot = _cluster(gang)
    group = snapshot.pod_group_by_key[gang.key]
    other = Reason("capacity: task worker: 0/4 nodes fit another pod", rule="capacity", code="fit")
    job0, job1 = sub_group_statuses(snapshot, group, [], [other, SHORT])
    assert (job0.reason, job1.reason) == (str(other), str(SHORT))


def test_the_annotation_reads_back_as_written() -> None:
    statuses = (SubGroupStatus("s-0", "s", True, 2, 2, "leaf-a"), SubGroupStatus("s-1", "s", False, 0, 2, None, "why"))
    assert read_annotation(annotation_value(statuses)) == statuses
    assert read_annotation("not json") == () and read_annotation(None) == ()


def _observation(gang, snapshot, *, sub_groups_seen: str | None = None) -> Observation:
    ref = PodGroupRef(key=gang.key, flavor="volcano", namespace="default", name="job", uid="u", status={}, sub_groups=sub_groups_seen)
    pods = {p.key: PodRef(key=p.key, namespace="default", name=p.key.split("/")[1], uid="u", phase="Pending") for p in gang.pods}
    return Observation(snapshot=snapshot, pod_groups={gang.key: ref}, pods=pods)


def _decision(outcome: PodGroupOutcome, binds=()) -> Decision:
    return Decision(engine="greedy", status="GREEDY", solve_seconds=0.0, placement=Placement(binds=tuple(binds)), podgroups=(outcome,))


def test_a_volcano_pod_group_gets_its_sub_groups_in_the_annotation_and_the_count_in_its_condition() -> None:
    gang = with_sub_groups(make_gang("job", replicas=4, cpu=1), 2, tier=1)
    snapshot = _cluster(gang)
    binds = bind_gang(gang, ["a1", "a2", "b1", "b2"])
    outcome = PodGroupOutcome(name=gang.key, queue="default", placed=4, min_member=4, state="scheduled")
    gangs = plan(_observation(gang, snapshot), _decision(outcome, binds)).gangs
    write = gangs[0].status
    assert write is not None
    assert write.status.message.endswith("; sub-groups: 2 of 2 started")
    assert json.loads(write.sub_groups or "") == [
        {"name": "job-0", "policy": "shard", "started": True, "placed": 2, "minimum": 2, "domain": "leaf-a", "reason": ""},
        {"name": "job-1", "policy": "shard", "started": True, "placed": 2, "minimum": 2, "domain": "leaf-b", "reason": ""},
    ]
    body = status_text.status_patch(
        write.status, flavor="volcano", min_member=4, observed={}, now=NOW, transition_id="t", sub_groups=write.sub_groups
    )
    assert body["metadata"]["annotations"][SUB_GROUPS_ANNOTATION] == write.sub_groups


def test_an_unchanged_sub_group_annotation_is_not_written_again_and_a_changed_one_is() -> None:
    gang = with_sub_groups(make_gang("job", replicas=4, cpu=1), 2)
    snapshot = _cluster(gang)
    outcome = PodGroupOutcome(name=gang.key, queue="default", placed=0, min_member=4, state="pending", reasons=(SHORT,))
    first = plan(_observation(gang, snapshot), _decision(outcome)).gangs[0].status
    assert first is not None
    status = first.status
    seen = {"phase": status.phase, "running": status.running, "conditions": [
        {"type": status.condition_type, "status": status.condition_status, "reason": status.reason, "message": status.message}
    ]}
    ref = PodGroupRef(key=gang.key, flavor="volcano", namespace="default", name="job", uid="u", status=seen, sub_groups=first.sub_groups)
    again = plan(Observation(snapshot=snapshot, pod_groups={gang.key: ref}), _decision(outcome)).gangs[0].status
    assert again is None
    stale = PodGroupRef(key=gang.key, flavor="volcano", namespace="default", name="job", uid="u", status=seen, sub_groups="[]")
    rewritten = plan(Observation(snapshot=snapshot, pod_groups={gang.key: stale}), _decision(outcome)).gangs[0].status
    assert rewritten is not None and rewritten.sub_groups == first.sub_groups


def test_each_pending_pod_of_a_sub_group_names_it_in_its_pod_scheduled_message() -> None:
    gang = with_sub_groups(make_gang("job", replicas=4, cpu=1), 2)
    snapshot = _cluster(gang)
    capacity = Reason("capacity: task worker: 0/4 nodes fit another pod", rule="capacity", code="fit")
    outcome = PodGroupOutcome(name=gang.key, queue="default", placed=0, min_member=4, state="pending", reasons=(capacity,))
    observation = _observation(gang, snapshot)
    observation = Observation(snapshot=snapshot, pods=observation.pods)  # pods alone, as a LeaderWorkerSet's
    conditions = plan(observation, _decision(outcome)).gangs[0].pod_conditions
    by_pod = {write.pod: write.desired.message for write in conditions}
    assert len(by_pod) == 4
    for pod in gang.pods:
        assert by_pod[pod.key].startswith(f"subgroup {pod.sub_group}: ")
        assert "capacity: task worker: 0/4 nodes fit another pod" in by_pod[pod.key]
    assert {snapshot.pod_by_key[key].sub_group for key in by_pod} == {"job-0", "job-1"}


def test_a_pod_group_without_sub_groups_is_written_as_before() -> None:
    gang = make_gang("job", replicas=2, cpu=1)
    snapshot = _cluster(gang)
    outcome = PodGroupOutcome(name=gang.key, queue="default", placed=2, min_member=2, state="scheduled")
    write = plan(_observation(gang, snapshot), _decision(outcome, bind_gang(gang, ["a1", "a2"]))).gangs[0].status
    assert write is not None and write.sub_groups is None and "sub-groups" not in write.status.message


@settings(max_examples=80, deadline=None)
@given(
    replicas=st.integers(1, 8),
    size=st.integers(1, 4),
    minimum=st.integers(0, 4),
    choices=st.lists(st.one_of(st.none(), st.sampled_from(["a1", "a2", "b1", "b2"])), min_size=8, max_size=8),
)
def test_every_sub_group_reads_its_placed_pods_its_start_and_the_closest_domain_holding_them(
    replicas: int, size: int, minimum: int, choices: list[str | None]
) -> None:
    """Whatever the sub-groups and binds: placed counts the sub-group's bound pods, it started
    iff placed ≥ max(1, its min_member), and its domain holds every node it is on while no
    smaller HyperNode does."""
    gang = with_sub_groups(make_gang("job", replicas=replicas, cpu=1), size, minimum=minimum)
    snapshot = _cluster(gang)
    group = snapshot.pod_group_by_key[gang.key]
    binds = [make_bind(pod, node) for pod, node in zip(gang.pods, choices) if node is not None]
    on = {bind.pod: bind.node for bind in binds}
    for status in sub_group_statuses(snapshot, group, binds, []):
        nodes = {on[pod.key] for pod in gang.pods if pod.sub_group == status.name and pod.key in on}
        assert status.placed == sum(1 for pod in gang.pods if pod.sub_group == status.name and pod.key in on)
        assert status.started == (status.placed >= max(1, minimum))
        if not nodes:
            assert status.domain is None
            continue
        assert status.domain is not None
        assert all(status.domain in snapshot.hypernode_chain[node] for node in nodes)
        smaller = [h for h in snapshot.hypernodes if h.tier < snapshot.hypernode_by_name[status.domain].tier]
        assert not any(nodes <= set(h.node_members) for h in smaller), (nodes, status.domain)


def test_a_released_gang_s_sub_groups_all_read_not_started_with_the_release_as_why() -> None:
    """A partly bound gang released (`controller.plan` rule 6): its bound pods are evicted, so
    the annotation must not keep saying a sub-group runs where it did."""
    gang = with_sub_groups(make_gang("job", replicas=4, cpu=1, running_on=["a1", "a2"]), 2)
    snapshot = _cluster(gang)
    outcome = PodGroupOutcome(name=gang.key, queue="default", placed=2, min_member=4, state="pending")
    released = plan(_observation(gang, snapshot), _decision(outcome), release={gang.key: 120.0}).gangs[0]
    assert {evict.pod for evict in released.evictions} == {"default/job-worker-0", "default/job-worker-1"}
    assert released.status is not None
    statuses = json.loads(released.status.sub_groups or "")
    assert [(s["name"], s["started"], s["placed"], s["domain"]) for s in statuses] == [("job-0", False, 0, None), ("job-1", False, 0, None)]
    assert all(s["reason"].startswith("gang: ") and "released" in s["reason"] for s in statuses)


def test_a_sub_group_a_started_job_leaves_out_gives_its_pods_reason() -> None:
    """A started PodGroup has no reasons of its own; a sub-group it leaves out says why its
    pods are (`PodGroupOutcome.unplaced_pods`)."""
    gang = with_sub_groups(make_gang("job", replicas=4, cpu=1), 2)
    snapshot = _cluster(gang)
    left = Reason("unplaced: task worker: 2 pending pods fit beside this placement, which leaves them out (GREEDY)",
                  rule="unplaced", code="left_out")
    outcome = PodGroupOutcome(
        name=gang.key, queue="default", placed=2, min_member=2, state="scheduled",
        unplaced_pods=tuple(UnplacedPod(pod=pod.key, reason=left) for pod in gang.pods[2:]),
    )
    write = plan(_observation(gang, snapshot), _decision(outcome, bind_gang(gang, ["a1", "a2"])[:2])).gangs[0].status
    assert write is not None
    job0, job1 = json.loads(write.sub_groups or "")
    assert (job0["started"], job0["reason"]) == (True, "")
    assert (job1["started"], job1["reason"]) == (False, str(left))
