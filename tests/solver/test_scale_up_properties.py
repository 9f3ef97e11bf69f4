"""Properties of the scale-up plan over drawn snapshots (`tests.strategies.snapshots`) and
templates big enough for every drawn task: one per combination of the labels the drawn
tasks select on (zone, gpu, gen), 64 cores, 512 GiB, 8 GPUs on one NUMA cell.

  - every plan is valid on the snapshot with its bought nodes (the checker), and every
    PodGroup it says it starts is bound there;
  - issue 32's "Done when": a PodGroup the solve marks as one nodes could help
    (`nodes_would_help`) has every pending pod fit on some template node; no pending pod of
    one it does not mark starts even with three nodes of every template added.

A PodGroup whose pods this cycle evicts is left out of the second half: its reason says
whom they make room for (`preemption: 2 pods evicted (preempt) for …`), which no node lifts,
and what its pods wait for is the next cycle's to say — yet with more nodes nobody need
have been evicted, and its pending pods may start.

Two kinds of task are left out of the first half, since no node one can buy hosts them
though their reason (eligibility) is one a node could lift in general: a required node
affinity naming nodes by `matchFields` (metadata.name), and a selector and affinity that
contradict each other (`zone: a` and `zone DoesNotExist`) — the templates carry every
combination of the labels drawn, so a task none admits is admitted by no node.
"""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.node_templates import NodeTemplates, read_node_templates
from models.placement import Placement
from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.place import SolveConfig, place
from solver.reasons import nodes_would_help
from solver.rules.eligibility import eligible
from solver.scale_up import extended_by_plan, plan_scale_up
from solver.scale_up.slots import extended, pods_per_node, slots_of
from tests.strategies import snapshots

CONFIG = SolveConfig(engine="greedy", time_limit_s=0.5)
LABEL_SETS = [
    {key: value for key, value in (("zone", zone), ("gpu", gpu), ("gen", gen)) if value is not None}
    for zone, gpu, gen in itertools.product(["a", "b", None], ["a100", "h100", None], ["7", "9", "x", None])
]


def big_templates(snapshot: Snapshot, *, prices: list[int], domains: bool) -> NodeTemplates:
    leaves = [h.name for h in snapshot.hypernodes if h.tier == 1]
    return read_node_templates(
        [
            {
                "name": f"t{i}",
                "labels": labels,
                "allocatable": {"cpu": 64_000, "memory": 512 * 2**30, "gpu": 8000},
                "price_per_hour": prices[i % len(prices)],
                "max_count": 3,
                **({"hypernodes": leaves} if domains and leaves else {}),
            }
            for i, labels in enumerate(LABEL_SETS)
        ],
        source="templates",
    )


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshot=snapshots(max_nodes=6, max_groups=5), prices=st.lists(st.integers(1, 50), min_size=1, max_size=4))
def test_every_plan_is_valid_with_its_nodes_and_starts_what_it_says(snapshot: Snapshot, prices: list[int]) -> None:
    templates = big_templates(snapshot, prices=prices, domains=True)
    plan = plan_scale_up(snapshot, templates, config=CONFIG)
    bigger = extended_by_plan(snapshot, templates, plan)
    assert check_placement(bigger, Placement(binds=plan.binds, evictions=plan.evictions)) == ()
    bound_groups = {bigger.pod_by_key[bind.pod].pod_group for bind in plan.binds}
    assert set(plan.started) <= bound_groups
    bought = {name for row in plan.bought for name in row.nodes}
    assert bought <= {node.name for node in bigger.nodes}
    assert plan.price_per_hour == sum(
        next(t.price_per_hour for t in templates.templates if t.name == row.template) * len(row.nodes) for row in plan.bought
    )


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshot=snapshots(max_nodes=6, max_groups=5))
def test_marked_pods_fit_a_template_node_and_unmarked_ones_do_not_start_with_nodes_added(snapshot: Snapshot) -> None:
    decision = place(snapshot, CONFIG)
    templates = big_templates(snapshot, prices=[1], domains=False)
    slots = slots_of(snapshot, templates, node_bound=3)
    marked = {o.name for o in decision.podgroups if o.state == "pending" and nodes_would_help(o.reasons)}
    evicted = {snapshot.pod_by_key[eviction.pod].pod_group for eviction in decision.placement.evictions}
    unmarked = {
        o.name for o in decision.podgroups if o.state == "pending" and not nodes_would_help(o.reasons) and o.name not in evicted
    }
    for pod in snapshot.pods:
        if pod.phase != "pending" or pod.pod_group not in marked:
            continue
        task = snapshot.task_of(pod)
        assert task is not None
        if any(term.match_fields for term in task.required_node_affinity) or not any(eligible(s.node, task) for s in slots):
            continue  # no node one can buy: module docstring
        assert any(pods_per_node(slot.node, task) > 0 for slot in slots), pod.key
    bigger, _ = extended(snapshot, slots, {index: 3 for index in range(len(slots))})
    after = place(bigger, CONFIG)
    started = [bind.pod for bind in after.placement.binds if bigger.pod_by_key[bind.pod].pod_group in unmarked]
    assert not started, [o for o in decision.podgroups if o.name in unmarked]
