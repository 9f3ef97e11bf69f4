"""`place()`: the one call the CLI, the HTTP service, the controller and the experiments make.

Input: a validated `Snapshot` and a `SolveConfig`. Output: a `Decision` whose placement
has passed the independent checker — a placement that breaks a hard rule is never
returned.

Engines:
  - `greedy`: the greedy engine alone (status GREEDY);
  - `cpsat`: CP-SAT warm-started with the greedy placement (OPTIMAL / FEASIBLE); if it
    finds nothing in time, the greedy placement labelled FALLBACK; a model CP-SAT rejects
    raises `ModelInvalid`, a placement the checker rejects raises `PlacementRejected` —
    both are engine bugs, to be seen rather than bound;
  - `auto` (the default): as `cpsat`, but any CP-SAT failure — an exception, a rejected
    placement (its violations are logged) — falls back to the greedy placement (FALLBACK).
Both CP-SAT engines return the better of CP-SAT's and greedy's placements by
`solver.objective.score`, so the answer is never worse than greedy; greedy's wins are
labelled FALLBACK. Every FALLBACK carries `Decision.fallback`: the cause and the reason.

CP-SAT searches in a forked child process (`solver.isolation`) under a memory ceiling
(`memory_limit_bytes`, 4 GiB by default): a native abort, a runaway allocation or a hang
there costs this one answer — greedy's, FALLBACK with cause "crashed", "memory" or
"timeout", for `cpsat` as for `auto` — never the process that called `place()`.

Time, by default (`deterministic=True`): the same snapshot gives the same answer every
run, whatever the machine's load. CP-SAT searches one worker with a fixed seed, limited
in OR-Tools' deterministic time (`solver.cpsat.clock`), and its budget is what
`time_limit_s` leaves on an idle machine after greedy and what follows the search —
estimated from the input's size (`_Budget`), never read from the clock. Every choice
`place()` makes (no time for CP-SAT, the LP bound, the reasons) reads the same
estimates. So on an idle machine the call takes about `time_limit_s`; on a busy one
longer, up to the wall-clock safety net (`safety_net_s`, 10 × `time_limit_s` by
default). When the net fires (the search stopped by it, or killed past it) the answer is
the one the time allowed and `Decision.reproducible` is False: it is the only way the
same input can give two answers.

With `deterministic=False`, `time_limit_s` bounds the whole call by the wall clock (greedy,
model, solve, extraction, checks): CP-SAT gets what is left after greedy minus a reserve
for what follows it (`_Budget`: measured per node + pod, scaled by how much slower than
usual this call's greedy part ran, so a busy machine keeps back more), so the call returns
within the limit plus a small overshoot (the target: < 10 %), and its answer depends on
the time slices the machine gave it. Full garbage collections wait until the call ends
(`_full_collections_deferred`).

With `partition_parts` N ≥ 2 (`cpsat` and `auto`), the cycle is solved in N parts instead
(`solver.partition`): cut along the topology and queues, each part solved by this
`place()` with its share of the time (`_part_config`) in a process of its own or on a Ray
cluster (`ray_address`), merged, repaired gang by gang and checked on the whole snapshot.
The answer is engine "cpsat-partitioned", status FEASIBLE — or FALLBACK when no part found
a CP-SAT answer, or the repair could not make it pass the checker. Not the default: on
the bench's large clusters greedy on the whole places every pod greedy's parts do and
strands fewer GPUs (docs/results.md, "The partitioned solve").

A CP-SAT `Decision` reports `objective` = the throughput tier of its placement (the
model's value, which equals `score`; a FALLBACK reports its `score` when time allows), `bound` = an upper bound
on throughput among placements at least as fair (tier 1) as the one returned — CP-SAT's,
or the LP relaxation's (`solver.bound`) when that is tighter (`lp_gap`) — and
`gap` = (bound − objective) / bound. Its reasons for the PodGroups it leaves pending are
judged in the state its own placement leaves (`solver.pending_reasons`); a FALLBACK's are
greedy's, for greedy's placement. Whatever the engine, each pod a scheduled PodGroup leaves
pending gets its own reason, judged in the state the returned placement leaves
(`PodGroupOutcome.unplaced_pods`, `solver.pending_reasons.with_unplaced_pods`).
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from typing import Literal

from models.placement import Decision, Fallback, FallbackCause, Placement
from models.snapshot import PodGroupKey, Snapshot
from solver.bound import lp_bound
from solver.checker import PlacementRejected, check_placement
from solver.cpsat import CpsatConfig, CpsatResult, ModelInvalid
from solver.cpsat.units import DataLimits
from solver.engines import DEFAULT_ENGINES, Engines
from solver.fragmentation import PackingName, TypicalShape, packing_measure
from solver.greedy import GreedyConfig
from solver.isolation import DEFAULT_MEMORY_LIMIT_BYTES, SearchFailed, search_or_failure
from solver.objective import TIERS, ObjectiveContext, score
from solver.outcome import build_decision, pending_groups
from solver.partition import PartPool, solve_partitioned
from solver.partition.fill import fill
from solver.pending_reasons import pending_reasons, with_unplaced_pods
from solver.problem import Problem, build_problem
from solver.rules import counted, dra

__all__ = ["EngineName", "SolveConfig", "place", "ENGINES", "ModelInvalid"]

log = logging.getLogger(__name__)

EngineName = Literal["greedy", "cpsat", "auto"]
ENGINES: tuple[EngineName, ...] = ("auto", "cpsat", "greedy")


@dataclass(frozen=True)
class SolveConfig:
    """How to solve one cycle. Every CP-SAT knob is here, one per line."""

    engine: EngineName = "auto"
    time_limit_s: float = 5.0
    """Budget of the whole `place()` call (greedy ignores it): on an idle machine when
    `deterministic`, else by the wall clock."""
    deterministic: bool = True
    """Limit CP-SAT in deterministic time, so the same input gives the same answer whatever
    the load, with the wall clock as a safety net (module docstring); False: by the wall
    clock, the answer depending on the time the machine gave the search."""
    safety_net_s: float | None = None
    """With `deterministic`, the wall-clock limit of the whole call: past it CP-SAT's search
    stops (the answer is then `reproducible` False); None: `SAFETY_NET_FACTOR` × `time_limit_s`."""
    workers: int = 1
    """CP-SAT search workers (`num_workers`). More than one on the deterministic clock run
    interleaved (`interleave_search`), which measured far slower on these models than one
    worker (docs/results.md, "Same input, same answer")."""
    relative_gap_limit: float = 0.0
    """Stop a stage once its gap is below this (0: prove optimality or run out of time)."""
    merge_tiers: bool = True
    """Merge consecutive tiers into one weighted stage where the weights provably keep the
    lexicographic order; False solves one stage per tier."""
    max_patterns_per_profile: int = 200
    """Node patterns per node profile before the set is cut (a restriction: FEASIBLE)."""
    max_patterns: int = DataLimits.max_patterns
    """Node patterns walked over all profiles; with more profiles each is cut at its share
    and fill patterns are sparse (`solver.cpsat.units.DataLimits.max_patterns`)."""
    max_domains_per_gang: int = 8
    """Candidate domains (hard) or atoms (soft) per topology PodGroup, best fit first."""
    max_options_per_node: int = 16
    """Eviction options per node group before only "first j victims" options remain."""
    max_topology_patterns: int = 2000
    """Pattern variables over topology atoms before atoms hold tracked pods only."""
    max_victim_options: int = 3000
    """Eviction options in all before only the most useful node groups keep their victims."""
    candidate_nodes_per_pod: int = 1
    """When the cluster has more than `solver.cpsat.neighbourhood.NODES_PER_POD_KEPT_WHOLE`
    nodes per pending pod, CP-SAT places pending pods only on greedy's nodes and the
    best-fitting this-many per pod of each shape (a restriction around the hint; why 1:
    `solver.cpsat.units.DataLimits`); 0: every node."""
    lp_gap: bool | None = None
    """When CP-SAT has not proven optimality, also bound throughput by the LP relaxation
    (`solver.bound`, in-process HiGHS) and report the tighter bound; its time is reserved.
    None: when the LP's expected cost is at most a fifth of `time_limit_s`."""
    presolve: bool | None = None
    """CP-SAT presolve; None: per stage, when its expected cost (`PRESOLVE_SECONDS_PER_VARIABLE`
    of `solver.cpsat.engine`) is at most half the stage's time and the stage lasts at least
    `PRESOLVE_MIN_STAGE_S` — else the stage may end inside presolve without searching
    (docs/results.md, "CP-SAT presolve")."""
    objective_order: tuple[str, ...] = TIERS
    """The soft objective's tiers, most important first (a permutation of `TIERS`): CP-SAT
    solves its stages in this order and `auto` compares CP-SAT with greedy in it."""
    packing: PackingName = "fragmentation"
    """Greedy node score: "fragmentation" ranks nodes by how much a pod grows the GPU
    fragmentation of the typical shapes (`solver.fragmentation`), then by best fit;
    "best-fit" by best fit alone."""
    typical_shapes: tuple[TypicalShape, ...] = ()
    """Expected pod shapes and weights for the fragmentation score (e.g. a trace's pod
    list); empty: the snapshot's pending pods."""
    log_search: bool = False
    memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT_BYTES
    """What the CP-SAT search process may allocate (`solver.isolation`); past it the answer
    is greedy's (FALLBACK, cause "memory"). None: no ceiling."""
    partition_parts: int = 1
    """Parts to solve the cycle in (`solver.partition`); 1: whole. The greedy engine and
    DRA snapshots (a claim's devices may be shared across parts' pods) are always solved
    whole."""
    partition_workers: int | None = None
    """Parts solved at a time, which sets each part's share of the time limit
    (`_part_config`). None: this machine's cores, or the Ray cluster's CPUs. The answer
    depends on it, not on where the parts run."""
    ray_address: str | None = None
    """Solve the parts on the Ray cluster at this address (`solver.partition.ray_pool`;
    "local": one started in this process) instead of in processes of this machine."""

    def __post_init__(self) -> None:
        if sorted(self.objective_order) != sorted(TIERS):
            raise ValueError(f"objective_order {self.objective_order}: a permutation of {', '.join(TIERS)}")
        if self.safety_net_s is not None and not self.safety_net_s > 0:
            raise ValueError(f"safety_net_s {self.safety_net_s}: a positive number of seconds")
        if self.memory_limit_bytes is not None and self.memory_limit_bytes < MIN_MEMORY_LIMIT_BYTES:
            raise ValueError(f"memory_limit_bytes {self.memory_limit_bytes}: at least {MIN_MEMORY_LIMIT_BYTES} (64 MiB)")
        if self.partition_parts < 1:
            raise ValueError(f"partition_parts {self.partition_parts}: at least 1 (1: the whole cycle at once)")
        if self.partition_workers is not None and self.partition_workers < 1:
            raise ValueError(f"partition_workers {self.partition_workers}: at least 1, or None")

    def cpsat(self, search_s: float | None = None) -> CpsatConfig:
        """The CP-SAT engine's configuration; `search_s`: its deterministic budget (`_Budget`)."""
        return CpsatConfig(
            workers=self.workers,
            search_s=search_s,
            relative_gap_limit=self.relative_gap_limit,
            merge_tiers=self.merge_tiers,
            objective_order=self.objective_order,
            presolve=self.presolve,
            limits=DataLimits(
                max_patterns_per_profile=self.max_patterns_per_profile,
                max_patterns=self.max_patterns,
                max_domains_per_gang=self.max_domains_per_gang,
                max_options_per_node=self.max_options_per_node,
                max_topology_patterns=self.max_topology_patterns,
                max_victim_options=self.max_victim_options,
                candidate_nodes_per_pod=self.candidate_nodes_per_pod,
            ),
            log_search=self.log_search,
        )


MIN_MEMORY_LIMIT_BYTES = 64 << 20
"""Below this CP-SAT cannot even start its workers (their stacks and arenas alone)."""
AFTER_SECONDS_PER_ITEM = 3.5e-5
"""Extraction, scoring, the checker and the Decision after CP-SAT, per node + pod, on a
quiet machine (set from the times measured at 1,000 and 10,000 nodes: docs/results.md,
"`place()`'s time estimates")."""
LP_SECONDS_PER_ITEM = 2e-5
"""The LP bound, per node + pod (set from the times measured at 1,000 and 10,000 nodes:
docs/results.md, "`place()`'s time estimates"; the objective context it reads is
memoized)."""
SAFETY_SHARE = 0.05
"""Kept back on top of the measured estimates, which are means (at 1 s: 50 ms). CP-SAT's
own overshoot past its limit is kept inside each search's share by the engine
(`solver.cpsat.clock.SEARCH_OVERSHOOT`)."""
LP_SHARE = 0.15
"""With `lp_gap=None`, the LP bound's time is kept back from CP-SAT only when it is at most
this share of the time limit; past it the bound is computed only if CP-SAT leaves time
(with `deterministic`, never: whether it does is the clock's)."""
GREEDY_SECONDS_PER_ITEM = 2e-6
GREEDY_SECONDS_PER_POD_NODE = 3e-8
"""Greedy's expected CPU time, per node + pod and per pending pod × node (it scores nodes for
each pending pod), for the deterministic budget: set from greedy's CPU time measured from
1,000 to 10,000 nodes and 50 to 5,000 pending pods (docs/results.md, "`place()`'s time
estimates")."""
DRA_SECONDS_PER_DEVICE = 2.5e-5
DRA_SECONDS_PER_CLAIM_POD = 1.2e-4
DRA_AFTER_SECONDS_PER_CLAIM_POD = 1.5e-4
DRA_MODEL_SECONDS_PER_CLAIM_POD = 1.1e-3
"""Rule `dra`'s work, for the deterministic budget: per DRA device (which nodes reach it, its
class, its node's signature) and per pod naming claims (its claims resolved, greedy's
allocation as it binds) before CP-SAT; per pending pod naming claims, CP-SAT's node
patterns asking the allocator (`solver.cpsat.dra`), before its search; per pending pod
naming claims after it (CP-SAT's placement allocated, the reasons' state). Set from CPU
times measured at 1,000 nodes × 8 devices and 1,000 pending pods (docs/results.md, "DRA
devices")."""
PARTITION_START_S = 0.5
PARTITION_SECONDS_PER_ITEM = 7e-5
"""What the partitioned solve's steps around the parts take, per call and per node + pod of
the whole (cutting, pickling and starting the workers, merging, the repair's checker, the
Decision), kept back from the parts' time (`_part_config`)."""
PARTITION_MIN_PART_S = 0.5
"""A part's time limit is never below this, however little the whole's steps leave."""
PARTITIONED_ENGINE = "cpsat-partitioned"
SAFETY_NET_FACTOR = 10.0
"""With `deterministic`, the wall-clock limit of the call (`SolveConfig.safety_net_s`), in
time limits: the deterministic budget is meant to end near `time_limit_s` on an idle core
(within about 2×: `solver.cpsat.clock.DETERMINISTIC_TIME_PER_S`), so the net fires only
when the call gets less than about a fifth of a core, as a search may on a heavily shared
machine (what one got on 2 cores shared with other test suites: docs/results.md,
"`place()`'s time estimates")."""


@dataclass(frozen=True)
class _Budget:
    """How `place()` splits its time limit.

    Deterministic (the default): from estimates of the input alone, as if the machine were
    idle (`slowness` 1, greedy's time from `GREEDY_SECONDS_PER_*`): `search_s` is what the
    time limit leaves CP-SAT after greedy, the reserve for after it and the LP bound when
    its time is kept back; `deadline` is the safety net (`SAFETY_NET_FACTOR`).

    By the wall clock: from what this call has measured so far. `slowness` is wall time
    over this thread's CPU time while the problem was built and greedy ran (≥ 1): on a
    machine busy with other work the thread waits for a core, and every later step waits
    alike, so the time kept back for after CP-SAT (extraction, checker, Decision; the LP
    bound) grows with it and the call still returns inside the limit. (Not greedy's wall
    time against a yardstick: a slower greedy scoring would read as a busy machine.)
    Example, 1,000 nodes / 1,637 pods, 1 s: greedy took 0.3 s of wall time and 0.18 s of
    CPU → slowness 1.7 → reserve 0.05 + 1.7 × 0.14 = 0.29 s, LP 1.7 × 0.053 = 0.09 s
    (≤ 15 % of 1 s: kept back from CP-SAT, so the bound is computed)."""

    items: int
    slowness: float
    reserve_s: float
    lp_s: float
    lp_reserved: bool
    deadline: float
    """`time.perf_counter()` seconds: the call's wall-clock limit (the safety net when deterministic)."""
    search_s: float | None
    """Deterministic: CP-SAT's budget in nominal seconds; None by the wall clock."""

    @staticmethod
    def measure(snapshot: Snapshot, config: SolveConfig, started: float, greedy_s: float, greedy_cpu_s: float) -> _Budget:
        items = len(snapshot.nodes) + len(snapshot.pods)
        slowness = 1.0 if config.deterministic else max(1.0, greedy_s / max(greedy_cpu_s, 1e-3))
        claim_pods = [pod for pod in snapshot.pods if pod.resource_claims] if dra.has_claims(snapshot) else []
        pending_claim_pods = sum(1 for pod in claim_pods if pod.phase == "pending")
        dra_after_s = DRA_AFTER_SECONDS_PER_CLAIM_POD * pending_claim_pods
        reserve_s = SAFETY_SHARE * config.time_limit_s + slowness * (0.05 + AFTER_SECONDS_PER_ITEM * items + dra_after_s)
        lp_s = slowness * LP_SECONDS_PER_ITEM * items
        lp_reserved = _lp_reserved(config, lp_s)
        search_s = None
        if config.deterministic:
            pending = sum(1 for pod in snapshot.pods if pod.phase == "pending")
            greedy_estimate = GREEDY_SECONDS_PER_ITEM * items + GREEDY_SECONDS_PER_POD_NODE * pending * len(snapshot.nodes)
            devices = sum(len(resource_slice.devices) for resource_slice in snapshot.dra.resource_slices) if claim_pods else 0
            greedy_estimate += DRA_SECONDS_PER_DEVICE * devices + DRA_SECONDS_PER_CLAIM_POD * len(claim_pods)
            greedy_estimate += DRA_MODEL_SECONDS_PER_CLAIM_POD * pending_claim_pods
            search_s = config.time_limit_s - greedy_estimate - reserve_s - (lp_s if lp_reserved else 0.0)
        return _Budget(items, slowness, reserve_s, lp_s, lp_reserved, _call_deadline(config, started), search_s)

    @property
    def search_end(self) -> float:
        """When the search must end by the wall clock (the safety net's share when deterministic)."""
        return self.deadline - self.reserve_s - (self.lp_s if self.lp_reserved else 0.0)

    def no_time(self) -> bool:
        """Too little left for CP-SAT to start?"""
        left = self.search_end - time.perf_counter() if self.search_s is None else self.search_s
        return left <= 0.01

    def lp_fits(self, config: SolveConfig, *, after_s: float = 0.0) -> bool:
        """Compute the LP bound now? When its time was kept back, unless the call is already
        late (less than half its estimate left: greedy alone overran); with `lp_gap=None`,
        also when the time left still holds it and `after_s` more. Deterministic: when its
        time was kept back."""
        if config.lp_gap is False:
            return False
        if self.search_s is not None:
            return self.lp_reserved
        left = self.deadline - time.perf_counter()
        if self.lp_reserved:
            return left > 0.5 * self.lp_s
        return left > self.lp_s + after_s


_collector_lock = threading.Lock()
_calls_in_flight = 0
_saved_threshold: tuple[int, int, int] | None = None


@contextmanager
def _full_collections_deferred() -> Iterator[None]:
    """Hold off Python's full (generation 2) garbage collections while `place()` runs.

    A snapshot of 10,000 nodes is a few hundred thousand long-lived objects, and every
    full collection walks all of them, several times per `place()` at 10,000 nodes — a
    sizeable part of the call (docs/results.md, "`place()`'s time estimates"). Young collections
    keep running, so short-lived cycles are still freed; the deferred full collection
    happens after the call, when the thresholds are restored. Counted across threads
    (the HTTP service solves in a pool): the last call to finish restores them."""
    global _calls_in_flight, _saved_threshold
    with _collector_lock:
        if _calls_in_flight == 0:
            _saved_threshold = gc.get_threshold()
            young, middle, _ = _saved_threshold
            gc.set_threshold(young, middle, 1 << 30)
        _calls_in_flight += 1
    try:
        yield
    finally:
        with _collector_lock:
            _calls_in_flight -= 1
            if _calls_in_flight == 0 and _saved_threshold is not None:
                gc.set_threshold(*_saved_threshold)
                _saved_threshold = None


def place(snapshot: Snapshot, config: SolveConfig = SolveConfig(), *, engines: Engines = DEFAULT_ENGINES) -> Decision:
    """Solve one cycle with the configured engine and return a checked `Decision`.
    `engines`: the searches to run (`solver.engines`), the product's by default."""
    with _full_collections_deferred():
        return _place(snapshot, config, engines)


def _place(snapshot: Snapshot, config: SolveConfig, engines: Engines) -> Decision:
    started, cpu_started = time.perf_counter(), time.thread_time()
    parts = _partition_parts(snapshot, config)
    if parts > 1:
        # The parts are cut from the snapshot as given: each part's `place()` counts its own.
        snapshot, problem, decision = _place_partitioned(snapshot, config, engines, parts=parts, started=started)
    else:
        snapshot = counted(snapshot)  # as the rules' columns count it: offline pods ask batch-cpu/-memory (solver.rules.counted)
        problem = build_problem(snapshot)
        decision = _decide(snapshot, problem, config, engines, started=started, cpu_started=cpu_started)
    deadline = _call_deadline(config, started)
    explained = with_unplaced_pods(snapshot, problem, decision, deadline=deadline)
    if explained.reproducible and config.deterministic and time.perf_counter() > deadline:
        # past the safety net some started gangs' pods may have got the generic reason
        return explained.model_copy(update={"reproducible": False})
    return explained


def _call_deadline(config: SolveConfig, started: float) -> float:
    """`time.perf_counter()` seconds by which the call ends: the time limit by the wall clock,
    or the safety net when deterministic (`SAFETY_NET_FACTOR`)."""
    if not config.deterministic:
        return started + config.time_limit_s
    return started + (config.safety_net_s if config.safety_net_s is not None else SAFETY_NET_FACTOR * config.time_limit_s)


def _decide(
    snapshot: Snapshot, problem: Problem, config: SolveConfig, engines: Engines, *, started: float, cpu_started: float
) -> Decision:
    """The engine's checked `Decision` (module docstring), before its started gangs' unplaced pods are explained."""
    greedy = engines.greedy(
        snapshot, problem=problem, config=GreedyConfig(packing=config.packing, typical_shapes=config.typical_shapes)
    )
    if config.engine == "greedy":
        return _checked_greedy(snapshot, greedy)
    budget = _Budget.measure(snapshot, config, started, time.perf_counter() - started, time.thread_time() - cpu_started)
    deadline = budget.deadline
    greedy_reasons = {o.name: o.reasons for o in greedy.podgroups}

    cut = False  # the safety net cut CP-SAT's search
    beside: _BoundBeside | None = None  # the LP bound computed while the search runs

    def relaxed_bound() -> int | None:
        """The LP bound: the one computed beside the search when it ran there, else now."""
        if beside is not None and beside.ran:
            return beside.bound()
        return _relaxed_bound(snapshot, problem, deadline)

    def fallback(cause: FallbackCause, why: str) -> Decision:
        log.info("cpsat: returning the greedy placement (%s)", why, extra={"fallback_cause": cause})
        checked = _checked_greedy(snapshot, greedy)
        objective = bound = None
        # No time for CP-SAT is no time for the LP bound either: the estimates already
        # spent the limit (a 1,000-node DRA cycle at 1 s: greedy's allocation leaves none).
        if cause != "no_time" and budget.lp_fits(config, after_s=budget.reserve_s):
            objective = score(snapshot, checked.placement).throughput
            bound = relaxed_bound()
        decision = _as_fallback(checked, started, objective, bound=bound)
        reproducible = config.deterministic and cause != "timeout" and not cut  # past the safety net, or by the wall clock
        return decision.model_copy(update={"fallback": Fallback(cause=cause, reason=why), "reproducible": reproducible})

    if budget.no_time():
        return fallback("no_time", "no time left after greedy")
    context = ObjectiveContext.of(snapshot, config.typical_shapes)
    search = engines.model_search()
    # Deterministic, whether the bound is wanted is known now: it is computed while the search
    # runs, and by the search's own end, so the child is never killed for the time it took.
    beside = _BoundBeside(snapshot, problem, budget.search_end) if budget.search_s is not None and budget.lp_fits(config) else None
    result = search_or_failure(
        lambda: search(
            snapshot,
            problem=problem,
            context=context,
            config=config.cpsat(budget.search_s),
            deadline=budget.search_end,
            hint=greedy.placement,
        ),
        deadline=budget.search_end,
        memory_limit_bytes=config.memory_limit_bytes,
        raise_errors=config.engine == "cpsat",
        what="cpsat",
        meanwhile=beside,
    )
    cut = not isinstance(result, SearchFailed) and result.wall_clock_cut  # read by `fallback`
    if isinstance(result, SearchFailed):
        return fallback(result.cause, result.reason)
    if result.placement is None or result.objective is None:
        return fallback("no_solution", "CP-SAT found no solution in time")
    result = _with_claims(snapshot, result)
    # Never worse than greedy; as good → CP-SAT's (it comes with a bound). The model's tiers
    # are exact for its placement, and its value of the greedy placement is at least
    # `score(greedy)`; without it, score both.
    mine, theirs = result.objective, result.hint_objective
    if theirs is None:
        mine, theirs = score(snapshot, result.placement, context=context), score(snapshot, greedy.placement, context=context)
    if mine.ranked(config.objective_order) < theirs.ranked(config.objective_order):
        return fallback("greedy_better", f"greedy scores better ({theirs} > {mine})")
    violations = check_placement(snapshot, result.placement)
    if violations:
        if config.engine == "cpsat":
            raise PlacementRejected(violations)
        log.error("cpsat: placement rejected by the checker:\n%s", PlacementRejected(violations))
        return fallback("rejected", "CP-SAT's placement broke a hard rule")
    bound = result.throughput_bound
    if result.status != "OPTIMAL" and budget.lp_fits(config, after_s=0.3 * budget.reserve_s):
        relaxed = relaxed_bound()
        if relaxed is not None:
            bound = relaxed if bound is None else min(bound, relaxed)
    left_pending = pending_groups(snapshot, result.placement)
    cpsat_reasons = pending_reasons(
        snapshot, problem, result.placement, left_pending, status=result.status, deadline=deadline, otherwise=greedy_reasons
    )
    decision = _decision(
        snapshot, result.placement, "cpsat", result.status, started, cpsat_reasons, result.objective.throughput, bound=bound
    )
    # The reasons stop at `deadline` too: past it, some are greedy's (`pending_reasons`).
    reproducible = config.deterministic and not result.wall_clock_cut and time.perf_counter() <= deadline
    if not reproducible and config.deterministic:
        log.warning("cpsat: the wall-clock safety net (%.1f s) cut this answer short: it may differ from run to run", deadline - started)
    return decision.model_copy(update={"reproducible": reproducible})


def _partition_parts(given: Snapshot, config: SolveConfig) -> int:
    """How many parts to solve the cycle in (`SolveConfig.partition_parts`); 1: whole."""
    if config.engine == "greedy" or dra.has_claims(given):
        return 1
    return config.partition_parts


def _part_config(config: SolveConfig, items: int, parts: int, pool: PartPool) -> SolveConfig:
    """What each part's `place()` is given: the time limit less what the whole's steps around
    the parts take (`PARTITION_SECONDS_PER_ITEM`: cutting, starting the workers, the merge,
    the repair and its checker, the Decision), times `pool.at_a_time(parts) / parts` — the
    parts run that many at a time. The share depends on the worker count: the same input
    gives the same answer with as many workers, here or on Ray."""
    share = pool.at_a_time(parts) / parts
    whole_s = PARTITION_START_S + PARTITION_SECONDS_PER_ITEM * items
    time_limit_s = max(PARTITION_MIN_PART_S, config.time_limit_s - whole_s) * share
    return replace(
        config,
        time_limit_s=time_limit_s,
        safety_net_s=None if config.safety_net_s is None else config.safety_net_s * share,
        partition_parts=1,
    )


def _lp_reserved(config: SolveConfig, lp_s: float) -> bool:
    """Keep the LP bound's time (`lp_s`, estimated) back from the search? `lp_gap` True, or
    None and the estimate within `LP_SHARE` of the time limit. Read by the whole's budget
    (`_Budget.measure`) and by the partitioned solve, which computes the bound beside its
    parts."""
    return config.lp_gap if config.lp_gap is not None else lp_s <= LP_SHARE * config.time_limit_s


@dataclass(frozen=True)
class _Whole:
    """What the partitioned solve builds of the whole snapshot while its parts solve."""

    snapshot: Snapshot
    problem: Problem
    context: ObjectiveContext
    bound: int | None


def _place_partitioned(
    given: Snapshot, config: SolveConfig, engines: Engines, *, parts: int, started: float
) -> tuple[Snapshot, Problem, Decision]:
    """The partitioned solve's `Decision` (`solver.partition`), with the counted snapshot and
    problem it was judged on. Each part is solved by `place()` (its own greedy, CP-SAT from
    it, the better of the two) with `_part_config`'s time; while they run, this process
    builds the whole's problem and the LP bound. The merge is repaired, then filled
    (`solver.partition.fill`: greedy places, after it, the pending pods the whole still has
    room for — a part may have had none left for a PodGroup another part could take), and
    judged on the whole snapshot: FEASIBLE (a restriction of the whole), with the LP bound's
    gap. Engine "cpsat-partitioned", so whoever reads the answer knows the parts were
    searched apart.

    No greedy over the whole cycle first: parts are for cycles too large for the whole,
    where greedy alone spends most of the limit (it scores every node for every pending
    pod); the fill scores nodes only for what the parts left pending. So the answer is
    never worse than greedy part by part (each part's `place()` keeps the better of its
    CP-SAT and its greedy answer), not against greedy on the whole. FALLBACK when no part
    found a CP-SAT answer (the parts' greedy answers, merged: engine "greedy"), and when the
    repair could not make the merge pass the checker (greedy on the whole, then)."""
    greedy_config = GreedyConfig(packing=config.packing, typical_shapes=config.typical_shapes)
    deadline = _call_deadline(config, started)
    built: list[_Whole] = []

    def meanwhile() -> None:
        snapshot = counted(given)
        problem = build_problem(snapshot)
        packing_measure(snapshot, config.typical_shapes, problem=problem)  # kept for the context: one problem built, not two
        context = ObjectiveContext.of(snapshot, config.typical_shapes)
        lp_s = LP_SECONDS_PER_ITEM * (len(snapshot.nodes) + len(snapshot.pods))
        bound = _relaxed_bound(snapshot, problem, deadline) if _lp_reserved(config, lp_s) else None
        built.append(_Whole(snapshot, problem, context, bound))

    def rescue(part: Snapshot) -> Placement:
        part = counted(part)
        return engines.greedy(part, problem=build_problem(part), config=greedy_config).placement

    pool = PartPool.of(config.partition_workers, config.ray_address)
    part_config = replace(_part_config(config, len(given.nodes) + len(given.pods), parts, pool), ray_address=None)
    solve = partial(place, config=part_config, engines=engines)
    solved = solve_partitioned(
        given, parts=parts, solve=solve, rescue=rescue, deadline=deadline, pool=pool, meanwhile=meanwhile
    )
    (whole,) = built
    snapshot, problem = whole.snapshot, whole.problem
    log.info(
        "partition: %d parts, %d with CP-SAT's own answer, %d gang(s) dropped by the repair",
        len(solved.parts), solved.own_answers, len(solved.dropped),
    )  # fmt: skip
    if solved.violations:
        log.error("partition: the repaired placement is still rejected:\n%s", PlacementRejected(solved.violations))
        greedy = _checked_greedy(snapshot, engines.greedy(snapshot, problem=problem, config=greedy_config))
        decision = _as_fallback(greedy, started, None)
        why = Fallback(cause="rejected", reason="the partitioned placement broke a hard rule after its repair")
        return snapshot, problem, decision.model_copy(update={"fallback": why, "reproducible": False})
    placement = fill(snapshot, problem, solved.placement, greedy_config)
    if len(placement.binds) > len(solved.placement.binds):
        log.info("partition: %d more pod(s) placed where the parts had left room", len(placement.binds) - len(solved.placement.binds))
    objective = score(snapshot, placement, context=whole.context).throughput
    bound = whole.bound
    reasons = pending_reasons(
        snapshot, problem, placement, pending_groups(snapshot, placement), status="FEASIBLE",
        deadline=deadline, otherwise=solved.reasons,
    )  # fmt: skip
    reproducible = config.deterministic and solved.reproducible
    if solved.own_answers == 0:
        decision = _decision(snapshot, placement, "greedy", "FALLBACK", started, reasons, objective, bound=bound)
        why = Fallback(cause="no_solution", reason=f"none of the {len(solved.parts)} parts found a CP-SAT answer in time")
        return snapshot, problem, decision.model_copy(update={"fallback": why, "reproducible": reproducible})
    decision = _decision(snapshot, placement, PARTITIONED_ENGINE, "FEASIBLE", started, reasons, objective, bound=bound)
    reproducible = reproducible and time.perf_counter() <= deadline
    return snapshot, problem, decision.model_copy(update={"reproducible": reproducible})


def _with_claims(snapshot: Snapshot, result: CpsatResult) -> CpsatResult:
    """CP-SAT's placement with its DRA claims allocated (rule `dra`): the model counts devices
    per class and keeps tasks off nodes their claims cannot use, and this step chooses the
    devices. A pod whose claims then find none (a `matchAttribute` or counter the counts
    do not see) is left pending with its gang; the answer is then scored again, with no
    exact tiers of its own, and compared with greedy's as any other."""
    assert result.placement is not None
    if not dra.has_claims(snapshot):
        return result
    placement, dropped = dra.allocate_placement(snapshot, result.placement)
    if not dropped:
        # The model counted stranded devices as its patterns allocate them; the placement's
        # own devices are the ones scored (and compared with greedy's).
        return replace(result, placement=placement, objective=score(snapshot, placement), hint_objective=None)
    log.info("cpsat: %d bind(s) left pending: their DRA claims found no devices", len(dropped))
    return replace(result, placement=placement, status="FEASIBLE", objective=score(snapshot, placement), hint_objective=None)


class _BoundBeside:
    """The LP bound, computed in this process while the search runs in its child
    (`run_isolated`'s `meanwhile`): the same bound `_relaxed_bound` gives after it, without
    the wait — on two cores this process is otherwise idle then. An exception it raises is
    raised where the bound is read, as it would have been there, not taken for the search's."""

    def __init__(self, snapshot: Snapshot, problem: Problem, deadline: float):
        self._args = (snapshot, problem, deadline)
        self._bound: int | None = None
        self._error: Exception | None = None
        self.ran = False  # False: the fork failed before it

    def __call__(self) -> None:
        self.ran = True
        try:
            self._bound = _relaxed_bound(*self._args)
        except Exception as error:  # noqa: BLE001 — raised again where it is read
            self._error = error

    def bound(self) -> int | None:
        if self._error is not None:
            raise self._error
        return self._bound


def _relaxed_bound(snapshot: Snapshot, problem: Problem, deadline: float) -> int | None:
    try:
        return int(lp_bound(snapshot, problem=problem, backend="scipy", time_limit_s=max(0.05, deadline - time.perf_counter())))
    except RuntimeError:
        log.warning("place: the LP bound did not solve in time")
        return None


def _checked_greedy(snapshot: Snapshot, greedy: Decision) -> Decision:
    violations = check_placement(snapshot, greedy.placement)
    if violations:
        raise PlacementRejected(violations)
    return greedy


def _as_fallback(greedy: Decision, started: float, objective: int | None, *, bound: int | None = None) -> Decision:
    """Greedy's own `Decision` answered as FALLBACK: its outcomes and reasons as greedy built
    them for this snapshot and placement — not built again from its reasons, which already
    carry what the build adds (a reservation's sentence would be prefixed twice) and at
    10,000 nodes cost a pass over every PodGroup."""
    return greedy.model_copy(
        update={
            "engine": "greedy",
            "status": "FALLBACK",
            "solve_seconds": time.perf_counter() - started,
            "objective": None if objective is None else float(objective),
            "bound": None if bound is None else float(bound),
            "gap": _gap(objective, bound),
        }
    )


def _gap(objective: int | None, bound: int | None) -> float | None:
    """(bound − objective) / bound, when both are known."""
    if bound is None or objective is None:
        return None
    return max(0.0, (bound - objective) / max(1, abs(bound)))


def _decision(
    snapshot: Snapshot,
    placement: Placement,
    engine: str,
    status: str,
    started: float,
    reasons: dict[PodGroupKey, tuple[str, ...]],
    objective: int | None,
    *,
    bound: int | None = None,
) -> Decision:
    return build_decision(
        snapshot,
        placement,
        engine=engine,
        status=status,  # type: ignore[arg-type]
        solve_seconds=time.perf_counter() - started,
        reasons=reasons,
        objective=None if objective is None else float(objective),
        bound=None if bound is None else float(bound),
        gap=_gap(objective, bound),
    )
