"""The README's quick start: the first command installs what the product needs — the
package without its development extras — and runs the demo; the second, the test command,
adds the extras, and `.ci/run` runs exactly it (issue 29, item 6: the first command
installed Ray, Playwright, schemathesis and py-spy, a 1.3 GB venv, to run the demo).
`test_wheel` installs the same package and runs the demo from it; here the demo runs with
every development extra's modules refused."""

from __future__ import annotations

import re
import sys
import tomllib
from importlib.metadata import packages_distributions

from tests.package.package_helpers import REPO_ROOT, run

README = REPO_ROOT / "README.md"


def quick_start_commands() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Quick start"):text.index("## Command line")]
    return re.findall(r"```sh\n(.*?)\n```", section, flags=re.S)


def test_the_first_command_installs_the_package_without_extras_and_runs_the_demo() -> None:
    first = quick_start_commands()[0]
    installs = re.findall(r"pip install (?:-q )?(\S+)", first)
    assert installs == ["."], first  # no extras, not editable: what a user of the product installs
    assert first.endswith(".venv/bin/batchplace demo")


def test_ci_runs_the_readme_test_command() -> None:
    second = quick_start_commands()[1]
    assert "'.[dev]'" in second and second.endswith("python -m pytest -q")
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == second


DEV_ONLY_BLOCKER = """
import sys
class DevOnly:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"{{name}} is a development extra")
sys.meta_path.insert(0, DevOnly())
sys.argv = ["batchplace", "demo", "--quiet"]
from batchplace.cli import main
main()
"""


def test_the_demo_imports_nothing_of_the_development_extras() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = {_name(requirement) for requirement in project["dependencies"]}
    dev_only = {_name(requirement) for requirement in project["optional-dependencies"]["dev"]} - runtime
    blocked = {module for module, dists in packages_distributions().items()
               if any(_name(dist) in dev_only for dist in dists)}
    assert {"pytest", "hypothesis", "ray"} <= blocked
    out = run([sys.executable, "-c", DEV_ONLY_BLOCKER.format(blocked=sorted(blocked))], cwd=REPO_ROOT, isolated=False).stdout
    assert "all 12 scenarios came out as expected" in out


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")
