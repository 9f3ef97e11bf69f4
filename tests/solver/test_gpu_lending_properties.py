"""Property: on random colocation GPU nodes whose devices online pods share with fractional
requests (per-device online usage fresh, stale or partly missing) and offline pods already
borrow, with online and offline PodGroups asking fractions or whole GPUs, the greedy and
CP-SAT placements pass the checker, and — recounted here from the snapshot alone, not
through `solver.rules.colocation` — on every device a bind lands on, online pods (and
offline pods where the device is not lent) stay within 1000 milli, and offline pods on a
lent device stay within 1000 − online usage − margin."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.snapshot import ColocationPolicy, Pod, Snapshot, UsagePolicy
from solver.checker import check_placement
from solver.place import SolveConfig, place
from tests.builders import USAGE_OBSERVED_S, make_gang, make_node, make_running, make_snapshot
from tests.solver.rules.test_rule_colocation import COLOCATION, offline

SHARES = st.sampled_from([100, 200, 250, 300, 400, 500, 700])


@st.composite
def lending_snapshots(draw: st.DrawFn) -> Snapshot:
    nodes, running = [], []
    for n in range(draw(st.integers(1, 3))):
        name, gpus = f"n{n}", draw(st.integers(1, 3))
        used: dict[int, int] = {}
        for index in range(gpus):
            kind = draw(st.sampled_from(["shared", "shared", "whole", "idle", "offline-only"]))
            if kind == "whole":
                running.append(make_running(f"{name}-whole-{index}", node=name, cpu=1, gpus=1, gpu_indices=[index]))
                continue
            if kind == "shared":
                for k in range(draw(st.integers(1, 2))):
                    running.append(make_running(f"{name}-on-{index}-{k}", node=name, cpu=1, gpu_milli=draw(SHARES), gpu_indices=[index]))
            if kind in ("shared", "offline-only"):
                for k in range(draw(st.integers(0, 2))):
                    pod = make_running(f"{name}-off-{index}-{k}", node=name, cpu=1, gpu_milli=draw(SHARES), gpu_indices=[index])
                    running.append(pod.model_copy(update={"offline": True}))
            used[index] = draw(st.sampled_from([0, 0, 0, 100]))
        measured = {i: draw(st.floats(0, 100)) for i in range(gpus) if draw(st.integers(0, 4))}
        age = draw(st.sampled_from([0.0, 0.0, 0.0, 1000.0]))
        usage = {
            "cpu_percent": 10, "online_cpu_percent": 10, "memory_percent": 10, "online_memory_percent": 10,
            "online_gpu_device_percent": measured or None, "observed_at_s": USAGE_OBSERVED_S - age,
        }
        nodes.append(make_node(name, cpu=64, memory=256, gpus=gpus, labels=COLOCATION, gpu_used_milli=used, usage=usage))
    running = _within_devices(running)
    groups = []
    for g in range(draw(st.integers(1, 4))):
        whole = draw(st.integers(0, 5)) == 0
        gang = make_gang(f"job{g}", replicas=draw(st.integers(1, 3)), cpu=1, gpus=1 if whole else 0, gpu_milli=0 if whole else draw(SHARES))
        groups.append(offline(gang) if draw(st.booleans()) else gang)
    snapshot = make_snapshot(nodes=nodes, running=running, groups=groups, usage_policy=UsagePolicy(judged_at_s=USAGE_OBSERVED_S))
    return snapshot.model_copy(update={"colocation_policy": ColocationPolicy(gpu_margin_percent=draw(st.sampled_from([0, 10, 25])))})


def _within_devices(pods: list[Pod]) -> list[Pod]:
    """Online pods first, then offline ones, each kept while its device holds 1000 in all:
    a starting state that is valid however the device is later counted."""
    held: dict[tuple[str, int], int] = {}
    kept = []
    for pod in sorted(pods, key=lambda p: p.offline):
        milli = min(pod.requests.get("gpu", 0), 1000)
        place = (pod.node or "", pod.gpu_indices[0])
        if held.get(place, 0) + milli <= 900:
            held[place] = held.get(place, 0) + milli
            kept.append(pod)
    return kept


def _lent_room(snapshot: Snapshot, node_name: str, index: int) -> int | None:
    """The device's lent room recounted from the module docstring's rule, or None when not lent."""
    node = snapshot.node_by_name[node_name]
    usage = node.usage
    if usage is None or USAGE_OBSERVED_S - usage.observed_at_s > snapshot.usage_policy.max_age_s:
        return None
    percent = (usage.online_gpu_device_percent or {}).get(index)
    holders = [p for p in snapshot.pods if p.phase == "running" and p.node == node_name and index in p.gpu_indices]
    if percent is None or any(p.requests.get("gpu", 0) >= 1000 for p in holders) or not any(not p.offline for p in holders):
        return None
    used = node.gpu_by_index[index].used_milli
    margin = math.ceil(snapshot.colocation_policy.gpu_margin_percent * 10)
    return max(0, 1000 - math.ceil(percent * 10) - margin - used)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(lending_snapshots(), st.sampled_from(["greedy", "cpsat"]))
def test_engines_lend_shared_devices_as_the_checker_and_an_independent_count_judge_it(snapshot: Snapshot, engine: str) -> None:
    decision = place(snapshot, SolveConfig(engine=engine, time_limit_s=2.0))  # type: ignore[arg-type]
    assert check_placement(snapshot, decision.placement) == ()
    evicted = {e.pod for e in decision.placement.evictions}
    new: dict[tuple[str, int], list[Pod]] = {}
    for bind in decision.placement.binds:
        for index in bind.gpus:
            new.setdefault((bind.node, index), []).append(snapshot.pod_by_key[bind.pod])
    for (node_name, index), pods in new.items():
        kept = [p for p in snapshot.pods if p.phase == "running" and p.node == node_name and index in p.gpu_indices and p.key not in evicted]
        room = _lent_room(snapshot, node_name, index)
        milli = lambda p: min(p.requests.get("gpu", 0), 1000)  # noqa: E731
        lent = [p for p in (*kept, *pods) if room is not None and p.offline and milli(p) < 1000]
        rest = [p for p in (*kept, *pods) if p not in lent]
        used = snapshot.node_by_name[node_name].gpu_by_index[index].used_milli
        if any(p in rest for p in pods):
            assert used + sum(map(milli, rest)) <= 1000
        if room is not None and any(p in lent for p in pods):
            assert sum(map(milli, lent)) <= room
