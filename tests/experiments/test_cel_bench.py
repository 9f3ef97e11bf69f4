"""experiments.cel_bench runs end to end: both CEL libraries agree on every selector and the
CSV holds one row per selector with positive times."""

from __future__ import annotations

import csv

from experiments import cel_bench


def test_the_bench_writes_one_row_per_selector_with_both_libraries_timed(tmp_path, capsys):
    cel_bench.main(["--iterations", "3", "--repeats", "1", "--output-dir", str(tmp_path)])
    with (tmp_path / "cel_bench.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [row["selector"] for row in rows] == list(cel_bench.SELECTORS)
    for row in rows:
        for column in ("rust_compile_us", "celpy_compile_us", "rust_evaluate_us", "celpy_evaluate_us"):
            assert float(row[column]) > 0
    assert "evaluate_speedup" in capsys.readouterr().out
