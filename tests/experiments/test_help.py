"""Every experiment script run as `python -m experiments.<name>` explains itself on `--help`
(argparse formats each option's help with `%`: a bare `%` in one made `--help` raise)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

SCRIPTS = sorted(
    path.stem for path in (Path(__file__).resolve().parents[2] / "experiments").glob("*.py")
    if "def main(argv" in path.read_text()
)


def test_the_scripts_are_found() -> None:
    assert "controller_steady" in SCRIPTS and "scaling" in SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_explains_every_option(script: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        importlib.import_module(f"experiments.{script}").main(["--help"])
    printed = capsys.readouterr().out
    assert exited.value.code == 0 and printed.startswith("usage:") and "--help" in printed, printed[-300:]
