"""Every `batchplace …` command the README and the docs show exists: its subcommand path
answers `--help`, and every `--flag` shown with it is one of its options (issue 31, item 5:
a test, not a promise). Commands are read from code blocks (fenced or indented) and inline
code spans of README.md, docs/**/*.md and the rule pages the docs hook writes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from batchplace.cli import app

REPO_ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1", re.S | re.M)
SPAN = re.compile(r"(?<!`)`([^`]+?)`(?!`)")
INDENTED = re.compile(r"^(?: {4,}|\t)((?:\$ |\S*/)?batchplace .*)$", re.M)  # an indented code block's command line
# `batchplace` as a command: at the start, after a blank, `$ ` or a path (.venv/bin/), and
# followed by an argument — not batchplace.io/…, batchplace:dev, batchplace-system, batchplace_…
COMMAND = re.compile(r"(?:(?<=^)|(?<=[\s/$]))batchplace(?=[ \t]+\S)")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


@dataclass(frozen=True)
class Shown:
    where: str
    text: str  # from `batchplace` to the end of the command

    @property
    def words(self) -> list[str]:
        return self.text.split()[1:]


def _end_of_command(text: str) -> str:
    """Cut at a shell separator (`&&`, `;`, a pipe, a redirection, a comment) outside `[…]`."""
    depth = 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth == 0 and (text.startswith(("&&", ";", "| ", "> ", "< ", "# "), i) and (i == 0 or text[i - 1] == " ")):
            return text[:i]
    return text


def _commands_in(where: str, chunk: str) -> list[Shown]:
    chunk = re.sub(r"\\\n\s*", " ", chunk)  # shell line continuations
    found = []
    for line in chunk.splitlines():
        for match in COMMAND.finditer(line):
            found.append(Shown(where, _end_of_command(line[match.start():]).strip()))
    return found


def shown_commands(hooks: ModuleType) -> list[Shown]:
    sources = {"README.md": (REPO_ROOT / "README.md").read_text(encoding="utf-8")}
    for page in sorted((REPO_ROOT / "docs").rglob("*.md")):
        sources[str(page.relative_to(REPO_ROOT))] = page.read_text(encoding="utf-8")
    for path, text in hooks.rule_pages().items():
        sources[f"docs/{path} (written by docs/hooks.py)"] = text
    shown = []
    for where, text in sources.items():
        for block in FENCE.finditer(text):
            shown += _commands_in(where, block.group(2))
        prose = FENCE.sub("", text)
        for line in INDENTED.finditer(prose):
            shown += _commands_in(where, line.group(1))
        for paragraph in prose.split("\n\n"):
            for span in SPAN.finditer(paragraph):
                shown += _commands_in(where, span.group(1).replace("\n", " "))
    return shown


@cache
def _cli() -> Any:
    """The command line as click sees it (typer builds it anew on every call)."""
    return typer.main.get_command(app)


def resolve(shown: Shown) -> list[tuple[tuple[str, ...], Any]]:
    """The subcommand paths the words name (`experiment fgd|timeline` names two), each with
    the click command at its end. A word where a subcommand must be that is none fails here."""
    top: Any = _cli()
    ends: list[tuple[tuple[str, ...], Any]] = []

    def walk(command: Any, path: tuple[str, ...], words: list[str]) -> None:
        if not words or not hasattr(command, "commands") or words[0].startswith("-"):
            ends.append((path, command))
            return
        for word in words[0].split("|"):
            where = " ".join(["batchplace", *path])
            assert word in command.commands, f"{shown.where}: `{shown.text}`: {where} has no command {word!r}"
            walk(command.commands[word], (*path, word), words[1:])

    walk(top, (), shown.words)
    return ends


def paths_of(shown: list[Shown]) -> set[tuple[str, ...]]:
    return {path for s in shown for path, _ in resolve(s)}


@pytest.fixture(scope="module")
def shown(hooks: ModuleType) -> list[Shown]:
    return shown_commands(hooks)


def test_the_docs_show_the_commands_this_test_is_about(shown: list[Shown]) -> None:
    """The extraction finds the commands of the summary, the README and prose spans (a
    regression here would make the tests below pass on nothing)."""
    paths = paths_of(shown)
    assert {("solve",), ("serve",), ("controller",), ("demo",), ("what-if",), ("rebalance",), ("snapshot",),
            ("bench",), ("experiment", "fgd"), ("experiment", "timeline")} <= paths
    assert any(s.where == "README.md" for s in shown)
    assert any(s.text.startswith("batchplace what-if cluster.yaml --add-jobs") for s in shown)  # an inline span


def test_every_subcommand_shown_answers_help(shown: list[Shown]) -> None:
    runner = CliRunner()
    failed = {}
    for path in sorted(paths_of(shown)):
        result = runner.invoke(app, [*path, "--help"])
        if result.exit_code != 0 or "Usage" not in result.output:
            failed[" ".join(path)] = (result.exit_code, result.output[-300:])
    assert failed == {}


def test_every_flag_shown_is_an_option_of_its_command(shown: list[Shown]) -> None:
    unknown = []
    for s in shown:
        for path, command in resolve(s):
            options = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)} | {"--help"}
            tail = " ".join(s.words[len(path):])
            unknown += [f"{s.where}: `{s.text}`: {' '.join(path)} {flag}" for flag in FLAG.findall(tail) if flag not in options]
    assert unknown == []
