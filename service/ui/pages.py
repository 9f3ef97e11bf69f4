"""Rendering: the Jinja2 environment over the package's templates, and the page context.

Templates live in `service/ui/templates/` and the CSS and script in `service/ui/static/`,
both shipped as package data (pyproject's `[tool.setuptools.package-data]`), so an
installed wheel serves the dashboard with nothing fetched at run time. Autoescape is on
for every template: names from a snapshot (node, pod, queue) are text, never markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.responses import HTMLResponse

from service.ui import units as fmt

__all__ = ["STATIC_DIR", "Source", "render", "environment"]

STATIC_DIR = Path(__file__).resolve().parent / "static"
STATIC_VERSION = "4"
"""Appended to static URLs (`?v=`) so a new release is not served from a stale cache."""


@dataclass(frozen=True)
class Source:
    """Where the pages' snapshot comes from: the live cluster, or an upload (`key`)."""

    kind: str  # live | upload
    label: str
    key: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def query(self) -> str:
        """`?s=<key>` for links that stay on this upload; empty for the live snapshot."""
        return f"?s={self.key}" if self.key else ""

    @property
    def amp(self) -> str:
        """The same as a continuation: `&s=<key>`."""
        return f"&s={self.key}" if self.key else ""


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("service.ui", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        gpus=fmt.gpus_text,
        cpu=fmt.cpu_text,
        memory=fmt.memory_text,
        age=fmt.age_text,
        pct=fmt.percent_text,
        resources=fmt.resources_text,
    )
    env.globals["static_version"] = STATIC_VERSION
    return env


environment = _environment()


def render(template: str, *, status_code: int = 200, headers: dict[str, str] | None = None, **context: Any) -> HTMLResponse:
    context.setdefault("source", None)
    context.setdefault("page", "")
    context.setdefault("login_needed", False)
    context.setdefault("logged_in", False)
    html = environment.get_template(template).render(**context)
    return HTMLResponse(html, status_code=status_code, headers=headers)
