"""The docs site's hooks module (`docs/hooks.py`), loaded as MkDocs loads it: from its file."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def load_hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO_ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def hooks() -> ModuleType:
    return load_hooks()
