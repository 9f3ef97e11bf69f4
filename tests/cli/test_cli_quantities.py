"""`batchplace solve` on any quantity in any resource field: exit 0 with a checked placement
within the ceiling, else exit 2 with one line naming file, document, object and field —
never a traceback (models.quantity's ceilings)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from typer.testing import CliRunner

from batchplace.cli import app
from models.loaders import load_snapshot_files
from models.placement import Bind, Placement
from solver.checker import check_placement
from tests.quantity_strategies import QuantityCase, quantity_cases

runner = CliRunner()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=quantity_cases())
def test_solve_places_within_the_ceiling_and_names_the_field_above_it(case: QuantityCase, tmp_path: Path) -> None:
    manifest = tmp_path / "cluster.yaml"
    manifest.write_text(case.yaml_text())
    result = runner.invoke(app, ["solve", str(manifest), "--engine", "cpsat", "--time-limit", "5", "--output", "json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    expected = case.expected_amount()
    if result.exit_code == 2:
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"error: {manifest}: document ") and f"({case.field.kind} " in line
        if expected is None or expected < 0 or expected > case.field.ceiling:
            assert f"{case.field.path}: " in line
        return
    assert result.exit_code == 0, result.output
    assert expected is not None and 0 <= expected <= case.field.ceiling
    answer = json.loads(result.stdout)
    snapshot = load_snapshot_files([manifest]).snapshot
    placement = Placement(binds=tuple(Bind(pod=b["pod"], node=b["node"], gpus=tuple(b["gpus"]), numa_cell=b["numa_cell"]) for b in answer["binds"]))
    assert check_placement(snapshot, placement) == ()
