"""The CLI starts without OR-Tools, pandas or SciPy (~0.5 s of imports a greedy-only run,
`--help` or a replay never needs), and CP-SAT's module is loaded by the process that forks
the search, not by each forked child (`solver.engines.Engines.model_search`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("ortools", "pandas", "scipy")

PROBE = """
import json, sys
import batchplace.cli
from solver.place import SolveConfig, place
from tests.builders import make_gang, make_node, make_snapshot

def loaded():
    return sorted(name for name in {heavy!r} if name in sys.modules)

seen = {{"start-up": loaded()}}
snapshot = make_snapshot(
    nodes=[make_node("n1", gpus=8)],
    groups=[make_gang("a-five", gpus=5), make_gang("b-four", gpus=4), make_gang("c-four", gpus=4)],
)
greedy = place(snapshot, SolveConfig(engine="greedy"))
seen["after greedy"] = loaded()
auto = place(snapshot, SolveConfig(engine="auto", time_limit_s=5.0))
seen["after auto"] = loaded()
seen["auto engine"] = auto.engine
print(json.dumps(seen))
"""


def test_start_up_loads_no_solver_library_and_the_first_search_loads_cp_sat_in_this_process() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY)], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["start-up"] == []
    assert seen["after greedy"] == []
    assert "ortools" in seen["after auto"]  # loaded here, before the fork: children share it
    assert seen["auto engine"] == "cpsat"  # the knapsack: greedy's 5 loses to CP-SAT's 4 + 4
