"""Every rule of `solver.rules.RULES` has its docs page, written from its docstring, and its
test file; a rule appended to `RULES` gets a page and a nav entry with no docs edit (issue
31, item 5). The third leg, the PodGroup condition each rule's reasons are reported under,
is `tests/controller/test_controller_pure.py`'s walk over `RULES`."""

from __future__ import annotations

import inspect
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from solver.rules import RULES

REPO_ROOT = Path(__file__).resolve().parents[2]
RULE_TESTS = REPO_ROOT / "tests" / "solver" / "rules"


def _words(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.NAME)
def test_each_rule_has_a_page_written_from_its_docstring(hooks: ModuleType, rule: ModuleType) -> None:
    pages = hooks.rule_pages()
    page = pages[f"rules/{rule.NAME}.md"]
    assert page.startswith(f"# {rule.NAME}\n")
    # every paragraph of the docstring is on the page, word for word (the generator only adds
    # blank lines before lists, which this comparison ignores)
    assert " ".join(_words(inspect.cleandoc(rule.__doc__))) in " ".join(_words(page))
    assert f"`{rule.__name__.replace('.', '/')}.py`" in page


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.NAME)
def test_each_rule_has_its_test_file(rule: ModuleType) -> None:
    """The convention every rule keeps: `tests/solver/rules/test_rule_<NAME>.py` (more files
    may test a rule, e.g. test_rule_reservation_backfill.py; this one must exist)."""
    assert (RULE_TESTS / f"test_rule_{rule.NAME}.py").is_file(), f"rule {rule.NAME} has no tests/solver/rules/test_rule_{rule.NAME}.py"


def test_the_pages_are_exactly_the_rules(hooks: ModuleType) -> None:
    assert list(hooks.rule_pages()) == [f"rules/{rule.NAME}.md" for rule in RULES]


def _rule(name: str, doc: str | None) -> ModuleType:
    module = ModuleType(f"solver.rules.{name}", doc)
    module.NAME = name  # type: ignore[attr-defined]
    return module


def test_a_rule_without_a_docstring_stops_the_pages(hooks: ModuleType) -> None:
    with pytest.raises(hooks.RuleDocError, match=r"solver.rules.hostports: rule 'hostports' has no docstring"):
        hooks.rule_pages((*RULES, _rule("hostports", None)))


def test_a_rule_appended_to_rules_gets_its_page_its_row_and_its_nav_entry(hooks: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = """Host ports: two pods asking the same port cannot share a node.

    Worked example: a pod asking hostPort 8080/TCP on n1, where one runs → a violation.
    - a list item right under a line
    """
    appended = (*RULES, _rule("hostports", doc))
    monkeypatch.setattr(hooks, "_rules", lambda: appended)
    page = hooks.rule_pages()["rules/hostports.md"]
    assert page.startswith("# hostports\n\nHost ports: two pods asking the same port cannot share a node.\n")
    assert "a violation.\n\n- a list item" in page  # the list gets the blank line Markdown needs
    assert f"position {len(appended)} in `solver.rules.RULES`" in page
    assert "| [`hostports`](hostports.md) | Host ports: two pods asking the same port cannot share a node. |" in hooks.rules_table()
    config: dict[str, Any] = {"nav": [{"Home": "index.md"}, {"Rules": [{"Overview": "rules/index.md"}]}]}
    hooks.on_config(config)
    assert config["nav"][1]["Rules"] == [{"Overview": "rules/index.md"}, *({rule.NAME: f"rules/{rule.NAME}.md"} for rule in appended)]


def test_mkdocs_yml_lists_no_rule_page_by_hand() -> None:
    """The nav's rule entries come from the hook alone, so none can go stale in mkdocs.yml."""
    text = (REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "  - Rules:\n      - Overview: rules/index.md\n  - " in text
