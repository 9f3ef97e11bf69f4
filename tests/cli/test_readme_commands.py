"""The command summary of the docs (`docs/cli.md`, once the README's) names every command
and every flag each command has (issue 29, item 11: `controller --engine`, serve's
`--solver-slots`, `--solver-queue`, `--max-body-bytes`, `--max-time-limit`, `--log-level`
were missing). The commands and their options are read from the command line itself, so a
flag added later must be added to the summary too."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from batchplace.cli import app

CLI_PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def summary_lines() -> list[str]:
    """The lines of the code block under the page's `# Command line`."""
    text = CLI_PAGE.read_text(encoding="utf-8")
    section = text[text.index("# Command line"):]
    block = section[section.index("```\n") + 4:]
    return block[: block.index("```")].splitlines()


def commands(group: Any, prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    """`solve`, `experiment fgd`, … → the command (typer's own click), nested groups walked."""
    found: dict[str, Any] = {}
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            found.update(commands(command, (*prefix, name)))
        else:
            found[" ".join((*prefix, name))] = command
    return found


def test_every_command_and_every_flag_is_in_the_cli_page_summary() -> None:
    lines = summary_lines()
    every = commands(typer.main.get_group(app))
    assert {"serve", "controller", "experiment fgd"} <= every.keys()  # the walk finds them
    missing: dict[str, list[str]] = {}
    for name, command in every.items():
        mine = " ".join(line for line in lines if line.startswith(f"batchplace {name} ") or line == f"batchplace {name}")
        if not mine:
            missing[name] = ["no line"]
            continue
        flags = [flag for param in command.params if param.param_type_name == "option"
                 for flag in (*param.opts, *param.secondary_opts) if flag.startswith("--") and flag != "--help"]
        absent = [flag for flag in flags if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", mine)]
        if absent:
            missing[name] = absent
    assert missing == {}

