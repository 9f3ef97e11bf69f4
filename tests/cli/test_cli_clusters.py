"""`batchplace solve --cluster NAME=FILE …`: the fleet example dispatched, its JSON contract
judged by the checker, and one line (exit 2) for every kind of bad cluster input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from batchplace.cli import app
from batchplace.demo import EXAMPLES_DIR
from models.clusters import merge_clusters
from models.loaders import load_snapshot_files
from models.placement import Bind, Eviction, Placement
from solver.checker import check_placement

runner = CliRunner()
FLEET = EXAMPLES_DIR / "multicluster"
WEST, EAST, JOBS = FLEET / "gpu-west.yaml", FLEET / "gpu-east.yaml", FLEET / "jobs.yaml"


def _solve(*args: str) -> object:
    return runner.invoke(app, ["solve", *args])


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_the_fleet_example_sends_the_job_to_the_cluster_where_it_fits(engine: str) -> None:
    result = _solve(f"--cluster=gpu-west={WEST}", f"--cluster=gpu-east={EAST}", str(JOBS), "--output", "json", "--engine", engine)
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    (dispatch,) = answer["dispatch"]
    assert (dispatch["podgroup"], dispatch["cluster"]) == ("research/llm-pretrain", "gpu-east")
    assert dispatch["reasons"][0] == "gpu-west: 16 gpu short (8 free, 24 to start)"
    assert sorted(b["node"] for b in answer["clusters"]["gpu-east"]["binds"]) == ["east-1", "east-2", "east-3"]
    assert answer["clusters"]["gpu-west"]["binds"] == []
    fleet = merge_clusters(
        {"gpu-west": load_snapshot_files([WEST]).snapshot, "gpu-east": load_snapshot_files([EAST]).snapshot},
        jobs=load_snapshot_files([JOBS]).snapshot,
    )
    placement = Placement(
        binds=tuple(Bind.model_validate(b) for b in answer["binds"]),
        evictions=tuple(Eviction.model_validate(e) for e in answer["evictions"]),
    )
    assert check_placement(fleet.snapshot, placement) == ()


def test_the_table_shows_where_each_job_went() -> None:
    result = _solve("--cluster", f"gpu-west={WEST}", "--cluster", f"gpu-east={EAST}", str(JOBS), "--engine", "greedy")
    assert result.exit_code == 0, result.output
    assert "Dispatch" in result.output and "gpu-east" in result.output


def test_a_cluster_of_several_files_reads_them_all() -> None:
    result = _solve("--cluster", f"gpu-west={WEST},{EAST}", str(JOBS), "--output", "json", "--engine", "greedy")
    assert result.exit_code == 0, result.output
    (dispatch,) = json.loads(result.stdout)["dispatch"]
    assert dispatch["cluster"] == "gpu-west"  # WEST alone has 8 free GPUs; with EAST's nodes the 24 fit


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--cluster", "gpu-west"], "NAME=FILE"),
        (["--cluster", f"gpu-west={WEST}", "--cluster", f"gpu-west={EAST}"], "given twice"),
        (["--cluster", f"Gpu_West={WEST}"], "DNS label"),
        (["--cluster", "gpu-west=no-such-file.yaml"], "no-such-file.yaml"),
        (["--cluster", f"gpu-west={WEST}", str(WEST)], "nodes belong to a cluster"),
    ],
    ids=["no file", "a cluster named twice", "a name that is no DNS label", "a missing file", "nodes among the jobs"],
)
def test_bad_cluster_input_is_one_line_and_exit_2(args: list[str], names: str) -> None:
    result = _solve(*args)
    assert result.exit_code == 2, result.output
    assert names in result.output
    assert "Traceback" not in result.output


def test_a_queue_declared_differently_in_a_cluster_names_the_cluster_and_field(tmp_path: Path) -> None:
    other = tmp_path / "east.yaml"
    other.write_text(EAST.read_text() + "\n---" + JOBS.read_text().split("---")[1].replace('"48"', '"8"'))
    result = _solve("--cluster", f"gpu-west={WEST}", "--cluster", f"gpu-east={other}", str(JOBS))
    assert result.exit_code == 2, result.output
    line = result.output.replace("\n", "")
    assert "clusters.gpu-east" in line and "queues.ml.capability" in line


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--cluster", "gpu-west=w.kubeconfig"], "needs --manager-kubeconfig"),
        (["--manager-kubeconfig", "m.kubeconfig"], "at least one --cluster"),
        (["--manager-kubeconfig", "m.kubeconfig", "--cluster", "gpu-west"], "NAME=KUBECONFIG"),
        (["--manager-kubeconfig", "m.kubeconfig", "--cluster", "a=x", "--cluster", "a=y"], "given twice"),
        (["--manager-kubeconfig", "m.kubeconfig", "--cluster", "Gpu_West=x"], "DNS label"),
        (["--manager-kubeconfig", "no-such.kubeconfig", "--cluster", "gpu-west=no-such.kubeconfig"], "cannot load"),
    ],
    ids=["a worker without a manager", "a manager without workers", "no kubeconfig", "a worker named twice",
         "a name that is no DNS label", "a missing kubeconfig"],
)
def test_bad_manager_options_are_one_line_and_exit_2(args: list[str], names: str) -> None:
    result = runner.invoke(app, ["controller", "--no-leader-elect", "--log-format", "text", *args])
    assert result.exit_code == 2, result.output
    assert names in result.output
    assert "Traceback" not in result.output
