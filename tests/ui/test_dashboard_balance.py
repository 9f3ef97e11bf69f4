"""The Balance page: hot nodes and the moves advised to cool them — built from an
`Analysis`, and drawn in a real browser from an uploaded snapshot whose nodes carry usage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from models.snapshot import Snapshot, UsagePolicy
from service.ui.analysis import analyze
from service.ui.balance_view import build_balance_view
from tests.builders import make_gang, make_node, make_running, make_snapshot
from tests.service.service_helpers import LiveServer
from tests.ui.test_dashboard_pages import shoot, upload

Page = Any


def hot_cluster() -> Snapshot:
    """n1 hot (95 % cpu) with three movable pods, n4 hot with only another scheduler's pod."""
    return make_snapshot(
        nodes=[
            make_node("n1", cpu=16, usage={"cpu_percent": 95, "memory_percent": 40}),
            make_node("n2", cpu=32, usage={"cpu_percent": 50, "memory_percent": 30}),
            make_node("n3", cpu=16, usage={"cpu_percent": 20, "memory_percent": 20}),
            make_node("n4", cpu=16, usage={"cpu_percent": 90, "memory_percent": 50}),
            make_node("n5", cpu=16),
        ],
        groups=[make_gang(name, cpu=cpu, running_on=["n1"]) for name, cpu in (("a", 8), ("b", 4), ("c", 4))],
        running=[make_running("daemon", node="n4", cpu=12)],
        usage_policy=UsagePolicy(cpu_threshold_percent=80),
    )


def test_the_view_lists_moves_and_the_node_that_stays_hot_with_its_reason() -> None:
    view = build_balance_view(analyze(hot_cluster(), now_s=0))
    assert view.advice.hot_before == 2 and view.advice.hot_after == 1
    assert [move.from_node for move in view.moves] == ["n1"]
    (uncooled,) = view.uncooled
    assert (uncooled.node, uncooled.reason) == ("n4", "no movable pod: 1 of other schedulers")
    rows = {row.node: row for row in view.rows}
    assert set(rows) == {"n1", "n2", "n3", "n4"}, "n5 reports no usage: not judged, not listed"
    cpu = next(bar for bar in rows["n1"].bars if bar.resource == "cpu")
    assert cpu.over_before and not cpu.over_after and cpu.threshold == 80


@pytest.fixture
def hot_snapshot_file(tmp_path: Path) -> Path:
    path = tmp_path / "hot-cluster.json"
    path.write_text(hot_cluster().model_dump_json())
    return path


def test_balance_page_draws_hot_nodes_and_the_advised_moves(
    page: Page, ui_server: LiveServer, hot_snapshot_file: Path, screenshots: Path
) -> None:
    key = upload(page, ui_server, hot_snapshot_file)
    page.click("nav a[href^='/ui/balance']")
    page.wait_for_url(f"{ui_server.url}/ui/balance?s={key}")
    summary = page.locator("#balance-summary").inner_text()
    assert "2 hot nodes" in summary and "would leave 1 hot" in summary and "evicts nothing" in summary
    moves = page.locator("#balance-moves tbody tr")
    assert moves.count() == 1 and "n1" in moves.first.inner_text()
    assert "no movable pod: 1 of other schedulers" in page.locator("#balance-uncooled").inner_text()
    assert page.locator("#balance-nodes tr.verdict-cooled").count() == 1
    assert page.locator("#balance-nodes tr.verdict-still_hot").count() == 1
    assert page.locator('#balance-nodes tr[data-node="n1"] .ubar[data-resource="cpu"] .mark.cap').count() == 1
    shoot(page, screenshots, "balance")
