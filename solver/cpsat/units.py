"""The CP-SAT engine's units: the PodGroups that may get binds this cycle, as the data step
(`solver.cpsat.data`) builds them and its topology and victim steps read them, and the
caps that keep the model within budget.

A *unit* is one PodGroup that may bind; its *tasks* carry the Problem task row, the pod
shape they share in the model, their pending pods, the running count and the gang minimum
(`solver.rules.gang.gang_requirement`'s). Kept apart from the steps so that each step reads
the units without importing the others.

A PodGroup with sub-groups (`SubGroup`, gangs inside the gang) stays ONE unit — the job —
and each of its tasks becomes one unit task per sub-group its pending pods are in (plus
one for its pods in no sub-group): pods of one task in two sub-groups are no longer
interchangeable (each sub-group has its own minimum and domain). The unit's
`sub_groups` (`UnitSubGroup`) carry each sub-group's minimum, running pods and candidate
domains; the constraint step links them to the job (`cpsat.constraints._sub_groups`).
Why one unit per job rather than one per sub-group: every per-PodGroup term — the job's
admission, its min_member over all its pods, its own hard domain, its queue's quota and
fairness, the objective's throughput weight, first-come order, whether a PodGroup that
loses pods may bind — is then counted once per job, exactly as the checker and `score`
count it, with no bookkeeping to keep a sub-group from counting as a job of its own.
Pods in no sub-group are tasks of the job alone: they count toward its min_member and its
domain, never toward a sub-group's minimum (as `solver.rules.gang` says).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models.snapshot import PodGroup, SubGroup

__all__ = [
    "DataLimits",
    "UnitTask",
    "UnitSubGroup",
    "Unit",
    "MIN_PATTERNS_PER_PROFILE",
    "task_atoms",
    "task_in_hard_sub_group",
]

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
    tracked: bool = False  # topology matters for its pods: its job's (`Unit.tracked` without sub-groups) or its sub-group's
    sub_group: int | None = None  # position in `Unit.sub_groups`; None: its pods are in no sub-group


@dataclass
class UnitSubGroup:
    """A sub-group of a unit's PodGroup with pending pods this cycle: it binds nothing, or
    enough for its minimum (running pods counted), and — `tracked`: hard — all its pods
    inside one of `domains` (tier ≤ its limit, inside one of the job's candidate domains
    when the job is hard)."""

    index: int  # position in `Unit.sub_groups`
    sub: SubGroup
    tasks: list[UnitTask]
    running: int  # its running pods
    minimum: int  # `gang.sub_group_minimum`
    hard_limit: int | None
    anchors: list[int]  # nodes of its running pods
    tracked: bool  # hard: every one, even of one pod, so that the rack its pods open is known (`racks_opened`)
    domains: list[str] = field(default_factory=list)
    atoms: list[str] = field(default_factory=list)


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
    sub_groups: list[UnitSubGroup] = field(default_factory=list)  # those with pending pods (`UnitSubGroup`)
    started_sub_groups: dict[str, int] = field(default_factory=dict)
    """Policy → its sub-groups without pending pods here whose running pods already meet their
    minimum: started whatever the model does (an admitted PodGroup loses no pod)."""


def task_in_hard_sub_group(unit: Unit, task: UnitTask) -> bool:
    """Are the task's pods in a hard sub-group (whose racks `solver.objective.racks_opened` counts)?"""
    return task.sub_group is not None and unit.sub_groups[task.sub_group].hard_limit is not None


def task_atoms(unit: Unit, task: UnitTask) -> list[str]:
    """The atoms a tracked task's pods may go to: its hard sub-group's candidate atoms, else
    its job's; none for an untracked task (its pods go to the shared pattern slots)."""
    if not task.tracked:
        return []
    if task.sub_group is not None:
        sub = unit.sub_groups[task.sub_group]
        if sub.tracked:
            return sub.atoms
    return unit.atoms
