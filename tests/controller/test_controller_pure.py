"""The controller's pure stages — observe, plan, status, backoff, leader logic — on plain values.

No API server here: observe and plan take raw objects and Snapshots, status takes numbers,
and the leader elector is driven through its `LeaseApi` seam with an in-memory Lease and
an injected clock. The edge itself is tested only against the real API server (the other
test files of this folder).
"""

from __future__ import annotations

import logging
import random
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from controller import status as status_text
from controller.errors import ApiError, Conflict, Forbidden, NotFound, ServerError, TooManyRequests, error_for_status
from controller.leader import (
    LeaderElector,
    LeaderStatus,
    LeaseConfig,
    default_lease_namespace,
    read_service_account_namespace,
)
from controller.observe import AssumedBind, AssumedState, ClusterView, observe
from controller.plan import plan
from controller.timing import BackoffPolicy
from models.snapshot import NodeName, PodGroupKey, PodKey
from solver.place import SolveConfig, place
from solver.reasons import EVENT_MESSAGE_CHARS, gang_assigned_message
from tests.controller._controller_builders import node, pod, pod_group, priority_class, vcjob


def _observe(**kinds):  # type: ignore[no-untyped-def]
    assumed = kinds.pop("assumed", AssumedState())
    view = ClusterView(**{k: tuple(v) for k, v in kinds.items()})
    return observe(view, scheduler_names=("batchplace",), assumed=assumed)


# ---- observe ----


def test_observe_gives_an_assumed_pod_its_node_so_it_is_never_placed_again() -> None:
    assumed = AssumedState(binds={PodKey("ns/p-0"): AssumedBind(node=NodeName("n1"))})
    observation = _observe(nodes=[node("n1")], pods=[pod("p-0")], assumed=assumed)
    (p,) = observation.snapshot.pods
    assert (p.phase, p.node) == ("running", "n1")
    assert place(observation.snapshot, SolveConfig(engine="greedy")).placement.binds == ()


def test_observe_leaves_terminating_pods_out_but_lists_their_requests() -> None:
    observation = _observe(
        nodes=[node("n1")],
        pods=[pod("victim", cpu="3", node_name="n1", phase="Running", deleting=True), pod("p-0", cpu="2")],
    )
    assert [p.name for p in observation.snapshot.pods] == ["p-0"]
    (leaving,) = observation.terminating
    assert (leaving.key, leaving.node, leaving.requests["cpu"]) == ("ns/victim", "n1", 3000)


def test_observe_treats_its_own_evictions_as_terminating_before_the_watch_shows_them() -> None:
    assumed = AssumedState(evictions=frozenset({PodKey("ns/victim")}))
    observation = _observe(nodes=[node("n1")], pods=[pod("victim", node_name="n1", phase="Running")], assumed=assumed)
    assert observation.snapshot.pods == ()
    assert [t.key for t in observation.terminating] == ["ns/victim"]


def test_observe_rejects_one_invalid_pod_and_loads_the_rest() -> None:
    bad = pod("bad")
    bad["metadata"]["annotations"]["batchplace.io/numa-policy"] = "sometimes"
    observation = _observe(nodes=[node("n1")], pods=[bad, pod("good")])
    assert [p.name for p in observation.snapshot.pods] == ["good"]
    (rejected,) = observation.rejected
    assert rejected.what == "Pod ns/bad" and "numa-policy" in rejected.message


def test_objects_above_a_quantity_ceiling_are_left_out_with_a_warning_event_each() -> None:
    huge_node = node("huge")
    huge_node["status"]["allocatable"]["cpu"] = "1e16"
    huge_pod = pod("huge-memory")
    huge_pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = "10E"
    observation = _observe(nodes=[node("n1"), huge_node], pods=[huge_pod, pod("good")])
    assert [n.name for n in observation.snapshot.nodes] == ["n1"]
    assert [p.name for p in observation.snapshot.pods] == ["good"]
    assert sorted((r.kind, r.name, r.field) for r in observation.rejected) == [
        ("Node", "huge", "status.allocatable.cpu"),
        ("Pod", "huge-memory", "spec.containers[0].resources.requests.memory"),
    ]
    decision = place(observation.snapshot, SolveConfig(engine="greedy"))
    events = {(e.kind, e.name): e for e in plan(observation, decision).events}
    on_node, on_pod = events[("Node", "huge")], events[("Pod", "huge-memory")]
    assert (on_node.namespace, on_node.api_version, on_node.type) == ("", "v1", "Warning")
    assert (on_pod.namespace, on_pod.api_version, on_pod.type) == ("ns", "v1", "Warning")
    assert "status.allocatable.cpu: 1e16" in on_node.message and "above the ceiling" in on_node.message
    assert "spec.containers[0].resources.requests.memory: 10E" in on_pod.message


def test_observe_adds_vcjob_dependencies_while_the_dependency_waits_for_a_node() -> None:
    observation = _observe(
        nodes=[node("n1")],
        volcano_pod_groups=[pod_group("wf", min_member=1, min_task_member={"a": 1, "b": 0})],
        pods=[pod("wf-a-0", group="wf", task="a", job="wf"), pod("wf-b-0", group="wf", task="b", job="wf")],
        vcjobs=[vcjob("wf", depends={"a": [], "b": ["a"]})],
    )
    group = observation.snapshot.pod_group_by_key[PodGroupKey("ns/wf")]
    assert group.task_by_name["b"].depends_on == ("a",)
    decision = place(observation.snapshot, SolveConfig(engine="greedy"))
    assert [b.pod for b in decision.placement.binds] == ["ns/wf-a-0"]


def test_observe_holds_dependents_while_the_dependency_is_bound_but_not_yet_running() -> None:
    pods = [pod("wf-a-0", group="wf", task="a", job="wf", node_name="n1"), pod("wf-b-0", group="wf", task="b", job="wf")]
    observation = _observe(
        nodes=[node("n1")],
        volcano_pod_groups=[pod_group("wf", min_member=1)],
        pods=pods,
        vcjobs=[vcjob("wf", depends={"a": [], "b": ["a"]})],
    )
    assert "ns/wf-b-0" not in observation.snapshot.pod_by_key
    assert observation.held[PodGroupKey("ns/wf")].startswith("dependency: waits for a to run (0 of 1 running)")
    pods[0]["status"]["phase"] = "Running"
    released = _observe(nodes=[node("n1")], volcano_pod_groups=[pod_group("wf", min_member=1)], pods=pods,
                        vcjobs=[vcjob("wf", depends={"a": [], "b": ["a"]})])
    assert [b.pod for b in place(released.snapshot, SolveConfig(engine="greedy")).placement.binds] == ["ns/wf-b-0"]


def test_observe_ignores_pending_pods_of_other_schedulers() -> None:
    observation = _observe(nodes=[node("n1")], pods=[pod("theirs", scheduler="default-scheduler")])
    assert observation.snapshot.pods == ()


# ---- plan ----


def test_plan_evicts_victims_and_binds_nothing_of_that_gang_in_the_same_cycle() -> None:
    observation = _observe(
        nodes=[node("n1", cpu=2)],
        priority_classes=[priority_class("low", 1), priority_class("high", 100)],
        volcano_pod_groups=[pod_group("low", min_member=2, priority_class="low"), pod_group("high", min_member=1, priority_class="high")],
        pods=[
            pod("low-0", group="low", node_name="n1", phase="Running", priority=1),
            pod("low-1", group="low", node_name="n1", phase="Running", priority=1),
            pod("high-0", group="high", cpu="2", priority=100),
        ],
    )
    decision = place(observation.snapshot, SolveConfig(engine="greedy"))
    assert {e.pod for e in decision.placement.evictions} == {"ns/low-0", "ns/low-1"}
    the_plan = plan(observation, decision)
    high = next(g for g in the_plan.gangs if g.group == "ns/high")
    assert {e.pod for e in high.evictions} == {"ns/low-0", "ns/low-1"}
    assert high.binds == ()
    assert high.status is not None and high.status.status.phase == status_text.INQUEUE
    assert high.status.status.reason == "Pipelined"


def test_plan_waits_when_a_bind_would_overfill_a_node_still_holding_a_terminating_pod() -> None:
    observation = _observe(
        nodes=[node("n1", cpu=4)],
        volcano_pod_groups=[pod_group("g", min_member=1)],
        pods=[pod("leaving", cpu="3", node_name="n1", phase="Running", deleting=True), pod("g-0", group="g", cpu="2")],
    )
    decision = place(observation.snapshot, SolveConfig(engine="greedy"))
    assert [b.node for b in decision.placement.binds] == ["n1"]  # the solver counts the room as free
    (gang,) = plan(observation, decision).gangs
    assert gang.binds == ()
    assert "1 terminating pod(s) on n1" in gang.note


def test_plan_binds_beside_a_terminating_pod_when_the_node_has_room_for_both() -> None:
    observation = _observe(
        nodes=[node("n1", cpu=8)],
        volcano_pod_groups=[pod_group("g", min_member=1)],
        pods=[pod("leaving", cpu="3", node_name="n1", phase="Running", deleting=True), pod("g-0", group="g", cpu="2")],
    )
    (gang,) = plan(observation, place(observation.snapshot, SolveConfig(engine="greedy"))).gangs
    assert [b.pod for b in gang.binds] == ["ns/g-0"]
    (scheduled,) = gang.events
    assert (scheduled.kind, scheduled.name, scheduled.reason) == ("PodGroup", "g", "Scheduled")
    assert scheduled.message == "Successfully assigned 1 pod to 1 node: n1 (g-0)"
    assert gang.binds[0].event is None  # the PodGroup's Event says it; no Event per pod


def test_a_large_gangs_scheduled_event_counts_pods_per_node_within_an_events_length() -> None:
    small = gang_assigned_message([("ns/w-1", "n2"), ("ns/w-0", "n1"), ("ns/w-2", "n1")])
    assert small == "Successfully assigned 3 pods to 2 nodes: n1 (w-0, w-2), n2 (w-1)"
    by_eight = gang_assigned_message([(f"ns/worker-{i}", f"node-{i // 8:03d}") for i in range(256)])
    assert by_eight.startswith("Successfully assigned 256 pods to 32 nodes: node-000 (8 pods), node-001 (8 pods)")
    assert by_eight.endswith("node-031 (8 pods)") and len(by_eight) <= EVENT_MESSAGE_CHARS
    one_each = gang_assigned_message([(f"ns/worker-{i}", f"node-{i:04d}") for i in range(500)])
    assert one_each.endswith("more nodes") and len(one_each) <= EVENT_MESSAGE_CHARS
    shown = one_each.count(" (1 pod)")
    assert one_each.endswith(f"… and {500 - shown} more nodes")


def test_plan_reports_a_gang_that_cannot_fit_with_volcanos_message_and_failed_scheduling_events() -> None:
    observation = _observe(
        nodes=[node("n1", cpu=4)],
        volcano_pod_groups=[pod_group("big", min_member=3)],
        pods=[pod(f"big-{i}", group="big", cpu="2") for i in range(3)],
    )
    (gang,) = plan(observation, place(observation.snapshot, SolveConfig(engine="greedy"))).gangs
    assert gang.binds == ()
    assert gang.status is not None
    status = gang.status.status
    assert (status.phase, status.condition_type, status.reason) == ("Pending", "Unschedulable", "NotEnoughResources")
    assert status.message.startswith("3/3 tasks in gang unschedulable: gang: ")
    reasons = sorted((e.kind, e.reason) for e in gang.events)
    assert reasons == [("Pod", "FailedScheduling")] * 3 + [("PodGroup", "Unschedulable")]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_plan_gives_each_pod_a_started_gang_leaves_pending_a_failed_scheduling_event_with_its_reason(engine: str) -> None:
    observation = _observe(
        nodes=[node("n1", cpu=4)],
        volcano_pod_groups=[pod_group("job", min_member=1)],
        pods=[pod(f"job-{i}", group="job", cpu="2") for i in range(3)],
    )
    decision = place(observation.snapshot, SolveConfig(engine=engine, time_limit_s=10))  # type: ignore[arg-type]
    (gang,) = plan(observation, decision).gangs
    assert len(gang.binds) == 2 and gang.status is not None and gang.status.status.phase == "Running"
    bound = {b.pod for b in gang.binds}
    (left,) = {f"ns/job-{i}" for i in range(3)} - bound
    failed = [(e.kind, f"{e.namespace}/{e.name}", e.type, e.message) for e in gang.events if e.reason == "FailedScheduling"]
    assert failed == [("Pod", left, "Warning", "capacity: task main: 0/1 nodes fit another pod: 1 insufficient cpu")]
    reported = {e.dedupe_key: e.message for e in gang.events if e.dedupe_key}
    again = plan(observation, decision, reported=reported).gangs[0]
    assert not [e for e in again.events if e.reason == "FailedScheduling"], "written once while the reason holds"


def test_plan_writes_no_event_or_status_that_is_already_reported() -> None:
    observation = _observe(
        nodes=[node("n1", cpu=1)],
        volcano_pod_groups=[pod_group("big", min_member=1)],
        pods=[pod("big-0", group="big", cpu="2")],
    )
    decision = place(observation.snapshot, SolveConfig(engine="greedy"))
    (first,) = plan(observation, decision).gangs
    reported = {e.dedupe_key: e.message for e in first.events if e.dedupe_key}
    assert first.status is not None
    body = status_text.status_patch(first.status.status, flavor="volcano", min_member=1, observed={},
                                    now=datetime.now(timezone.utc), transition_id="t")
    again = _observe(
        nodes=[node("n1", cpu=1)],
        volcano_pod_groups=[pod_group("big", min_member=1, status=body["status"])],
        pods=[pod("big-0", group="big", cpu="2")],
    )
    (second,) = plan(again, place(again.snapshot, SolveConfig(engine="greedy")), reported=reported).gangs
    assert second.events == () and second.status is None


# ---- status ----


@pytest.mark.parametrize(
    ("reasons", "expected"),
    [
        (["gang: 3 of min 20 pods fit"], "NotEnoughResources"),
        (["quota: queue q capability 2 cpu"], "QueueQuotaExceeded"),
        (["dependency: waits for task-a"], "WaitingForDependency"),
        (["topology: no tier-1 domain"], "TopologyUnsatisfiable"),
        (["pod_affinity: task web: 0/3 nodes fit another pod"], "PodAffinityUnsatisfiable"),
        (["topology_spread: task web: 0/3 nodes keep maxSkew 1"], "TopologySpreadUnsatisfiable"),
        (["usage: 3 nodes too loaded"], "NodesOverloaded"),
        (["colocation: offline pods go to colocation nodes only"], "NoColocationRoom"),
        (["dra: claim w-0-gpus request gpus: 0/2 nodes: 2 no 5 free devices share gpu.nvidia.com/nvlinkDomain"], "DeviceClaimsUnsatisfiable"),
        (["something new"], "Unschedulable"),
    ],
    ids=["gang is not enough resources", "quota", "dependency", "topology", "pod affinity", "topology spread",
         "usage", "colocation", "dra", "unknown prefix falls back"],
)
def test_condition_reason_names_the_rule(reasons: list[str], expected: str) -> None:
    assert status_text.condition_reason(reasons) == expected


def _without_a_condition(table: dict[str, str], reported_under: dict[str, str]) -> set[str]:
    """The rules of `RULES` and the rules and sources a reason function may name (its
    `rules`, `solver.reasons.REASON_MAKERS`) that `table` gives no condition word, directly or
    through the rule they are reported under."""
    from solver import reasons
    from solver.rules import RULES

    named = {rule.NAME for rule in RULES} | {rule for maker in reasons.REASON_MAKERS for rule in maker.rules}
    return {name for name in named if name not in table and reported_under.get(name) not in table}


def test_every_rule_and_every_rule_a_reason_names_has_a_condition_reason() -> None:
    """A rule added without a PodGroup condition would leave its PodGroups with a generic
    `Unschedulable`: every rule of `RULES`, and every rule or other source a reason function
    may name, maps to a word (or is named where its facts are reported)."""
    assert _without_a_condition(status_text.CONDITION_REASONS, status_text.REPORTED_UNDER) == set()


def test_the_walk_finds_a_rule_without_a_condition() -> None:
    table = {rule: word for rule, word in status_text.CONDITION_REASONS.items() if rule not in ("usage", "unplaced")}
    assert _without_a_condition(table, status_text.REPORTED_UNDER) == {"usage", "unplaced"}
    assert _without_a_condition(status_text.CONDITION_REASONS, {}) == set(status_text.REPORTED_UNDER) == {"node_affinity", "binding", "nodeports"}


def test_every_reason_a_function_makes_gets_its_rule_s_condition() -> None:
    """What the controller writes for each reason function, called: the word of its rule."""
    from solver import reasons

    made = [
        reasons.quota_exceeded("q", resource="cpu", capability=2000, in_use=2000, needs=1000),
        reasons.usage_not_judged(stale=1, missing=0, max_age_s=300),
        reasons.inter_pod_fit_error("topology_spread", "web", nodes=3, fitting=0, counts={"spread": 3}),
        reasons.eviction_refused("ns/victim", message="forbidden"),
        reasons.gang_released(placed=1, minimum=4, held_s=60),
        reasons.no_one_cluster(["west: 8 gpu short"]),
    ]
    assert [status_text.condition_reason([reason]) for reason in made] == [
        "QueueQuotaExceeded", "NodesOverloaded", "TopologySpreadUnsatisfiable", "EvictionRefused", "NotEnoughResources",
        "TopologyUnsatisfiable",
    ]  # fmt: skip


def test_the_condition_is_read_from_the_reason_s_rule_not_its_words() -> None:
    from models.reason import Reason

    worded_otherwise = Reason("capacity: every node is full", rule="quota", code="exceeded")
    assert status_text.condition_reason([worded_otherwise]) == "QueueQuotaExceeded"


def test_gang_message_counts_like_volcano() -> None:
    message = status_text.gang_message(min_member=20, placed=0, total_pods=20, why=["gang: 3 of min 20 pods fit"])
    assert message == "20/20 tasks in gang unschedulable: gang: 3 of min 20 pods fit"


def test_status_patch_keeps_the_transition_time_while_the_condition_holds() -> None:
    status = status_text.scheduled(min_member=1, placed=1, total_pods=1, running=0)
    first = status_text.status_patch(status, flavor="volcano", min_member=1, observed={},
                                     now=datetime(2025, 1, 1, tzinfo=timezone.utc), transition_id="a")
    later = status_text.status_patch(status, flavor="volcano", min_member=1, observed=first["status"],
                                     now=datetime(2025, 1, 2, tzinfo=timezone.utc), transition_id="b")
    assert later["status"]["conditions"][0]["lastTransitionTime"] == "2025-01-01T00:00:00Z"
    assert status_text.is_current(status, flavor="volcano", min_member=1, observed=first["status"])


def test_xk8s_status_uses_scheduler_plugins_phases() -> None:
    status = status_text.scheduled(min_member=2, placed=2, total_pods=2, running=0)
    body = status_text.status_patch(status, flavor="xk8s", min_member=2, observed={}, now=datetime.now(timezone.utc), transition_id="t")
    assert body == {"status": {"phase": "Scheduled", "scheduled": 2, "running": 0}}


# ---- errors and backoff ----


@pytest.mark.parametrize(
    ("code", "kind", "retry"),
    [(409, "Conflict", False), (404, "NotFound", False), (410, "Gone", True), (429, "TooManyRequests", True),
     (500, "ServerError", True), (503, "ServerError", True), (403, "Forbidden", False), (422, "Invalid", False)],
)
def test_http_status_maps_to_an_error_that_says_whether_to_retry(code: int, kind: str, retry: bool) -> None:
    error = error_for_status(code, "x", verb="bind", what="ns/p")
    assert (type(error).__name__, error.retry) == (kind, retry)
    assert str(error) == f"bind ns/p: HTTP {code}: x"


def test_backoff_is_capped_jittered_and_respects_retry_after() -> None:
    backoff = BackoffPolicy(base_s=0.1, cap_s=1.0).start(rng=random.Random(1))
    delays = [backoff.next_delay_s() for _ in range(10)]
    assert all(0 <= d <= 1.0 for d in delays)
    assert backoff.next_delay_s(at_least_s=3.0) >= 3.0
    backoff.reset()
    assert backoff.next_delay_s() <= 0.1


# ---- leader election logic (the LeaseApi seam, in memory) ----


class _FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t

    def now(self) -> datetime:
        return datetime(2025, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=self.t)

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        self.t += seconds
        return bool(stop and stop.is_set())


class _MemoryLeases:
    """A Lease store with the API server's optimistic concurrency (resourceVersion)."""

    def __init__(self) -> None:
        self.lease: dict | None = None
        self.version = 0
        self.fail = False
        self.refuse: ApiError | None = None  # raised by every call, as RBAC or a missing namespace would

    def get_lease(self, namespace: str, name: str) -> dict | None:
        if self.refuse is not None and self.refuse.verb == "get":
            raise self.refuse
        if self.fail:
            raise ServerError("down", verb="get", status=500)
        return None if self.lease is None else {**self.lease, "metadata": {**self.lease["metadata"], "resourceVersion": str(self.version)}}

    def create(self, kind, namespace, body):  # type: ignore[no-untyped-def]
        if self.refuse is not None and self.refuse.verb == "create":
            raise self.refuse
        if self.lease is not None:
            raise Conflict("exists", status=409)
        self.version += 1
        self.lease = body
        return body

    def replace(self, kind, namespace, name, body):  # type: ignore[no-untyped-def]
        if body["metadata"].get("resourceVersion") != str(self.version):
            raise Conflict("moved", status=409)
        self.version += 1
        self.lease = body
        return body


def test_a_standby_takes_over_only_after_the_lease_duration_without_renewal() -> None:
    clock, leases = _FakeClock(), _MemoryLeases()
    config = dict(lease_duration_s=4, renew_deadline_s=3, retry_period_s=1)
    leader = LeaderElector(leases, LeaseConfig(identity="a", namespace="kube-system", **config), clock=clock)
    standby = LeaderElector(leases, LeaseConfig(identity="b", namespace="kube-system", **config), clock=clock)
    assert leader.try_acquire_or_renew() and leader.is_leader()
    assert not standby.try_acquire_or_renew()
    clock.t += 3.5  # the leader went silent: past its renew deadline it stops acting…
    assert not leader.is_leader()
    assert not standby.try_acquire_or_renew()  # …but the standby still waits out the lease
    clock.t += 1.0
    assert standby.try_acquire_or_renew() and standby.is_leader()
    assert leases.lease is not None and leases.lease["spec"]["leaseTransitions"] == 1


def test_a_leader_that_cannot_renew_stops_acting_at_its_renew_deadline() -> None:
    clock, leases = _FakeClock(), _MemoryLeases()
    elector = LeaderElector(leases, LeaseConfig(identity="a", namespace="kube-system", lease_duration_s=4, renew_deadline_s=3, retry_period_s=1), clock=clock)
    assert elector.try_acquire_or_renew()
    leases.fail = True
    clock.t += 2.9
    assert elector.is_leader()
    clock.t += 0.2
    assert not elector.is_leader()


def test_a_released_lease_is_taken_at_once() -> None:
    clock, leases = _FakeClock(), _MemoryLeases()
    config = dict(lease_duration_s=15, renew_deadline_s=10, retry_period_s=2)
    leader = LeaderElector(leases, LeaseConfig(identity="a", namespace="kube-system", **config), clock=clock)
    standby = LeaderElector(leases, LeaseConfig(identity="b", namespace="kube-system", **config), clock=clock)
    assert leader.try_acquire_or_renew()
    assert not standby.try_acquire_or_renew()
    leader.release()
    assert standby.try_acquire_or_renew()


def test_two_replicas_racing_for_a_free_lease_elect_exactly_one() -> None:
    clock, leases = _FakeClock(), _MemoryLeases()
    config = dict(lease_duration_s=4, renew_deadline_s=3, retry_period_s=1)
    a = LeaderElector(leases, LeaseConfig(identity="a", namespace="kube-system", **config), clock=clock)
    b = LeaderElector(leases, LeaseConfig(identity="b", namespace="kube-system", **config), clock=clock)
    assert [a.try_acquire_or_renew(), b.try_acquire_or_renew()].count(True) == 1


def test_a_standby_says_who_holds_the_lease() -> None:
    clock, leases = _FakeClock(), _MemoryLeases()
    config = dict(lease_duration_s=4, renew_deadline_s=3, retry_period_s=1)
    leader = LeaderElector(leases, LeaseConfig(identity="a", namespace="kube-system", **config), clock=clock)
    standby = LeaderElector(leases, LeaseConfig(identity="b", namespace="kube-system", **config), clock=clock)
    leader.step()
    standby.step()
    assert leader.status() == LeaderStatus(leading=True)
    assert standby.status() == LeaderStatus(leading=False, reason="Lease kube-system/batchplace is held by a")


LEASE_REFUSALS = {
    "the namespace does not exist": (
        NotFound('namespaces "nope" not found', verb="create", what="leases.coordination.k8s.io nope/batchplace", status=404),
        'Lease nope/batchplace cannot be written: NotFound (HTTP 404) on create: namespaces "nope" not found',
    ),
    "RBAC forbids reading it": (
        Forbidden('leases.coordination.k8s.io "batchplace" is forbidden: User "u" cannot get resource "leases"',
                  verb="get", what="leases.coordination.k8s.io nope/batchplace", status=403),
        'Lease nope/batchplace cannot be read: Forbidden (HTTP 403) on get: leases.coordination.k8s.io "batchplace" '
        'is forbidden: User "u" cannot get resource "leases"',
    ),
}


@pytest.mark.parametrize("refusal, reason", LEASE_REFUSALS.values(), ids=list(LEASE_REFUSALS))
def test_a_lease_that_cannot_be_used_blocks_leadership_and_is_logged_once_at_error_level(
    refusal: ApiError, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    clock, leases = _FakeClock(), _MemoryLeases()
    leases.refuse = refusal
    errors: list[ApiError] = []
    config = LeaseConfig(identity="a", namespace="nope", lease_duration_s=4, renew_deadline_s=3, retry_period_s=1)
    elector = LeaderElector(leases, config, clock=clock, on_error=errors.append)
    with caplog.at_level(logging.INFO, logger="controller.leader"):
        for _ in range(5):
            elector.step()
            clock.t += 1
        assert elector.status() == LeaderStatus(leading=False, reason=reason, blocked=True)
        assert len(errors) == 5, "every failed try is counted"
        logged = [(r.levelno, r.getMessage()) for r in caplog.records if r.levelno >= logging.WARNING]
        assert logged == [(logging.ERROR, f"{reason}; this replica will not lead until that is fixed")]
        leases.refuse = None
        elector.step()
    assert elector.status() == LeaderStatus(leading=True)
    assert "lease nope/batchplace usable again" in caplog.messages


def test_a_transient_lease_error_is_one_warning_and_does_not_block(caplog: pytest.LogCaptureFixture) -> None:
    clock, leases = _FakeClock(), _MemoryLeases()
    leases.fail = True
    config = LeaseConfig(identity="a", namespace="kube-system", lease_duration_s=4, renew_deadline_s=3, retry_period_s=1)
    elector = LeaderElector(leases, config, clock=clock)
    with caplog.at_level(logging.INFO, logger="controller.leader"):
        for _ in range(3):
            elector.step()
    reason = "Lease kube-system/batchplace: ServerError (HTTP 500) on get: down"
    assert elector.status() == LeaderStatus(leading=False, reason=reason, blocked=False)
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [(logging.WARNING, f"{reason}; retrying every 1.0 s")]


DEFAULT_NAMESPACES = {
    "a pod with POD_NAMESPACE from the downward API": ("team-a", "team-b", "team-a"),
    "a pod without POD_NAMESPACE: its service account's namespace": (None, "team-b", "team-b"),
    "out of cluster: kube-system, where kube-scheduler keeps its Lease": (None, None, "kube-system"),
    "an empty POD_NAMESPACE counts as unset": ("", None, "kube-system"),
}


@pytest.mark.parametrize("pod_namespace, service_account_namespace, expected", DEFAULT_NAMESPACES.values(), ids=list(DEFAULT_NAMESPACES))
def test_the_lease_goes_to_the_pods_namespace_in_cluster_and_kube_system_outside(
    pod_namespace: str | None, service_account_namespace: str | None, expected: str
) -> None:
    assert default_lease_namespace(pod_namespace=pod_namespace, service_account_namespace=service_account_namespace) == expected


def test_the_service_account_namespace_is_read_from_its_file_and_none_without_one(tmp_path: Path) -> None:
    path = tmp_path / "namespace"
    assert read_service_account_namespace(path) is None
    path.write_text("batchplace-system\n")
    assert read_service_account_namespace(path) == "batchplace-system"


def test_too_many_requests_carries_retry_after() -> None:
    error = error_for_status(429, "pdb", retry_after_s=2.0)
    assert isinstance(error, TooManyRequests) and error.retry_after_s == 2.0
