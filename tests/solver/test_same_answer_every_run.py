"""The same input gives the same answer every run, whatever the machine's load (issue 29,
item 7): `auto`, as shipped, solves varied snapshots five times each while two other
processes keep the cores busy, and every run's binds, evictions, statuses and reasons are
the same. By the wall clock they were not: the openb batch came back as CP-SAT's answer
or as greedy's fallback depending on the time slice the search got.

Also: the wall-clock safety net, the one way an answer may still depend on the machine,
says so when it fires (`Decision.reproducible`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from experiments.synthetic_tight import tight_snapshot
from models.loaders.kube_yaml import load_snapshot_files
from models.placement import Decision
from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.cpsat import CpsatConfig
from solver.place import SolveConfig, place
from solver.problem import build_problem
from solver.greedy import GreedyConfig, solve_greedy
from solver.objective import ObjectiveContext
from tests.regression_inputs import EXAMPLES_DIR, openb_last_batch

RUNS = 5
BUSY_PROCESSES = 2


@pytest.fixture(scope="module")
def busy_cores() -> Iterator[None]:
    """Two processes spinning for the module's duration: the searches get a share of the
    cores that changes from moment to moment."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(BUSY_PROCESSES)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def _example(name: str) -> Snapshot:
    return load_snapshot_files([EXAMPLES_DIR / name]).snapshot


def _answer(decision: Decision) -> str:
    """What must not change between runs: the contract without the seconds it took."""
    contract = decision.to_contract()
    del contract["solve_seconds"]
    return json.dumps(contract, sort_keys=True)


SAFETY_NET_S = 120.0
"""The default net (10 time limits) holds on a quiet machine with the two spinners; this test
also runs beside other suites on shared cores, where a search may get a tenth of a core.
The net firing is the one exception to the rule tested here, so it gets room, and the test
still fails if it fires."""

CASES = {
    # the seed's examples, at the CLI's default time limit
    "hello-volcano-job": (lambda: _example("hello-volcano-job.yaml"), SolveConfig(safety_net_s=SAFETY_NET_S)),
    "gang-min-available-20": (lambda: _example("gang-min-available-20.yaml"), SolveConfig(safety_net_s=SAFETY_NET_S)),
    "gpu-topology": (lambda: _example("gpu-topology.yaml"), SolveConfig(safety_net_s=SAFETY_NET_S)),
    "queue-weights": (lambda: _example("queue-weights.yaml"), SolveConfig(safety_net_s=SAFETY_NET_S)),
    # a batch of the openb trace's FGD replay (1,213 nodes): searched to its limit, not proven
    "openb-last-batch": (openb_last_batch, SolveConfig(time_limit_s=0.5, safety_net_s=SAFETY_NET_S)),
    # a synthetic cluster cut to fit its pending gangs exactly: searched to its limit too
    "tight-100x100": (
        lambda: tight_snapshot(nodes=100, pending_pods=100, seed=3),
        SolveConfig(time_limit_s=0.5, safety_net_s=SAFETY_NET_S),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_default_engine_answers_the_same_every_run_under_load(case: str, busy_cores: None) -> None:
    make, config = CASES[case]
    snapshot = make()
    decisions = [place(snapshot, config) for _ in range(RUNS)]
    for decision in decisions:
        assert decision.reproducible, f"{case}: the safety net fired ({decision.solve_seconds:.1f} s)"
        assert not check_placement(snapshot, decision.placement)
    answers = [_answer(decision) for decision in decisions]
    assert answers == [answers[0]] * RUNS, f"{case}: {len(set(answers))} different answers in {RUNS} runs"


def test_a_search_the_safety_net_stops_says_so() -> None:
    """A deterministic budget far beyond the wall-clock deadline: the search stops at the
    deadline, and the result says the wall clock decided."""
    from solver.cpsat.engine import solve_cpsat

    snapshot = openb_last_batch()
    problem = build_problem(snapshot)
    greedy = solve_greedy(snapshot, problem=problem, config=GreedyConfig())
    started = time.perf_counter()
    result = solve_cpsat(
        snapshot,
        problem=problem,
        context=ObjectiveContext.of(snapshot, ()),
        config=CpsatConfig(search_s=1000.0),
        deadline=started + 1.0,
        hint=greedy.placement,
    )
    assert time.perf_counter() - started < 10.0
    assert result.wall_clock_cut


def test_a_decision_the_safety_net_cut_is_not_reproducible() -> None:
    """The same, through `place()`: a safety net far shorter than the time limit stops the
    search long before its deterministic budget on the openb batch."""
    snapshot = openb_last_batch()
    decision = place(snapshot, SolveConfig(time_limit_s=30.0, safety_net_s=2.0))
    assert not decision.reproducible
    assert decision.to_contract()["reproducible"] is False
    assert not check_placement(snapshot, decision.placement)


def test_a_safety_net_must_be_positive() -> None:
    with pytest.raises(ValueError, match="safety_net_s"):
        SolveConfig(safety_net_s=0.0)


def test_the_wall_clock_search_is_never_called_reproducible() -> None:
    decision = place(openb_last_batch(), SolveConfig(time_limit_s=1.0, deterministic=False))
    assert not decision.reproducible
