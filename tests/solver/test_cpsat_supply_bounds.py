"""A node profile's pattern variables are bounded by the nodes that can end in it: a node
group gives a profile at most its own nodes, however many of its eviction options end in
that profile (evicting either of two like victims leaves the same node). Summed per
option, the bound counted those nodes once per option."""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.checker import check_placement
from solver.cpsat.data import build_model_data
from solver.cpsat.units import DataLimits
from solver.cpsat.variables import create_variables
from solver.objective import ObjectiveContext
from solver.problem import build_problem
from tests.builders import make_gang, make_node, make_queue, make_snapshot
from tests.solver.test_cpsat_properties import run_cpsat


def test_two_eviction_options_ending_in_one_profile_bound_its_patterns_by_the_group_size() -> None:
    node = make_node("n0", cpu=32, memory=256, gpus=8, leaf="leaf-a")
    # Like pods in two queues: two victim kinds, and evicting either leaves the same node.
    first = make_gang("first", gpus=2, cpu=4, queue="a", running_on=["n0"], preemptable=True)
    second = make_gang("second", gpus=2, cpu=4, queue="b", running_on=["n0"], preemptable=True)
    urgent = [make_gang(f"urgent-{q}", replicas=2, gpus=4, cpu=4, queue=q, priority=5, topology_tier=1) for q in "ab"]
    queues = [make_queue("a"), make_queue("b")]
    snapshot = make_snapshot(nodes=[node], groups=[first, second, *urgent], queues=queues)
    data = build_model_data(snapshot, build_problem(snapshot), ObjectiveContext.of(snapshot), limits=DataLimits())
    assert any(len(set(group.after)) < len(group.after) for group in data.node_groups)  # options share a profile
    model = cp_model.CpModel()
    variables = create_variables(model, data)
    bounds = [
        var.proto.domain[len(var.proto.domain) - 1]
        for profile in variables.profiles.values()
        for var in [*profile.pattern_nodes.values(), *profile.atom_pattern_nodes.values()]
    ]
    assert bounds and max(bounds) == 1  # one node
    result, _, _ = run_cpsat(snapshot)
    assert result.placement is not None and check_placement(snapshot, result.placement) == ()
