"""The partitioned solve (`solver.partition`): the split gives every pending gang one part,
the merge and its repair pass the checker on the whole snapshot, quota and the queues' fair
shares stay global, a part whose solve fails answers with greedy's placement of it, and the
same input gives the same answer. Parts are forced (`SolveConfig.partition_parts`) on small
snapshots, so each solve takes seconds (most of it the pool's workers starting)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from builders import created_at, make_bind, make_eviction, make_gang, make_node, make_placement, make_queue, make_snapshot, resources
from hypothesis import HealthCheck, given, settings
from strategies import snapshots

from models.placement import Decision, Placement
from models.snapshot import GPU, Snapshot
from solver.checker import check_placement
from solver.engines import Engines
from solver.greedy import GreedyConfig, solve_greedy
from solver.partition import PartAnswer, PartPool, solve_partitioned, split_snapshot
from solver.partition import pool
from solver.partition.pool import PARENT_POLL_S, solve_parts
from solver.partition.merge import merge_placements
from solver.partition.repair import repair
from solver.place import SolveConfig, place
from solver.problem import build_problem
from solver.rules import counted
from solver.rules.topology import hard_tier_limit

SPLIT_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SOLVE_SETTINGS = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def two_leaves_of_four(*, gangs: int = 8, capability_gpus: int | None = None) -> Snapshot:
    """8 eight-GPU nodes in leaves of 2 under one spine; 1-pod gangs of 8 GPUs alternating
    between queues `a` (capped when `capability_gpus`) and `b`, youngest last."""
    nodes = [make_node(f"n{i}", gpus=8, cpu=64, leaf=f"leaf-{i // 2}", spine="spine") for i in range(8)]
    jobs = [created_at(make_gang(f"g{i}", gpus=8, cpu=8, queue="a" if i % 2 == 0 else "b"), float(i)) for i in range(gangs)]
    cap = None if capability_gpus is None else resources(gpus=capability_gpus)
    return make_snapshot(nodes=nodes, groups=jobs, queues=[make_queue("a", capability=cap), make_queue("b")])


def greedy_placement(part: Snapshot) -> Placement:
    part = counted(part)
    return solve_greedy(part, problem=build_problem(part), config=GreedyConfig()).placement


def says_its_worker(snapshot: Snapshot) -> Decision:
    """A part's solve that fails saying which worker process ran it."""
    raise RuntimeError(f"worker {os.getpid()}")


def sleeps_on_n0(snapshot: Snapshot) -> Decision:
    """A part's solve that hangs on the part holding node n0 and fails elsewhere, saying where."""
    if "n0" in snapshot.node_by_name:
        time.sleep(60)
    raise RuntimeError(f"worker {os.getpid()}")


def says_what_it_saw(snapshot: Snapshot, *, seen: dict[int, int]) -> Decision:
    """A part's solve that fails saying how many entries `seen` had when it was sent."""
    raise RuntimeError(f"saw {len(seen)}")


def workers_of(answers: Sequence[PartAnswer]) -> set[str]:
    return {answer.failure.rsplit(" ", 1)[-1] for answer in answers if answer.failure and "worker" in answer.failure}


def dies_on_n0(snapshot: Snapshot, **kwargs: object) -> object:
    """A model search that fails on the part holding node n0 and nowhere else."""
    if "n0" in snapshot.node_by_name:
        raise RuntimeError("the search died on the part of n0")
    from solver.cpsat.engine import solve_cpsat

    return solve_cpsat(snapshot, **kwargs)  # type: ignore[arg-type]


# ---- split ----


@SPLIT_SETTINGS
@given(snapshots(max_nodes=24, max_groups=16))
def test_split_gives_every_pending_gang_exactly_one_part_and_every_node_one(snapshot: Snapshot) -> None:
    for parts in (2, 3):
        split = split_snapshot(snapshot, parts=parts)
        assert 1 <= len(split) <= parts
        nodes = [node.name for part in split for node in part.snapshot.nodes]
        assert sorted(nodes) == sorted(node.name for node in snapshot.nodes)
        pending_groups = sorted({pod.pod_group for pod in snapshot.pods if pod.phase == "pending" and pod.pod_group})
        owners = {key: [part.index for part in split if key in part.owned] for key in pending_groups}
        assert all(len(found) == 1 for found in owners.values()), owners
        for part in split:
            held = {node.name for node in part.snapshot.nodes}
            for pod in part.snapshot.pods:
                if pod.phase == "running":
                    assert pod.node in held  # a running pod lives in its node's part
                else:
                    assert pod.pod_group in part.owned  # a pending pod only in its gang's part
            assert sum(pod.phase == "pending" for pod in part.snapshot.pods) == sum(
                len([p for p in snapshot.pods_by_group[key] if p.phase == "pending"]) for key in part.owned
            )


@SPLIT_SETTINGS
@given(snapshots(max_nodes=24, max_groups=16))
def test_split_puts_a_hard_topology_gang_in_a_part_holding_a_whole_domain_of_its_tier(snapshot: Snapshot) -> None:
    split = split_snapshot(snapshot, parts=2)
    for part in split:
        for key in part.owned:
            group = snapshot.pod_group_by_key[key]
            limit = hard_tier_limit(group)
            anchored = any(pod.phase == "running" for pod in snapshot.pods_by_group[key])
            if limit is None or anchored:
                continue
            whole = [p.index for p in split if _holds_whole_domain(snapshot, p.snapshot, limit)]
            if whole:  # when some part holds one, the gang's part does
                assert part.index in whole, (key, limit, whole)


def _holds_whole_domain(snapshot: Snapshot, part: Snapshot, limit: int) -> bool:
    held = {node.name for node in part.nodes}
    domains = {h.name for h in snapshot.hypernodes if h.tier <= limit}
    members = {name: [n for n, chain in snapshot.hypernode_chain.items() if name in chain] for name in domains}
    return any(nodes and all(n in held for n in nodes) for nodes in members.values())


def test_split_cuts_leaves_into_runs_of_balanced_capacity() -> None:
    split = split_snapshot(two_leaves_of_four(), parts=2)
    assert [[node.name for node in part.snapshot.nodes] for part in split] == [
        ["n0", "n1", "n2", "n3"],
        ["n4", "n5", "n6", "n7"],
    ]
    # each queue's four gangs spread two and two
    for part in split:
        queues = sorted(part.snapshot.pod_group_by_key[key].queue for key in part.owned)
        assert queues == ["a", "a", "b", "b"]


# ---- repair ----


def test_split_deals_a_gang_to_a_part_holding_nodes_it_may_use() -> None:
    """Four gangs that select the GPU model of the second half of the nodes all go to the part
    holding those nodes; dealt by free GPUs alone, half would go where none can run."""
    nodes = [make_node(f"n{i}", gpus=8, cpu=64, labels={"gpu-model": "A" if i < 2 else "B"}) for i in range(4)]
    jobs = [created_at(make_gang(f"g{i}", gpus=4, cpu=4, node_selector={"gpu-model": "B"}), float(i)) for i in range(4)]
    jobs.append(created_at(make_gang("any", gpus=4, cpu=4), 9.0))
    snapshot = make_snapshot(nodes=nodes, groups=jobs)
    first, second = split_snapshot(snapshot, parts=2)
    assert {node.name for node in second.snapshot.nodes} == {"n2", "n3"}
    assert sorted(key.split("/")[1] for key in second.owned) == ["g0", "g1", "g2", "g3"]
    assert [key.split("/")[1] for key in first.owned] == ["any"]  # the part with room for it
    decision = place(snapshot, SolveConfig(time_limit_s=2, partition_parts=2))
    assert len(decision.placement.binds) == 5 and check_placement(snapshot, decision.placement) == ()


def test_the_pods_a_part_had_no_room_for_are_placed_where_the_whole_has_room() -> None:
    """n0 and n1 have their GPUs free but CPU-bound pods on them; n2 and n3 have 2 GPUs free each
    and CPU to spare. Each node is of its own kind (its free CPU differs), so the cut keeps
    name order. Dealt by GPU room, all four 1-GPU gangs go to the part of n0 and n1, which
    cannot take one; the fill places them on n2 and n3, as the whole would."""
    nodes = [make_node(f"n{i}", gpus=8, cpu=64) for i in range(4)]
    running = [make_gang(f"cpu-{i}", cpu=62 - i, running_on=[f"n{i}"], preemptable=False) for i in (0, 1)]
    running += [make_gang(f"gpu-{i}", gpus=6, cpu=i, running_on=[f"n{i}"], preemptable=False) for i in (2, 3)]
    jobs = [created_at(make_gang(f"g{i}", gpus=1, cpu=8), float(10 + i)) for i in range(4)]
    snapshot = make_snapshot(nodes=nodes, groups=[*running, *jobs])
    first, _ = split_snapshot(snapshot, parts=2)
    assert {node.name for node in first.snapshot.nodes} == {"n0", "n1"} and len(first.owned) == 4
    decision = place(snapshot, SolveConfig(time_limit_s=2, partition_parts=2))
    assert decision.engine == "cpsat-partitioned"
    assert sorted(bind.node for bind in decision.placement.binds) == ["n2", "n2", "n3", "n3"]
    assert check_placement(snapshot, decision.placement) == ()


def test_without_hypernodes_every_part_gets_its_share_of_every_kind_of_node() -> None:
    """Free 8-GPU nodes a0–a3 and half-used b0–b3: cut in name order, one part would hold every
    free node and the other every hole. Spread by kind, each part has two of each."""
    nodes = [make_node(f"{kind}{i}", gpus=8) for kind in "ab" for i in range(4)]
    running = [make_gang(f"r{i}", gpus=4, running_on=[f"b{i}"]) for i in range(4)]
    parts = split_snapshot(make_snapshot(nodes=nodes, groups=running), parts=2)
    assert [sorted(node.name for node in part.snapshot.nodes) for part in parts] == [["a0", "a1", "b0", "b1"], ["a2", "a3", "b2", "b3"]]


def test_repair_drops_the_youngest_gang_when_two_parts_together_pass_a_queue_capability() -> None:
    snapshot = two_leaves_of_four(gangs=4, capability_gpus=8)
    # g0 (older) placed in part 0, g2 (younger) in part 1: each alone within `a`'s 8 GPUs, 16 together
    merged = make_placement(
        binds=[make_bind("default/g0-worker-0", "n0", gpus=range(8)), make_bind("default/g2-worker-0", "n4", gpus=range(8))]
    )
    assert any(v.rule == "quota" for v in check_placement(snapshot, merged))
    repaired = repair(snapshot, merged)
    assert repaired.dropped == ("default/g2",)
    assert [bind.pod for bind in repaired.placement.binds] == ["default/g0-worker-0"]
    assert repaired.violations == () and check_placement(snapshot, repaired.placement) == ()


def test_repair_drops_the_gang_that_cut_a_victim_gang_split_across_parts() -> None:
    nodes = [make_node(f"n{i}", gpus=8, cpu=64, leaf=f"leaf-{i // 2}", spine="spine") for i in range(8)]
    victim = make_gang("victim", replicas=2, gpus=8, cpu=8, running_on=["n0", "n4"])
    urgent = make_gang("urgent", gpus=8, cpu=8, priority=1)
    snapshot = make_snapshot(nodes=nodes, groups=[victim, urgent])
    # part 0 (n0–n3) evicts the victim's pod on n0 for `urgent`; its pod on n4 is part 1's, not seen
    merged = make_placement(
        binds=[make_bind(urgent.pending[0], "n0", gpus=range(8))],
        evictions=[make_eviction(victim.running[0], "n0", for_=urgent)],
    )
    assert any(v.subject == victim.key for v in check_placement(snapshot, merged))
    repaired = repair(snapshot, merged)
    assert repaired.dropped == (urgent.key,)
    assert repaired.placement == Placement() and repaired.violations == ()


def gpu_milli_bound_per_queue(snapshot: Snapshot, placement: Placement) -> dict[str, int]:
    """Milli-GPUs the placement binds, per queue: exact, a share counts as its fraction."""
    bound: dict[str, int] = {}
    for bind in placement.binds:
        pod = snapshot.pod_by_key[bind.pod]
        queue = snapshot.pod_group_by_key[pod.pod_group].queue  # type: ignore[index]
        bound[queue] = bound.get(queue, 0) + pod.requests[GPU]
    return bound


def test_partitioned_place_keeps_a_queue_within_its_capability_over_the_whole_cluster() -> None:
    snapshot = two_leaves_of_four(capability_gpus=16)
    decision = place(snapshot, SolveConfig(time_limit_s=2, partition_parts=2))
    assert check_placement(snapshot, decision.placement) == ()
    assert gpu_milli_bound_per_queue(snapshot, decision.placement).get("a", 0) <= 16_000
    assert len(decision.placement.binds) == 6  # queue b's four gangs and two of a's: all that quota and room allow


def test_partitioned_place_shares_the_whole_cluster_between_queues_by_their_weights() -> None:
    """16 eight-GPU gangs, alternately of queue `a` (weight 3) and `b` (weight 1), on 8 free
    nodes: room for half. Fair over the whole cluster, `a` gets three quarters (48 GPUs) and
    `b` a quarter (16) — as the unpartitioned solve gives. Each part sees only its half of the
    nodes and of each queue's gangs; a part that shared out only its own pending demand, or
    the nodes it holds, by anything but the weights would give `b` more or less."""
    nodes = [make_node(f"n{i}", gpus=8, cpu=64, leaf=f"leaf-{i // 2}", spine="spine") for i in range(8)]
    jobs = [created_at(make_gang(f"g{i}", gpus=8, cpu=8, queue="a" if i % 2 == 0 else "b"), float(i)) for i in range(16)]
    snapshot = make_snapshot(nodes=nodes, groups=jobs, queues=[make_queue("a", weight=3), make_queue("b", weight=1)])
    whole = place(snapshot, SolveConfig(time_limit_s=2))
    parts = place(snapshot, SolveConfig(time_limit_s=2, partition_parts=2))
    assert parts.engine == "cpsat-partitioned"
    assert check_placement(snapshot, parts.placement) == ()
    assert gpu_milli_bound_per_queue(snapshot, whole.placement) == {"a": 48_000, "b": 16_000}
    assert gpu_milli_bound_per_queue(snapshot, parts.placement) == {"a": 48_000, "b": 16_000}


# ---- the pool ----


def test_a_part_whose_solve_fails_answers_with_greedys_placement_of_it() -> None:
    snapshot = two_leaves_of_four()
    config = SolveConfig(engine="cpsat", time_limit_s=1, partition_parts=1)
    solved = solve_partitioned(
        snapshot,
        parts=2,
        solve=partial(place, config=config, engines=Engines(cpsat=dies_on_n0)),  # type: ignore[arg-type]
        rescue=greedy_placement,
        deadline=time.perf_counter() + 120,
        pool=PartPool(workers=2),
    )
    failed, answered = solved.answers
    assert failed.failure is not None and "died on the part of n0" in failed.failure
    assert failed.placement == greedy_placement(solved.parts[0].snapshot)
    assert answered.failure is None and answered.status in ("OPTIMAL", "FEASIBLE")
    assert solved.own_answers == 1
    assert solved.violations == () and check_placement(snapshot, solved.placement) == ()


def test_the_workers_stay_warm_from_one_call_to_the_next() -> None:
    parts = [part.snapshot for part in split_snapshot(two_leaves_of_four(), parts=2)]

    def solved() -> set[str]:
        answers = solve_parts(
            parts, solve=says_its_worker, rescue=greedy_placement, deadline=time.perf_counter() + 120, pool=PartPool(workers=2)
        )
        assert [answer.placement for answer in answers] == [greedy_placement(part) for part in parts]
        return workers_of(answers)

    first = solved()
    warm = pool._WARM.started()
    assert warm is not None
    started = {str(pid) for pid in warm._processes}  # the workers the first call started, busy or not
    second = solved()
    assert pool._WARM.started() is warm
    assert first <= started and second and second <= started  # no worker started anew


def test_a_part_is_sent_as_it_was_when_solve_parts_was_called() -> None:
    """`meanwhile` runs while the parts are on their way; what it changes (the solver fills memos
    on the models the parts share) is not what a part's worker gets, and never breaks the
    sending ("dictionary changed size during iteration")."""
    parts = [part.snapshot for part in split_snapshot(two_leaves_of_four(), parts=2)]
    seen: dict[int, int] = {}

    def meanwhile() -> None:
        for key in range(200_000):
            seen[key] = key

    answers = solve_parts(
        parts, solve=partial(says_what_it_saw, seen=seen), rescue=greedy_placement,
        deadline=time.perf_counter() + 120, pool=PartPool(workers=2), meanwhile=meanwhile,
    )  # fmt: skip
    assert [answer.failure for answer in answers] == ["RuntimeError: saw 0"] * 2


def test_workers_left_hung_by_a_missed_deadline_are_replaced() -> None:
    parts = [part.snapshot for part in split_snapshot(two_leaves_of_four(), parts=2)]
    part_pool = PartPool(workers=2)
    hung = solve_parts(parts, solve=sleeps_on_n0, rescue=greedy_placement, deadline=time.perf_counter() + 5, pool=part_pool)
    assert hung[0].failure == "timeout" and hung[0].placement == greedy_placement(parts[0])
    before = workers_of(hung)
    after = solve_parts(parts, solve=says_its_worker, rescue=greedy_placement, deadline=time.perf_counter() + 120, pool=part_pool)
    assert all(answer.failure is not None and "worker" in answer.failure for answer in after)  # none queued behind the hung one
    assert before and not workers_of(after) & before


def test_place_answers_when_a_parts_search_dies() -> None:
    snapshot = two_leaves_of_four()
    config = SolveConfig(engine="cpsat", time_limit_s=1, partition_parts=2)
    decision = place(snapshot, config, engines=Engines(cpsat=dies_on_n0))  # type: ignore[arg-type]
    assert check_placement(snapshot, decision.placement) == ()
    assert len(decision.placement.binds) == 8  # every gang fits: the rescued part places its own as greedy does


# ---- the whole ----


def test_partitioned_place_gives_the_same_answer_twice() -> None:
    snapshot = two_leaves_of_four(capability_gpus=16)
    config = SolveConfig(time_limit_s=1, partition_parts=2)
    first, second = place(snapshot, config), place(snapshot, config)
    assert first.placement == second.placement
    assert (first.engine, first.status, first.objective) == (second.engine, second.status, second.objective)


def test_partitioned_place_answers_with_cpsat_parts_and_the_lp_gap() -> None:
    snapshot = two_leaves_of_four(gangs=6)
    decision = place(snapshot, SolveConfig(time_limit_s=1, partition_parts=2))
    assert (decision.engine, decision.status) == ("cpsat-partitioned", "FEASIBLE"), decision.fallback
    assert len(decision.placement.binds) == 6
    assert decision.bound is not None and decision.gap == 0.0


@SOLVE_SETTINGS
@given(snapshots(max_nodes=16, max_groups=10))
def test_partitioned_placement_passes_the_checker_on_the_whole_snapshot(snapshot: Snapshot) -> None:
    decision = place(snapshot, SolveConfig(time_limit_s=1, partition_parts=2))
    assert check_placement(snapshot, decision.placement) == ()
    assert decision.engine in ("cpsat-partitioned", "greedy")


@SPLIT_SETTINGS
@given(snapshots(max_nodes=16, max_groups=12))
def test_merged_greedy_parts_repair_into_a_valid_placement(snapshot: Snapshot) -> None:
    """The repair converges: whatever the parts place apart, dropping gangs makes it valid."""
    for parts in (2, 3):
        split = split_snapshot(snapshot, parts=parts)
        merged = merge_placements([greedy_placement(part.snapshot) for part in split])
        repaired = repair(snapshot, merged)
        assert repaired.violations == ()
        assert check_placement(snapshot, repaired.placement) == ()
        kept = {bind.pod for bind in repaired.placement.binds}
        assert kept <= {bind.pod for bind in merged.binds}



# ---- when `auto` partitions ----


def test_only_cpsat_and_auto_solve_in_parts_and_only_when_asked() -> None:
    snapshot = two_leaves_of_four(gangs=6)
    assert place(snapshot, SolveConfig(time_limit_s=1)).engine == "cpsat"  # the default: the whole cycle at once
    assert place(snapshot, SolveConfig(engine="cpsat", time_limit_s=1, partition_parts=2)).engine == "cpsat-partitioned"
    assert place(snapshot, SolveConfig(engine="greedy", time_limit_s=1, partition_parts=2)).engine == "greedy"


STARTS_WARM_WORKERS_AND_WAITS = """
import functools, sys, time
from experiments.synthetic import synthetic_snapshot
from models.placement import Placement
from solver.partition import PartPool, split_snapshot
from solver.partition import pool
from solver.place import SolveConfig, place

if __name__ == "__main__":
    parts = [part.snapshot for part in split_snapshot(synthetic_snapshot(nodes=8, pending_pods=4, preload=0.5, seed=1), parts=2)]
    solve = functools.partial(place, config=SolveConfig(engine="greedy"))
    answers = pool.solve_parts(parts, solve=solve, rescue=lambda part: Placement(), deadline=time.perf_counter() + 120,
                               pool=PartPool(workers=2))
    assert all(answer.failure is None for answer in answers), answers
    print(*pool._WARM.started()._processes, flush=True)
    time.sleep(600)
"""


def test_warm_workers_end_when_the_process_that_started_them_is_killed(tmp_path: Path) -> None:
    """A controller killed outright (`SIGKILL`) leaves no worker behind waiting for parts."""
    script = tmp_path / "starts_warm_workers.py"
    script.write_text(STARTS_WARM_WORKERS_AND_WAITS)
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
    try:
        assert parent.stdout is not None
        workers = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(workers) == 2 and all(_alive(pid) for pid in workers)
    finally:
        parent.kill()
        parent.wait()
    give_up = time.monotonic() + 10 * PARENT_POLL_S
    while any(_alive(pid) for pid in workers) and time.monotonic() < give_up:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers)


def _alive(pid: int) -> bool:
    """Is `pid` a process that has not ended (a zombie has: it waits for its reaper only)?"""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
