"""`batchplace solve`'s table says when an answer is not reproducible — the wall-clock safety
net cut CP-SAT's search, so another run may answer otherwise (issue 29, item 7); the JSON
says it in `reproducible`."""

from __future__ import annotations

from rich.console import Console

from batchplace.render import decision_tables
from models.placement import Decision, Placement


def _rendered(decision: Decision) -> str:
    console = Console(record=True, width=200)
    console.print(decision_tables(decision))
    return console.export_text()


def test_an_answer_the_safety_net_cut_says_so_in_the_table_and_the_json() -> None:
    cut = Decision(engine="cpsat", status="FEASIBLE", solve_seconds=10.2, placement=Placement(), reproducible=False)
    assert "not reproducible" in _rendered(cut)
    assert cut.to_contract()["reproducible"] is False


def test_a_reproducible_answer_says_nothing_of_it() -> None:
    answer = Decision(engine="cpsat", status="FEASIBLE", solve_seconds=0.9, placement=Placement())
    assert "reproducible" not in _rendered(answer)
    assert answer.to_contract()["reproducible"] is True
