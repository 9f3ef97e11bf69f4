"""`experiments.service_bench` without a server: its scenarios are the sizes its docstring
names, and its report writes CSV, Markdown and PNG from results."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from experiments.service_bench import BenchConfig, ScenarioResult, build_scenarios, markdown_table, write_report


def test_scenarios_are_a_small_and_a_thousand_node_snapshot_and_a_what_if() -> None:
    scenarios = build_scenarios(BenchConfig())
    assert [(s.name, s.path, s.nodes) for s in scenarios] == [
        ("small", "/v1/placements", 16),
        ("1k-nodes", "/v1/placements", 1_000),
        ("what-if-1k", "/v1/what-if", 1_000),
    ]
    assert len(json.loads(scenarios[1].body)["nodes"]) == 1_000
    assert json.loads(scenarios[2].body)["changes"]["add_jobs"][0]["kind"] == "Job"


def test_report_writes_csv_markdown_and_png(tmp_path: Path) -> None:
    result = ScenarioResult(
        scenario="small", nodes=16, pending_pods=16, body_bytes=2048, concurrency=1, requests=10, ok=10, non_200=0,
        seconds=0.1, requests_per_s=100.0, p50_ms=9.0, p90_ms=10.0, p99_ms=12.0, max_ms=13.0,
    )
    out = write_report([result], BenchConfig(output_dir=tmp_path))
    rows = list(csv.DictReader((out / "service_bench.csv").open()))
    assert rows[0]["scenario"] == "small" and rows[0]["p99_ms"] == "12.0"
    assert "| small | 16 | 2 KiB | 1 | 10 | 0 | 100.0 | 9.0 | 12.0 |" in markdown_table([result])
    assert (out / "service_bench.png").stat().st_size > 0
