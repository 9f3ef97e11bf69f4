"""The built wheel runs where it is installed: `pip wheel` of the project, installed into a
fresh venv outside the source tree, `batchplace demo` prints every verdict from a directory
that is not the tree, and `demo --live --help` answers (issue 29, item 5: the wheel shipped
neither examples/ nor deploy/rbac.yaml, and `demo` died with a FileNotFoundError).
How the venv gets its dependencies without downloading them: `package_helpers`."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.package.package_helpers import (
    REPO_ROOT,
    assert_runs_from_the_venv,
    build_wheel,
    copy_tree,
    fresh_venv,
    pip_install,
    probe_installed,
    run,
)

# What a source distribution would hold: the tree without its tests, caches and venvs.
NOT_SHIPPED = {".git", ".venv", "tests", "results", "build", "dist", ".pytest_cache", ".hypothesis", ".grimp_cache"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wheel")
    project = root / "project"
    for entry in REPO_ROOT.iterdir():
        if entry.name not in NOT_SHIPPED and not entry.name.endswith(".egg-info"):
            copy_tree(entry, project / entry.name)
    return build_wheel(project, root / "wheels")


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The venv's bin/ and a working directory outside the source tree."""
    root = tmp_path_factory.mktemp("installed")
    bin_dir = fresh_venv(root / "venv")
    pip_install(bin_dir, wheel)
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    return bin_dir, elsewhere


def test_the_wheel_carries_the_files_the_commands_read_not_the_repository_paths(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "controller/testing/examples/hello-volcano-job.yaml" in names
    assert "controller/testing/deploy/rbac.yaml" in names
    assert "controller/testing/build-kube-apiserver.sh" in names
    assert not [n for n in names if n.startswith(("examples/", "deploy/", "scripts/", "tests/"))]
    shipped = zipfile.ZipFile(wheel).read("controller/testing/examples/queue-weights.yaml")
    assert shipped == (REPO_ROOT / "examples" / "queue-weights.yaml").read_bytes()


def test_installed_demo_prints_every_verdict_outside_the_source_tree(installed: tuple[Path, Path]) -> None:
    bin_dir, elsewhere = installed
    assert_runs_from_the_venv(probe_installed(bin_dir, cwd=elsewhere), bin_dir.parent)
    out = run([bin_dir / "batchplace", "demo", "--quiet"], cwd=elsewhere).stdout
    assert out.count("OK ") == 12 and "FAIL" not in out
    assert "all 12 scenarios came out as expected" in out


def test_installed_live_demo_answers_help(installed: tuple[Path, Path]) -> None:
    bin_dir, elsewhere = installed
    out = run([bin_dir / "batchplace", "demo", "--live", "--help"], cwd=elsewhere).stdout
    assert "--live" in out and "--clusters" in out
    assert "BATCHPLACE_KUBE_APISERVER" in out

