"""Loading pods: requests, pending vs running, scheduler filtering, PodGroup membership,
tasks of plain PodGroups, GPU devices of running pods, priorities."""

from __future__ import annotations

import pytest

from models.snapshot import Toleration
from tests.models._kube_builders import (
    container,
    load,
    load_error,
    node,
    pod,
    pod_group,
    priority_class,
    snapshot,
    xk8s_pod_group,
)

# ---- requests ----


def test_pod_requests_sum_containers_in_base_units() -> None:
    raw = pod("p", containers=[container("500m", memory="1Gi"), container("1", gpus=2)])
    assert snapshot(raw).pods[0].requests == {"cpu": 1500, "memory": 2**30, "gpu": 2000}


def test_a_limit_stands_in_for_a_missing_request() -> None:
    raw = pod("p", containers=[{"name": "c", "resources": {"limits": {"cpu": "2", "nvidia.com/gpu": 1}}}])
    assert snapshot(raw).pods[0].requests == {"cpu": 2000, "gpu": 1000}


def _init(cpu: str, *, sidecar: bool = False) -> dict[str, object]:
    init = container(cpu)
    if sidecar:
        init["restartPolicy"] = "Always"
    return init


@pytest.mark.parametrize(
    ("init_containers", "expected_cpu"),
    [
        ([_init("4")], 4000),
        ([_init("2")], 3000),
        ([_init("1", sidecar=True)], 4000),
        ([_init("1", sidecar=True), _init("4")], 5000),
    ],
    ids=[
        "a one-off init container larger than the app containers sets the request",
        "a smaller one-off init container changes nothing",
        "a sidecar init container adds to the app containers",
        "a one-off init container runs beside the sidecars started before it",
    ],
)
def test_init_containers_follow_the_kubernetes_effective_request_rule(
    init_containers: list[dict[str, object]], expected_cpu: int
) -> None:
    raw = pod("p", containers=[container("1"), container("2")], initContainers=init_containers)
    assert snapshot(raw).pods[0].requests["cpu"] == expected_cpu


def test_pod_overhead_is_added_to_the_requests() -> None:
    raw = pod("p", cpu="1", overhead={"cpu": "250m"})
    assert snapshot(raw).pods[0].requests == {"cpu": 1250}


def test_gpu_milli_asks_for_a_fraction_of_one_gpu() -> None:
    assert snapshot(pod("p", cpu="1", gpu_milli=250)).pods[0].requests == {"cpu": 1000, "gpu": 250}


@pytest.mark.parametrize(
    ("containers", "expected"),
    [
        ([container("1", gpu_milli=1500)], "batchplace.io/gpu-milli: must be 1-999 milli-GPU"),
        ([container("1", gpus=1, gpu_milli=500)], "ask for whole GPUs (nvidia.com/gpu) or a fraction of one, not both"),
        ([container("1", gpus=1), container("1", gpu_milli=500)], "the containers ask for 1500 milli-GPU in total"),
    ],
    ids=[
        "gpu-milli of 1000 or more is an error",
        "gpu-milli beside whole GPUs in one container is an error",
        "whole and fractional GPUs across containers is an error",
    ],
)
def test_bad_gpu_requests_are_errors(containers: list[dict[str, object]], expected: str) -> None:
    assert expected in load_error(pod("p", containers=containers))


def test_a_negative_request_is_an_error_with_the_field_path() -> None:
    message = load_error(pod("p", cpu="-2"))
    assert (
        message
        == "test.yaml: document 1 (Pod default/p): spec.containers[0].resources.requests.cpu: must be >= 0, got -2"
    )


def test_a_bad_quantity_string_is_an_error_quoting_it() -> None:
    message = load_error(pod("p", cpu="5 cores"))
    assert message.startswith(
        "test.yaml: document 1 (Pod default/p): spec.containers[0].resources.requests.cpu: '5 cores'"
    )


# ---- pending, running, scheduler names ----


def test_a_pending_pod_of_our_scheduler_gets_its_own_one_pod_group() -> None:
    loaded = snapshot(pod("p", annotations={"scheduling.volcano.sh/queue-name": "q"}))
    group = loaded.pod_groups[0]
    assert (group.key, group.queue, group.min_member, [t.name for t in group.tasks]) == (
        "default/podgroup-p",
        "q",
        1,
        ["main"],
    )
    assert (loaded.pods[0].phase, loaded.pods[0].pod_group, loaded.pods[0].task) == ("pending", group.key, "main")


def test_a_running_pod_naming_only_its_queue_gets_a_one_pod_group_in_that_queue() -> None:
    loaded = snapshot(
        node("n1"),
        pod("named", node="n1", scheduler="default-scheduler", annotations={"scheduling.volcano.sh/queue-name": "q"}),
        pod("plain", node="n1"),
    )
    assert [(p.name, p.pod_group) for p in loaded.pods] == [("named", "default/podgroup-named"), ("plain", None)]
    (group,) = loaded.pod_groups
    assert (group.queue, group.min_member) == ("q", 1)


def test_a_one_pod_group_goes_to_the_default_queue_without_annotation() -> None:
    assert snapshot(pod("p")).pod_groups[0].queue == "default"


@pytest.mark.parametrize(
    ("scheduler", "kept"),
    [("volcano", True), ("batchplace", True), ("default-scheduler", False), (None, False)],
    ids=[
        "volcano pods are ours by default",
        "batchplace pods are ours",
        "default-scheduler pods are not ours",
        "a pod without schedulerName is the default scheduler's",
    ],
)
def test_pending_pods_are_ours_only_when_their_scheduler_is_named(scheduler: str | None, kept: bool) -> None:
    result = load(pod("p", scheduler=scheduler))
    assert (len(result.snapshot.pods) == 1) is kept
    assert result.warnings == ()


def test_scheduler_names_can_be_chosen() -> None:
    result = load(pod("a", scheduler="volcano"), pod("b", scheduler="mine"), scheduler_names=("mine",))
    assert [p.name for p in result.snapshot.pods] == ["b"]


def test_running_pods_of_any_scheduler_take_capacity() -> None:
    loaded = snapshot(node("n1"), pod("p", node="n1", scheduler="default-scheduler", phase="Running"))
    assert (loaded.pods[0].phase, loaded.pods[0].node, loaded.pods[0].pod_group) == ("running", "n1", None)


@pytest.mark.parametrize(
    "phase", ["Succeeded", "Failed"], ids=["succeeded pods are skipped", "failed pods are skipped"]
)
def test_finished_pods_are_skipped(phase: str) -> None:
    assert snapshot(node("n1"), pod("p", node="n1", phase=phase)).pods == ()


def test_a_bound_pod_in_phase_pending_already_takes_capacity() -> None:
    assert snapshot(node("n1"), pod("p", node="n1", phase="Pending")).pods[0].phase == "running"


def test_a_running_pod_on_a_node_not_in_the_input_is_skipped_with_a_warning() -> None:
    result = load(pod("p", node="elsewhere"))
    assert result.snapshot.pods == ()
    assert result.warnings == (
        "test.yaml: document 1 (Pod default/p): runs on node 'elsewhere', which is not in the input; skipped",
    )


def test_running_pod_reads_start_time_priority_and_preemptable() -> None:
    raw = pod("p", node="n1", priority=50, annotations={"volcano.sh/preemptable": "false"})
    raw["status"] = {"phase": "Running", "startTime": "2024-05-01T12:00:00Z"}
    loaded = snapshot(node("n1"), raw).pods[0]
    assert (loaded.start_time, loaded.priority, loaded.preemptable) == (1714564800.0, 50, False)


# ---- PodGroups and their tasks ----


def test_a_volcano_pod_group_with_only_a_name_gets_defaults() -> None:
    loaded = snapshot(pod_group("pg")).pod_groups[0]
    assert (loaded.namespace, loaded.queue, loaded.min_member, loaded.priority) == ("default", "default", 0, 0)
    assert (loaded.preemptable, loaded.network_topology, loaded.min_resources, loaded.creation_time) == (
        True,
        None,
        None,
        0.0,
    )


def test_a_volcano_pod_group_reads_every_field() -> None:
    raw = pod_group(
        "pg",
        namespace="team",
        annotations={"volcano.sh/preemptable": "false"},
        queue="q",
        minMember=2,
        minResources={"cpu": "4"},
        priorityClassName="high",
        networkTopology={"highestTierAllowed": 2},
    )
    raw["metadata"]["creationTimestamp"] = "2024-05-01T12:00:00Z"  # type: ignore[index]
    loaded = snapshot(priority_class("high", 100), raw).pod_groups[0]
    assert (loaded.key, loaded.queue, loaded.min_member, loaded.min_resources) == ("team/pg", "q", 2, {"cpu": 4000})
    assert (loaded.priority, loaded.preemptable, loaded.creation_time) == (100, False, 1714564800.0)
    assert (loaded.network_topology.mode, loaded.network_topology.highest_tier_allowed) == ("hard", 2)  # type: ignore[union-attr]


def test_tasks_of_a_plain_pod_group_come_from_the_task_spec_annotation() -> None:
    loaded = snapshot(
        pod_group("pg", minMember=3, minTaskMember={"ps": 1, "worker": 2}),
        pod("pg-ps-0", cpu="1", group="pg", annotations={"volcano.sh/task-spec": "ps"}),
        pod("pg-worker-0", cpu="2", group="pg", annotations={"volcano.sh/task-spec": "worker"}),
        pod("pg-worker-1", cpu="2", group="pg", annotations={"volcano.sh/task-spec": "worker"}),
    )
    tasks = {t.name: (t.min_available, t.requests["cpu"]) for t in loaded.pod_groups[0].tasks}
    assert tasks == {"ps": (1, 1000), "worker": (2, 2000)}
    assert [p.task for p in loaded.pods] == ["ps", "worker", "worker"]


def test_the_batchplace_task_label_names_a_task_and_pods_without_one_are_main() -> None:
    loaded = snapshot(
        pod_group("pg"),
        pod("a", group="pg", labels={"batchplace.io/task": "driver"}),
        pod("b", group="pg"),
    )
    assert [p.task for p in loaded.pods] == ["driver", "main"]


def test_pods_of_one_task_that_differ_are_split_into_hash_named_tasks_with_a_warning() -> None:
    result = load(
        pod_group("pg"), pod("a", cpu="1", group="pg"), pod("b", cpu="2", group="pg"), pod("c", cpu="1", group="pg")
    )
    tasks = result.snapshot.pod_groups[0].tasks
    assert len(tasks) == 2
    assert all(t.name.startswith("main-") and len(t.name) == len("main-") + 6 for t in tasks)
    pods = {p.name: p.task for p in result.snapshot.pods}
    assert pods["a"] == pods["c"] != pods["b"]
    assert len(result.warnings) == 1 and "split into tasks" in result.warnings[0]


def test_split_task_names_do_not_depend_on_pod_order() -> None:
    first = snapshot(pod_group("pg"), pod("a", cpu="1", group="pg"), pod("b", cpu="2", group="pg"))
    second = snapshot(pod_group("pg"), pod("b", cpu="2", group="pg"), pod("a", cpu="1", group="pg"))
    assert {p.name: p.task for p in first.pods} == {p.name: p.task for p in second.pods}


def test_tolerations_node_selector_and_numa_policy_go_to_the_task() -> None:
    raw = pod(
        "p",
        group="pg",
        annotations={"batchplace.io/numa-policy": "single-numa-node"},
        nodeSelector={"zone": "a"},
        tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}, {"operator": "Exists"}],
    )
    task = snapshot(pod_group("pg"), raw).pod_groups[0].tasks[0]
    assert task.node_selector == {"zone": "a"}
    assert task.numa_policy == "single-numa-node"
    assert task.tolerations == (
        Toleration(key="gpu", operator="Exists", effect="NoSchedule"),
        Toleration(operator="Exists"),
    )


def test_volcano_numa_topology_policy_annotation_is_read_too() -> None:
    raw = pod("p", annotations={"volcano.sh/numa-topology-policy": "best-effort"})
    assert snapshot(raw).pod_groups[0].tasks[0].numa_policy == "best-effort"


def test_an_unknown_numa_policy_is_an_error() -> None:
    message = load_error(pod("p", annotations={"batchplace.io/numa-policy": "strict"}))
    assert message == (
        "test.yaml: document 1 (Pod default/p): metadata.annotations.batchplace.io/numa-policy: "
        "must be one of none, best-effort, restricted, single-numa-node, got 'strict'"
    )


def test_a_pending_pod_naming_a_missing_pod_group_is_skipped_with_a_warning() -> None:
    result = load(pod("p", group="ghost"))
    assert result.snapshot.pods == ()
    assert result.warnings == (
        "test.yaml: document 1 (Pod default/p): names PodGroup 'ghost', which is not in the input; skipped",
    )


def test_a_running_pod_naming_a_missing_pod_group_only_takes_capacity() -> None:
    result = load(node("n1"), pod("p", node="n1", group="ghost"))
    assert result.snapshot.pods[0].pod_group is None
    assert "it only takes capacity" in result.warnings[0]


def test_running_and_pending_pods_of_one_group_share_its_tasks() -> None:
    loaded = snapshot(node("n1"), pod_group("pg", minMember=2), pod("a", node="n1", group="pg"), pod("b", group="pg"))
    assert [(p.phase, p.pod_group, p.task) for p in loaded.pods] == [
        ("running", "default/pg", "main"),
        ("pending", "default/pg", "main"),
    ]


def test_min_task_member_for_a_task_without_pods_is_ignored_with_a_warning() -> None:
    result = load(pod_group("pg", minTaskMember={"ghost": 1}), pod("a", group="pg"))
    assert result.warnings == (
        "test.yaml: document 1 (PodGroup default/pg): "
        "minTaskMember names task 'ghost', which has no pods in the input; ignored",
    )


def test_the_declared_min_task_member_sum_is_kept_when_a_task_without_pods_drops_its_part() -> None:
    """Volcano decides on the declared sum whether task minimums apply: 2 < 1 + 4."""
    loaded = snapshot(pod_group("pg", minMember=2, minTaskMember={"main": 1, "ghost": 4}), pod("a", group="pg"), pod("b", group="pg"))
    (group,) = loaded.pod_groups
    assert ([(t.name, t.min_available) for t in group.tasks], group.task_min_available_total) == ([("main", 1)], 5)


def test_no_declared_sum_is_kept_when_the_tasks_carry_all_of_it() -> None:
    loaded = snapshot(pod_group("pg", minMember=4, minTaskMember={"main": 2}), pod("a", group="pg"), pod("b", group="pg"))
    assert loaded.pod_groups[0].task_min_available_total is None


def test_a_scheduler_plugins_pod_group_reads_min_member_and_queue_label() -> None:
    loaded = snapshot(
        xk8s_pod_group("pg", labels={"scheduling.x-k8s.io/queue": "q"}, minMember=2, minResources={"cpu": "2"}),
        pod("a", scheduler="batchplace", labels={"scheduling.x-k8s.io/pod-group": "pg"}),
        pod("b", scheduler="batchplace", labels={"scheduling.x-k8s.io/pod-group": "pg"}),
    )
    group = loaded.pod_groups[0]
    assert (group.queue, group.min_member, group.min_resources) == ("q", 2, {"cpu": 2000})
    assert {p.pod_group for p in loaded.pods} == {"default/pg"}


def test_a_scheduler_plugins_pod_group_without_queue_goes_to_default() -> None:
    assert snapshot(xk8s_pod_group("pg")).pod_groups[0].queue == "default"


# ---- preemptable and priority ----


def test_pods_are_preemptable_unless_annotated_false_and_inherit_their_group() -> None:
    loaded = snapshot(
        node("n1"),
        pod_group("keep", annotations={"volcano.sh/preemptable": "false"}),
        pod("a", node="n1", group="keep"),
        pod("b", node="n1", group="keep", annotations={"volcano.sh/preemptable": "true"}),
        pod("c", node="n1"),
    )
    assert [p.preemptable for p in loaded.pods] == [False, True, True]


@pytest.mark.parametrize(
    ("labels", "annotations", "expected"),
    [
        ({"volcano.sh/preemptable": "false"}, {}, False),
        ({"volcano.sh/preemptable": "false"}, {"volcano.sh/preemptable": "true"}, True),
        ({}, {"volcano.sh/preemptable": "maybe"}, False),
        ({"volcano.sh/preemptable": "maybe"}, {}, False),
        ({"volcano.sh/preemptable": "1"}, {}, True),
    ],
    ids=[
        "a label protects the pod as the annotation does",
        "the annotation wins over the label",
        "an annotation that is not a boolean protects the pod",
        "a label that is not a boolean protects the pod",
        "any spelling Go reads as true is true",
    ],
)
def test_preemptable_is_read_as_volcano_reads_it(labels: dict[str, str], annotations: dict[str, str], expected: bool) -> None:
    loaded = snapshot(node("n1"), pod("p", node="n1", labels=labels, annotations=annotations))
    assert loaded.pods[0].preemptable is expected


def test_priority_comes_from_spec_priority_then_class_then_global_default() -> None:
    loaded = snapshot(
        priority_class("high", 1000),
        priority_class("low", 1, global_default=True),
        pod("explicit", priority=7, priorityClassName="high"),
        pod("by-class", priorityClassName="high"),
        pod("by-default"),
    )
    assert [p.priority for p in loaded.pods] == [7, 1000, 1]
    assert [g.priority for g in loaded.pod_groups] == [7, 1000, 1]


def test_an_unknown_priority_class_counts_as_zero_with_a_warning() -> None:
    result = load(pod_group("pg", priorityClassName="nope"))
    assert result.snapshot.pod_groups[0].priority == 0
    assert result.warnings == (
        "test.yaml: document 1 (PodGroup default/pg): priorityClassName 'nope' is not in the input; priority 0",
    )


# ---- GPUs of running pods ----


def test_gpu_indices_come_from_the_annotation() -> None:
    loaded = snapshot(node("n1", gpus=8), pod("p", gpus=2, node="n1", annotations={"batchplace.io/gpus": "3,5"}))
    assert loaded.pods[0].gpu_indices == (3, 5)


def test_unannotated_pods_take_the_lowest_free_gpus_after_annotated_ones() -> None:
    loaded = snapshot(
        node("n1", gpus=8),
        pod("b", gpus=2, node="n1"),
        pod("a", gpus=2, node="n1", annotations={"batchplace.io/gpus": "0,1"}),
        pod("c", gpus=1, node="n1"),
    )
    assert {p.name: p.gpu_indices for p in loaded.pods} == {"a": (0, 1), "b": (2, 3), "c": (4,)}


def test_an_unannotated_fractional_pod_goes_to_the_most_used_gpu_it_fits() -> None:
    loaded = snapshot(
        node("n1", gpus=4),
        pod("whole", gpus=1, node="n1"),
        pod("half", gpu_milli=500, node="n1", annotations={"batchplace.io/gpus": "2"}),
        pod("quarter", gpu_milli=250, node="n1", annotations={"batchplace.io/gpus": "3"}),
        pod("new", gpu_milli=300, node="n1"),
    )
    assert {p.name: p.gpu_indices for p in loaded.pods}["new"] == (2,)


def test_a_running_single_numa_node_pod_holds_the_cell_of_its_gpus() -> None:
    loaded = snapshot(
        node("n1", gpus=4, annotations={"batchplace.io/gpu-numa": "0,0,1,1"}),
        pod(
            "p",
            gpus=2,
            node="n1",
            annotations={"batchplace.io/gpus": "2,3", "batchplace.io/numa-policy": "single-numa-node"},
        ),
    )
    assert loaded.pods[0].numa_cell == 1


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        ([pod("p", gpus=1, node="n1", annotations={"batchplace.io/gpus": "9"})], "node n1 has no GPU 9"),
        (
            [pod("p", gpus=2, node="n1", annotations={"batchplace.io/gpus": "0"})],
            "lists 1 GPU(s) but the pod requests 2 whole GPU(s)",
        ),
        ([pod("p", cpu="1", node="n1", annotations={"batchplace.io/gpus": "0"})], "the pod requests no GPU"),
        (
            [
                pod("a", gpus=1, node="n1", annotations={"batchplace.io/gpus": "1"}),
                pod("b", gpus=1, node="n1", annotations={"batchplace.io/gpus": "1"}),
            ],
            "GPU 1 of node n1 is already taken",
        ),
        ([pod("a", gpus=2, node="n1"), pod("b", gpus=1, node="n1")], "only 0 of its 2 GPUs are free"),
        (
            [pod("p", gpus=1, node="n1", annotations={"batchplace.io/gpus": "0,x"})],
            "expected comma-separated GPU indices",
        ),
    ],
    ids=[
        "an index the node lacks",
        "too few indices for the request",
        "indices on a pod that asks for no GPU",
        "one device held by two whole-GPU pods",
        "more GPUs running than the node has",
        "an index that is not a number",
    ],
)
def test_impossible_gpu_holdings_are_errors(pods: list[dict[str, object]], expected: str) -> None:
    assert expected in load_error(node("n1", gpus=2), *pods)
