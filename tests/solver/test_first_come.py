"""First come, first served among equals, in every engine and on every run: PodGroups
that differ only in creation time and name start in that order — creation time, then
name — as Volcano's FIFO has it. CP-SAT respects it as an order among interchangeable
PodGroups of a queue (`solver.cpsat.constraints._first_come`) and, among placements equal on
every tier that it finds beyond greedy's, as a last tie-break across queues and shapes
(`solver.cpsat.objective.first_come`); greedy by its queue order. Every answer comes
through `place()` and is judged by the checker. Which jobs start is what must not change
from run to run; on which of two equal nodes a pod lands may (the search runs on two
workers).
"""

from __future__ import annotations

from functools import partial

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.placement import Decision
from solver.place import ENGINES
from tests.builders import (
    Gang,
    created_at,
    make_gang,
    make_node,
    make_queue,
    make_snapshot,
    solve_checked,
    two_queues_of_tied_jobs,
)

_solve = partial(solve_checked, time_limit_s=5.0)


def _started(decision: Decision) -> list[str]:
    return sorted(group.name for group in decision.podgroups if group.state == "scheduled")


def _job(name: str, *, pods: int, cpu: float) -> Gang:
    """A job of `pods` pods of `cpu` each, all needed, in the queue its name says
    (`job-a-1` → a), created with every other job of the test."""
    return created_at(make_gang(name, replicas=pods, cpu=cpu, queue=name.split("-")[1]), 1000.0)


def _jobs(queue: str, count: int, *, created: list[float] | None = None, cpu: float = 0.5) -> list[Gang]:
    times = created or [1000.0] * count
    return [created_at(make_gang(f"job-{queue}-{i + 1}", cpu=cpu, queue=queue), times[i]) for i in range(count)]


@pytest.mark.parametrize("engine", ENGINES)
def test_tied_creation_times_start_jobs_by_name_on_every_run(engine: str) -> None:
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=1)], groups=_jobs("a", 6), queues=[make_queue("a")])
    first, second = _solve(snapshot, engine), _solve(snapshot, engine)
    assert _started(first) == ["default/job-a-1", "default/job-a-2"]
    assert _started(first) == _started(second)


@pytest.mark.parametrize("engine", ENGINES)
def test_older_jobs_start_first(engine: str) -> None:
    jobs = _jobs("a", 6, created=[6000.0, 5000.0, 4000.0, 3000.0, 2000.0, 1000.0])
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=1)], groups=jobs, queues=[make_queue("a")])
    assert _started(_solve(snapshot, engine)) == ["default/job-a-5", "default/job-a-6"]


@pytest.mark.parametrize("engine", ENGINES)
def test_queue_weights_with_tied_times_start_the_first_jobs_of_each_queue(engine: str) -> None:
    # examples/queue-weights.yaml: 3 nodes of 1 CPU, six 0.5-CPU jobs per queue, weights 1:2.
    snapshot = make_snapshot(
        nodes=[make_node(f"n{i}", cpu=1) for i in range(3)],
        groups=[*_jobs("a", 6), *_jobs("b", 6)],
        queues=[make_queue("a", weight=1), make_queue("b", weight=2)],
    )
    assert _started(_solve(snapshot, engine)) == [
        "default/job-a-1", "default/job-a-2", "default/job-b-1", "default/job-b-2", "default/job-b-3", "default/job-b-4",
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_each_queue_starts_a_prefix_of_its_jobs_when_the_search_leaves_greedys_answer(engine: str) -> None:
    # Greedy gives queue a one job and b three, CP-SAT a two and b two (as fair, one pod
    # more): CP-SAT does not keep greedy's answer, and once picked job-a-6 over job-a-2.
    snapshot = two_queues_of_tied_jobs()
    first, second = _solve(snapshot, engine), _solve(snapshot, engine)
    assert _started(first) == _started(second)
    for queue in ("a", "b"):
        started = [name for name in _started(first) if name.startswith(f"default/job-{queue}-")]
        assert started == [f"default/job-{queue}-{i}" for i in range(1, len(started) + 1)]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    created=st.lists(st.sampled_from([1000.0, 2000.0, 3000.0]), min_size=2, max_size=7),
    room=st.integers(1, 4),
    engine=st.sampled_from(ENGINES),
)
def test_the_jobs_that_start_are_the_first_by_creation_time_then_name(created: list[float], room: int, engine: str) -> None:
    jobs = _jobs("a", len(created), created=created, cpu=1)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=room)], groups=jobs, queues=[make_queue("a")])
    first_come = sorted(jobs, key=lambda job: (job.group.creation_time, job.key))[:room]
    assert _started(_solve(snapshot, engine)) == sorted(job.key for job in first_come)


def test_tied_queues_get_the_same_jobs_from_greedy_cpsat_and_auto() -> None:
    """Queues a and b alike, three alike 1-CPU jobs each, created together, 3 CPU: which
    queue gets the third job is a tie on every tier. Greedy serves a first (the name), and
    CP-SAT keeps greedy's answer among equals, so every engine starts the same jobs."""
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=3)],
        groups=[_job(f"job-{q}-{i}", pods=1, cpu=1) for q in "ab" for i in (1, 2, 3)],
        queues=[make_queue("a"), make_queue("b")],
    )
    placements = {engine: _solve(snapshot, engine) for engine in ENGINES}
    for engine, decision in placements.items():
        assert _started(decision) == ["default/job-a-1", "default/job-a-2", "default/job-b-1"], engine
    binds = {engine: sorted((b.pod, b.node) for b in d.placement.binds) for engine, d in placements.items()}
    assert binds["greedy"] == binds["cpsat"] == binds["auto"]


@pytest.mark.parametrize("engine", ["cpsat", "auto"])
def test_a_tie_across_queues_beyond_greedys_answer_goes_first_come(engine: str) -> None:
    """3 CPU. Greedy starts job-a-1 (one 2-CPU pod); two 1-CPU pods score more, and job-a-2
    and job-b-3 (two 1-CPU pods each, in queues alike) tie on every tier: created together,
    the name decides — job-a-2, on every run (without the tie-break CP-SAT took job-b-3:
    its search meets equal optima in no fixed order)."""
    jobs = [
        _job("job-a-1", pods=1, cpu=2), _job("job-a-2", pods=2, cpu=1), _job("job-a-3", pods=1, cpu=2),
        _job("job-b-1", pods=1, cpu=2), _job("job-b-2", pods=2, cpu=2),
        *(_job(f"job-b-{i}", pods=2, cpu=1) for i in (3, 4, 5)),
    ]
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=3)], groups=jobs, queues=[make_queue("a"), make_queue("b")])
    assert _started(_solve(snapshot, "greedy")) == ["default/job-a-1"]
    for _ in range(2):
        assert _started(_solve(snapshot, engine)) == ["default/job-a-2"]


@pytest.mark.parametrize("engine", ["cpsat", "auto"])
def test_a_tie_between_shapes_of_one_queue_goes_first_come(engine: str) -> None:
    """4 CPU, a (weight 1) and b (weight 2). In a, job-a-3 (two 1-CPU pods) and job-a-2 with
    job-a-4 (one each) tie on every tier; job-a-2 comes first, so it and job-a-4 start."""
    jobs = [
        _job("job-a-1", pods=1, cpu=2), _job("job-a-2", pods=1, cpu=1), _job("job-a-3", pods=2, cpu=1),
        _job("job-a-4", pods=1, cpu=1), _job("job-b-1", pods=1, cpu=2), _job("job-b-2", pods=2, cpu=1),
        _job("job-b-3", pods=2, cpu=1),
    ]
    snapshot = make_snapshot(
        nodes=[make_node("n1", cpu=4)], groups=jobs, queues=[make_queue("a"), make_queue("b", weight=2)]
    )
    for _ in range(2):
        assert _started(_solve(snapshot, engine)) == ["default/job-a-2", "default/job-a-4", "default/job-b-2"]
