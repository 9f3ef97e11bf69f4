"""Gang semantics as Volcano's: a PodGroup whose `min_member` is below the sum of its tasks'
minimums starts on `min_member` pods of any task, then takes every further pod that fits.

Every engine's placement is judged by the checker. The seed job is the literal one of
`examples/gang-min-available-4.yaml`: Volcano's quick-start vcjob, 20 replicas × 4 CPU,
`minAvailable: 4`, so its task minimum (its replicas, 20) is above the job's 4.
"""

from __future__ import annotations

from collections import Counter

import pytest

from batchplace.demo import EXAMPLES_DIR
from models.loaders import load_snapshot_files
from models.placement import Decision, PodGroupOutcome
from models.snapshot import Snapshot
from solver import reasons
from solver.place import ENGINES
from solver.rules.gang import gang_requirement
from tests.builders import make_gang, make_node, make_snapshot, make_task, solve_checked


def _outcome(decision: Decision, name: str) -> PodGroupOutcome:
    return next(o for o in decision.podgroups if o.name == name)


def _seed_job_on(cluster_example: str) -> Snapshot:
    """The seed job of gang-min-available-4.yaml on the nodes of `cluster_example`."""
    job = load_snapshot_files([EXAMPLES_DIR / "gang-min-available-4.yaml"]).snapshot
    nodes = load_snapshot_files([EXAMPLES_DIR / cluster_example]).snapshot.nodes
    return Snapshot(nodes=nodes, queues=job.queues, pod_groups=job.pod_groups, pods=job.pods)


def test_the_seed_job_keeps_min_member_only() -> None:
    snapshot = load_snapshot_files([EXAMPLES_DIR / "gang-min-available-4.yaml"]).snapshot
    (group,) = snapshot.pod_groups
    assert (group.min_member, [t.min_available for t in group.tasks], len(snapshot.pods)) == (4, [20], 20)
    requirement = gang_requirement(snapshot, group)
    assert not requirement.task_minimums_apply and requirement.min_member == 4


@pytest.mark.parametrize("engine", ENGINES)
def test_the_seed_job_on_four_8_cpu_nodes_binds_8_pods(engine: str) -> None:
    snapshot = load_snapshot_files([EXAMPLES_DIR / "gang-min-available-4.yaml"]).snapshot
    decision = solve_checked(snapshot, engine)
    outcome = _outcome(decision, "default/gang-job")
    assert (outcome.state, outcome.placed, outcome.reasons) == ("scheduled", 8, ())
    assert Counter(bind.node for bind in decision.placement.binds) == {f"cpu-node-{i}": 2 for i in range(4)}


@pytest.mark.parametrize("engine", ENGINES)
def test_the_seed_job_where_only_3_pods_fit_stays_pending_with_the_gang_reason(engine: str) -> None:
    """Three 4-CPU nodes: 3 of min 4 fit, so nothing is bound."""
    snapshot = _seed_job_on("gang-min-available-20.yaml")
    decision = solve_checked(snapshot, engine)
    outcome = _outcome(decision, "default/gang-job")
    assert (outcome.state, outcome.placed, decision.placement.binds) == ("pending", 0, ())
    assert outcome.reasons[0] == reasons.gang_shortfall(placed=3, minimum=4, needs={"cpu": 16000}, free={"cpu": 12000})
    assert outcome.reasons[0] == "gang: 3 of min 4 pods fit (needs 16 cpu, 12 cpu free)"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_started_gang_takes_every_further_pod_that_fits(engine: str) -> None:
    """min 2 of 10 one-CPU pods on 3 + 2 CPU: the gang starts and takes all 5 CPUs."""
    job = make_gang("job", replicas=10, cpu=1, min_member=2)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=3), make_node("n2", cpu=2)], groups=[job])
    outcome = _outcome(solve_checked(snapshot, engine), "default/job")
    assert (outcome.state, outcome.placed) == ("scheduled", 5)


@pytest.mark.parametrize("engine", ENGINES)
def test_below_the_task_sum_a_task_that_fits_nowhere_does_not_block_the_gang(engine: str) -> None:
    """ps (4 CPU, fits nowhere) + 6 one-CPU workers, min_member 3 < 1 + 6: 3 workers start."""
    job = make_gang("job", tasks=[make_task("ps", replicas=1, cpu=4), make_task("worker", replicas=6)], min_member=3)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=3)], groups=[job])
    decision = solve_checked(snapshot, engine)
    outcome = _outcome(decision, "default/job")
    assert (outcome.state, outcome.placed) == ("scheduled", 3)
    assert {snapshot.pod_by_key[bind.pod].task for bind in decision.placement.binds} == {"worker"}


@pytest.mark.parametrize("engine", ENGINES)
def test_with_task_minimums_applying_a_task_that_fits_nowhere_blocks_the_gang(engine: str) -> None:
    """The same job with the workers' minimum at 2, so min_member 3 = 1 + 2: ps must be placed, and cannot be."""
    job = make_gang(
        "job",
        tasks=[make_task("ps", replicas=1, cpu=4), make_task("worker", replicas=6, min_available=2)],
        min_member=3,
    )
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=3)], groups=[job])
    outcome = _outcome(solve_checked(snapshot, engine), "default/job")
    assert (outcome.state, outcome.placed) == ("pending", 0)


@pytest.mark.parametrize("engine", ENGINES)
def test_with_task_minimums_applying_each_task_gets_its_minimum_then_extras(engine: str) -> None:
    """ps 1 (2 CPU) + worker min 2 of 6, min_member 3 = their sum: ps is placed, then workers fill 5 CPUs."""
    job = make_gang(
        "job",
        tasks=[make_task("ps", replicas=1, cpu=2), make_task("worker", replicas=6, min_available=2)],
        min_member=3,
    )
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=5)], groups=[job])
    decision = solve_checked(snapshot, engine)
    tasks = Counter(snapshot.pod_by_key[bind.pod].task for bind in decision.placement.binds)
    assert tasks == {"ps": 1, "worker": 3}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_victim_gang_below_its_task_sum_keeps_min_member_only(engine: str) -> None:
    """The victim runs 4 pods of a task of minimum 4 with min_member 2: the task minimum never
    applied, so 2 of its pods may go for a higher-priority gang and it keeps its gang of 2."""
    victim = make_gang("victim", replicas=4, cpu=1, min_member=2, running_on=["n1"] * 4)
    job = make_gang("job", replicas=2, cpu=1, priority=9)
    snapshot = make_snapshot(nodes=[make_node("n1", cpu=4)], groups=[victim, job])
    decision = solve_checked(snapshot, engine)
    assert len(decision.placement.evictions) == 2 and len(decision.placement.binds) == 2
    kept = _outcome(decision, "default/victim")
    assert (kept.state, kept.placed) == ("scheduled", 2)
