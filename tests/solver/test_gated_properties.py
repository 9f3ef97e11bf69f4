"""Property over the loaders: whatever pods, vcjobs and PyTorchJobs a user writes, with or
without `spec.schedulingGates`, no engine binds a gated pod, the checker accepts every
answer, and a PodGroup that keeps a gated pod says which gates."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.checker import check_placement
from solver.place import ENGINES, SolveConfig, place
from tests.models._kube_builders import load, node, pod, pod_group, pytorch_job, replica, task, vcjob

GATE_NAMES = ("example.com/quota-check", "kueue.x-k8s.io/admission", "b.example/held")
gate_lists = st.lists(st.sampled_from(GATE_NAMES), max_size=2, unique=True)
cpus = st.sampled_from(["100m", "500m", "1", "2"])


def _gates(names: list[str]) -> dict[str, Any]:
    return {"schedulingGates": [{"name": name} for name in names]} if names else {}


@st.composite
def workloads(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Two to four nodes, then pods of PodGroups, vcjobs and PyTorchJobs, some gated."""
    objects: list[dict[str, Any]] = [node(f"n{i}", cpu=draw(st.sampled_from(["1", "2", "4"]))) for i in range(draw(st.integers(2, 4)))]
    for g in range(draw(st.integers(0, 2))):
        size = draw(st.integers(1, 3))
        objects.append(pod_group(f"g{g}", minMember=draw(st.integers(1, size))))
        objects += [pod(f"g{g}-{i}", group=f"g{g}", cpu=draw(cpus), **_gates(draw(gate_lists))) for i in range(size)]
    for j in range(draw(st.integers(0, 2))):
        replicas = draw(st.integers(1, 3))
        objects.append(
            vcjob(f"vj{j}", task("worker", replicas=replicas, cpu=draw(cpus), **_gates(draw(gate_lists))),
                  minAvailable=draw(st.integers(1, replicas)))
        )
    if draw(st.booleans()):
        worker = replica(draw(st.integers(1, 2)), cpu=draw(cpus))
        worker["template"]["spec"].update(_gates(draw(gate_lists)))
        objects.append(pytorch_job("ddp", {"Master": replica(1, cpu=draw(cpus)), "Worker": worker}))
    return objects


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), st.sampled_from(ENGINES))
def test_no_engine_binds_a_gated_pod_and_the_checker_accepts_the_answer(objects: list[dict[str, Any]], engine: str) -> None:
    snapshot = load(*objects).snapshot
    gated = {p.key for p in snapshot.pods if p.scheduling_gates}
    decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=2.0))  # type: ignore[arg-type]
    assert not gated & {bind.pod for bind in decision.placement.binds}
    assert check_placement(snapshot, decision.placement) == ()
    for outcome in decision.podgroups:
        gates = sorted({g for p in snapshot.pods_by_group[outcome.name] if p.key in gated for g in p.scheduling_gates})
        if gates:
            assert f"gated: waiting for {', '.join(gates)}" in outcome.reasons
