"""The speed paths of data preparation give the same answers as the plain ones, and
`place()` splits its time limit so that what follows CP-SAT fits inside it.

Structural assertions only (no wall-clock thresholds): the per-snapshot memo returns what
a fresh computation returns, dies with its snapshot, and does not hang when a snapshot is
freed while it makes another entry; the `Problem` built from nodes
sharing one template equals the one built from distinct node objects; a node's row is
computed once per node object, whichever snapshots it joins, and a changed node (a new
object) gets its own; the deadline CP-SAT
gets leaves the reserve, every CP-SAT call is limited to the time left, and full garbage
collections are held off during `place()` and restored after it.
"""

from __future__ import annotations

import gc
import json
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import solver.cpsat.engine as cpsat_module
import solver.memo as memo_module
import solver.place as place_module
import solver.problem as problem_module
from experiments.synthetic import synthetic_snapshot
from models.snapshot import Node, Snapshot
from solver.checker import check_placement
from solver.cpsat.engine import solve_cpsat
from solver.cpsat.data import DataLimits, build_model_data
from solver.engines import Engines
from solver.memo import memo_size, memoized, memoized_each
from solver.objective import ObjectiveContext
from solver.place import (
    GREEDY_SECONDS_PER_ITEM,
    GREEDY_SECONDS_PER_POD_NODE,
    SAFETY_NET_FACTOR,
    AFTER_SECONDS_PER_ITEM,
    SAFETY_SHARE,
    SolveConfig,
    _Budget,
    place,
)
from solver.problem import build_problem
from solver.rules.dependency import waiting_tasks
from solver.rules.gang import _requirement, gang_requirement
from solver.shares import (
    _deserved_shares,
    deserved_shares,
    queue_allocated,
    queue_requests,
)
from tests.builders import make_gang, make_node, make_queue, make_snapshot


def _snapshot(nodes: int = 40, pods: int = 30, seed: int = 3) -> Snapshot:
    return synthetic_snapshot(nodes=nodes, pending_pods=pods, preload=0.5, seed=seed)


def _distinct_copy(snapshot: Snapshot) -> Snapshot:
    """The same content with every nested object its own (as a parsed cluster has)."""
    return Snapshot.model_validate(snapshot.model_dump())


# ---- the per-snapshot memo ----


def test_memoized_values_equal_a_fresh_computation_and_are_computed_once() -> None:
    snapshot = _snapshot()
    calls = []
    first = memoized(snapshot, ("test", 1), lambda: calls.append(1) or {"x": 1})
    again = memoized(snapshot, ("test", 1), lambda: calls.append(1) or {"x": 2})
    assert first is again and calls == [1]
    assert deserved_shares(snapshot) == _deserved_shares(snapshot)
    for group in snapshot.pod_groups:
        assert gang_requirement(snapshot, group) == _requirement(snapshot, group)
    assert ObjectiveContext.of(snapshot) is ObjectiveContext.of(snapshot)
    assert ObjectiveContext.of(snapshot) == ObjectiveContext._build(snapshot, ())


def test_a_caller_mutating_what_it_got_does_not_change_the_memo() -> None:
    snapshot = _snapshot()
    for compute in (deserved_shares, queue_requests, queue_allocated):
        before = compute(snapshot)
        mutated = compute(snapshot)
        for amounts in mutated.values():
            amounts["cpu"] = -1
        assert compute(snapshot) == before


def test_memo_entries_go_with_their_snapshot() -> None:
    gc.collect()
    baseline = memo_size()
    snapshot = _snapshot()
    deserved_shares(snapshot)
    assert memo_size() == baseline + 1
    del snapshot
    gc.collect()
    assert memo_size() == baseline


def test_an_entry_dropped_while_another_is_being_made_does_not_hang_the_memo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A snapshot's entry is dropped by a weakref callback, which runs inside whatever
    allocation freed it — possibly the memo's own, on the same thread, while it makes an
    entry for another snapshot (a garbage collection there frees a cycle). A lock held at
    that point would never be released; here the freeing is made to happen exactly there."""
    doomed = [Snapshot.model_validate(_snapshot(nodes=4, pods=4).model_dump())]
    memoized(doomed[0], ("drop",), lambda: 1)
    real_ref = memo_module.weakref.ref

    def ref_freeing_the_other(target: object, callback=None):  # noqa: ANN001, ANN202
        doomed.clear()  # its last reference: its entry's callback runs right here
        return real_ref(target, callback)

    monkeypatch.setattr(memo_module, "weakref", SimpleNamespace(ref=ref_freeing_the_other))
    fresh = _snapshot(nodes=4, pods=4, seed=9)
    before = memo_size()
    worker = threading.Thread(target=lambda: memoized(fresh, ("drop",), lambda: 2), daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert memoized(fresh, ("drop",), lambda: 3) == 2 and memo_size() == before  # one entry in, one out


def test_equal_snapshots_do_not_share_memoized_values() -> None:
    one, other = _snapshot(seed=1), _snapshot(seed=2)
    assert memoized(one, ("who",), lambda: "one") == "one"
    assert memoized(other, ("who",), lambda: "other") == "other"


def test_a_pod_group_that_is_not_the_snapshots_own_is_computed_not_looked_up() -> None:
    gang = make_gang("g", replicas=2, cpu=1)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=8)], groups=[gang], queues=[make_queue("default")])
    own = snapshot.pod_groups[0]
    stranger = own.model_copy(update={"min_member": 1})
    assert gang_requirement(snapshot, own).min_member == 2
    assert gang_requirement(snapshot, stranger).min_member == 1


def test_tasks_without_dependencies_never_wait() -> None:
    snapshot = _snapshot()
    for group in snapshot.pod_groups:
        assert not any(task.depends_on for task in group.tasks)
        assert waiting_tasks(snapshot, group) == frozenset()


# ---- the Problem's node rows ----


def test_a_problem_from_shared_node_templates_equals_one_from_distinct_nodes() -> None:
    shared = _snapshot(nodes=60, pods=40)
    assert len({id(node.gpus) for node in shared.nodes}) < len(shared.nodes)  # the template path runs
    distinct = _distinct_copy(shared)
    assert len({id(node.allocatable) for node in distinct.nodes}) == len(distinct.nodes)
    fast, plain = build_problem(shared), build_problem(distinct)
    for name in (
        "allocatable", "free", "schedulable", "gpu_index", "gpu_free_milli", "gpu_cell", "cell_ids", "cell_cpu_free",
        "cell_memory_free", "node_class", "eligible_by_class", "pod_requests", "pod_node", "queue_deserved",
    ):
        np.testing.assert_array_equal(getattr(fast, name), getattr(plain, name), err_msg=name)
    assert fast.pod_gpu_slots == plain.pod_gpu_slots


NODE_TABLES = (
    "allocatable", "free", "schedulable", "gpu_index", "gpu_free_milli", "gpu_cell", "cell_ids", "cell_cpu_free",
    "cell_memory_free",
)  # fmt: skip


def _same_node_tables(one: Snapshot, other: Snapshot) -> None:
    mine, theirs = build_problem(one), build_problem(other)
    for name in (*NODE_TABLES, "node_names"):
        np.testing.assert_array_equal(getattr(mine, name), getattr(theirs, name), err_msg=name)


def test_memoized_each_gives_what_memoized_gives_one_by_one() -> None:
    snapshot = _snapshot(nodes=6)
    first = memoized(snapshot.nodes[0], ("each",), lambda: "known")
    assert memoized_each(snapshot.nodes, ("each",), lambda node: node.name) == [first, *(n.name for n in snapshot.nodes[1:])]
    assert memoized_each(snapshot.nodes, ("each",), lambda node: "recomputed") == [first, *(n.name for n in snapshot.nodes[1:])]


def test_a_node_row_is_computed_once_per_node_and_shared_by_the_snapshots_it_joins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = make_snapshot(
        nodes=[make_node(f"n{i}", gpus=2 * i, numa_cells=2 if i % 2 else 0, gpu_used_milli={0: 100 * i}) for i in range(5)]
    )
    computed: list[str] = []
    real = problem_module._compute_node_row
    monkeypatch.setattr(problem_module, "_compute_node_row", lambda node: computed.append(node.name) or real(node))
    build_problem(first)
    assert sorted(computed) == [f"n{i}" for i in range(5)]
    computed.clear()
    second = Snapshot(nodes=(first.nodes[3], first.nodes[1]))  # the same node objects, another snapshot
    build_problem(second)
    assert computed == []
    _same_node_tables(second, _distinct_copy(second))


def test_a_changed_node_gets_its_own_row_and_the_problem_shows_the_change() -> None:
    before = make_snapshot(nodes=[make_node("n0", gpus=4), make_node("n1", gpus=2, numa_cells=2)])
    build_problem(before)  # rows memoized on both nodes
    busier = Node.model_validate(
        {**before.nodes[0].model_dump(), "gpus": [{"index": g, "used_milli": 500 if g == 2 else 0} for g in range(4)]}
    )
    after = Snapshot(nodes=(busier, before.nodes[1]))
    problem = build_problem(after)
    assert problem.gpu_free_milli[0].tolist() == [1000, 1000, 500, 1000]
    assert problem.free[problem.gpu_column, 0] == 3500
    _same_node_tables(after, _distinct_copy(after))
    _same_node_tables(before, _distinct_copy(before))  # the old node's row is untouched


def test_node_memo_entries_go_with_their_node() -> None:
    gc.collect()
    baseline = memo_size()
    snapshot = make_snapshot(nodes=[make_node(f"n{i}", gpus=1) for i in range(3)])
    build_problem(snapshot)
    assert memo_size() == baseline + 4  # each node (its row) and the snapshot (its deserved shares)
    del snapshot
    gc.collect()
    assert memo_size() == baseline


def test_greedy_and_the_cpsat_data_come_out_alike_on_shared_and_distinct_nodes() -> None:
    shared = _snapshot(nodes=40, pods=30, seed=7)
    distinct = _distinct_copy(shared)
    one, other = place(shared, SolveConfig(engine="greedy")), place(distinct, SolveConfig(engine="greedy"))
    assert check_placement(shared, one.placement) == ()
    def binds(decision):  # noqa: ANN001, ANN202
        return {(b.pod, b.node, b.gpus) for b in decision.placement.binds}

    assert binds(one) == binds(other)
    data = [
        build_model_data(s, build_problem(s), ObjectiveContext.of(s), limits=DataLimits(), hint=one.placement)
        for s in (shared, distinct)
    ]
    assert data[0].profiles == data[1].profiles
    assert data[0].device_order == data[1].device_order
    assert [(g.nodes, g.before, g.kinds, g.options, g.after) for g in data[0].node_groups] == [
        (g.nodes, g.before, g.kinds, g.options, g.after) for g in data[1].node_groups
    ]
    units = [[(u.group.key, u.domains, u.atoms) for u in each.units] for each in data]
    assert units[0] == units[1]


# ---- the time budget ----


def test_a_slower_greedy_part_keeps_back_more_time_for_after_cpsat_by_the_wall_clock() -> None:
    snapshot = _snapshot(nodes=100, pods=50)
    config = SolveConfig(time_limit_s=1.0, deterministic=False)
    quick = _Budget.measure(snapshot, config, 0.0, greedy_s=0.2, greedy_cpu_s=0.2)
    slow = _Budget.measure(snapshot, config, 0.0, greedy_s=0.6, greedy_cpu_s=0.2)  # waited for a core 2/3 of the time
    assert quick.slowness == 1.0 and slow.slowness == pytest.approx(3.0)
    assert _Budget.measure(snapshot, config, 0.0, greedy_s=5.0, greedy_cpu_s=5.0).slowness == 1.0  # slow work, idle machine
    margin = SAFETY_SHARE * config.time_limit_s
    assert slow.reserve_s - margin == pytest.approx((quick.reserve_s - margin) * slow.slowness)
    assert quick.reserve_s >= margin + AFTER_SECONDS_PER_ITEM * quick.items
    crawling = _Budget.measure(snapshot, config, 0.0, greedy_s=20.0, greedy_cpu_s=0.2)
    assert quick.lp_reserved and not crawling.lp_reserved  # the LP's time is kept back only while it is cheap
    no_lp = SolveConfig(lp_gap=False, deterministic=False)
    assert not _Budget.measure(snapshot, no_lp, 0.0, greedy_s=0.1, greedy_cpu_s=0.1).lp_fits(no_lp)
    assert quick.search_s is None and quick.deadline == config.time_limit_s


def test_the_deterministic_budget_reads_the_input_alone() -> None:
    """However long greedy took, and however busy the machine was while it ran, CP-SAT's
    budget and every choice taken on it are the same: what the time limit leaves after the
    estimates of greedy, of the work after the search and of the LP bound."""
    snapshot = _snapshot(nodes=100, pods=50)
    config = SolveConfig(time_limit_s=1.0)
    budgets = [
        _Budget.measure(snapshot, config, started, greedy_s=greedy_s, greedy_cpu_s=cpu_s)
        for started, greedy_s, cpu_s in ((0.0, 0.2, 0.2), (5.0, 0.6, 0.2), (9.0, 20.0, 0.2))
    ]
    assert len({(b.search_s, b.reserve_s, b.lp_s, b.lp_reserved, b.slowness) for b in budgets}) == 1
    budget = budgets[0]
    pending = sum(1 for pod in snapshot.pods if pod.phase == "pending")
    greedy = GREEDY_SECONDS_PER_ITEM * budget.items + GREEDY_SECONDS_PER_POD_NODE * pending * len(snapshot.nodes)
    assert budget.search_s == pytest.approx(config.time_limit_s - greedy - budget.reserve_s - budget.lp_s)
    assert budget.lp_reserved and budget.lp_fits(config) and not budget.no_time()
    assert budgets[1].deadline == 5.0 + SAFETY_NET_FACTOR * config.time_limit_s  # the safety net, from the start
    assert _Budget.measure(snapshot, SolveConfig(safety_net_s=2.5), 1.0, 0.1, 0.1).deadline == 3.5
    assert _Budget.measure(snapshot, SolveConfig(time_limit_s=0.05), 0.0, 0.1, 0.1).no_time()


def test_cpsat_gets_a_deadline_that_leaves_the_reserve_and_every_call_is_limited_to_the_time_left_by_the_wall_clock(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    snapshot = _snapshot(nodes=200, pods=200, seed=11)
    limit = 1.5
    # The search runs in a forked child (`solver.isolation`): the spies write what they see
    # to a file, which both processes share.
    seen = tmp_path / "seen.jsonl"
    real_solve, real_solver = solve_cpsat, cpsat_module._solver
    deadlines: list[float] = []

    def spy_solve(*args, deadline: float, **kwargs):  # noqa: ANN002, ANN003, ANN202
        deadlines.append(deadline)
        with seen.open("a") as out:
            out.write(json.dumps({"deadline": deadline}) + "\n")
        return real_solve(*args, deadline=deadline, **kwargs)

    def spy_solver(config, clock, seconds: float, **kwargs):  # noqa: ANN001, ANN003, ANN202
        with seen.open("a") as out:  # (seconds given, seconds left to the deadline)
            out.write(json.dumps({"given": seconds, "left": deadlines[-1] - place_module.time.perf_counter()}) + "\n")
        return real_solver(config, clock, seconds, **kwargs)

    monkeypatch.setattr(cpsat_module, "_solver", spy_solver)  # inside the engine: how each stage is limited
    before = place_module.time.perf_counter()
    config = SolveConfig(engine="auto", time_limit_s=limit, deterministic=False)
    decision = place(snapshot, config, engines=Engines(cpsat=spy_solve))
    items = len(snapshot.nodes) + len(snapshot.pods)
    assert check_placement(snapshot, decision.placement) == ()
    records = [json.loads(line) for line in seen.read_text().splitlines()]
    calls = [r["deadline"] for r in records if "deadline" in r]
    assert len(calls) == 1
    assert before + limit - calls[0] >= SAFETY_SHARE * limit + AFTER_SECONDS_PER_ITEM * items - 1e-9
    limits = [(r["given"], r["left"]) for r in records if "given" in r]
    assert limits, "CP-SAT was never started"
    for given, left in limits:  # `left` is read just after `given` was computed: allow that moment
        assert given <= max(0.001, left) + 0.02


def test_full_collections_wait_while_place_runs_and_come_back_after(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = _snapshot()
    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []
    real_build = place_module.build_problem

    def spy_build(snap: Snapshot):  # noqa: ANN202
        seen.append(gc.get_threshold())
        return real_build(snap)

    monkeypatch.setattr(place_module, "build_problem", spy_build)
    place(snapshot, SolveConfig(engine="greedy"))
    assert seen and seen[0][2] > before[2] and seen[0][:2] == before[:2]
    assert gc.get_threshold() == before

    def broken(snap: Snapshot):  # noqa: ANN202
        raise RuntimeError("boom")

    monkeypatch.setattr(place_module, "build_problem", broken)
    with pytest.raises(RuntimeError):
        place(snapshot, SolveConfig(engine="greedy"))
    assert gc.get_threshold() == before
