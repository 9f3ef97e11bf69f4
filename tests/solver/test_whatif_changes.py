"""`solver.whatif` without HTTP: what each change does to the snapshot, and the GPU numbers
of a verdict, as its docstring defines them."""

from __future__ import annotations

from typing import Any

import pytest

from models.errors import FieldError
from models.placement import Placement
from models.snapshot import Pod
from solver.whatif import Changes, apply_changes, job_verdicts
from solver.outcome import build_decision
from solver.place import SolveConfig, place
from tests.builders import make_gang, make_node, make_snapshot, make_task


def _pod_group(name: str, *, tasks: list[dict[str, Any]], min_member: int) -> list[Any]:
    """A Volcano PodGroup and its pending pods as Kubernetes objects: `tasks` = [{name, replicas, gpus}]."""
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": min_member, "queue": "default"},
    }
    pods = []
    for task in tasks:
        for i in range(task["replicas"]):
            pods.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{name}-{task['name']}-{i}", "namespace": "default",
                             "annotations": {"scheduling.k8s.io/group-name": name, "batchplace.io/task": task["name"]}},
                "spec": {"schedulerName": "batchplace", "containers": [{"name": "c", "resources": {
                    "requests": {"cpu": "1", "nvidia.com/gpu": str(task["gpus"])}, "limits": {"nvidia.com/gpu": str(task["gpus"])}}}]},
            })
    return [group, *pods]


def _documents(objects: list[Any], source: str = "changes.add_jobs") -> tuple[tuple[str, int, Any], ...]:
    return tuple((source, i + 1, obj) for i, obj in enumerate(objects))


def test_gpus_to_start_takes_each_tasks_minimum_then_the_cheapest_pods() -> None:
    base = make_snapshot(nodes=[make_node("n0", gpus=8)])
    # the docstring's example: ps (1 pod, 0 GPU, min 1), worker (4 × 8 GPUs, min 2), min_member 4
    objects = _pod_group("mixed", tasks=[{"name": "ps", "replicas": 1, "gpus": 0}, {"name": "worker", "replicas": 4, "gpus": 8}], min_member=4)
    objects[0]["spec"]["minTaskMember"] = {"ps": 1, "worker": 2}
    changed = apply_changes(base, Changes(add_jobs=_documents(objects)), submitted_at_s=100.0)
    (verdict,) = job_verdicts(changed, place(changed.snapshot, SolveConfig(engine="greedy")))
    assert (verdict.gpus_requested, verdict.gpus_to_start, verdict.gpus_free_eligible) == (32.0, 24.0, 8.0)
    assert verdict.starts is False and verdict.gpus_short == 16.0
    assert "needs 24 gpu" in verdict.blocking[0]  # the engine's gang reason agrees


def test_gpus_to_start_below_the_task_sum_takes_the_cheapest_min_member_pods() -> None:
    """The docstring's second example: min_member 2 < ps 1 + worker 2, so the ps and one worker."""
    base = make_snapshot(nodes=[make_node("n0", gpus=8)])
    objects = _pod_group("mixed", tasks=[{"name": "ps", "replicas": 1, "gpus": 0}, {"name": "worker", "replicas": 4, "gpus": 8}], min_member=2)
    objects[0]["spec"]["minTaskMember"] = {"ps": 1, "worker": 2}
    changed = apply_changes(base, Changes(add_jobs=_documents(objects)), submitted_at_s=100.0)
    (verdict,) = job_verdicts(changed, place(changed.snapshot, SolveConfig(engine="greedy")))
    assert (verdict.gpus_to_start, verdict.gpus_free_eligible) == (8.0, 0.0)
    assert verdict.starts is True and verdict.placed == 2 and verdict.gpus_short == 0


def test_an_added_pytorch_job_expands_as_the_training_operator_would_and_starts_whole() -> None:
    base = make_snapshot(nodes=[make_node("n0", gpus=2), make_node("n1", gpus=2)])
    template = {"spec": {"schedulerName": "batchplace", "containers": [{"name": "pytorch", "resources": {
        "requests": {"cpu": "1", "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]}}
    job = {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "bert"},
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": template},
                                         "Worker": {"replicas": 3, "template": template}}},
    }
    changed = apply_changes(base, Changes(add_jobs=_documents([job])), submitted_at_s=100.0)
    assert changed.added_jobs == ("default/bert",)
    (verdict,) = job_verdicts(changed, place(changed.snapshot, SolveConfig(engine="greedy")))
    assert (verdict.gpus_requested, verdict.gpus_to_start, verdict.placed, verdict.starts) == (4.0, 4.0, 4, True)


def test_an_added_job_without_a_creation_time_is_submitted_now() -> None:
    base = make_snapshot(nodes=[make_node("n0", gpus=8)])
    objects = _pod_group("late", tasks=[{"name": "worker", "replicas": 1, "gpus": 1}], min_member=1)
    changed = apply_changes(base, Changes(add_jobs=_documents(objects)), submitted_at_s=1234.5)
    assert changed.snapshot.pod_group_by_key["default/late"].creation_time == 1234.5
    assert changed.added_jobs == ("default/late",)


def test_draining_requeues_podgroup_pods_and_drops_other_schedulers_pods() -> None:
    mine = make_gang("train", replicas=2, gpus=4, running_on=["n0", "n1"])
    theirs = Pod(namespace="kube-system", name="daemon", phase="running", node="n0", requests={"cpu": 100})
    base = make_snapshot(nodes=[make_node("n0", gpus=8), make_node("n1", gpus=8)], groups=[mine], running=[theirs])
    changed = apply_changes(base, Changes(drain_nodes=("n0",)), submitted_at_s=0.0)
    (drained,) = changed.drained
    assert drained.requeued_pods == ("default/train-worker-0",) and drained.removed_pods == ("kube-system/daemon",)
    snapshot = changed.snapshot
    assert snapshot.node_by_name["n0"].unschedulable
    requeued = snapshot.pod_by_key["default/train-worker-0"]
    assert requeued.phase == "pending" and requeued.node is None and requeued.gpu_indices == ()
    assert "kube-system/daemon" not in snapshot.pod_by_key
    assert snapshot.pod_by_key["default/train-worker-1"].phase == "running"


def test_a_fractional_job_counts_free_milli_on_shared_devices() -> None:
    base = make_snapshot(nodes=[make_node("n0", gpus=2, gpu_used_milli={0: 700, 1: 1000})])
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "infer"},
        "spec": {"schedulerName": "batchplace", "containers": [{"name": "c", "resources": {"requests": {"batchplace.io/gpu-milli": "500"},
                                                                          "limits": {"batchplace.io/gpu-milli": "500"}}}]},
    }
    changed = apply_changes(base, Changes(add_jobs=_documents([pod])), submitted_at_s=0.0)
    (verdict,) = job_verdicts(changed, place(changed.snapshot, SolveConfig(engine="greedy")))
    assert verdict.starts is False
    assert (verdict.gpus_to_start, verdict.gpus_free_eligible, verdict.gpus_short) == (0.5, 0.3, 0.2)


def test_only_nodes_the_job_may_use_count_as_free() -> None:
    gang = make_gang("sel", replicas=1, gpus=8, node_selector={"pool": "b"})
    nodes = [make_node("n0", gpus=8, labels={"pool": "a"}), make_node("n1", gpus=8, labels={"pool": "b"}, unschedulable=True)]
    snapshot = make_snapshot(nodes=nodes, groups=[gang])
    changed_like = type("C", (), {"snapshot": snapshot, "added_jobs": ("default/sel",)})
    decision = build_decision(snapshot, Placement(), engine="test", status="GREEDY", solve_seconds=0.0, reasons={})
    (verdict,) = job_verdicts(changed_like, decision)  # type: ignore[arg-type]
    assert verdict.gpus_free_eligible == 0.0 and verdict.gpus_short == 8.0


def test_blocking_rules_are_the_reason_prefixes_in_order() -> None:
    snapshot = make_snapshot(nodes=[make_node("n0", cpu=1)], groups=[make_gang("big", replicas=3, cpu=1)])
    changed_like = type("C", (), {"snapshot": snapshot, "added_jobs": ("default/big",)})
    reasons = {"default/big": ("gang: 1 of min 3 pods fit", "capacity: task worker: …", "gang: again")}
    decision = build_decision(snapshot, Placement(), engine="test", status="GREEDY", solve_seconds=0.0, reasons=reasons)  # type: ignore[arg-type]
    (verdict,) = job_verdicts(changed_like, decision)  # type: ignore[arg-type]
    assert verdict.blocking_rules == ("gang", "capacity")


def test_an_unknown_drain_node_names_its_index() -> None:
    base = make_snapshot(nodes=[make_node("n0")])
    with pytest.raises(FieldError) as caught:
        apply_changes(base, Changes(drain_nodes=("n0", "ghost")), submitted_at_s=0.0)
    assert caught.value.location.source == "changes.drain_nodes" and caught.value.location.document == 2


def test_no_changes_leave_the_snapshot_as_it_was() -> None:
    base = make_snapshot(nodes=[make_node("n0", gpus=8)], groups=[make_gang("g", tasks=[make_task(replicas=1, gpus=1)])])
    changed = apply_changes(base, Changes(), submitted_at_s=0.0)
    assert changed.snapshot == base and changed.added_jobs == () and changed.drained == ()
