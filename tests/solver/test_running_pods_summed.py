"""What running pods hold, added up each cycle over every pod of the cluster: the Problem's
pod tables (`solver.problem`), the checker's after-state per node (`solver.after`), each
queue's requests before the placement (`solver.shares`), each PodGroup's kept pods after it
(`solver.after`, made when read) and the Decision's queue
allocations (`solver.outcome.allocated_after`). Each is gathered in bulk or read lazily;
here each is held against the sum made pod by pod, on random snapshots."""

from __future__ import annotations

import random

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from models.placement import Eviction, Placement
from models.snapshot import GPU, PODS, POD_SLOT, Snapshot
from solver.after import After, build_after, milli_per_device
from solver.outcome import allocated_after
from solver.place import SolveConfig, place
from solver.problem import _nodes, build_problem
from solver.rules import counted, declared_columns
from solver.shares import cluster_allocatable, queue_allocated, queue_requests
from tests.strategies import snapshots


@settings(max_examples=60, deadline=None)
@given(snapshots())
def test_the_problem_takes_each_running_pods_devices_off_the_slots_it_names(snapshot: Snapshot) -> None:
    snapshot = counted(snapshot)
    problem = build_problem(snapshot)
    assume(problem.gpu_lent_free_milli is None)
    columns = declared_columns(snapshot)
    expected = _nodes(snapshot, problem.resource_names, columns).gpu_free_milli.copy()
    holding = 0
    for p, pod in enumerate(snapshot.pods):
        if pod.phase != "running":
            assert p not in problem.pod_gpu_slots and problem.pod_node[p] == -1
            continue
        n = problem.node_index[pod.node]  # type: ignore[index]
        assert problem.pod_node[p] == n
        row = problem.gpu_index[n].tolist()
        slots = tuple(row.index(index) for index in pod.gpu_indices if index in row)
        if pod.gpu_indices:
            holding += 1
            assert problem.pod_gpu_slots[p] == slots
        else:
            assert p not in problem.pod_gpu_slots
        for g in slots:
            expected[n, g] -= milli_per_device(pod.requests.get(GPU, 0))
    assert (problem.gpu_free_milli == expected).all()
    assert len(problem.pod_gpu_slots) == holding


@settings(max_examples=60, deadline=None)
@given(snapshots())
def test_the_problem_reads_each_pods_requests_group_and_task(snapshot: Snapshot) -> None:
    snapshot = counted(snapshot)
    problem = build_problem(snapshot)
    declared = {column.name for column in declared_columns(snapshot)}
    for p, pod in enumerate(snapshot.pods):
        assert problem.pod_keys[p] == pod.key and problem.pod_index[pod.key] == p
        for name, amount in pod.requests.items():
            if name not in declared:
                assert problem.pod_requests[p, problem.resource_index[name]] == amount
        if pod.pod_group is None:
            assert problem.pod_group[p] == -1 and problem.pod_task_row[p] == -1
        else:
            assert problem.group_keys[problem.pod_group[p]] == pod.pod_group
            assert problem.task_keys[problem.pod_task_row[p]] == (pod.pod_group, pod.task)


def _after_greedy_with_evictions(snapshot: Snapshot, seed: int) -> tuple[Placement, After, set[str]]:
    """`_greedy_with_evictions`, the after-state and the evicted pods' keys."""
    placement = _greedy_with_evictions(snapshot, seed)
    return placement, build_after(snapshot, placement), {eviction.pod for eviction in placement.evictions}


def _greedy_with_evictions(snapshot: Snapshot, seed: int) -> Placement:
    """Greedy's binds and up to three running pods of PodGroups evicted, chosen by `seed`."""
    placement = place(snapshot, SolveConfig(engine="greedy")).placement
    running = [pod for pod in snapshot.pods if pod.phase == "running" and pod.pod_group is not None]
    chosen = random.Random(seed).sample(running, k=min(len(running), seed % 4))
    evictions = [
        Eviction.model_validate({"pod": pod.key, "node": pod.node, "reason": "preempt", "for": pod.pod_group})
        for pod in chosen
    ]
    return Placement(binds=placement.binds, evictions=tuple(evictions))


@settings(max_examples=40, deadline=None)
@given(snapshots(max_nodes=20, max_groups=12), st.integers(0, 1_000))
def test_the_after_state_adds_up_each_node_as_its_pods_do(snapshot: Snapshot, seed: int) -> None:
    placement, after, evicted = _after_greedy_with_evictions(snapshot, seed)
    expected: dict[str, dict[str, int]] = {node.name: {} for node in snapshot.nodes}
    on_node = [(pod.node, pod) for pod in snapshot.pods if pod.phase == "running" and pod.key not in evicted]
    on_node += [(bind.node, snapshot.pod_by_key[bind.pod]) for bind in placement.binds]
    for node_name, pod in on_node:
        used = expected[node_name]  # type: ignore[index]
        for name, amount in pod.requests.items():
            if name != PODS:
                used[name] = used.get(name, 0) + amount
        used[PODS] = used.get(PODS, 0) + POD_SLOT
    assert {name: dict(after.node_used[name]) for name in after.node_used} == expected
    assert len(after.node_used) == len(snapshot.nodes)


@settings(max_examples=40, deadline=None)
@given(snapshots(max_nodes=20, max_groups=12), st.integers(0, 1_000))
def test_the_after_state_counts_each_podgroups_kept_pods_as_its_pods_do(snapshot: Snapshot, seed: int) -> None:
    _, after, evicted = _after_greedy_with_evictions(snapshot, seed)
    kept: dict[str, list[str]] = {group.key: [] for group in snapshot.pod_groups}
    per_task: dict[str, dict[str, int]] = {group.key: {} for group in snapshot.pod_groups}
    for pod in snapshot.pods:
        if pod.pod_group is not None and pod.phase == "running" and pod.key not in evicted:
            kept[pod.pod_group].append(pod.key)
            per_task[pod.pod_group][pod.task or ""] = per_task[pod.pod_group].get(pod.task or "", 0) + 1
    assert {key: [pod.key for pod in after.kept_of(key)] for key in after.kept_by_group} == kept
    assert {key: dict(after.group_kept[key]) for key in after.group_kept} == per_task
    assert len(after.group_kept) == len(after.kept_by_group) == len(snapshot.pod_groups)


@settings(max_examples=40, deadline=None)
@given(snapshots(max_nodes=20, max_groups=12), st.integers(0, 1_000))
def test_queue_allocations_after_a_placement_add_up_as_its_pods_do(snapshot: Snapshot, seed: int) -> None:
    placement = _greedy_with_evictions(snapshot, seed)
    evicted = {eviction.pod for eviction in placement.evictions}
    bound = {bind.pod for bind in placement.binds}
    expected: dict[str, dict[str, int]] = {queue.name: {} for queue in snapshot.queues}
    for pod in snapshot.pods:
        holds = (pod.phase == "running" and pod.key not in evicted) or pod.key in bound
        if pod.pod_group is None or not holds:
            continue
        for queue in snapshot.queue_ancestors(snapshot.pod_group_by_key[pod.pod_group].queue):
            for name, amount in pod.requests.items():
                expected[queue][name] = expected[queue].get(name, 0) + amount
    assert allocated_after(snapshot, placement) == expected


@settings(max_examples=60, deadline=None)
@given(snapshots())
def test_each_queues_requests_add_up_as_its_pods_do(snapshot: Snapshot) -> None:
    """`queue_allocated` (running pods) and `queue_requests` (every pod), each queue with its
    subtree, and what the root deals (every schedulable node's allocatable)."""
    running: dict[str, dict[str, int]] = {queue.name: {} for queue in snapshot.queues}
    every: dict[str, dict[str, int]] = {queue.name: {} for queue in snapshot.queues}
    for pod in snapshot.pods:
        if pod.pod_group is None:
            continue
        for queue in snapshot.queue_ancestors(snapshot.pod_group_by_key[pod.pod_group].queue):
            for totals in (every[queue], running[queue]) if pod.phase == "running" else (every[queue],):
                for name, amount in pod.requests.items():
                    totals[name] = totals.get(name, 0) + amount
    assert queue_allocated(snapshot) == running
    assert queue_requests(snapshot) == every
    allocatable: dict[str, int] = {}
    for node in snapshot.nodes:
        if not node.unschedulable:
            for name, amount in node.allocatable.items():
                allocatable[name] = allocatable.get(name, 0) + amount
    assert cluster_allocatable(snapshot) == allocatable
