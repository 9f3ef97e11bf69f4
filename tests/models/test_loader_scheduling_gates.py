"""`spec.schedulingGates` read from a Pod, a vcjob task's template and a PyTorchJob replica's
template onto `Pod.scheduling_gates` (rule `gated`); a malformed list names its field."""

from __future__ import annotations

import pytest

from models.errors import FieldError
from models.loaders.json_snapshot import load_snapshot_json
from models.snapshot import Snapshot
from tests.models._kube_builders import load, load_error, node, pod, pod_group, pytorch_job, replica, snapshot, task, vcjob

QUOTA_CHECK = {"name": "example.com/quota-check"}


def _gates(loaded: Snapshot) -> dict[str, tuple[str, ...]]:
    return {p.name: p.scheduling_gates for p in loaded.pods}


def test_a_pod_s_gates_are_read_in_order_and_a_pod_without_any_has_none() -> None:
    loaded = snapshot(
        node("n1"),
        pod_group("g"),
        pod("held", group="g", schedulingGates=[QUOTA_CHECK, {"name": "b.example/second"}]),
        pod("free", group="g"),
    )
    assert _gates(loaded) == {"held": ("example.com/quota-check", "b.example/second"), "free": ()}


def test_a_pod_s_gates_do_not_split_its_task_nor_warn() -> None:
    result = load(node("n1"), pod_group("g"), pod("a", group="g", schedulingGates=[QUOTA_CHECK]), pod("b", group="g"))
    assert len(result.snapshot.pod_groups[0].tasks) == 1
    assert result.warnings == ()


def test_every_pod_of_a_vcjob_task_carries_its_template_s_gates() -> None:
    loaded = snapshot(
        node("n1"),
        vcjob("train", task("worker", replicas=2, schedulingGates=[QUOTA_CHECK]), task("ps", replicas=1)),
    )
    assert _gates(loaded) == {
        "train-worker-0": ("example.com/quota-check",),
        "train-worker-1": ("example.com/quota-check",),
        "train-ps-0": (),
    }


def test_every_pod_of_a_pytorch_job_replica_carries_its_template_s_gates() -> None:
    worker = replica(2)
    worker["template"]["spec"]["schedulingGates"] = [QUOTA_CHECK]
    loaded = snapshot(node("n1"), pytorch_job("ddp", {"Master": replica(1), "Worker": worker}))
    assert {name: gates for name, gates in _gates(loaded).items()} == {
        "ddp-master-0": (),
        "ddp-worker-0": ("example.com/quota-check",),
        "ddp-worker-1": ("example.com/quota-check",),
    }


def test_a_gate_without_a_name_names_its_field() -> None:
    assert "spec.schedulingGates[0].name: required, got nothing" in load_error(
        node("n1"), pod("p", schedulingGates=[{}])
    )


def test_a_gate_listed_twice_names_its_field() -> None:
    message = load_error(node("n1"), pod("p", schedulingGates=[QUOTA_CHECK, QUOTA_CHECK]))
    assert "spec.schedulingGates: item 1: gate 'example.com/quota-check' is listed twice" in message


def test_a_vcjob_template_s_bad_gate_names_the_task_s_path() -> None:
    message = load_error(node("n1"), vcjob("train", task("worker", schedulingGates="example.com/quota-check")))
    assert "spec.tasks[0].template.spec.schedulingGates: expected a list" in message


def test_a_pod_with_a_node_and_a_gate_is_refused_as_kubernetes_does() -> None:
    message = load_error(node("n1"), pod("p", node="n1", schedulingGates=[QUOTA_CHECK]))
    assert "spec.schedulingGates: a pod with nodeName set has no scheduling gates" in message


def test_a_snapshot_json_running_pod_with_a_gate_is_an_error_naming_the_pod() -> None:
    body = {
        "nodes": [{"name": "n1", "allocatable": {"cpu": 4000}}],
        "pods": [{"namespace": "d", "name": "p", "phase": "running", "node": "n1", "scheduling_gates": ["example.com/quota-check"]}],
    }
    with pytest.raises(FieldError) as raised:
        load_snapshot_json(body, source="snap.json")
    assert "pods[0]" in str(raised.value) and "a running pod has no scheduling gates" in str(raised.value)
