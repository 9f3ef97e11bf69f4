"""LeaderWorkerSet groups and JobSet Job replicas, read from their pods, place as gangs in
every engine — a group whole or not at all — and exclusive placement keeps one group per
rack. Answers are hand-computed, plus a property over random groups and nodes; the checker
judges every placement (`solve_checked`)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.placement import Decision
from models.snapshot import Snapshot
from solver.place import ENGINES
from tests.builders import solve_checked
from tests.models._kube_builders import Obj, load, node
from tests.models._owner_gang_pods import LWS, jobset_pod, lws_pod


def _bound_per_group(loaded: Snapshot, decision: Decision) -> Counter[str]:
    return Counter(loaded.pod_by_key[bind.pod].sub_group for bind in decision.placement.binds)


@pytest.mark.parametrize("engine", ENGINES)
def test_of_two_lws_groups_only_the_one_that_fits_whole_starts(engine: str) -> None:
    # 2 nodes of 4 GPUs; a group is 3 pods of 2 GPUs (6 GPUs): one group fits, not two.
    # As one-pod groups, 4 pods (8 GPUs) would start, splitting both groups.
    pods = [lws_pod("llm", group, worker, size=3, gpus=2) for group in range(2) for worker in range(3)]
    loaded = load(node("n1", gpus=4), node("n2", gpus=4), *pods).snapshot
    bound = _bound_per_group(loaded, solve_checked(loaded, engine))
    assert sorted(bound.values()) == [3]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("nodes", "expected"), [(4, [2, 2]), (3, [])])
def test_a_jobset_starts_with_every_job_replica_whole_or_not_at_all(engine: str, nodes: int, expected: list[int]) -> None:
    # Each pod asks 3 GPUs of a 4-GPU node: one pod per node. Two Jobs of 2 pods need 4
    # nodes; on 3, one-pod groups would start 3 pods, per-Job gangs one Job: neither runs.
    pods = [jobset_pod("train", "workers", job, index, gpus=3) for index in range(2) for job in range(2)]
    loaded = load(*(node(f"n{i}", gpus=4) for i in range(nodes)), *pods).snapshot
    bound = _bound_per_group(loaded, solve_checked(loaded, engine))
    assert sorted(bound.values()) == expected


@pytest.mark.parametrize("engine", ENGINES)
def test_exclusive_placement_puts_the_next_group_on_another_rack(engine: str) -> None:
    # Group 0's leader runs on n1 (rack r1), its workers follow it by node selector; group
    # 1's leader, admitted alone, may not share a rack with another group: only n3 (r2).
    racks = {"n1": "r1", "n2": "r1", "n3": "r2"}
    nodes = [node(name, gpus=4, labels={"rack": rack}) for name, rack in racks.items()]
    pods = [
        lws_pod("llm", 0, 0, size=3, exclusive="rack", node="n1"),
        lws_pod("llm", 0, 1, size=3, exclusive="rack", node_selector={"rack": "r1"}),
        lws_pod("llm", 0, 2, size=3, exclusive="rack", node_selector={"rack": "r1"}),
        lws_pod("llm", 1, 0, size=3, exclusive="rack"),
    ]
    loaded = load(*nodes, *pods).snapshot
    decision = solve_checked(loaded, engine)
    placed = {bind.pod: bind.node for bind in decision.placement.binds}
    assert placed["default/llm-1"] == "n3"
    assert {placed["default/llm-0-1"], placed["default/llm-0-2"]} <= {"n1", "n2"}


@st.composite
def _lws_sets(draw: st.DrawFn) -> tuple[list[int], list[Obj]]:
    """Nodes of 1-4 GPUs and LeaderWorkerSet groups of 1-4 pods of 1-2 GPUs each."""
    node_gpus = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    pods = []
    for group, size in enumerate(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))):
        gpus = draw(st.integers(1, 2))
        pods += [lws_pod("llm", group, worker, size=size, gpus=gpus) for worker in range(size)]
    return node_gpus, pods


@pytest.mark.parametrize("engine", ("cpsat", "greedy"))
@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=_lws_sets())
def test_every_engine_starts_each_lws_group_whole_or_not_at_all(engine: str, drawn: tuple[list[int], list[Obj]]) -> None:
    node_gpus, pods = drawn
    nodes = [node(f"n{index}", gpus=gpus) for index, gpus in enumerate(node_gpus)]
    loaded = load(*nodes, *pods).snapshot
    decision = solve_checked(loaded, engine, time_limit_s=2.0)
    # Counted by the pods' own labels, not by the PodGroups the loader made of them.
    labels = {f"default/{p['metadata']['name']}": p["metadata"]["labels"] for p in pods}  # type: ignore[index]
    size = {f"default/{p['metadata']['name']}": int(p["metadata"]["annotations"][f"{LWS}/size"]) for p in pods}  # type: ignore[index]
    bound = Counter(labels[bind.pod][f"{LWS}/group-index"] for bind in decision.placement.binds)
    sizes = {labels[key][f"{LWS}/group-index"]: size[key] for key in labels}
    assert all(bound[group] in (0, sizes[group]) for group in sizes)
