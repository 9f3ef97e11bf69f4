"""Volcano's own keys, from the manifest through every engine: what they protect, which
queue they count in, how much of a GPU they take. Each case loads Kubernetes objects with
the YAML loader, solves with every engine and has the checker judge the answer."""

from __future__ import annotations

import pytest

from models.placement import Decision
from models.snapshot import Snapshot
from solver.place import ENGINES
from solver.reasons import quota_exceeded
from tests.builders import solve_checked
from tests.models._kube_builders import (
    container,
    load,
    load_error,
    node,
    pod,
    pod_group,
    queue,
    snapshot,
    task,
    vcjob,
)

PREEMPTABLE = "volcano.sh/preemptable"
QUEUE_NAME = "scheduling.volcano.sh/queue-name"
VGPU_NUMBER, VGPU_MEMORY, VGPU_CORES = "volcano.sh/vgpu-number", "volcano.sh/vgpu-memory", "volcano.sh/vgpu-cores"


def _bound_by_queue(loaded: Snapshot, decision: Decision) -> dict[str, int]:
    counts: dict[str, int] = {}
    for bind in decision.placement.binds:
        group = loaded.pod_by_key[bind.pod].pod_group
        queue_name = loaded.pod_group_by_key[group].queue  # type: ignore[index]
        counts[queue_name] = counts.get(queue_name, 0) + 1
    return counts


# ---- volcano.sh/preemptable as a label ----


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("labels", "evicted"),
    [({PREEMPTABLE: "false"}, False), ({PREEMPTABLE: "no"}, False), ({}, True)],
    ids=["a label false protects the pod", "a label that is no boolean protects it", "without it the pod is taken"],
)
def test_a_preemptable_label_keeps_a_running_pod_from_preemption(
    engine: str, labels: dict[str, str], evicted: bool
) -> None:
    loaded = snapshot(
        node("n1", cpu="2"),
        pod_group("low", minMember=1),
        pod("low-0", cpu="2", node="n1", group="low", priority=1, labels=labels),
        pod("high-0", cpu="2", priority=100),
    )
    decision = solve_checked(loaded, engine)
    assert [e.pod for e in decision.placement.evictions] == (["default/low-0"] if evicted else [])
    assert [b.pod for b in decision.placement.binds] == (["default/high-0"] if evicted else [])


# ---- a running pod counted by its queue-name annotation ----


@pytest.mark.parametrize("engine", ENGINES)
def test_a_running_pod_named_only_by_its_queue_counts_against_the_queue_capability(engine: str) -> None:
    loaded = snapshot(
        node("n1", cpu="8"),
        queue("q", capability={"cpu": "4"}),
        pod("running", cpu="3", node="n1", annotations={QUEUE_NAME: "q"}),
        pod("waiting", cpu="2", annotations={QUEUE_NAME: "q"}),
    )
    decision = solve_checked(loaded, engine)
    assert decision.placement.binds == ()
    (outcome,) = [o for o in decision.podgroups if o.name == "default/podgroup-waiting"]
    assert any(reason.code == quota_exceeded.code and "4 cpu, 3 in use, job needs 2" in reason for reason in outcome.reasons)
    (held,) = [q for q in decision.queues if q.name == "q"]
    assert held.allocated["cpu"] == 3000


@pytest.mark.parametrize("engine", ENGINES)
def test_a_running_pod_named_only_by_its_queue_counts_toward_the_queues_fair_share(engine: str) -> None:
    """4 CPUs, queues a and b of weight 1: a already runs 2 through a plain annotated pod,
    so the 2 free CPUs go to b (2 and 2), not one each (3 and 1)."""
    loaded = snapshot(
        node("n1", cpu="4"),
        queue("a"),
        queue("b"),
        pod("a-running", cpu="2", node="n1", annotations={QUEUE_NAME: "a"}),
        *(pod(f"a-{i}", cpu="1", annotations={QUEUE_NAME: "a"}) for i in range(2)),
        *(pod(f"b-{i}", cpu="1", annotations={QUEUE_NAME: "b"}) for i in range(2)),
    )
    assert _bound_by_queue(loaded, solve_checked(loaded, engine)) == {"b": 2}


# ---- Volcano vGPU resources as fractional GPUs ----


def _vgpu_node(name: str, *, slots: int = 20, labels: dict[str, str] | None = None, **vgpu: str) -> dict[str, object]:
    """A node of HAMi's vGPU plugin: vGPU slots (10 per GPU), no nvidia.com/gpu."""
    raw = node(name, cpu="64", labels=labels)
    raw["status"]["allocatable"].update({VGPU_NUMBER: str(slots), **vgpu})  # type: ignore[index]
    return raw


def _vgpu_pod(name: str, **asks: str) -> dict[str, object]:
    return pod(name, containers=[container("1", **asks)])


GFD_32000 = {"nvidia.com/gpu.count": "2", "nvidia.com/gpu.memory": "32000"}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_vgpu_of_8000_mib_on_32000_mib_devices_is_250_milli_and_four_share_one_device(engine: str) -> None:
    loaded = snapshot(
        _vgpu_node("n1", labels=GFD_32000),
        *(_vgpu_pod(f"v-{i}", **{VGPU_NUMBER: "1", VGPU_MEMORY: "8000"}) for i in range(4)),
    )
    assert loaded.nodes[0].allocatable["gpu"] == 2000
    assert {p.requests["gpu"] for p in loaded.pods} == {250}
    decision = solve_checked(loaded, engine)
    assert len(decision.placement.binds) == 4
    assert len({(b.node, b.gpus) for b in decision.placement.binds}) == 1  # one device holds all four


@pytest.mark.parametrize(
    ("asks", "milli"),
    [
        ({VGPU_NUMBER: "1", VGPU_MEMORY: "8000", VGPU_CORES: "30"}, 300),
        ({VGPU_NUMBER: "1", VGPU_MEMORY: "8001"}, 251),
        ({VGPU_NUMBER: "1", VGPU_CORES: "50"}, 500),
        ({VGPU_NUMBER: "2"}, 2000),
        ({VGPU_NUMBER: "2", VGPU_CORES: "100"}, 2000),
    ],
    ids=[
        "the larger of the memory and the cores share",
        "a memory share rounds up, never giving less than asked",
        "cores alone",
        "vGPUs asking neither are whole devices",
        "all the cores of two devices are two whole devices",
    ],
)
def test_a_vgpu_share_is_the_larger_of_its_memory_and_cores_share(asks: dict[str, str], milli: int) -> None:
    assert snapshot(_vgpu_node("n1", labels=GFD_32000), _vgpu_pod("v", **asks)).pods[0].requests["gpu"] == milli


@pytest.mark.parametrize("engine", ENGINES)
def test_a_vcjob_of_vgpu_pods_packs_its_shares_onto_one_device(engine: str) -> None:
    vgpu = container("1", **{VGPU_NUMBER: "1", VGPU_MEMORY: "8000"})
    job = vcjob("infer", task("server", replicas=4, containers=[vgpu]))
    loaded = snapshot(_vgpu_node("n1", labels=GFD_32000), job)
    assert [t.requests["gpu"] for t in loaded.pod_groups[0].tasks] == [250]
    decision = solve_checked(loaded, engine)
    assert len(decision.placement.binds) == 4 and len({b.gpus for b in decision.placement.binds}) == 1


def test_the_share_is_taken_against_the_smallest_device_and_the_plugins_node_memory_counts() -> None:
    """n1 says 40000 MiB per GPU by label; n2 only through HAMi's allocatable vgpu-memory (2 GPUs, 32000 MiB)."""
    loaded = snapshot(
        _vgpu_node("n1", labels={"nvidia.com/gpu.count": "2", "nvidia.com/gpu.memory": "40000"}),
        _vgpu_node("n2", labels={"nvidia.com/gpu.count": "2"}, **{VGPU_MEMORY: "64000"}),
        _vgpu_pod("v", **{VGPU_NUMBER: "1", VGPU_MEMORY: "8000"}),
    )
    assert loaded.pods[0].requests["gpu"] == 250


def test_vgpu_slots_without_a_gpu_count_are_read_as_gpus() -> None:
    loaded = snapshot(_vgpu_node("n1", slots=4))
    assert loaded.nodes[0].allocatable["gpu"] == 4000 and "volcano.sh/vgpu-number" not in loaded.nodes[0].allocatable


def test_without_a_known_device_memory_a_memory_vgpu_takes_a_whole_device_with_a_warning() -> None:
    result = load(_vgpu_node("n1"), _vgpu_pod("v", **{VGPU_NUMBER: "1", VGPU_MEMORY: "8000"}))
    assert result.snapshot.pods[0].requests["gpu"] == 1000
    assert any("no node states its GPU memory" in warning for warning in result.warnings)


@pytest.mark.parametrize(
    ("asks", "expected"),
    [
        ({VGPU_NUMBER: "2", VGPU_MEMORY: "8000"}, "asks 2 vGPUs of 250 milli-GPU each: batchplace shares one device"),
        ({VGPU_NUMBER: "1", VGPU_MEMORY: "40000"}, "40000 MiB is more than the smallest GPU here (32000 MiB)"),
        ({VGPU_NUMBER: "1", VGPU_CORES: "150"}, "must be a percent of one GPU's cores, 0-100, got 150"),
        ({VGPU_NUMBER: "1", VGPU_CORES: "50", "nvidia.com/gpu": "1"}, "asks for vGPUs and for GPUs"),
    ],
    ids=["several fractional vGPUs", "more memory than a device has", "more than all cores", "vGPUs and GPUs"],
)
def test_what_the_model_cannot_hold_is_refused_naming_the_field(asks: dict[str, str], expected: str) -> None:
    message = load_error(_vgpu_node("n1", labels=GFD_32000), _vgpu_pod("v", **asks))
    assert "spec.containers[0].resources.requests" in message and expected in message
