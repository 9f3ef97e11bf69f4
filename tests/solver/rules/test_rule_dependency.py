"""Rule 7, dependencies: a task's pods are placed only once every task it depends on runs."""

from __future__ import annotations

import pytest

from solver.checker import check_placement
from solver.place import ENGINES
from solver.rules import dependency
from tests.builders import (
    bind_gang,
    make_eviction,
    make_gang,
    make_node,
    make_placement,
    make_snapshot,
    make_task,
    rule_violations,
    solve_checked,
)

NODES = [make_node("n1")]


def _pipeline(prep_running: int) -> object:
    return make_gang(
        "pipe",
        tasks=[make_task("prep", replicas=2), make_task("train", replicas=1, depends_on=["prep"])],
        running_on={"prep": ["n1"] * prep_running},
        priority=1,
    )


def test_a_task_without_dependencies_may_be_bound() -> None:
    job = make_gang("job")
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    assert rule_violations(dependency, snapshot, make_placement(binds=bind_gang(job, ["n1"]))) == []


def test_a_task_whose_dependency_wholly_runs_may_be_bound() -> None:
    pipe = _pipeline(prep_running=2)
    snapshot = make_snapshot(nodes=NODES, groups=[pipe])
    assert rule_violations(dependency, snapshot, make_placement(binds=bind_gang(pipe, ["n1"], task="train"))) == []


def test_binding_a_task_whose_dependency_partly_runs_is_reported() -> None:
    pipe = _pipeline(prep_running=1)
    snapshot = make_snapshot(nodes=NODES, groups=[pipe])
    placement = make_placement(binds=bind_gang(pipe, ["n1"], task="train"))
    (violation,) = rule_violations(dependency, snapshot, placement)
    assert violation.subject == "default/pipe-train-0"
    assert "depends on prep" in violation.message
    # Binding prep alongside does not help: it is not running yet at this cycle.
    both = make_placement(binds=[*bind_gang(pipe, ["n1"], task="prep"), *bind_gang(pipe, ["n1"], task="train")])
    assert [v.rule for v in check_placement(snapshot, both)] == [dependency.NAME]


def test_binding_a_task_while_evicting_its_dependency_is_reported() -> None:
    pipe = _pipeline(prep_running=2)
    other = make_gang("other", priority=5)
    snapshot = make_snapshot(nodes=NODES, groups=[pipe, other])
    placement = make_placement(
        binds=[*bind_gang(pipe, ["n1"], task="train"), *bind_gang(other, ["n1"])],
        evictions=[make_eviction(pipe.pods_of("prep")[0], for_=other)],
    )
    (violation,) = rule_violations(dependency, snapshot, placement)
    assert "evicts pods of prep" in violation.message


def test_waiting_tasks_lists_tasks_with_a_dependency_not_wholly_running() -> None:
    for running, expected in ((0, {"train"}), (1, {"train"}), (2, set())):
        pipe = _pipeline(prep_running=running)
        snapshot = make_snapshot(nodes=NODES, groups=[pipe])
        assert dependency.waiting_tasks(snapshot, pipe.group) == expected


# ---- every engine, on hand-computed cases ----


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_waits_for_a_dependency_to_run(engine: str) -> None:
    # task-b depends on task-a, which has nothing running yet: only task-a's pod binds.
    job = make_gang(
        "job", tasks=[make_task("task-a", cpu=1), make_task("task-b", cpu=1, depends_on=["task-a"], min_available=0)], min_member=1
    )
    snapshot = make_snapshot(nodes=NODES, groups=[job])
    binds = solve_checked(snapshot, engine).placement.binds
    assert [b.pod for b in binds] == [job.pods_of("task-a")[0].key]
