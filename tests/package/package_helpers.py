"""Helpers of the package tests: build the wheel and install it into a fresh venv outside
the source tree, then run the installed `batchplace` as a user would.

The fresh venv gets the wheel alone (`pip install --no-deps --no-index`). The third-party
dependencies (OR-Tools, FastAPI, …; hundreds of MB) come from the test venv: a `.pth` line
appends its site-packages to the fresh venv's `sys.path`. A path line in a `.pth` file is
only appended, its own `.pth` files are not run, so the test venv's editable install of
this tree (a `.pth` finder there) stays off, and the fresh venv's own site-packages comes
first: `batchplace`, `models`, `controller`, … are imported from the installed wheel, which
`probe_installed` checks. Children run without PYTHONPATH, from a directory outside the
tree.

Builds use `--no-build-isolation --no-index`: the test venv's setuptools (the dev extras
pin one that builds wheels) and no download.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIPPED_FILES_PROBE = """
import json, os, sys
import batchplace, controller.testing.files as files, models, solver
print(json.dumps({
    "modules": [batchplace.__file__, files.__file__, models.__file__, solver.__file__],
    "sys_path": [os.path.abspath(p) for p in sys.path],
    "examples": sorted(p.name for p in files.EXAMPLES_DIR.glob("*.yaml")),
    "fleet_examples": sorted(p.name for p in (files.EXAMPLES_DIR / "multicluster").glob("*.yaml")),
    "crds": sorted(p.name for p in files.CRDS_DIR.glob("*.yaml")),
    "dra_crds": sorted(p.name for p in files.DRA_CRDS_DIR.glob("*.yaml")),
    "rbac": files.RBAC_FILE.is_file(),
    "fleet_rbac": sorted(p.name for p in (files.DEPLOY_DIR / "multicluster").glob("*.yaml")),
    "build_script": files.BUILD_SCRIPT.is_file(),
}))
"""


def run(
    args: Sequence[str | Path], *, cwd: Path, timeout_s: float = 300, isolated: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run, `isolated` without PYTHONPATH (the tests' own runs may set it to the tree), and fail loudly."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV") if isolated else ()
    env = {k: v for k, v in os.environ.items() if k not in drop}
    completed = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s)
    assert completed.returncode == 0, f"{' '.join(map(str, args))} exited {completed.returncode}:\n{completed.stdout}\n{completed.stderr}"
    return completed


def build_wheel(project_dir: Path, wheel_dir: Path, *extra_args: str) -> Path:
    """`pip wheel --no-deps` of `project_dir` into `wheel_dir` by the test venv; the one wheel it wrote."""
    setuptools = tuple(int(part) for part in version("setuptools").split(".")[:2])
    assert setuptools >= (70, 1), f"setuptools {version('setuptools')}: the dev extras' setuptools>=70.1 builds wheels offline"
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         *extra_args, "--wheel-dir", wheel_dir, project_dir], cwd=project_dir, isolated=False)
    (wheel,) = wheel_dir.glob("batchplace-*.whl")
    return wheel


def fresh_venv(path: Path) -> Path:
    """A venv with no packages, whose `sys.path` ends with the test venv's site-packages; its bin/."""
    run([sys.executable, "-m", "venv", "--without-pip", path], cwd=path.parent)
    python = path / "bin" / "python"
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=path).stdout.strip())
    test_venv = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "test_venv_dependencies.pth").write_text("".join(f"{p}\n" for p in test_venv), encoding="utf-8")
    return path / "bin"


def pip_install(bin_dir: Path, *args: str | Path) -> None:
    """`pip install --no-deps --no-index ARGS` into the venv of `bin_dir` (pip itself is the test venv's)."""
    run([bin_dir / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation", *args], cwd=bin_dir)


def probe_installed(bin_dir: Path, *, cwd: Path) -> dict[str, object]:
    """Where the installed package's modules and shipped files are, asked of its own python."""
    probe: dict[str, object] = json.loads(run([bin_dir / "python", "-c", SHIPPED_FILES_PROBE], cwd=cwd).stdout)
    return probe


def assert_runs_from_the_venv(probe: dict[str, object], venv: Path) -> None:
    """The modules come from the venv's install, the source tree is not on `sys.path`, and every
    file the commands read at run time is there."""
    for module in probe["modules"]:  # type: ignore[attr-defined]
        assert Path(module).is_relative_to(venv), f"{module} is not the installed copy in {venv}"
    importable = [p for p in probe["sys_path"] if (Path(p) / "batchplace" / "__init__.py").exists()]  # type: ignore[attr-defined]
    assert importable and all(Path(p).is_relative_to(venv) for p in importable), importable
    assert probe["examples"] == sorted(p.name for p in (REPO_ROOT / "examples").glob("*.yaml"))
    assert probe["fleet_examples"] == sorted(p.name for p in (REPO_ROOT / "examples" / "multicluster").glob("*.yaml"))
    assert probe["crds"] == sorted(p.name for p in (REPO_ROOT / "deploy" / "crds").glob("*.yaml"))
    assert probe["dra_crds"] == sorted(p.name for p in (REPO_ROOT / "deploy" / "dra-crds").glob("*.yaml"))
    assert probe["fleet_rbac"] == sorted(p.name for p in (REPO_ROOT / "deploy" / "multicluster").glob("*.yaml"))
    assert probe["rbac"] is True and probe["build_script"] is True


def copy_tree(source: Path, destination: Path) -> None:
    """A file or directory, symbolic links kept as links (as `docker build`'s COPY and git do)."""
    if source.is_dir() and not source.is_symlink():
        shutil.copytree(source, destination, symlinks=True, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    else:
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination, follow_symlinks=False)
