"""`batchplace solve` on inputs that once killed it (see `tests/regression_inputs.py`), as a
user runs it: a separate process per engine, exit 0, every pending pod bound, and the peak
memory of the command and its CP-SAT child under 1 GB."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from solver.place import ENGINES
from tests.regression_inputs import BEST_EFFORT_REPLICAS, OPENB_PENDING, best_effort_job_text, openb_last_batch_text

GB = 10**9

# Runs the CLI in this interpreter, then reports the peak resident size of the process and of
# its children (the CP-SAT search) — `ru_maxrss` is in KiB on Linux.
_MEASURED_CLI = """
import json, resource, sys
from batchplace.cli import main
sys.argv = ["batchplace", *sys.argv[1:]]
try:
    main()
finally:
    peak = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    with open(REPORT, "w") as report:
        report.write(json.dumps({"peak_bytes": peak * 1024}))
"""


def _solve(tmp_path: Path, text: str, engine: str) -> tuple[dict, int]:  # type: ignore[type-arg]
    source = tmp_path / "input.yaml"
    source.write_text(text, encoding="utf-8")
    report = tmp_path / f"peak-{engine}.json"
    script = _MEASURED_CLI.replace("REPORT", repr(str(report)))
    done = subprocess.run(
        [sys.executable, "-c", script, "solve", str(source), "--engine", engine, "--time-limit", "5", "--output", "json"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout), json.loads(report.read_text())["peak_bytes"]


@pytest.mark.parametrize("engine", ENGINES)
def test_solve_places_the_openb_last_batch_under_1_gb(tmp_path: Path, engine: str) -> None:
    answer, peak_bytes = _solve(tmp_path, openb_last_batch_text(), engine)
    assert len(answer["binds"]) == OPENB_PENDING
    assert peak_bytes < GB, f"{peak_bytes / GB:.2f} GB"


@pytest.mark.parametrize("engine", ENGINES)
def test_solve_places_a_best_effort_job_under_1_gb(tmp_path: Path, engine: str) -> None:
    answer, peak_bytes = _solve(tmp_path, best_effort_job_text(), engine)
    assert len(answer["binds"]) == BEST_EFFORT_REPLICAS
    assert peak_bytes < GB, f"{peak_bytes / GB:.2f} GB"
