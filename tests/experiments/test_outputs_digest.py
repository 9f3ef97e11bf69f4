"""The outputs digest on a tiny set of cases: two runs of the same code give the same
files, `--compare` says so, and it names the field when one bind moves — so a refactor
that moves a pod cannot pass it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from experiments.outputs_digest import CONFORMANCE_DIR, canonical_json, first_difference, main
from tests.experiments._openb_builders import write_tiny_trace

CONFORMANCE_CASE = "volcano/preempt_test/preempt-low-priority-job-in-same-queue.yaml"
TINY = ["--bench-sizes", "20x10", "--bench-repeats", "1", "--engines", "greedy,auto"]
TINY_FGD = ["--fgd-seeds", "42", "--fgd-policies", "greedy,auto", "--fgd-batch-size", "16", "--fgd-model-batches", "2"]
CASES = [
    "bench/20x10/r0/auto", "bench/20x10/r0/greedy", "conformance/preempt/auto", "conformance/preempt/greedy",
    "fgd/default/auto/k16/seed42-first2", "fgd/default/greedy/k16/seed42",
]  # fmt: skip


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same tiny cases written twice: a bench snapshot and a conformance case with an
    eviction, each through greedy and auto, and the FGD replay of a 60-pod trace."""
    cases, trace = tmp_path_factory.mktemp("conformance"), tmp_path_factory.mktemp("trace")
    write_tiny_trace(trace)
    (cases / "preempt.yaml").write_text((CONFORMANCE_DIR / CONFORMANCE_CASE).read_text(encoding="utf-8"), encoding="utf-8")
    first, second = tmp_path_factory.mktemp("first"), tmp_path_factory.mktemp("second")
    for out in (first, second):
        assert main([*TINY, *TINY_FGD, "--trace-dir", str(trace), "--conformance-dir", str(cases), "--out", str(out)]) == 0
    return first, second


def _digest(folder: Path) -> dict[str, str]:
    return dict(line.split("\t") for line in (folder / "digest.tsv").read_text(encoding="utf-8").splitlines())


def test_two_runs_of_the_same_code_give_the_same_digest(two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    first, second = two_runs
    digest = _digest(first)
    assert sorted(digest) == CASES
    assert digest == _digest(second)
    assert main(["--compare", str(first), str(second)]) == 0
    assert "6 of 6 cases identical, 0 differ" in capsys.readouterr().out


def test_a_case_records_binds_evictions_and_reasons_but_no_seconds(two_runs: tuple[Path, Path]) -> None:
    record = json.loads((two_runs[0] / "cases" / "conformance__preempt__greedy.json").read_text(encoding="utf-8"))
    assert record["binds"] and record["evictions"], record
    assert {"pod", "node", "gpus", "numa_cell"} == set(record["binds"][0])
    assert "solve_seconds" not in record
    assert {"engine", "status", "fallback", "reproducible", "podgroups", "queues", "input_sha256"} <= set(record)


def test_an_fgd_case_records_each_arrival_of_each_solved_batch(two_runs: tuple[Path, Path]) -> None:
    """The tiny trace tuned to 130 % is 49 arrivals: at k = 16 four batches; auto solves its
    first 2 and turns the rest away."""
    folder = two_runs[0] / "cases"
    greedy = json.loads((folder / "fgd__default__greedy__k16__seed42.json").read_text(encoding="utf-8"))
    auto = json.loads((folder / "fgd__default__auto__k16__seed42-first2.json").read_text(encoding="utf-8"))
    assert greedy["pods"] == 49
    assert [len(step) for step in greedy["steps"]] == [16, 16, 16, 1]
    assert [len(step) for step in auto["steps"]] == [16, 16]
    placed = [arrival for step in greedy["steps"] for arrival in step if arrival is not None]
    assert len(placed) == greedy["placed"] > 0
    assert all(isinstance(node, str) and isinstance(devices, list) for node, devices in placed)
    assert auto["placed"] <= 32 and len(auto["allocated_milli"]) == 4
    assert {"alloc_at_130_pct", "frag_at_130_pct", "final_alloc_pct"} <= set(greedy["results_row"])


def test_compare_names_the_field_of_a_moved_bind(two_runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, _ = two_runs
    after = tmp_path / "after"
    shutil.copytree(first, after)
    moved = after / "cases" / "bench__20x10__r0__greedy.json"
    record = json.loads(moved.read_text(encoding="utf-8"))
    record["binds"][1]["node"] = "elsewhere"
    moved.write_text(canonical_json(record), encoding="utf-8")  # digest.tsv left as it was
    assert main(["--compare", str(first), str(after)]) == 1
    out = capsys.readouterr().out
    assert 'DIFFERS bench/20x10/r0/greedy: first at binds[1].node:' in out
    assert '"elsewhere" (after)' in out
    assert "5 of 6 cases identical, 1 differ" in out


def test_compare_counts_a_case_missing_on_one_side(two_runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, _ = two_runs
    after = tmp_path / "after"
    shutil.copytree(first, after)
    digest = after / "digest.tsv"
    digest.write_text("".join(line + "\n" for line in digest.read_text(encoding="utf-8").splitlines()[1:]), encoding="utf-8")
    assert main(["--compare", str(first), str(after)]) == 1
    assert "DIFFERS bench/20x10/r0/greedy: first at (case): present (before) vs absent (not run) (after)" in capsys.readouterr().out


def test_first_difference_walks_keys_then_lists() -> None:
    before = {"binds": [{"node": "n1", "gpus": [0, 1]}], "status": "OPTIMAL"}
    assert first_difference(before, before) is None
    assert first_difference(before, {**before, "binds": [{"node": "n1", "gpus": [0, 2]}]}) == ("binds[0].gpus[1]", "1", "2")
    assert first_difference(before, {**before, "binds": []}) == ("binds (length)", "1", "0")
    assert first_difference({"gap": 0}, {"gap": 0.0}) == ("gap", "0", "0.0")


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["--fgd-seeds", "4x"], "--fgd-seeds"),
        (["--fgd-policies", "fgd"], "--fgd-policies"),
        (["--conformance-dir", "no-such-folder", "--fgd-seeds", ""], "no-such-folder"),
        (["--compare", "no-such-before", "no-such-after"], "no-such-before"),
    ],
    ids=["seeds that are not numbers", "a policy that is not batchplace's", "a folder without cases", "a folder without a digest"],
)
def test_bad_arguments_exit_2_naming_the_option(arguments: list[str], named: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*arguments, "--list"]) == 2
    assert named in capsys.readouterr().err
