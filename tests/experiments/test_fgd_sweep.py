"""A sweep of one configuration runs in this process whatever `jobs` says: a worker pool of
one would only add a new interpreter's start-up (importing the solver, reading the trace),
about a second of the FGD k = 1 command's time."""

from __future__ import annotations

from pathlib import Path

from experiments import fgd
from experiments.fgd import FgdConfig, run_sweep
from tests.experiments._openb_builders import write_tiny_trace


def test_one_configuration_runs_here_even_with_two_jobs(tmp_path: Path) -> None:
    write_tiny_trace(tmp_path)
    runs = list(run_sweep([FgdConfig(policy="bestfit", seed=42)], trace_dir=tmp_path, jobs=2))
    assert [run.config.policy for run in runs] == ["bestfit"] and runs[0].placed > 0
    assert tmp_path in fgd._NODES  # the trace was read by this process, not by a pool worker


def test_partition_parts_reach_the_solver_of_batchplace_s_cpsat_policies(tmp_path: Path) -> None:
    """`--partition-parts` on the FGD protocol: every batch of `auto` is solved in parts (or,
    when no part searched, answered by their greedy placements), each checked by `place()`
    on the batch's whole snapshot, and the run places pods as the whole solve does."""
    write_tiny_trace(tmp_path)
    (parted,) = run_sweep([FgdConfig(policy="auto", seed=42, batch_size=8, partition_parts=2)], trace_dir=tmp_path, jobs=1)
    (whole,) = run_sweep([FgdConfig(policy="auto", seed=42, batch_size=8)], trace_dir=tmp_path, jobs=1)
    assert parted.answers is not None and whole.answers is not None
    engines = {key.split(":")[0] for key in parted.answers.answered_by}
    assert "cpsat-partitioned" in engines and engines <= {"cpsat-partitioned", "greedy"}
    assert not any(key.startswith("cpsat-partitioned") for key in whole.answers.answered_by)
    assert parted.answers.batches == whole.answers.batches and parted.placed > 0
