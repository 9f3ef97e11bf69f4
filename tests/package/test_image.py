"""The container image runs the demo: deploy/Dockerfile carried out step by step without
Docker — each stage's COPY into its own directory (symbolic links kept, as Docker copies
them), its `pip wheel` / `pip install` run here, then the image's entry point with `demo`
in place of the default command, as `docker run batchplace:dev batchplace demo` runs it
(issue 29, item 5: the image most likely failed as the wheel did).

A RUN step this test does not know fails it: a change to the Dockerfile's build comes here
too. Differences from Docker, each because the test must not download: the build uses the
test venv's setuptools (`--no-build-isolation`), and the install adds `--no-deps` (the
dependencies come from the test venv, see `package_helpers`).
"""

from __future__ import annotations

import glob
import json
import shlex
from dataclasses import dataclass, field
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

DOCKERFILE = REPO_ROOT / "deploy" / "Dockerfile"
SKIPPED_COMMANDS = ("useradd", "rm")  # the image's user and clean-up: nothing to run here


@dataclass
class Stage:
    name: str
    root: Path
    workdir: str = "/"
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)

    def path(self, path: str) -> Path:
        """A path of the stage's file system, relative ones from its WORKDIR."""
        absolute = path if path.startswith("/") else f"{self.workdir.rstrip('/')}/{path}"
        return self.root / absolute.lstrip("/")


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per instruction; comments dropped, `\\` continuations joined."""
    joined = text.replace("\\\n", " ")
    lines = [line.strip() for line in joined.splitlines()]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines if line and not line.startswith("#")]


def build_image(tmp_path: Path) -> tuple[Stage, Path]:
    """Carry out the Dockerfile; the final stage and the bin/ of the venv standing for its Python."""
    stages: dict[str, Stage] = {}
    stage: Stage | None = None
    bin_dir: Path | None = None
    for instruction, arguments in instructions(DOCKERFILE.read_text(encoding="utf-8")):
        if instruction == "FROM":
            words = arguments.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else str(len(stages))
            stage = stages[name] = Stage(name, tmp_path / f"stage-{name}")
            stage.root.mkdir()
            bin_dir = None
            continue
        assert stage is not None, f"{instruction} before FROM"
        if instruction == "WORKDIR":
            stage.workdir = arguments
            stage.path(".").mkdir(parents=True, exist_ok=True)
        elif instruction == "COPY":
            _copy(stage, stages, shlex.split(arguments))
        elif instruction == "RUN":
            for command in arguments.split("&&"):
                bin_dir = _run_step(stage, shlex.split(command), tmp_path, bin_dir)
        elif instruction in ("ENTRYPOINT", "CMD"):
            setattr(stage, instruction.lower(), json.loads(arguments))
        elif instruction != "USER":
            pytest.fail(f"deploy/Dockerfile: {instruction} is not carried out by this test")
    assert stage is not None and bin_dir is not None, "the last stage installs nothing"
    return stage, bin_dir


def _copy(stage: Stage, stages: dict[str, Stage], words: list[str]) -> None:
    source_stage = None
    if words[0].startswith("--from="):
        source_stage = stages[words.pop(0).removeprefix("--from=")]
    *sources, destination = words
    for source in sources:
        origin = source_stage.path(source) if source_stage else REPO_ROOT / source
        assert origin.exists() or origin.is_symlink(), f"COPY {source}: not there"
        target = stage.path(destination)
        if destination.endswith("/") and not origin.is_dir():
            target = target / origin.name
        copy_tree(origin, target)


def _run_step(stage: Stage, words: list[str], tmp_path: Path, bin_dir: Path | None) -> Path | None:
    if words[0] in SKIPPED_COMMANDS:
        return bin_dir
    assert words[0] == "pip", f"RUN {' '.join(words)}: not a step this test knows"
    options = [w for w in words[2:] if w.startswith("-") and w != "--wheel-dir"]
    if words[1] == "wheel":
        wheel_dir = stage.path(words[words.index("--wheel-dir") + 1])
        built = build_wheel(stage.path(words[-1]), wheel_dir, *[o for o in options if o not in ("--no-cache-dir", "--no-deps")])
        assert built.parent == wheel_dir
        return bin_dir
    assert words[1] == "install", f"RUN {' '.join(words)}: not a step this test knows"
    bin_dir = fresh_venv(tmp_path / "image-python")
    wheels = [w for word in words[2:] if not word.startswith("-") for w in glob.glob(str(stage.path(word)))]
    assert wheels, f"RUN {' '.join(words)}: nothing to install"
    pip_install(bin_dir, *options, *wheels)
    return bin_dir


def test_the_image_runs_the_demo_with_its_entry_point(tmp_path: Path) -> None:
    image, bin_dir = build_image(tmp_path)
    cwd = image.path(".")
    assert_runs_from_the_venv(probe_installed(bin_dir, cwd=cwd), bin_dir.parent)
    program = [*image.entrypoint, "batchplace", "demo"]  # docker run batchplace:dev batchplace demo
    out = run([bin_dir / program[0], *program[1:]], cwd=cwd).stdout
    assert "all 12 scenarios came out as expected" in out and "FAIL" not in out
    default = [*image.entrypoint, *image.cmd]  # the image's own command answers too
    assert default[:2] == ["batchplace", "controller"]
    assert "--kubeconfig" in run([bin_dir / default[0], *default[1:], "--help"], cwd=cwd).stdout
