"""`plan_rebalance()`: which running pods to move off hot nodes, and where, as advice.

Input: a validated `Snapshot` whose nodes carry usage (`NodeUsage`) and its `UsagePolicy`,
and a `RebalanceConfig`. Output: a `RebalanceAdvice` (`models.rebalance`) — moves,
every judged node's usage before and after, the hot nodes it cannot cool with the reason.
Never an error for a cluster that cannot be balanced: that is an answer too.

The question: move which pods, to which nodes, so that every node ends at or under its
usage thresholds — with the fewest moves. When not every hot node can be cooled, the most
hot nodes are cooled, and among those answers the fewest moves are made (a cooled node is
worth more than any number of moves; moves that cool no node are never advised).

Steps:
  1. `load.usage_table`: usage in milli-percent, each running pod's estimated share;
  2. `movable.build_instance`: who may move (alone or with its whole gang), where to;
  3. `greedy.greedy_plan` always (fast, CP-SAT's hint); with engine `auto` or `cpsat`,
     `cpsat.cpsat_plan` in a forked child (`solver.isolation`, as `solver.place` runs
     CP-SAT: a native crash, the memory ceiling or a hang costs this answer, and greedy's
     is given, FALLBACK); the better answer by (nodes cooled, fewer moves) wins, ties to
     CP-SAT's, which says whether it is proven;
  4. `verify.realize`: devices chosen, the moves judged by the checker as binds of
     requeued pods on the projected usage; the moves it rejects together become a no-good
     (not all of them again; one move alone, a ban) and step 3 runs again (at most
     `max_rounds`); after the last round the rejected moves, and the moves that then cool
     nothing, are dropped — so advice given always passes the checker;
  5. `reasons.uncooled_reason` for every hot node left hot.

Time: `time_limit_s` bounds CP-SAT's searches (the rounds share what is left); greedy,
the checker and the report come on top and take milliseconds at the sizes advice is
asked for (a few hundred movers).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from models.placement import Fallback, FallbackCause
from models.rebalance import (
    Move,
    MovedUsage,
    NodeProjection,
    RebalanceAdvice,
    RebalanceStatus,
    UncooledNode,
)
from models.snapshot import NodeName, Snapshot
from solver.isolation import DEFAULT_MEMORY_LIMIT_BYTES, SearchFailed, search_or_failure
from solver.rebalance.greedy import Moves, greedy_plan
from solver.rebalance.load import RESOURCES, UsageTable, percent_of, usage_table
from solver.rebalance.movable import Instance, build_instance
from solver.rebalance.reasons import uncooled_reason
from solver.rebalance.verify import Realized, culprits, project, realize

__all__ = ["RebalanceConfig", "plan_rebalance", "cooled_count"]

log = logging.getLogger(__name__)

RebalanceEngine = Literal["auto", "cpsat", "greedy"]


@dataclass(frozen=True)
class RebalanceConfig:
    """How to plan. Every knob is here, one per line."""

    engine: RebalanceEngine = "auto"
    """auto: CP-SAT, greedy's answer when CP-SAT fails or does worse; cpsat: the same, but a
    model CP-SAT rejects raises; greedy: the greedy planner alone."""
    time_limit_s: float = 5.0
    """What CP-SAT may search, all rounds together."""
    workers: int = 2
    """CP-SAT search workers."""
    memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT_BYTES
    """What the CP-SAT child process may allocate (`solver.isolation`)."""
    max_rounds: int = 4
    """Solve → check → ban rounds before rejected moves are dropped."""
    max_pairs: int = 6000
    """(mover, destination) variables CP-SAT gets before each mover keeps only its coolest
    candidates (`solver.rebalance.cpsat.restrict`); 0: never cut."""


@dataclass(frozen=True)
class _Answer:
    moves: Moves
    engine: str
    status: RebalanceStatus
    fallback: Fallback | None = None


def cooled_count(instance: Instance, levels: Mapping[NodeName, Mapping[str, int]]) -> int:
    """Hot nodes at or under every threshold at `levels`."""
    return sum(1 for hot in instance.table.hot if not instance.table.over(levels[hot]))


def _rank(instance: Instance, realized_levels: Mapping[NodeName, Mapping[str, int]], moves: Moves) -> tuple[int, int]:
    return cooled_count(instance, realized_levels), -len(moves)


def plan_rebalance(snapshot: Snapshot, config: RebalanceConfig = RebalanceConfig()) -> RebalanceAdvice:
    """Advice for `snapshot` (see the module docstring)."""
    started = time.perf_counter()
    deadline = started + config.time_limit_s
    table = usage_table(snapshot)
    if not table.hot:
        return _advice(snapshot, None, table, None, engine="none", status="OPTIMAL", started=started)
    instance = build_instance(snapshot, table)
    if not instance.movers:  # nothing may move: the empty advice is the only one, and proven so
        return _advice(snapshot, instance, table, realize(instance, ()), engine="none", status="OPTIMAL", started=started)
    no_goods: set[frozenset[tuple[int, int]]] = set()
    notes: list[str] = []
    answer = realized = None
    for round_number in range(1, config.max_rounds + 1):
        answer = _solve(instance, config, no_goods, deadline)
        realized = realize(instance, answer.moves)
        if realized.valid:
            break
        rejected = culprits(instance, realized)
        first = realized.violations[0].message if realized.violations else "no GPU device or NUMA cell choice fits"
        count = len(set().union(*rejected))
        notes.append(f"round {round_number}: {count} move(s) rejected and planned again ({first})")
        no_goods |= rejected
    banned = _banned(no_goods)
    assert answer is not None and realized is not None
    if not realized.valid:
        realized = _pruned(instance, realized)
        notes.append(f"moves the checker still rejected after {config.max_rounds} rounds were dropped")
    status = answer.status
    if no_goods and status == "OPTIMAL":
        status = "FEASIBLE"  # optimal among the moves the checker left, not proven among all
    return _advice(
        snapshot, instance, table, realized, engine=answer.engine, status=status, started=started,
        fallback=answer.fallback, banned=banned, notes=tuple(notes),
    )


def _banned(no_goods: Collection[frozenset[tuple[int, int]]]) -> set[tuple[int, int]]:
    """The no-goods of one move: moves never to make."""
    return {move for no_good in no_goods if len(no_good) == 1 for move in no_good}


def _solve(
    instance: Instance, config: RebalanceConfig, no_goods: Collection[frozenset[tuple[int, int]]], deadline: float
) -> _Answer:
    banned = _banned(no_goods)
    greedy = greedy_plan(instance, banned=banned)
    if config.engine == "greedy":
        return _Answer(moves=greedy, engine="greedy", status="GREEDY")

    def fallback(cause: FallbackCause, why: str) -> _Answer:
        log.info("rebalance: the greedy plan (%s)", why, extra={"fallback_cause": cause})
        return _Answer(moves=greedy, engine="greedy", status="FALLBACK", fallback=Fallback(cause=cause, reason=why))

    left = deadline - time.perf_counter()
    if left <= 0.01:
        return fallback("no_time", "no time left for CP-SAT")
    search_deadline = time.perf_counter() + left
    from solver.rebalance.cpsat import cpsat_plan  # imported in this process, not in the forked child; not at start-up (OR-Tools)

    result = search_or_failure(
        lambda: cpsat_plan(
            instance, banned=banned, no_goods=no_goods, hint=greedy, deadline=search_deadline,
            workers=config.workers, max_pairs=config.max_pairs,
        ),
        deadline=search_deadline,
        memory_limit_bytes=config.memory_limit_bytes,
        raise_errors=config.engine == "cpsat",
        what="rebalance",
    )
    if isinstance(result, SearchFailed):
        return fallback(result.cause, result.reason)
    if result.status == "UNKNOWN":
        return fallback("no_solution", "CP-SAT found no solution in time")
    mine = _rank(instance, project(instance, result.moves), result.moves)
    theirs = _rank(instance, project(instance, greedy), greedy)
    if mine < theirs and not any(no_good <= set(greedy) for no_good in no_goods):  # a rejected plan again ranks last
        return fallback("greedy_better", f"greedy cools {theirs[0]} nodes with {-theirs[1]} moves, CP-SAT {mine[0]} with {-mine[1]}")
    status: RebalanceStatus = "FEASIBLE" if result.restricted else result.status  # type: ignore[assignment]
    return _Answer(moves=result.moves, engine="cpsat", status=status)


def _pruned(instance: Instance, realized: Realized) -> Realized:
    """Drop rejected moves, then moves that no longer cool their node or keep their gang
    whole, until the checker accepts what is left (at worst, nothing)."""
    moves = set(realized.moves)
    while True:
        if not realized.valid:
            moves -= set().union(*culprits(instance, realized))
        moves = _coherent(instance, moves)
        realized = realize(instance, tuple(sorted(moves)))
        if realized.valid:
            return realized


def _coherent(instance: Instance, moves: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """`moves` less those of gangs they would cut below their minimum, and of hot nodes they
    do not cool, repeated until nothing changes."""
    while True:
        kept = set(moves)
        for gang in instance.gangs:
            per_task: dict[str, int] = {}
            for mover, _ in kept:
                if instance.movers[mover].group == gang.key:
                    task = instance.movers[mover].task
                    per_task[task] = per_task.get(task, 0) + 1
            if not gang.may_keep(per_task):
                kept = {(m, n) for m, n in kept if instance.movers[m].group != gang.key}
        levels = project(instance, tuple(kept))
        still_hot = {hot for hot in instance.table.hot if instance.table.over(levels[hot])}
        kept = {(m, n) for m, n in kept if instance.movers[m].source not in still_hot}
        if kept == moves:
            return kept
        moves = kept


def _advice(
    snapshot: Snapshot,
    instance: Instance | None,
    table: UsageTable,
    realized: Realized | None,
    *,
    engine: str,
    status: RebalanceStatus,
    started: float,
    fallback: Fallback | None = None,
    banned: Collection[tuple[int, int]] = (),
    notes: tuple[str, ...] = (),
) -> RebalanceAdvice:
    levels = realized.levels if realized is not None else table.levels
    moves = _moves(instance, realized) if instance is not None and realized is not None else ()
    nodes = _projections(snapshot, table, levels, moves)
    still_hot = [hot for hot in table.hot if table.over(levels[hot])]
    cooled = len(table.hot) - len(still_hot)
    uncooled: tuple[UncooledNode, ...] = ()
    if instance is not None:
        uncooled = tuple(
            uncooled_reason(
                instance, hot, cooled_count=cooled, proven=status == "OPTIMAL", engine=engine, banned=banned
            )
            for hot in still_hot
        )
    return RebalanceAdvice(
        engine=engine,
        status=status,
        solve_seconds=round(time.perf_counter() - started, 6),
        moves=moves,
        nodes=nodes,
        uncooled=uncooled,
        hot_before=len(table.hot),
        hot_after=len(still_hot),
        not_judged={"stale": table.stale, "missing": table.missing},
        fallback=fallback,
        notes=notes,
    )


def _moves(instance: Instance, realized: Realized) -> tuple[Move, ...]:
    binds = {bind.pod: bind for bind in realized.binds}
    moved_per_gang: dict[str, int] = {}
    for mover, _ in realized.moves:
        group = instance.movers[mover].group
        moved_per_gang[group] = moved_per_gang.get(group, 0) + 1
    moves = []
    for mover, node in sorted(realized.moves, key=lambda move: (instance.movers[move[0]].source, instance.movers[move[0]].pod.key)):
        m = instance.movers[mover]
        destination = instance.snapshot.node_by_name[instance.problem.node_names[node]]
        bind = binds[m.pod.key]
        gang = instance.gang_by_key[m.group]
        moves.append(
            Move(
                pod=m.pod.key,
                pod_group=m.group,
                from_node=m.source,
                to_node=destination.name,
                gpus=bind.gpus,
                numa_cell=bind.numa_cell,
                whole_gang=gang.running > 1 and moved_per_gang[m.group] == gang.running,
                usage=tuple(
                    MovedUsage(
                        resource=r,  # type: ignore[arg-type]
                        amount=round(m.load.amount(r), 3),
                        from_percent=percent_of(share),
                        to_percent=percent_of(m.load.arriving(destination, r)),
                    )
                    for r, share in m.load.leaving.items()
                ),
            )
        )
    return tuple(moves)


def _projections(
    snapshot: Snapshot,
    table: UsageTable,
    levels: Mapping[NodeName, Mapping[str, int]],
    moves: tuple[Move, ...],
) -> tuple[NodeProjection, ...]:
    out_count: dict[str, int] = {}
    in_count: dict[str, int] = {}
    for move in moves:
        out_count[move.from_node] = out_count.get(move.from_node, 0) + 1
        in_count[move.to_node] = in_count.get(move.to_node, 0) + 1
    hot = set(table.hot)
    policy_thresholds = {r: percent_of(t) for r, t in table.thresholds.items()}
    rows = []
    for name, before_levels in table.levels.items():
        touched = name in out_count or name in in_count
        reading = snapshot.node_by_name[name].usage
        assert reading is not None, "only judged nodes have levels"
        before = {r: float(getattr(reading, f"{r}_percent")) for r in RESOURCES if r in before_levels}
        after = {r: percent_of(level) for r, level in levels[name].items()} if touched else dict(before)
        over_after = table.over(levels[name])
        verdict = ("still_hot" if over_after else "cooled") if name in hot else "cool"
        rows.append(
            NodeProjection(
                node=name,
                verdict=verdict,  # type: ignore[arg-type]
                before=before,
                after=after,
                thresholds={r: policy_thresholds[r] for r in table.judged(name)},
                moves_out=out_count.get(name, 0),
                moves_in=in_count.get(name, 0),
            )
        )
    rank = {name: i for i, name in enumerate(table.hot)}
    rows.sort(key=lambda row: (rank.get(row.node, len(rank)), -max(row.before.values(), default=0.0), row.node))
    return tuple(rows)
