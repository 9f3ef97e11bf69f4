"""`python -m experiments.scaling`: each sweep moves one axis and holds the others, every
point is solved by every engine asked, and the table, CSV and plot are written; bad
arguments are one line naming the flag."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from experiments.scaling import main, run_scaling, sweep_points


def test_each_sweep_moves_its_own_axis_and_holds_the_others() -> None:
    points = sweep_points([40, 80], [0.2, 0.6], [4, 8], base_nodes=60, seed=3)
    runs = run_scaling(points, ["greedy", "auto"])
    assert len(runs) == len(points) * 2
    greedy = [run for run in runs if run.engine == "greedy"]
    by_axis = {axis: [run for run in greedy if run.axis == axis] for axis in ("nodes", "running pods", "pending pods")}
    assert [run.nodes for run in by_axis["nodes"]] == [40, 80]
    assert by_axis["running pods"][0].running_pods < by_axis["running pods"][1].running_pods  # more GPU milli running
    assert {run.nodes for run in by_axis["running pods"]} == {60}
    assert [run.pending_pods for run in by_axis["pending pods"]] == [4, 8]
    assert {run.preload for run in by_axis["pending pods"]} == {0.5}
    assert all(run.answered_by.startswith(("greedy:", "cpsat:")) and run.wall_seconds > 0 for run in runs)
    assert any(run.gpus_placed > 0 for run in runs)


def test_main_writes_the_csv_and_the_plot(tmp_path: Path) -> None:
    args = ["--nodes", "30", "--preloads", "0.4", "--pending", "5", "--base-nodes", "30", "--engines", "greedy"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    with (tmp_path / "scaling.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [row["axis"] for row in rows] == ["nodes", "running pods", "pending pods"]
    assert (tmp_path / "scaling.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--engines", "fast"], "--engines: unknown fast"),
        (["--preloads", "1.5"], "--preloads"),
        (["--nodes", "0"], "at least 1"),
    ],
)
def test_bad_arguments_name_the_flag(args: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    assert said in capsys.readouterr().err
