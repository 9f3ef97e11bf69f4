"""The CP-SAT engine's units: the PodGroups that may get binds this cycle, as the data step
(`solver.cpsat.data`) builds them and its topology and victim steps read them, and the
caps that keep the model within budget.

A *unit* is one PodGroup that may bind; its *tasks* carry the Problem task row, the pod
shape they share in the model, their pending pods, the running count and the gang minimum
(`solver.rules.gang.gang_requirement`'s). Kept apart from the steps so that each step reads
the units without importing the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models.snapshot import PodGroup

__all__ = ["DataLimits", "UnitTask", "Unit", "MIN_PATTERNS_PER_PROFILE"]

MIN_PATTERNS_PER_PROFILE = 8
"""The least a profile's walk is cut at under `DataLimits.max_patterns`."""


@dataclass(frozen=True)
class DataLimits:
    """The caps that keep the model within budget; past each, a sound restriction."""

    max_patterns_per_profile: int = 200
    max_patterns: int = 8000
    """Node patterns walked in all, shared among the profiles by water-filling
    (`cpsat.data._pattern_sets`): walks that fit their share keep every pattern, the others
    are cut at an even share of what is left (at least `MIN_PATTERNS_PER_PROFILE`), their
    fill patterns sparse. Why: the walk stops at its cap on most profiles, so its cost
    and the model's variables grow with the profile count — on the `mixed` bench family
    (three node kinds, CPU-only pods, scattered running pods: ~200 profiles at 1,000 nodes)
    40,000 patterns whose data step alone outlasted a 1 s limit (docs/results.md, "A second
    bench family"). The standard family's 1,000-node snapshots (~40 profiles) stay under it."""
    max_domains_per_gang: int = 8
    max_options_per_node: int = 16
    max_topology_patterns: int = 2000
    """Pattern variables for topology atoms in all; beyond it, topology nodes host only
    topology-tracked pods (a restriction)."""
    max_victim_options: int = 3000
    """Eviction options in all; beyond it only the most useful node groups keep victims."""
    candidate_nodes_per_pod: int = 1
    """With more than `cpsat.neighbourhood.NODES_PER_POD_KEPT_WHOLE` nodes per pending pod,
    pending pods go only to the hint's nodes and the best-fitting this-many per pod of each
    shape (`cpsat.neighbourhood`); 0: all.
    1: on the FGD protocol (openb default, k = 16, 1 s) the tighter the neighbourhood, the
    more GPU allocated at 130 % and the faster each batch, from 16 per pod down to 1: a
    batch's optimum over every node spends the tight spots a later batch needs (measured:
    docs/results.md, "A tighter neighbourhood")."""


    def patterns_per_profile(self, profiles: int) -> int:
        """The even share of `max_patterns` among `profiles` profiles, within
        [`MIN_PATTERNS_PER_PROFILE`, `max_patterns_per_profile`]: e.g. 200 for 38 profiles,
        40 for 196."""
        share = self.max_patterns // max(1, profiles)
        return max(MIN_PATTERNS_PER_PROFILE, min(self.max_patterns_per_profile, share))


@dataclass
class UnitTask:
    row: int  # Problem task row
    name: str
    unit: int
    shape: int
    pending: list[int]  # pod indices, snapshot order
    running: int
    minimum: int  # gang_requirement's: 0 when the PodGroup's task minimums do not apply
    single_numa: bool
    value: int  # throughput of one pod (weight included)


@dataclass
class Unit:
    """A PodGroup that may get binds this cycle."""

    index: int  # position in `ModelData.units`
    group_index: int  # Problem PodGroup index
    group: PodGroup
    queue: int  # Problem queue index
    tasks: list[UnitTask]
    running: int  # running pods of the PodGroup (all tasks)
    min_member: int  # gang_requirement's
    preemptor_class: int
    hard_limit: int | None
    soft: bool
    anchors: list[int]  # nodes of its running pods
    tracked: bool  # topology matters: soft, or hard with more than one pod in all
    domains: list[str] = field(default_factory=list)  # hard: candidate domains (HyperNode or "node:<name>")
    atoms: list[str] = field(default_factory=list)  # candidate atoms of its pods (topology units)
