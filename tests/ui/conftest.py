"""Fixtures of the dashboard tests: headless Chromium (Debian's package) driven by
Playwright, and real uvicorn servers of the service app on 127.0.0.1.

The browser: `/usr/bin/chromium`, installed by `scripts/install-chromium.sh` when it is
missing (apt-get; a second run returns at once), never downloaded by Playwright — it is
launched by `executable_path`, with a fresh user-data directory per test session.
Screenshots go to `results/ui-screenshots/` (gitignored), the test artifacts.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.app import create_app
from service.settings import ServiceSettings
from tests.service.service_helpers import LiveServer

REPO_ROOT = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = REPO_ROOT / "scripts" / "install-chromium.sh"
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = REPO_ROOT / "results" / "ui-screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> Path:
    """`/usr/bin/chromium`, installed from Debian's packages first when it is missing."""
    if not CHROMIUM.exists():
        result = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, check=False, timeout=900)
        if result.returncode != 0 or not CHROMIUM.exists():
            tail = "\n".join(result.stderr.strip().splitlines()[-20:])
            pytest.fail(f"{INSTALL_SCRIPT.name} could not install chromium (exit {result.returncode}):\n{tail}")
    return CHROMIUM


@pytest.fixture(scope="session")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One persistent Chromium context (fresh user-data dir) for the session's pages."""
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(executable),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 900},
        )
        context.set_default_timeout(30_000)
        yield context
        context.close()


@pytest.fixture
def page(browser_context: object) -> Iterator[object]:
    page = browser_context.new_page()  # type: ignore[attr-defined]
    yield page
    page.close()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture(scope="module")
def ui_server() -> Iterator[LiveServer]:
    """The service app, no token, no controller: the pages show uploads."""
    with LiveServer(create_app(ServiceSettings(solver_slots=2, solver_queue=16))) as server:
        yield server
