"""CP-SAT chooses the nodes to buy: as many waiting gangs started as possible (by their
weights, `solver.scale_up.demand`), then the least price per hour for that.

Data → variables → constraints → objective → solve → extract, as the placement model.
Each bought node is a variable `bought[slot,j]` (the j-th node a slot may take), each
gang's pods on it an integer `pods[gang,task,slot,j]`. The model places the waiting gangs on
bought nodes only: what room the cluster has left is the ordinary solve's, which the plan
runs on the cluster with the bought nodes (so a plan may buy a node more than strictly
needed; never one that the solve leaves empty: `solver.scale_up` drops those).

Deterministic: one worker, a fixed seed, limited in OR-Tools' deterministic time, so the
same input gives the same nodes. Two stages: first the weighted count of started gangs
(greedy's nodes as the hint), then, that count fixed, the price (the first stage's answer
as the hint).

Not modelled (the solve on the extended snapshot judges them): NUMA cells, pod
(anti-)affinity, spread, host ports, and
which GPU device a fractional pod shares (devices are counted, not assigned).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from models.snapshot import GPU, GPU_MILLI_PER_DEVICE, PODS, QueueName, gpu_devices, is_fractional_gpu
from solver.cpsat.clock import DETERMINISTIC_TIME_PER_S
from solver.scale_up.demand import GangDemand
from solver.scale_up.slots import Slot

__all__ = ["Choice", "choose_with_cpsat", "MAX_MODELLED_NODES", "MAX_MODELLED_ASSIGNMENTS"]

MAX_MODELLED_NODES = 400
"""Bought-node variables past which the model is not built (greedy chooses instead)."""
MAX_MODELLED_ASSIGNMENTS = 40_000
"""Pod-count variables past which the model is not built."""
SEED = 0


@dataclass(frozen=True)
class Choice:
    counts: dict[int, int]
    """Slot index → nodes bought there."""
    status: str


@dataclass
class _Vars:
    bought: dict[tuple[int, int], cp_model.IntVar]
    pods: dict[tuple[int, int, int, int], cp_model.IntVar]
    """(gang, task, slot, j) → pods."""
    started: list[cp_model.IntVar]


def _model_size(slots: Sequence[Slot], fit: dict[tuple[int, int, int], int]) -> tuple[int, int]:
    nodes = sum(slot.capacity for slot in slots)
    assignments = sum(slots[s].capacity for (_, _, s), per_node in fit.items() if per_node > 0)
    return nodes, assignments


def choose_with_cpsat(
    demands: Sequence[GangDemand],
    slots: Sequence[Slot],
    fit: dict[tuple[int, int, int], int],
    queue_room: Mapping[QueueName, Mapping[str, int]],
    *,
    time_limit_s: float,
    hint: Choice | None = None,
) -> Choice | None:
    """The nodes to buy, or None when the model is too large or CP-SAT finds nothing in time.
    `fit[(gang, task, slot)]`: pods of that task one node of the slot holds; `queue_room`:
    what each capped queue has left (`solver.scale_up.demand.queue_room`); `hint`: greedy's
    nodes, where the search starts."""
    nodes, assignments = _model_size(slots, fit)
    if nodes > MAX_MODELLED_NODES or assignments > MAX_MODELLED_ASSIGNMENTS:
        return None
    model = cp_model.CpModel()
    variables = _variables(model, demands, slots, fit)
    _each_gang_all_or_nothing(model, demands, variables)
    _node_capacity(model, demands, slots, variables)
    _max_counts(model, slots, variables)
    _hard_topology(model, demands, slots, variables)
    _queue_capabilities(model, demands, queue_room, variables)
    started = sum(d.weight * v for d, v in zip(demands, variables.started, strict=True))
    model.maximize(started)
    if hint is not None:
        for (s, j), var in variables.bought.items():
            model.add_hint(var, int(j < hint.counts.get(s, 0)))
    first = _solve(model, time_limit_s / 2)
    if first is None:
        return None
    model.clear_hints()
    _hint(model, first, variables)
    model.add(started >= round(first.solver.objective_value))
    model.minimize(sum(slots[s].template.price_milli_per_hour * v for (s, _), v in variables.bought.items()))
    second = _solve(model, time_limit_s / 2) or first
    counts: dict[int, int] = {}
    for (s, _), var in variables.bought.items():
        if second.value(var):
            counts[s] = counts.get(s, 0) + 1
    proven = first.status == second.status == "OPTIMAL"  # both stages: the count, then the price for it
    return Choice(counts=counts, status="OPTIMAL" if proven else "FEASIBLE")


def _variables(
    model: cp_model.CpModel, demands: Sequence[GangDemand], slots: Sequence[Slot], fit: dict[tuple[int, int, int], int]
) -> _Vars:
    bought = {
        (s, j): model.new_bool_var(f"bought[{slot.template.name},{slot.domain},{j}]")
        for s, slot in enumerate(slots)
        for j in range(slot.capacity)
    }
    for s, slot in enumerate(slots):
        for j in range(1, slot.capacity):
            model.add(bought[s, j] <= bought[s, j - 1])  # symmetry: a slot's nodes are bought in order
        if s > 0 and slot.new_tier is not None and slots[s - 1].template is slot.template and slots[s - 1].new_tier is not None:
            model.add(bought[s, 0] <= bought[s - 1, 0])  # and a template's new domains are filled in order
    pods = {}
    for (g, t, s), per_node in fit.items():
        if per_node <= 0:
            continue
        task, count = demands[g].pods_per_task[t]
        for j in range(slots[s].capacity):
            pods[g, t, s, j] = model.new_int_var(0, min(per_node, count), f"pods[{demands[g].group.key}:{task.name},{s},{j}]")
    started = [model.new_bool_var(f"started[{d.group.key}]") for d in demands]
    return _Vars(bought, pods, started)


def _each_gang_all_or_nothing(model: cp_model.CpModel, demands: Sequence[GangDemand], variables: _Vars) -> None:
    """Each gang places on bought nodes exactly the pods it needs per task, or none."""
    placed: dict[tuple[int, int], list[cp_model.IntVar]] = {}
    for (g, t, _, _), var in variables.pods.items():
        placed.setdefault((g, t), []).append(var)
    for g, demand in enumerate(demands):
        for t, (_, count) in enumerate(demand.pods_per_task):
            model.add(sum(placed.get((g, t), [])) == count * variables.started[g])


def _node_capacity(model: cp_model.CpModel, demands: Sequence[GangDemand], slots: Sequence[Slot], variables: _Vars) -> None:
    """A bought node holds what its allocatable and its GPU devices hold; one not bought, nothing."""
    on_node: dict[tuple[int, int], list[tuple[int, int, cp_model.IntVar]]] = {}
    for (g, t, s, j), var in variables.pods.items():
        on_node.setdefault((s, j), []).append((g, t, var))
    for (s, j), placed in on_node.items():
        node = slots[s].node
        bought = variables.bought[s, j]
        requests = [(demands[g].pods_per_task[t][0].requests, var) for g, t, var in placed]
        resources = sorted({name for asked, _ in requests for name in asked} - {GPU})
        for resource in resources:
            model.add(sum(asked.get(resource, 0) * var for asked, var in requests) <= node.allocatable.get(resource, 0) * bought)
        model.add(sum(var for _, var in requests) <= node.allocatable.get(PODS, 0) * bought)
        whole = sum(gpu_devices(asked.get(GPU, 0)) * var for asked, var in requests)
        shared_milli = [(asked[GPU], var) for asked, var in requests if is_fractional_gpu(asked.get(GPU, 0))]
        shared_devices = 0
        if shared_milli:
            shared_devices = model.new_int_var(0, len(node.gpus), f"shared_devices[{s},{j}]")
            model.add(sum(m * var for m, var in shared_milli) <= GPU_MILLI_PER_DEVICE * shared_devices)
        model.add(whole + shared_devices <= len(node.gpus) * bought)


def _max_counts(model: cp_model.CpModel, slots: Sequence[Slot], variables: _Vars) -> None:
    """At most `max_count` nodes of each template, over all its slots."""
    per_template: dict[str, list[cp_model.IntVar]] = {}
    for (s, _), var in variables.bought.items():
        per_template.setdefault(slots[s].template.name, []).append(var)
    for name, bought in per_template.items():
        template = next(slot.template for slot in slots if slot.template.name == name)
        if len(bought) > template.max_count:
            model.add(sum(bought) <= template.max_count)


def _queue_capabilities(
    model: cp_model.CpModel, demands: Sequence[GangDemand], queue_room: Mapping[QueueName, Mapping[str, int]], variables: _Vars
) -> None:
    """The gangs started together stay within what each capped queue has left."""
    for queue, room in sorted(queue_room.items()):
        members = [(d, v) for d, v in zip(demands, variables.started, strict=True) if queue in d.queues]
        for name, left in sorted(room.items()):
            asked = [(d.requests.get(name, 0), v) for d, v in members if d.requests.get(name, 0)]
            if len(asked) > 1:
                model.add(sum(amount * v for amount, v in asked) <= max(0, left))


def _hard_topology(model: cp_model.CpModel, demands: Sequence[GangDemand], slots: Sequence[Slot], variables: _Vars) -> None:
    """A hard-topology gang's bought nodes all lie in one HyperNode of tier ≤ its limit, or it
    is on one node. A gang with running pods may use only a HyperNode that holds them too
    (`GangDemand.allowed_domains`)."""
    for g, demand in enumerate(demands):
        if demand.tier_limit is None:
            continue
        on: dict[tuple[int, int], cp_model.IntVar] = {}
        for (gg, _, s, j), var in variables.pods.items():
            if gg != g:
                continue
            if (s, j) not in on:
                on[s, j] = model.new_bool_var(f"on[{demand.group.key},{s},{j}]")
            model.add(var == 0).only_enforce_if(~on[s, j])
        domains: dict[str, list[tuple[int, int]]] = {}
        for s, j in on:
            within = slots[s].domains_within(demand.tier_limit)
            for name in within:
                if demand.allowed_domains is None or name in demand.allowed_domains:
                    domains.setdefault(name, []).append((s, j))
            if not within and demand.allowed_domains is None:
                domains.setdefault(f"node:{s}:{j}", []).append((s, j))  # a node is a domain of its own
        chosen = {name: model.new_bool_var(f"domain[{demand.group.key},{name}]") for name in sorted(domains)}
        model.add(sum(chosen.values()) == variables.started[g])
        for (s, j), var in on.items():
            model.add(var <= sum(chosen[name] for name in chosen if (s, j) in domains[name]))


def _solve(model: cp_model.CpModel, time_limit_s: float) -> _Solved | None:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = SEED
    solver.parameters.max_deterministic_time = max(1e-3, time_limit_s * DETERMINISTIC_TIME_PER_S)
    solver.parameters.max_time_in_seconds = max(1.0, 10 * time_limit_s)
    status = solver.solve(model)
    if status == cp_model.MODEL_INVALID:
        raise RuntimeError(f"scale-up model invalid: {model.validate()}")
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return _Solved(solver, "OPTIMAL" if status == cp_model.OPTIMAL else "FEASIBLE")


@dataclass(frozen=True)
class _Solved:
    solver: cp_model.CpSolver
    status: str

    def value(self, var: cp_model.IntVar) -> int:
        return int(self.solver.value(var))


def _hint(model: cp_model.CpModel, solved: _Solved, variables: _Vars) -> None:
    for var in (*variables.bought.values(), *variables.pods.values(), *variables.started):
        model.add_hint(var, solved.value(var))
