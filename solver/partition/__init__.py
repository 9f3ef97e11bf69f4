"""The partitioned solve: one cycle too large for one CP-SAT model, cut into parts solved side
by side, merged and repaired into one placement of the whole.

Why: past some size the whole model does not fit the time limit — at 30,000 nodes × 5,000
pending pods greedy's estimated time alone passes a 5 s limit, and `auto` answered with
greedy's placement (FALLBACK) — while a part of the cluster builds and searches
within its share (POP, "partition the problem into sub-problems solved in parallel").

The steps, one module each:
  1. `split`: nodes along the topology (whole HyperNodes of one tier, balanced by capacity),
     each pending PodGroup into exactly one part, each queue's demand spread over the
     parts in proportion to their room;
  2. `pool`: each part solved by the caller's solve (`solver.place.place` with the part's
     share of the time) in spawned processes, or on a Ray cluster (`ray_pool`); a part
     that fails answers with greedy's placement of it;
  3. `merge`: the union of the parts' placements;
  4. `repair`: whole gangs dropped until quota holds over the whole cluster and the checker
     accepts the placement on the whole snapshot.

`solver.place` decides when to partition and what to answer (the better of this and
greedy's, the LP bound). This package runs solver code only and imports no engine: the
solve it runs is the caller's.

Input: the whole snapshot, the part count, the solve, the rescue and a deadline. Output: a
`Partitioned`: the repaired placement and what happened on the way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from models.placement import Decision, Placement
from models.reason import Reason
from models.snapshot import PodGroupKey, Snapshot
from solver.partition.merge import merge_placements
from solver.partition.answer import PartAnswer
from solver.partition.pool import PartPool, solve_parts
from solver.partition.repair import repair
from solver.partition.split import Part, split_snapshot
from solver.violation import Violation

__all__ = ["Partitioned", "solve_partitioned", "split_snapshot", "Part", "PartAnswer", "PartPool"]

OWN_ANSWER_STATUSES = ("OPTIMAL", "FEASIBLE")
"""A part's answer is CP-SAT's own with these statuses (not greedy's, FALLBACK)."""


@dataclass(frozen=True)
class Partitioned:
    placement: Placement
    """The merged placement, repaired: valid on the whole snapshot when `violations` is empty."""
    parts: tuple[Part, ...]
    answers: tuple[PartAnswer, ...]
    """One per part, in part order."""
    dropped: tuple[PodGroupKey, ...]
    """Gangs the repair took out of the merge."""
    violations: tuple[Violation, ...]
    """What the checker still rejects after the repair (then the answer is not used)."""

    @property
    def own_answers(self) -> int:
        """Parts answered with CP-SAT's own placement."""
        return sum(answer.status in OWN_ANSWER_STATUSES for answer in self.answers)

    @property
    def reproducible(self) -> bool:
        return all(answer.reproducible for answer in self.answers)

    @property
    def reasons(self) -> dict[PodGroupKey, tuple[Reason, ...]]:
        """What each part said of the PodGroups it left pending, judged in that part."""
        return {key: reasons for answer in self.answers for key, reasons in answer.reasons.items()}


def solve_partitioned(
    snapshot: Snapshot,
    *,
    parts: int,
    solve: Callable[[Snapshot], Decision],
    rescue: Callable[[Snapshot], Placement],
    deadline: float,
    pool: PartPool,
    meanwhile: Callable[[], None] = lambda: None,
) -> Partitioned:
    """Split `snapshot` into (at most) `parts` parts, solve each with `solve` (`rescue` when it
    fails), merge and repair (module docstring). `solve` must pickle (a module-level function,
    or a `functools.partial` of one); `deadline` is `time.perf_counter()` seconds;
    `meanwhile` runs in this process while the parts solve."""
    split = split_snapshot(snapshot, parts=parts)
    answers = solve_parts(
        [part.snapshot for part in split], solve=solve, rescue=rescue, deadline=deadline, pool=pool, meanwhile=meanwhile
    )
    repaired = repair(snapshot, merge_placements([answer.placement for answer in answers]))
    return Partitioned(repaired.placement, split, answers, repaired.dropped, repaired.violations)
