"""The CP-SAT engine's variables, in per-entity containers named after the domain.

Input: the `ModelData` of `solver.cpsat.data`. Output: a `Variables` holding, per entity,
the decision variables of the model, each with a solver-side name that explains itself
in a dumped model (`pods[team-a/llm:worker]`, `pattern_nodes[p3#17]`):

  - `UnitVars` (one PodGroup that may get binds): `admitted`, `pods` per task,
    `pods_in` per (tracked task, atom), `domain` per candidate hard domain, `spans` per
    soft HyperNode, and per sub-group with pending pods a `SubGroupVars`: `binds` (it
    gets a bind), `started` (it reaches its minimum; only for a policy with
    `min_sub_groups`), `domain` per candidate domain of a hard sub-group;
  - `ProfileVars` (one node profile): `supply` (a linear expression: static nodes plus the
    node-group options that end in this profile), `pattern_nodes` per untracked pattern,
    `atom_pattern_nodes` per (atom, tracked pattern);
  - `NodeGroupVars`: `option_nodes` per eviction option;
  - `KindVars` (interchangeable victims): `evicted` (an expression), `preempted`,
    `reclaimed`;
  - `VictimGroupVars`: `keeps` (the gang keeps ≥ min_member, or nothing), one per
    victim PodGroup and one per sub-group of it with candidate victims (`victim_sub_groups`);
  - `PreemptorClassVars`: `any_admitted` per (queue, priority) of units;
  - `opened` per whole rack a hard sub-group may go to: it gets one of their pods
    (`solver.objective.racks_opened`).

`Lin` is a linear expression kept as (variable, coefficient) terms plus a constant, so
that the engine can both hand it to CP-SAT and evaluate it on a hint or a solution.

Not promised: any constraint — `solver.cpsat.constraints` adds those.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from solver.cpsat.data import ModelData
from solver.cpsat.units import Unit, UnitTask, task_atoms, task_in_hard_sub_group

__all__ = [
    "Lin",
    "SubGroupVars",
    "UnitVars",
    "ProfileVars",
    "NodeGroupVars",
    "KindVars",
    "VictimGroupVars",
    "Variables",
    "create_variables",
]

IntVar = cp_model.IntVar


class Lin:
    """Σ coefficient · variable + constant, evaluable on any assignment."""

    __slots__ = ("terms", "constant")

    def __init__(self, terms: Iterable[tuple[IntVar, int]] = (), constant: int = 0):
        self.terms: list[tuple[IntVar, int]] = [(v, c) for v, c in terms if c]
        self.constant = constant

    def add(self, var: IntVar, coefficient: int) -> Lin:
        if coefficient:
            self.terms.append((var, coefficient))
        return self

    def add_lin(self, other: Lin, factor: int = 1) -> Lin:
        if factor:
            self.terms.extend((v, c * factor) for v, c in other.terms)
            self.constant += other.constant * factor
        return self

    def scaled(self, factor: int) -> Lin:
        return Lin(((v, c * factor) for v, c in self.terms), self.constant * factor)

    def expr(self) -> cp_model.LinearExprT:
        if not self.terms:
            return self.constant
        variables = [v for v, _ in self.terms]
        coefficients = [c for _, c in self.terms]
        return cp_model.LinearExpr.weighted_sum(variables, coefficients) + self.constant

    def value(self, solution: Sequence[int]) -> int:
        """The value at `solution`, a value per model variable (a CP-SAT response's, by index)."""
        return self.constant + sum(c * solution[v.index] for v, c in self.terms)

    def bounds(self) -> tuple[int, int]:
        """The least and most the expression can be, from its variables' domains, read
        through `IntVar.domain`: half the time of reading the proto's, which was most of this
        loop on a large model (docs/results.md, "Building the CP-SAT model")."""
        low = high = self.constant
        for var, coefficient in self.terms:
            domain = var.domain
            lo, hi = domain.min(), domain.max()
            if coefficient > 0:
                low += coefficient * lo
                high += coefficient * hi
            else:
                low += coefficient * hi
                high += coefficient * lo
        return low, high


@dataclass
class SubGroupVars:
    binds: IntVar  # the sub-group gets at least one bind
    started: IntVar | None  # its running + bound pods reach its minimum (counted for `min_sub_groups`)
    domain: dict[str, IntVar] = field(default_factory=dict)  # hard: candidate domain → chosen


@dataclass
class UnitVars:
    admitted: IntVar
    pods: dict[int, IntVar]  # task position in ModelData.tasks → pods bound
    pods_in: dict[int, dict[str, IntVar]] = field(default_factory=dict)  # tracked task → atom → pods bound there
    domain: dict[str, IntVar] = field(default_factory=dict)
    spans: dict[str, IntVar] = field(default_factory=dict)
    sub_groups: list[SubGroupVars] = field(default_factory=list)  # aligned with `Unit.sub_groups`

    def atom_pods(self) -> Iterator[tuple[int, str, IntVar]]:
        """Every (task position, atom, pods bound there). `pods_in` is keyed by task first
        because the rules read one task's atoms at a time: a job of thousands of sub-groups
        has a task per sub-group, and a flat scan per task would be quadratic."""
        for position, atoms in self.pods_in.items():
            for atom, var in atoms.items():
                yield position, atom, var


@dataclass
class ProfileVars:
    supply: Lin
    atom_supply: dict[str, Lin]
    pattern_nodes: dict[int, IntVar]  # position in PatternSet.patterns → nodes
    atom_pattern_nodes: dict[tuple[str, int], IntVar]  # (atom, position in topology_sets[(p, atom)]) → nodes


@dataclass
class NodeGroupVars:
    option_nodes: list[IntVar | None]  # None for a group with a single option (its nodes are constant)


@dataclass
class KindVars:
    evicted: Lin
    preempted: IntVar | None
    reclaimed: IntVar | None


@dataclass
class VictimGroupVars:
    keeps: IntVar
    evicted: Lin


@dataclass
class Variables:
    units: list[UnitVars]
    profiles: dict[int, ProfileVars]
    node_groups: list[NodeGroupVars]
    kinds: list[KindVars]
    victim_groups: dict[int, VictimGroupVars]
    victim_sub_groups: dict[tuple[int, str], VictimGroupVars]  # (PodGroup index, sub-group) → its keep
    any_admitted: list[IntVar]  # per preemptor class
    opened: dict[str, IntVar]  # whole rack → a pod of a hard sub-group is bound there
    task_index: dict[int, int]  # id(UnitTask) → position in ModelData.tasks


def create_variables(model: cp_model.CpModel, data: ModelData) -> Variables:
    """Every decision variable, with domains from the data (constraints come later)."""
    task_index = {id(t): i for i, t in enumerate(data.tasks)}
    units = [_unit_vars(model, data, u, task_index) for u in range(len(data.units))]
    node_groups = [_node_group_vars(model, data, g) for g in range(len(data.node_groups))]
    profiles = _profile_vars(model, data, node_groups)
    kinds = _kind_vars(model, data, node_groups)
    evicted_of: dict[object, Lin] = {}
    evicted_of_sub: dict[tuple[object, str], Lin] = {}
    for kind, kind_vars in zip(data.kinds, kinds):
        evicted_of.setdefault(kind.owner, Lin()).add_lin(kind_vars.evicted)
        if kind.sub_group is not None:
            evicted_of_sub.setdefault((kind.owner, kind.sub_group), Lin()).add_lin(kind_vars.evicted)
    victim_groups: dict[int, VictimGroupVars] = {}
    for h in sorted(data.victim_groups):
        if not evicted_of.get(h, Lin()).terms:
            continue  # none of its pods may go: it keeps them all
        name = data.snapshot.pod_groups[h].key
        victim_groups[h] = VictimGroupVars(keeps=model.new_bool_var(f"keeps[{name}]"), evicted=evicted_of.get(h, Lin()))
    victim_sub_groups: dict[tuple[int, str], VictimGroupVars] = {}
    for h, sub in sorted(data.victim_sub_groups):
        evicted = evicted_of_sub.get((h, sub), Lin())
        if evicted.terms:
            name = f"{data.snapshot.pod_groups[h].key}/{sub}"
            victim_sub_groups[(h, sub)] = VictimGroupVars(keeps=model.new_bool_var(f"keeps[{name}]"), evicted=evicted)
    any_admitted = [
        model.new_bool_var(f"any_admitted[{q}/priority {p}{'/waits' if waits else ''}]") for q, p, _, waits in data.preemptor_classes
    ]
    racks = {
        data.soft_domain.get(atom)
        for unit, unit_vars in zip(data.units, units)
        for t, atom, _ in unit_vars.atom_pods()
        if task_in_hard_sub_group(unit, data.tasks[t])
    }
    opened = {rack: model.new_bool_var(f"opened[{rack}]") for rack in sorted(r for r in racks if r in data.whole_racks)}
    return Variables(
        units=units,
        profiles=profiles,
        node_groups=node_groups,
        kinds=kinds,
        victim_groups=victim_groups,
        victim_sub_groups=victim_sub_groups,
        any_admitted=any_admitted,
        opened=opened,
        task_index=task_index,
    )


def _unit_vars(model: cp_model.CpModel, data: ModelData, u: int, tasks: dict[int, int]) -> UnitVars:
    unit = data.units[u]
    key = unit.group.key
    pods = {tasks[id(t)]: model.new_int_var(0, len(t.pending), f"pods[{_task_label(unit, t)}]") for t in unit.tasks}
    result = UnitVars(admitted=model.new_bool_var(f"admitted[{key}]"), pods=pods)
    if unit.tracked:
        for task in unit.tasks:
            position = tasks[id(task)]
            label = _task_label(unit, task)
            result.pods_in[position] = {
                atom: model.new_int_var(0, len(task.pending), f"pods_in[{label},{atom}]") for atom in task_atoms(unit, task)
            }
        for domain in unit.domains:
            result.domain[domain] = model.new_bool_var(f"domain[{key},{domain}]")
        if unit.soft:
            atoms = {a for task in unit.tasks for a in task_atoms(unit, task)}
            spans = {data.soft_domain.get(a) for a in atoms} | {_anchor_span(data, n) for n in unit.anchors}
            for span in sorted(s for s in spans if s is not None):
                result.spans[span] = model.new_bool_var(f"spans[{key},{span}]")
    for sub in unit.sub_groups:
        where = f"{key}/{sub.sub.name}"
        counted = sub.sub.policy in unit.group.min_sub_groups
        sub_vars = SubGroupVars(
            binds=model.new_bool_var(f"sub_group_binds[{where}]"),
            started=model.new_bool_var(f"sub_group_started[{where}]") if counted else None,
        )
        if sub.tracked:
            for domain in sub.domains:
                sub_vars.domain[domain] = model.new_bool_var(f"domain[{where},{domain}]")
        result.sub_groups.append(sub_vars)
    return result


def _task_label(unit: Unit, task: UnitTask) -> str:
    """A task's name in the model: `team-a/llm:worker`, or `team-a/llm:worker@llm-1` for its
    pods in sub-group llm-1."""
    label = f"{unit.group.key}:{task.name}"
    return label if task.sub_group is None else f"{label}@{unit.sub_groups[task.sub_group].sub.name}"


def _anchor_span(data: ModelData, node: int) -> str | None:
    return data.ctx.span_domain.get(data.problem.node_names[node])


def _node_group_vars(model: cp_model.CpModel, data: ModelData, g: int) -> NodeGroupVars:
    group = data.node_groups[g]
    if len(group.options) == 1:
        return NodeGroupVars(option_nodes=[None])
    size = len(group.nodes)
    return NodeGroupVars(option_nodes=[model.new_int_var(0, size, f"option_nodes[g{g}#{o}]") for o in range(len(group.options))])


def _option_count(group_vars: NodeGroupVars, size: int, option: int) -> Lin:
    var = group_vars.option_nodes[option]
    return Lin(constant=size) if var is None else Lin([(var, 1)])


def _profile_vars(model: cp_model.CpModel, data: ModelData, node_groups: list[NodeGroupVars]) -> dict[int, ProfileVars]:
    supply: dict[int, Lin] = {}
    atom_supply: dict[int, dict[str, Lin]] = {}
    most: dict[int, int] = {}
    most_atom: dict[tuple[int, str], int] = {}
    for group, group_vars in zip(data.node_groups, node_groups):
        size = len(group.nodes)
        for option, profile in enumerate(group.after):
            count = _option_count(group_vars, size, option)
            supply.setdefault(profile, Lin()).add_lin(count)
            if group.atom:
                atom_supply.setdefault(profile, {}).setdefault(group.atom, Lin()).add_lin(count)
        # The group's options share its nodes: it gives a profile at most its size, however
        # many of its options end there (a bound per option summed them, several times it).
        for profile in set(group.after):
            most[profile] = most.get(profile, 0) + size
            if group.atom:
                most_atom[(profile, group.atom)] = most_atom.get((profile, group.atom), 0) + size
    result: dict[int, ProfileVars] = {}
    for profile, pattern_set in data.pattern_sets.items():
        bound = most.get(profile, 0)
        pattern_nodes = {
            i: model.new_int_var(0, bound, f"pattern_nodes[p{profile}#{i}]") for i in range(len(pattern_set.patterns))
        } if bound else {}
        atom_nodes: dict[tuple[str, int], IntVar] = {}
        for atom in atom_supply.get(profile, {}):
            atom_bound = most_atom[(profile, atom)]
            for i, _ in enumerate(data.topology_sets.get((profile, atom), ())):
                atom_nodes[(atom, i)] = model.new_int_var(0, atom_bound, f"pattern_nodes[p{profile}@{atom}#{i}]")
        result[profile] = ProfileVars(
            supply=supply.get(profile, Lin()),
            atom_supply=atom_supply.get(profile, {}),
            pattern_nodes=pattern_nodes,
            atom_pattern_nodes=atom_nodes,
        )
    return result


def _kind_vars(model: cp_model.CpModel, data: ModelData, node_groups: list[NodeGroupVars]) -> list[KindVars]:
    evicted = [Lin() for _ in data.kinds]
    for group, group_vars in zip(data.node_groups, node_groups):
        if len(group.options) == 1:
            continue
        for option, counts in enumerate(group.options):
            var = group_vars.option_nodes[option]
            for (kind, _), k in zip(group.kinds, counts):
                if k:
                    evicted[kind].add(var, k)  # type: ignore[arg-type]
    result = []
    for kind, lin in zip(data.kinds, evicted):
        name = f"k{kind.index}"
        possible = bool(lin.terms)  # some kept option evicts this kind
        preempted = model.new_int_var(0, kind.total, f"preempted[{name}]") if possible and kind.preempt_classes else None
        reclaimed = model.new_int_var(0, kind.total, f"reclaimed[{name}]") if possible and kind.reclaim_classes else None
        result.append(KindVars(evicted=lin, preempted=preempted, reclaimed=reclaimed))
    return result
