"""How the CP-SAT engine spends a short time limit: hard-topology candidates that can hold
the gang node by node and are spread over identical gangs."""

from __future__ import annotations

from models.snapshot import Snapshot
from solver.cpsat.data import DataLimits, build_model_data
from solver.objective import ObjectiveContext
from solver.problem import build_problem
from tests.builders import make_gang, make_node, make_snapshot, solve_checked


def candidate_domains(snapshot: Snapshot, *, max_domains_per_gang: int = 8) -> dict[str, list[str]]:
    problem = build_problem(snapshot)
    data = build_model_data(
        snapshot, problem, ObjectiveContext.of(snapshot), limits=DataLimits(max_domains_per_gang=max_domains_per_gang)
    )
    return {str(unit.group.key): list(unit.domains) for unit in data.units if unit.domains}


def test_a_leaf_with_its_free_gpus_in_halves_is_no_candidate_for_a_gang_of_whole_node_pods() -> None:
    halves = [make_node(f"a{i}", gpus=8, leaf="leaf-a") for i in range(4)]  # 16 GPUs free, in fours
    empty = [make_node(f"b{i}", gpus=8, leaf="leaf-b") for i in range(2)]  # 16 GPUs free, two whole nodes
    busy = [make_gang(f"busy-{i}", gpus=4, running_on=[f"a{i}"], preemptable=False) for i in range(4)]
    gang = make_gang("llm", replicas=2, gpus=8, topology_tier=1)
    snapshot = make_snapshot(nodes=[*halves, *empty], groups=[*busy, gang])
    assert candidate_domains(snapshot) == {"default/llm": ["leaf-b"]}


def test_identical_gangs_cut_to_one_candidate_each_get_different_leaves_and_all_run() -> None:
    nodes = [make_node(f"n{i}", gpus=8, leaf=f"leaf-{i // 2}") for i in range(6)]
    gangs = [make_gang(f"llm-{k}", replicas=2, gpus=8, topology_tier=1) for k in range(3)]
    snapshot = make_snapshot(nodes=nodes, groups=gangs)
    domains = candidate_domains(snapshot, max_domains_per_gang=1)
    assert sorted(d for kept in domains.values() for d in kept[:1]) == ["leaf-0", "leaf-1", "leaf-2"]
    decision = solve_checked(snapshot, "cpsat")
    assert len(decision.placement.binds) == 6
