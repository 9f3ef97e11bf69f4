"""MkDocs hooks: the pages written from the code, so the docs cannot drift from it.

- `rules/<NAME>.md` for every module of `solver.rules.RULES`, its text the rule module's
  docstring: a rule appended to `RULES` gets its page and its place in the nav with no
  edit here or in `mkdocs.yml`; a rule without a docstring stops the build.
- The table of rules on `rules/index.md` (where it says `<!-- rules-table -->`), one
  row per rule in `RULES` order, its summary the docstring's first paragraph.
- `index.md`, the site's home, from the repository's `README.md` (its `docs/` links made
  relative to the site), so the front page is written once.

`tests/docs/` builds the site with `mkdocs build --strict` and calls `rule_pages` directly.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable

REPO_ROOT = Path(__file__).resolve().parents[1]
RULES_SECTION = "Rules"  # the nav section the rule pages are appended to
RULES_TABLE_MARK = "<!-- rules-table -->"


class RuleDocError(ValueError):
    """A rule whose page cannot be written (no docstring, a name that is no file name)."""


def _rules() -> tuple[Any, ...]:
    """`solver.rules.RULES`, read when the site is built (the repository importable)."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from solver.rules import RULES

    return tuple(RULES)


def rule_doc(rule: ModuleType) -> str:
    """The rule's docstring, dedented; a rule without one is an error naming it."""
    name = getattr(rule, "NAME", None)
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise RuleDocError(f"{rule.__name__}: NAME {name!r} is not a rule name (lower case, digits, _)")
    text = inspect.cleandoc(rule.__doc__ or "")
    if not text:
        raise RuleDocError(f"{rule.__name__}: rule {name!r} has no docstring; its docs page is written from it")
    return text


def rule_summary(rule: ModuleType) -> str:
    """The docstring's first paragraph on one line."""
    return " ".join(rule_doc(rule).split("\n\n", 1)[0].split())


def _as_markdown(text: str) -> str:
    """Docstring → Markdown: a list that starts right under a line of text gets the blank
    line Markdown needs before it; everything else is the docstring as written."""
    out: list[str] = []
    list_open = False  # an item seen since the last blank line
    for line in text.splitlines():
        item = re.match(r"^ {0,3}- ", line) is not None
        if item and not list_open and out and out[-1].strip():
            out.append("")
        list_open = (list_open or item) and bool(line.strip())
        out.append(line)
    return "\n".join(out)


def rule_page(rule: ModuleType, position: int) -> str:
    """The page of one rule: its name, its docstring, where its code and tests are."""
    text = _as_markdown(rule_doc(rule))
    module_path = rule.__name__.replace(".", "/") + ".py"
    return (
        f"# {rule.NAME}\n\n{text}\n\n---\n\n"
        f"Written from the docstring of `{module_path}`; position {position} in `solver.rules.RULES`, "
        "the order the checker runs the rules in. "
        f"Tests: `tests/solver/rules/test_rule_{rule.NAME}.py`.\n"
    )


def rule_pages(rules: Iterable[ModuleType] | None = None) -> dict[str, str]:
    """`rules/<NAME>.md` → its Markdown, for every rule (default: `solver.rules.RULES`)."""
    pages: dict[str, str] = {}
    for position, rule in enumerate(_rules() if rules is None else tuple(rules), start=1):
        page = rule_page(rule, position)
        path = f"rules/{rule.NAME}.md"
        if path in pages:
            raise RuleDocError(f"{rule.__name__}: two rules named {rule.NAME!r}")
        pages[path] = page
    return pages


def rules_table(rules: Iterable[ModuleType] | None = None) -> str:
    rows = ["| # | rule | what it says |", "|---:|---|---|"]
    for position, rule in enumerate(_rules() if rules is None else tuple(rules), start=1):
        summary = rule_summary(rule).replace("|", "\\|")
        rows.append(f"| {position} | [`{rule.NAME}`]({rule.NAME}.md) | {summary} |")
    return "\n".join(rows)


def readme_page(readme: str) -> str:
    """The README as the site's home: links into `docs/` made relative to the site; a link
    to another file of the repository (`examples/`) becomes its text, the site has no copy."""
    readme = re.sub(r"\]\(docs/", "](", readme)
    return re.sub(r"\[([^\]]+)\]\((?!https?:|#|[\w./-]+\.md\b|img/)[^)]+\)", r"\1", readme)


# MkDocs events ------------------------------------------------------------------------


def on_config(config: Any) -> Any:
    """Append one nav entry per rule to the `Rules` section (after its hand-written pages)."""
    for entry in config["nav"] or []:
        if isinstance(entry, dict) and RULES_SECTION in entry:
            section = entry[RULES_SECTION]
            known = {next(iter(item.values())) if isinstance(item, dict) else item for item in section}
            section.extend({rule.NAME: f"rules/{rule.NAME}.md"} for rule in _rules() if f"rules/{rule.NAME}.md" not in known)
            return config
    raise RuleDocError(f"mkdocs.yml: nav has no {RULES_SECTION!r} section for the rule pages")


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, text in rule_pages().items():
        files.append(File.generated(config, path, content=text))
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "index.md", content=readme_page(readme)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri == "rules/index.md":
        if RULES_TABLE_MARK not in markdown:
            raise RuleDocError(f"rules/index.md: {RULES_TABLE_MARK} is missing; the table of rules goes there")
        return markdown.replace(RULES_TABLE_MARK, rules_table())
    return markdown
