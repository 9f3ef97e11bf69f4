"""A part's answer in the partitioned solve: its own `Decision` cut down to what the merge
needs, or, when its solve failed, the rescue's placement and why.

Input: a part's `Decision`, or why it has none (the error its solve raised, or the
deadline) with the part and the rescue.
Output: a `PartAnswer`. One module for both pools (`pool`, `ray_pool`), so a part's
answer reads the same wherever it ran.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from models.placement import Decision, Placement
from models.reason import Reason
from models.snapshot import PodGroupKey, Snapshot

__all__ = ["PartAnswer", "answer_of", "failed_answer", "timed_out_answer"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PartAnswer:
    placement: Placement
    status: str
    """The part's `Decision.status`; "FALLBACK" too when the part failed here."""
    reproducible: bool
    failure: str | None = None
    """Why the part answered with `rescue`'s placement (raised, died, timed out); None: its own."""
    reasons: Mapping[PodGroupKey, tuple[Reason, ...]] = field(default_factory=dict)
    """The part's reasons for the PodGroups it left pending (none when it failed)."""


def answer_of(decision: Decision) -> PartAnswer:
    """A part's own answer: its placement, status and reasons."""
    reasons = {outcome.name: tuple(outcome.reasons) for outcome in decision.podgroups if outcome.reasons}
    return PartAnswer(decision.placement, decision.status, decision.reproducible, reasons=reasons)


def failed_answer(error: BaseException, part: Snapshot, rescue: Callable[[Snapshot], Placement]) -> PartAnswer:
    """The answer of a part whose solve raised or whose worker died: `rescue`'s, logged."""
    log.error("partition: a part's solve failed (%s: %s); greedy's placement of it instead", type(error).__name__, error)
    return PartAnswer(rescue(part), "FALLBACK", True, f"{type(error).__name__}: {error}")


def timed_out_answer(index: int, part: Snapshot, rescue: Callable[[Snapshot], Placement]) -> PartAnswer:
    """The answer of part `index` that did not answer by the deadline: `rescue`'s, logged."""
    log.error("partition: part %d did not answer in time; greedy's placement of it instead", index)
    return PartAnswer(rescue(part), "FALLBACK", False, "timeout")
