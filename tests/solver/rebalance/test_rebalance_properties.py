"""Properties of rebalancing advice on random small clusters, against a brute force.

Every advice, whatever the engine: its moves pass the checker as binds of requeued pods
on the projected usage (the rules a move cannot break aside, `verify.NOT_ASKED`); every
node it reports cool or cooled ends at or under each threshold, and when it says no node
stays hot, none does; each move leaves a hot node for a node judged cool, and leaves its
gang whole or moves it whole. And on tiny clusters, where every assignment of the pods on
hot nodes to {stay, each cool node} can be tried: no valid assignment cools more hot
nodes, or as many with fewer moves, than the advice — and an OPTIMAL advice matches the
best one exactly.

The brute force shares only the usage estimate with the planner (`load.usage_table`, the
definition under test elsewhere); who may move, the gang rule and validity it asks of the
snapshot and the checker itself.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.placement import Bind, Placement
from models.rebalance import RebalanceAdvice
from models.snapshot import Pod, PodGroupKey, Snapshot
from solver.checker import check_placement
from solver.rebalance import RebalanceConfig, plan_rebalance
from solver.rebalance.load import UsageTable, usage_table
from solver.rebalance.verify import NOT_ASKED
from solver.rules import usage

GIB = 2**30
OBSERVED_S = 1_714_564_800.0


@st.composite
def tiny_clusters(draw: st.DrawFn) -> Snapshot:
    node_count = draw(st.integers(2, 4))
    nodes: list[dict[str, Any]] = [
        {"name": f"n{index}", "allocatable": {"cpu": draw(st.sampled_from([4, 8, 16])) * 1000, "memory": 32 * GIB, "pods": 4}}
        for index in range(node_count)
    ]
    free = {node["name"]: node["allocatable"]["cpu"] for node in nodes}
    groups: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []

    def place(cpu: int) -> str | None:
        choices = [name for name, room in free.items() if room >= cpu]
        if not choices:
            return None
        name = draw(st.sampled_from(choices))
        free[name] -= cpu
        return name

    for index in range(draw(st.integers(2, 5))):
        kind = draw(st.sampled_from(["single", "single", "single", "other", "gang"]))
        cpu = draw(st.sampled_from([1, 2, 4])) * 1000
        memory = draw(st.sampled_from([0, 4 * GIB]))
        requests = {"cpu": cpu, **({"memory": memory} if memory else {})}
        if kind == "other":
            node = place(cpu)
            if node is not None:
                pods.append({"namespace": "default", "name": f"other-{index}", "phase": "running", "node": node,
                             "requests": requests})
            continue
        replicas = 1 if kind == "single" else 2
        name = f"g{index}"
        preemptable = draw(st.integers(0, 4)) > 0
        groups.append({"namespace": "default", "name": name, "min_member": draw(st.integers(1, replicas)),
                       "preemptable": preemptable, "tasks": [{"name": "w", "requests": requests}]})
        for replica in range(replicas):
            node = place(cpu)
            if node is None:
                pods.append({"namespace": "default", "name": f"{name}-{replica}", "phase": "pending",
                             "pod_group": f"default/{name}", "task": "w", "requests": requests})
            else:
                pods.append({"namespace": "default", "name": f"{name}-{replica}", "phase": "running", "node": node,
                             "pod_group": f"default/{name}", "task": "w", "requests": requests,
                             "preemptable": preemptable})
    # Usage follows the requests (a busy node is one with pods), scaled: some nodes run hot.
    for node in nodes:
        if not draw(st.integers(0, 5)):
            continue  # not measured
        used = node["allocatable"]["cpu"] - free[node["name"]]
        factor = draw(st.sampled_from([0.5, 1.0, 2.0, 3.0]))
        base = draw(st.sampled_from([0, 10]))
        reading: dict[str, Any] = {"observed_at_s": OBSERVED_S, "cpu_percent": min(150, base + round(100 * factor * used / node["allocatable"]["cpu"]))}
        if draw(st.booleans()):
            reading["memory_percent"] = draw(st.sampled_from(range(0, 105, 15)))
        node["usage"] = reading
    policy = {"cpu_threshold_percent": draw(st.sampled_from([60, 80])), "memory_threshold_percent": 80}
    return Snapshot.model_validate({"nodes": nodes, "pod_groups": groups, "pods": pods, "usage_policy": policy})


# ---- what the advice promises, asked of the advice alone ----


def _requeued(snapshot: Snapshot, pod: Pod) -> Pod:
    task = snapshot.task_of(pod)
    assert task is not None
    return pod.model_copy(update={"phase": "pending", "node": None, "gpu_indices": (), "numa_cell": None,
                                  "requests": task.requests})


def _violations(snapshot: Snapshot, moves: dict[str, str], after: dict[str, dict[str, float]]) -> list[str]:
    """The checker's verdict on `moves` (pod → node), the nodes at `after` (node → resource → percent)."""
    nodes = [
        node.model_copy(update={"usage": node.usage.model_copy(update={f"{r}_percent": p for r, p in after[node.name].items()})})
        if node.usage is not None and node.name in after else node
        for node in snapshot.nodes
    ]
    pods = [_requeued(snapshot, pod) if pod.key in moves else pod for pod in snapshot.pods]
    checked = snapshot.replaced(nodes=nodes, pods=pods)
    binds = tuple(Bind(pod=pod, node=node) for pod, node in moves.items())  # type: ignore[arg-type]
    return [str(v) for v in check_placement(checked, Placement(binds=binds)) if v.rule not in NOT_ASKED]


def _gang_whole(snapshot: Snapshot, moved: set[str], hot: set[str]) -> bool:
    """Each PodGroup keeps min_member running, or moves every running pod, all of them on hot nodes."""
    for group in snapshot.pod_groups:
        running = [pod for pod in snapshot.pods_by_group[group.key] if pod.phase == "running"]
        gone = [pod for pod in running if pod.key in moved]
        if not gone:
            continue
        if len(running) - len(gone) >= group.min_member:
            continue
        if len(gone) == len(running) and all(pod.node in hot for pod in running):
            continue
        return False
    return True


def _check_advice(snapshot: Snapshot, advice: RebalanceAdvice) -> None:
    verdicts = usage.judgements(snapshot)
    hot = {name for name, judgement in verdicts.items() if judgement.state == "hot"}
    for move in advice.moves:
        assert move.from_node in hot, f"{move.pod} leaves {move.from_node}, which is not hot"
        assert verdicts[move.to_node].state == "cool", f"{move.pod} goes to {move.to_node}, not judged cool"
    assert _gang_whole(snapshot, {move.pod for move in advice.moves}, hot)
    after = {row.node: dict(row.after) for row in advice.nodes}
    assert _violations(snapshot, {move.pod: move.to_node for move in advice.moves}, after) == []
    for row in advice.nodes:
        over = {r for r, t in row.thresholds.items() if row.after[r] > t}
        assert bool(over) == (row.verdict == "still_hot"), row
    assert advice.hot_after == sum(row.verdict == "still_hot" for row in advice.nodes) == len(advice.uncooled)
    if advice.hot_after == 0:
        assert all(row.after[r] <= t for row in advice.nodes for r, t in row.thresholds.items())


# ---- the brute force ----


def _best(snapshot: Snapshot, table: UsageTable) -> tuple[int, int]:
    """(hot nodes cooled, −moves) of the best valid assignment."""
    hot = set(table.hot)
    cool = sorted(table.cool)
    candidates = [
        pod for pod in snapshot.pods
        if pod.phase == "running" and pod.node in hot and pod.pod_group is not None and pod.preemptable
        and snapshot.pod_group_by_key[PodGroupKey(pod.pod_group)].preemptable
    ]
    best = (0, 0)
    for choice in itertools.product([None, *cool], repeat=len(candidates)):
        moves = {pod.key: node for pod, node in zip(candidates, choice, strict=True) if node is not None}
        if not _gang_whole(snapshot, set(moves), hot):
            continue
        levels = {name: dict(values) for name, values in table.levels.items()}
        for pod_key, node in moves.items():
            load = table.loads[pod_key]
            for r, share in load.leaving.items():
                levels[load.node][r] -= share
            for r in levels[node]:
                levels[node][r] += load.arriving(snapshot.node_by_name[node], r)
        if any(table.over(levels[node]) for node in cool):
            continue
        cooled = sum(1 for name in hot if not table.over(levels[name]))
        rank = (cooled, -len(moves))
        if rank <= best:
            continue
        after = {name: {r: level / 1000 for r, level in values.items()} for name, values in levels.items()}
        if _violations(snapshot, moves, after):
            continue
        best = rank
    return best


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_clusters())
def test_advice_is_valid_and_as_good_as_the_brute_force(snapshot: Snapshot) -> None:
    table = usage_table(snapshot)
    best = _best(snapshot, table)
    for engine in ("auto", "greedy"):
        advice = plan_rebalance(snapshot, RebalanceConfig(engine=engine, time_limit_s=10.0))  # type: ignore[arg-type]
        _check_advice(snapshot, advice)
        rank = (advice.hot_before - advice.hot_after, -len(advice.moves))
        assert rank <= best, f"{engine}: {rank} beats the brute force's best {best}: the brute force misses a valid plan"
        if advice.status == "OPTIMAL":
            assert rank == best, f"{engine} says OPTIMAL with {rank}, the brute force finds {best}"
