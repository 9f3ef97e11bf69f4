"""`batchplace solve` under a virtual-memory limit inherited from the shell (`ulimit -v`),
as a user whose login sets one runs it (issue 29, item 10): CP-SAT searches under the
limit instead of dying before it starts (`solver.isolation`)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ULIMIT_V_KIB = 3_900_000
"""The issue's `ulimit -v 3900000` (3.72 GiB): below the search's ceiling, the process's
size plus `--solver-memory`'s 4 GiB, far above what a small search needs."""


def _ulimit_v() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ULIMIT_V_KIB * 1024, ULIMIT_V_KIB * 1024))


def test_cp_sat_answers_under_an_inherited_ulimit_v_instead_of_falling_back() -> None:
    """Before: every solve printed "the search process died (crashed): exited with code 71"
    and answered with greedy's placement."""
    done = subprocess.run(
        [
            sys.executable, "-c", "from batchplace.cli import main; main()",
            "solve", "examples/hello-volcano-job.yaml", "--engine", "cpsat", "--output", "json",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=180, check=False, preexec_fn=_ulimit_v,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    decision = json.loads(done.stdout)
    assert decision["fallback"] is None, decision["fallback"]
    assert (decision["engine"], decision["status"]) == ("cpsat", "OPTIMAL")
    assert [bind["node"] for bind in decision["binds"]] != []
    assert "died" not in done.stderr
