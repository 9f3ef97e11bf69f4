"""The docs site builds with `mkdocs build --strict` — a broken link, a missing anchor, a page
outside the nav or any other warning fails it — and holds a page per rule; the README's
links into the repository and the site resolve (issue 31, item 5)."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

from solver.rules import RULES

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO_ROOT / "mkdocs.yml"), "--site-dir", str(out)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return out


def _text(page: Path) -> str:
    """The page's words: inline tags (code, emphasis, links) dropped, block tags a blank."""
    inline = re.sub(r"</?(?:code|em|strong|a)\b[^>]*>", "", page.read_text(encoding="utf-8"))
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", inline)).split())


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.NAME)
def test_the_site_has_a_page_per_rule_and_the_overview_links_it(site: Path, rule) -> None:
    page = site / "rules" / rule.NAME / "index.html"
    assert page.is_file()
    first_sentence = " ".join(rule.__doc__.split(".")[0].split()).replace("`", "").replace("*", "")
    assert first_sentence in _text(page)
    overview = (site / "rules" / "index.html").read_text(encoding="utf-8")
    assert f'href="{rule.NAME}/"' in overview


def test_the_home_page_is_the_readme(site: Path) -> None:
    assert "Two commands, on a fresh machine" in _text(site / "index.html")


README_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_relative_link_of_the_readme_resolves(site: Path) -> None:
    """GitHub renders the README from the repository: each link names a file there, and an
    anchor into a docs page names a heading the site gives that id."""
    broken = []
    for target in README_LINK.findall((REPO_ROOT / "README.md").read_text(encoding="utf-8")):
        if re.match(r"https?:", target):
            continue
        path, _, anchor = target.partition("#")
        if path and not (REPO_ROOT / path).exists():
            broken.append(target)
        elif anchor and path.startswith("docs/") and path.endswith(".md"):
            built = site / path.removeprefix("docs/").removesuffix(".md").removesuffix("index") / "index.html"
            if f'id="{anchor}"' not in built.read_text(encoding="utf-8"):
                broken.append(target)
    assert broken == []
