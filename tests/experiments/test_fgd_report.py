"""The FGD report carries the offline bound: per seed in the CSVs, its mean and each
policy's distance to it in the table, and back from the CSVs unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.fgd import FgdConfig, run_fgd
from experiments.fgd_report import bounds_table, markdown_table, summaries_from_csv, summarize, write_bounds_csv, write_curves_csv, write_runs_csv
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
