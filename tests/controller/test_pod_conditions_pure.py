"""The PodScheduled condition on pending pods (`controller.status.pod_scheduled`,
`controller.plan` rule 7), at the pure seam: `Unschedulable` — the one reason Cluster
Autoscaler and Karpenter buy nodes for — only when an added node could start the pod;
another word for every reason no node lifts; written only when the pod does not say it yet."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller import status as status_text
from controller.observe import ClusterView, Observation, observe
from controller.plan import SetPodCondition, plan, pod_condition_key
from solver import reasons
from solver.place import SolveConfig, place
from tests.controller._controller_builders import node, pod, pod_group, priority_class

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def test_every_reason_no_node_lifts_has_a_word_an_autoscaler_ignores() -> None:
    for maker in reasons.REASON_MAKERS:
        for rule in maker.rules:
            if maker.nodes_help:
                continue
            word = status_text.POD_WAITING_REASONS.get(rule)
            assert word is not None, f"{maker.__name__} ({rule}, {maker.code}): no PodScheduled reason for it"
            assert word != status_text.UNSCHEDULABLE, f"{maker.__name__} ({rule}, {maker.code}) would buy nodes"
    assert status_text.POD_UNDETERMINED != status_text.UNSCHEDULABLE


CAPACITY = reasons.capacity_fit_error("worker", nodes=3, fitting=0, counts={"insufficient gpu": 3})
QUOTA = reasons.quota_exceeded("ml", resource="gpu", capability=64000, in_use=60000, needs=8000)


@pytest.mark.parametrize(
    ("why", "word"),
    [
        ([CAPACITY], "Unschedulable"),
        ([reasons.topology_no_domain(tier=1, needs={"gpu": 16000}, best="leaf-a", best_free={"gpu": 8000})], "Unschedulable"),
        ([CAPACITY, QUOTA], "QueueQuotaExceeded"),  # the quota holds it whatever the nodes
        ([QUOTA, CAPACITY], "QueueQuotaExceeded"),
        ([reasons.queue_closed("ml")], "QueueNotReady"),
        ([reasons.dependency_waits("b", dependency="a", running=0, total=2)], "WaitingForDependency"),
        ([reasons.gated_waiting(["example.com/quota-check"])], "SchedulingGated"),
        ([reasons.gang_too_few_pods(minimum=8, pods=5)], "NotEnoughTasks"),
        ([reasons.gang_shortfall(placed=6, minimum=20, needs={"cpu": 80000}, free={"cpu": 24000})], "Unschedulable"),
        ([reasons.fits_after(pending=2, status="FEASIBLE")], "Schedulable"),
        ([reasons.left_out("worker", pending=2, status="FEASIBLE")], "Schedulable"),
        ([reasons.unplaced(pending=3)], "Unschedulable"),
        (["capacity: task worker: 0/3 nodes fit another pod"], "Undetermined"),  # read back from text: no guess
        ([], "Undetermined"),
    ],
)
def test_the_pod_s_reason_word(why: list[str], word: str) -> None:
    assert status_text.pod_scheduled(why, message="m").reason == word


NODES_HELP = [
    CAPACITY,
    reasons.eligibility_none("worker", nodes=3, counts={"node selector mismatch": 3}),
    reasons.topology_no_domain(tier=1, needs={"gpu": 16000}, best=None, best_free={}),
    reasons.gang_shortfall(placed=1, minimum=4, needs={"gpu": 32000}, free={"gpu": 8000}),
    reasons.pods_full("worker", node="n1", allows=3, in_use=3),
    reasons.unplaced(pending=2),
]
DEPENDENCY = reasons.dependency_waits("b", dependency="a", running=0, total=1)
POLICY = [
    QUOTA,
    reasons.queue_missing("ml"),
    reasons.gated_waiting(["example.com/quota-check"]),
    reasons.gang_too_few_pods(minimum=4, pods=2),
    reasons.left_out("worker", pending=1, status="FEASIBLE"),
]


@given(
    helping=st.lists(st.sampled_from(NODES_HELP), max_size=4),
    policy=st.lists(st.sampled_from(POLICY), min_size=1, max_size=3),
    order=st.randoms(use_true_random=False),
)
def test_one_reason_no_node_lifts_keeps_any_mix_off_unschedulable(helping: list[str], policy: list[str], order: object) -> None:
    mixed = [*helping, *policy]
    order.shuffle(mixed)  # type: ignore[attr-defined]
    word = status_text.pod_scheduled(mixed, message="m").reason
    assert word != "Unschedulable"
    first_policy = next(reason for reason in mixed if reason in policy)
    assert word == status_text.POD_WAITING_REASONS[first_policy.rule]  # type: ignore[attr-defined]
    if helping:
        assert status_text.pod_scheduled(helping, message="m").reason == "Unschedulable"


def test_a_dependency_decides_only_alone() -> None:
    """A task waiting on another task of its gang waits for that task's reasons: beside a
    reason a node lifts, a node lifts the gang (`solver.reasons.nodes_would_help`)."""
    assert status_text.pod_scheduled([DEPENDENCY], message="m").reason == "WaitingForDependency"
    assert status_text.pod_scheduled([CAPACITY, DEPENDENCY], message="m").reason == "Unschedulable"
    assert status_text.pod_scheduled([DEPENDENCY, QUOTA], message="m").reason != "Unschedulable"


def test_the_message_is_cut_as_an_event_s() -> None:
    long = "x" * (reasons.EVENT_MESSAGE_CHARS + 10)
    assert status_text.pod_scheduled([CAPACITY], message=long).message == "x" * reasons.EVENT_MESSAGE_CHARS


def test_the_transition_time_moves_only_when_the_status_changes() -> None:
    desired = status_text.PodScheduled("QueueQuotaExceeded", "quota: …")
    fresh = status_text.pod_condition_patch(desired, observed_status=None, now=NOW)
    assert fresh == {"status": {"conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "QueueQuotaExceeded", "message": "quota: …",
        "lastTransitionTime": "2026-01-02T03:04:05Z",
    }]}}
    assert "lastTransitionTime" in status_text.pod_condition_patch(desired, observed_status="True", now=NOW)["status"]["conditions"][0]
    assert "lastTransitionTime" not in status_text.pod_condition_patch(desired, observed_status="False", now=NOW)["status"]["conditions"][0]


def _queue(name: str, *, cpu: str) -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": 1, "capability": {"cpu": cpu}}, "status": {"state": "Open"}}


def _view(*, big_pod: dict | None = None) -> ClusterView:
    """n1 has 4 cpu. `big` (8 cpu) fits no node: capacity. `capped` (2 cpu) is in queue q
    whose capability is 1 cpu: quota. `small` (1 cpu) binds."""
    return ClusterView(
        nodes=(node("n1", cpu=4),),
        queues=(_queue("q", cpu="1"),),
        volcano_pod_groups=(pod_group("big"), pod_group("capped", queue="q"), pod_group("small")),
        pods=(big_pod or pod("big-0", group="big", cpu="8"), pod("capped-0", group="capped", cpu="2"), pod("small-0", group="small", cpu="1")),
    )


def _conditions(observation: Observation, reported: dict[str, str] | None = None) -> dict[str, SetPodCondition]:
    decision = place(observation.snapshot, SolveConfig(engine="greedy", time_limit_s=2.0))
    the_plan = plan(observation, decision, reported=reported or {})
    return {write.pod: write for gang in the_plan.gangs for write in gang.pod_conditions}


def test_capacity_reads_unschedulable_quota_its_own_word_and_a_bound_pod_none() -> None:
    writes = _conditions(observe(_view(), scheduler_names=("batchplace",)))
    assert sorted(writes) == ["ns/big-0", "ns/capped-0"]
    assert writes["ns/big-0"].desired.reason == "Unschedulable"
    assert writes["ns/big-0"].desired.message.startswith("1/1 tasks in gang unschedulable: capacity: task")
    assert writes["ns/capped-0"].desired.reason == "QueueQuotaExceeded"
    assert "quota: queue q capability 1 cpu" in writes["ns/capped-0"].desired.message


def test_a_pod_that_already_says_it_is_not_written_again() -> None:
    first = _conditions(observe(_view(), scheduler_names=("batchplace",)))["ns/big-0"]
    said = pod("big-0", group="big", cpu="8")
    said["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": first.desired.reason,
                                     "message": first.desired.message, "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    assert "ns/big-0" not in _conditions(observe(_view(big_pod=said), scheduler_names=("batchplace",)))
    other = dict(said["status"]["conditions"][0], message="an older message")
    said["status"]["conditions"] = [other]
    rewritten = _conditions(observe(_view(big_pod=said), scheduler_names=("batchplace",)))["ns/big-0"]
    assert (rewritten.desired, rewritten.observed and rewritten.observed.message) == (first.desired, "an older message")


def test_a_write_the_watch_has_not_shown_yet_is_not_sent_twice() -> None:
    observation = observe(_view(), scheduler_names=("batchplace",))
    first = _conditions(observation)["ns/big-0"]
    reported = {pod_condition_key(first.pod): first.reported_as()}
    assert "ns/big-0" not in _conditions(observation, reported)
    # the pod changed since (someone else wrote it): written again
    moved = pod("big-0", group="big", cpu="8")
    moved["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Other", "message": "m"}]
    assert "ns/big-0" in _conditions(observe(_view(big_pod=moved), scheduler_names=("batchplace",)), reported)


def test_a_gated_pod_keeps_the_api_server_s_condition_and_its_ungated_sibling_reads_scheduling_gated() -> None:
    gated = pod("train-0", group="train", cpu="1")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/quota-check"}]
    gated["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                                      "message": "Scheduling is blocked due to non-empty scheduling gates"}]
    view = ClusterView(
        nodes=(node("n1"),), volcano_pod_groups=(pod_group("train", min_member=2),),
        pods=(gated, pod("train-1", group="train", cpu="1")),
    )
    writes = _conditions(observe(view, scheduler_names=("batchplace",)))
    assert sorted(writes) == ["ns/train-1"]
    assert writes["ns/train-1"].desired.reason == "SchedulingGated"
    assert "gated: waiting for example.com/quota-check" in writes["ns/train-1"].desired.message


def test_a_pod_whose_gang_waits_for_its_victims_reads_pipelined() -> None:
    view = ClusterView(
        nodes=(node("n1", cpu=4),),
        priority_classes=(priority_class("low", 1), priority_class("high", 100)),
        volcano_pod_groups=(pod_group("low", priority_class="low"), pod_group("high", priority_class="high")),
        pods=(pod("low-0", group="low", cpu="4", node_name="n1", phase="Running", priority=1),
              pod("high-0", group="high", cpu="4", priority=100)),
    )
    writes = _conditions(observe(view, scheduler_names=("batchplace",)))
    assert writes["ns/high-0"].desired.reason == "Pipelined"
    assert "binding waits for 1 preempted pod(s) to terminate: ns/low-0" in writes["ns/high-0"].desired.message


def test_a_started_gang_s_pod_left_pending_says_its_own_reason_and_the_pods_it_binds_none() -> None:
    view = ClusterView(
        nodes=(node("n1", cpu=4),), volcano_pod_groups=(pod_group("job", min_member=1),),
        pods=tuple(pod(f"job-{i}", group="job", cpu="2") for i in range(3)),
    )
    observation = observe(view, scheduler_names=("batchplace",))
    decision = place(observation.snapshot, SolveConfig(engine="greedy", time_limit_s=2.0))
    (gang,) = plan(observation, decision).gangs
    (left,) = {f"ns/job-{i}" for i in range(3)} - {bind.pod for bind in gang.binds}
    assert [(w.pod, w.desired) for w in gang.pod_conditions] == [
        (left, status_text.PodScheduled("Unschedulable", "capacity: task main: 0/1 nodes fit another pod: 1 insufficient cpu"))
    ]
