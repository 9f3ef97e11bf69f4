"""The FGD report carries the offline bound: per seed in the CSVs, its mean and each
policy's distance to it in the table, and back from the CSVs unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.fgd import FgdConfig, run_fgd
from experiments.fgd_report import answers_table, bounds_table, markdown_table, summaries_from_csv, summarize, write_bounds_csv, write_curves_csv, write_runs_csv
from experiments.offline_bound import seed_bound
from tests.experiments._openb_builders import make_nodes, make_pods


def test_the_table_shows_the_mean_bound_over_the_policys_seeds_and_the_csvs_keep_it(tmp_path: Path) -> None:
    nodes = make_nodes((32000, 4, "T4"), (16000, 2, "P100"))
    pods = make_pods((4000, 1, 1000), (2000, 1, 500), (8000, 0, 0), (4000, 2, 1000), (2000, 1, 250))
    runs = [run_fgd(FgdConfig(policy="fgd", seed=seed), nodes=nodes, pods=pods) for seed in (42, 43)]
    bounds = {("default", seed): seed_bound(nodes, pods, seed=seed) for seed in (42, 43)}
    [summary] = summarize(runs, bounds=bounds)
    assert summary.bound_mean == pytest.approx((bounds["default", 42].bound_pct + bounds["default", 43].bound_pct) / 2)
    assert "| offline bound | below bound |" in markdown_table([summary])
    assert f"| default | mean of 2 | {summary.bound_mean:.2f} |" in bounds_table(bounds)

    write_runs_csv(runs, tmp_path / "runs.csv", bounds=bounds)
    write_curves_csv(runs, tmp_path / "curves.csv")
    write_bounds_csv(bounds, tmp_path / "bounds.csv", tmp_path / "bound_shapes.csv")
    [again] = summaries_from_csv(tmp_path / "runs.csv", tmp_path / "curves.csv")
    assert again.bound_mean == pytest.approx(summary.bound_mean, abs=1e-3)
    assert (tmp_path / "bounds.csv").read_text().splitlines()[0] == "trace,seed,bound_pct,bound_milli,capacity_milli,method,solve_s"


def test_without_bounds_the_columns_stay_empty() -> None:
    nodes = make_nodes((32000, 4, "T4"))
    pods = make_pods((4000, 1, 1000), (2000, 1, 500))
    [summary] = summarize([run_fgd(FgdConfig(policy="fgd", seed=42), nodes=nodes, pods=pods)])
    assert summary.bound_mean is None
    assert markdown_table([summary]).splitlines()[-1].count("|  |  |") == 1


def test_an_auto_run_reports_who_answered_every_batch_and_how_it_compared_with_greedy() -> None:
    nodes = make_nodes((32000, 4, "T4"), (16000, 2, "P100"))
    pods = make_pods((4000, 1, 1000), (2000, 1, 500), (8000, 0, 0), (4000, 2, 1000), (2000, 1, 250))
    run = run_fgd(FgdConfig(policy="auto", seed=42, batch_size=4, time_limit_s=0.5), nodes=nodes, pods=pods)
    answers = run.answers
    assert answers is not None
    assert answers.batches == run.solve_seconds.size == len(answers.place_seconds)
    cpsat = sum(n for key, n in answers.answered_by.items() if key.startswith("cpsat:"))
    assert cpsat + sum(n for key, n in answers.answered_by.items() if key.startswith("greedy:")) == answers.batches
    assert answers.beat_greedy + answers.behind_greedy <= cpsat
    [row] = answers_table([run]).splitlines()[2:]
    assert row.startswith(f"| default | batchplace auto (default) | 4 | 42 | {answers.batches} | {cpsat} (")
    greedy_run = run_fgd(FgdConfig(policy="greedy", seed=42, batch_size=4), nodes=nodes, pods=pods)
    assert greedy_run.answers is not None and set(greedy_run.answers.answered_by) == {"greedy:GREEDY"}
    assert answers_table([greedy_run]) == ""  # greedy alone: nothing to compare
