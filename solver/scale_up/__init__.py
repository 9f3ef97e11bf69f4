"""The scale-up plan: the cheapest nodes to buy so that the waiting gangs the queues allow
would start, and the binds that would follow.

Input: a validated `Snapshot`, `NodeTemplates` (`models.node_templates`) and a
`SolveConfig`. Output: a `ScaleUpPlan` (`models.scale_up_plan`). The caller is
`batchplace solve --scale-up FILE` and `POST /v1/what-if` with `scale_up`.

Steps:
  1. the ordinary solve (`solver.place.place`) of the snapshot;
  2. its pending PodGroups that an added node could start (`solver.reasons.nodes_would_help`)
     are the candidates, with the pods each needs (`solver.scale_up.demand`); one a queue's
     capability (what it has left after the solve, too), a dependency, gates or a
     reservation hold keeps waiting is never bought for;
  3. CP-SAT chooses the nodes (`solver.scale_up.cpsat_choice`: most gangs by the solver's
     order, then least price; per-node capacity, GPU devices, eligibility of the template's
     node, hard topology, max counts, the queues' capabilities left), greedy when CP-SAT has no answer
     (`solver.scale_up.greedy_choice`);
  4. verify: the snapshot with the bought nodes (`solver.scale_up.slots.extended`) is solved
     again by `place()` and judged by the checker; bought nodes that no started candidate's
     pod lands on are dropped and the smaller cluster solved again (kept when it starts as
     many candidates). What the plan reports — started, still waiting and why, binds — is
     that solve's, never the chooser's promise.

Same input, same answer: the chooser is deterministic (one worker, fixed seed, deterministic
time) and `place()` is with its default `SolveConfig`.

Errors: `models.errors.FieldError` when a template names a HyperNode the snapshot lacks;
`solver.checker.PlacementRejected` would be a bug (the solve's placement on the extended
snapshot broke a hard rule).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from models.node_templates import NodeTemplates
from models.placement import Decision
from models.scale_up_plan import BoughtNodes, ScaleUpPlan, WaitingGroup
from models.snapshot import GPU, PODS, NodeName, PodGroupKey, QueueName, Snapshot, Task
from solver.checker import require_valid
from solver.place import SolveConfig, place
from solver.rules.eligibility import ineligibility_reason
from solver.scale_up.cpsat_choice import Choice, choose_with_cpsat
from solver.scale_up.demand import GangDemand, candidate_demands, over_queue_room, queue_room, take_room
from solver.scale_up.greedy_choice import choose_greedily
from solver.scale_up.slots import BoughtNode, Slot, extended, pods_per_node, slots_of

__all__ = ["plan_scale_up", "extended_by_plan"]


def plan_scale_up(
    snapshot: Snapshot,
    templates: NodeTemplates,
    *,
    config: SolveConfig = SolveConfig(),
    decision: Decision | None = None,
    source: str = "templates",
) -> ScaleUpPlan:
    """The plan of the module docstring. `decision`: the ordinary solve of `snapshot` when the
    caller has it already; `source`: how errors name the templates (a file, a request field)."""
    templates.check_against(snapshot, source=source)
    decision = decision if decision is not None else place(snapshot, config)
    room = queue_room(snapshot, decision)
    helped = candidate_demands(snapshot, decision)
    capped = {d.group.key: note for d in helped if (note := over_queue_room(d, room)) is not None}
    demands = tuple(d for d in helped if d.group.key not in capped)
    candidates = {d.group.key for d in demands}
    not_planned = tuple(
        WaitingGroup(pod_group=o.name, reasons=o.reasons, plan_note=capped.get(o.name))
        for o in decision.podgroups
        if o.state == "pending" and o.name not in candidates
    )
    if not demands:
        return ScaleUpPlan(
            engine="none", status="NOTHING_TO_PLAN", not_planned=not_planned,
            binds=decision.placement.binds, evictions=decision.placement.evictions,
        )
    slots = slots_of(snapshot, templates, node_bound=sum(d.pod_count for d in demands))
    fit = _fit(demands, slots)
    greedy = choose_greedily(demands, slots, fit, room)
    choice = choose_with_cpsat(demands, slots, fit, room, time_limit_s=config.time_limit_s, hint=greedy)
    engine = "cpsat"
    if choice is None:
        choice, engine = greedy, "greedy"
    verified, bought = _verified(snapshot, slots, choice, candidates, config) if choice.counts else (decision, ())
    started = _started(verified, candidates)
    left = _room_left(room, [d for d in demands if d.group.key in started])
    rows = _rows(slots, bought)
    return ScaleUpPlan(
        engine=engine,  # type: ignore[arg-type]
        status=choice.status,
        bought=rows,
        price_per_hour=sum(row.price_per_hour for row in rows),
        started=tuple(d.group.key for d in demands if d.group.key in started),
        still_waiting=tuple(
            WaitingGroup(pod_group=o.name, reasons=o.reasons, plan_note=_why_not_bought(_demand(demands, o.name), slots, fit, left))
            for o in verified.podgroups
            if o.name in candidates and o.name not in started
        ),
        not_planned=not_planned,
        binds=verified.placement.binds,
        evictions=verified.placement.evictions,
    )


def extended_by_plan(snapshot: Snapshot, templates: NodeTemplates, plan: ScaleUpPlan) -> Snapshot:
    """`snapshot` with the plan's bought nodes, as the plan's solve saw it (for a caller that
    checks the plan's binds: `solver.checker.check_placement(extended_by_plan(...), …)`)."""
    slots = slots_of(snapshot, templates, node_bound=sum(len(row.nodes) for row in plan.bought))
    counts: dict[int, int] = {}
    for row in plan.bought:
        index = next(s for s, slot in enumerate(slots) if slot.template.name == row.template and slot.domain == row.domain)
        counts[index] = len(row.nodes)
    return extended(snapshot, slots, counts)[0]


def _rows(slots: Sequence[Slot], bought: Sequence[BoughtNode]) -> tuple[BoughtNodes, ...]:
    """The bought nodes per slot (template and domain), with their price."""
    names_per_slot: dict[int, list[NodeName]] = {}
    for node in bought:
        names_per_slot.setdefault(node.slot, []).append(node.name)
    return tuple(
        BoughtNodes(
            template=slots[s].template.name,
            domain=slots[s].domain,
            nodes=tuple(names),
            price_per_hour=slots[s].template.price_per_hour * len(names),
        )
        for s, names in sorted(names_per_slot.items())
    )


def _fit(demands: Sequence[GangDemand], slots: Sequence[Slot]) -> dict[tuple[int, int, int], int]:
    per_template: dict[tuple[str, int, int], int] = {}
    fit: dict[tuple[int, int, int], int] = {}
    for g, demand in enumerate(demands):
        for t, (task, _) in enumerate(demand.pods_per_task):
            for s, slot in enumerate(slots):
                key = (slot.template.name, g, t)
                if key not in per_template:
                    per_template[key] = pods_per_node(slot.node, task)
                fit[g, t, s] = per_template[key]
    return fit


def _verified(
    snapshot: Snapshot, slots: Sequence[Slot], choice: Choice, candidates: set[PodGroupKey], config: SolveConfig
) -> tuple[Decision, tuple[BoughtNode, ...]]:
    """The checked solve on the snapshot with the chosen nodes, those no started candidate
    uses dropped (module docstring, step 4)."""
    bigger, bought = extended(snapshot, slots, choice.counts)
    decision = place(bigger, config)
    require_valid(bigger, decision.placement)
    started = _started(decision, candidates)
    pod_group = {pod.key: pod.pod_group for pod in bigger.pods}
    used = {b.node for b in decision.placement.binds if pod_group.get(b.pod) in started}
    if all(node.name in used for node in bought):
        return decision, bought
    kept: dict[int, int] = {}
    for node in bought:
        if node.name in used:
            kept[node.slot] = kept.get(node.slot, 0) + 1
    smaller, smaller_bought = extended(snapshot, slots, kept)
    again = place(smaller, config)
    require_valid(smaller, again.placement)
    if _started(again, candidates) >= started:
        return again, smaller_bought
    return decision, bought


def _started(decision: Decision, candidates: set[PodGroupKey]) -> set[PodGroupKey]:
    """The candidates `decision` starts."""
    return {o.name for o in decision.podgroups if o.state == "scheduled" and o.name in candidates}


def _demand(demands: Sequence[GangDemand], key: PodGroupKey) -> tuple[int, GangDemand]:
    return next((g, d) for g, d in enumerate(demands) if d.group.key == key)


def _room_left(room: Mapping[QueueName, Mapping[str, int]], started: Sequence[GangDemand]) -> dict[QueueName, dict[str, int]]:
    """What each capped queue has left once the started gangs run."""
    left = {queue: dict(amounts) for queue, amounts in room.items()}
    for demand in started:
        take_room(left, demand)
    return left


def _why_not_bought(
    found: tuple[int, GangDemand],
    slots: Sequence[Slot],
    fit: dict[tuple[int, int, int], int],
    room_left: Mapping[QueueName, Mapping[str, int]],
) -> str:
    """Why no bought node starts it: a task no template's node holds (each template's first
    refusal), its queue's capability taken by the gangs the plan starts, else the max counts
    and the other gangs' share of them."""
    g, demand = found
    for t, (task, _) in enumerate(demand.pods_per_task):
        if not any(fit[g, t, s] > 0 for s in range(len(slots))):
            refusals = sorted({f"{slot.template.name}: {_refusal(slot, task)}" for slot in slots})
            return f"no template's node holds a pod of task {task.name} ({'; '.join(refusals) or 'no template may be bought'})"
    capped = over_queue_room(demand, room_left)
    if capped is not None:
        return f"{capped} once the gangs the plan starts run"
    if demand.tier_limit is not None:
        return f"not within one domain of tier <= {demand.tier_limit} the templates' max counts allow, beside the gangs started"
    return "not within the templates' max counts, beside the gangs started"


def _refusal(slot: Slot, task: Task) -> str:
    reason = ineligibility_reason(slot.node, task)
    if reason is not None:
        return reason
    short = [name for name, amount in task.requests.items() if amount > slot.node.allocatable.get(name, 0)]
    if task.requests.get(GPU, 0) and not slot.node.gpus:
        short.append(GPU)
    return ", ".join(f"insufficient {name}" for name in sorted(set(short))) or f"insufficient {PODS}"
