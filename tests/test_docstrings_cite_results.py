"""No measured number frozen into the product's docstrings and comments: a timing, a
speed-up or a share measured on a run lives in `docs/results.md` with how it was made, and
the code says why and cites the section. A number measured once goes stale in the code
while the docs are re-run; two copies drift.

What counts as measured, in the docstrings and comments of every product package
(`PACKAGES`; one paragraph at a time, so a phrase split over lines still reads as one):
  - "measured" (or "took", "peaked at", "returned in", "costs") followed within a few
    words by a number with a unit of time, share, factor or memory ("measured 0.11 s",
    "measured on 2 workers: … 0.31 GiB", "loses 1.2 points of");
  - a percentile with a time ("p99 per batch 0.93, 0.48 s"; not a target, "p99 ≤ 1 s");
  - a factor or share with a comparative ("~10× faster", "15 % slower") or a relative
    change in brackets ("(+12 %)");
  - an approximate time spent importing ("~0.5 s to import", "~0.5 s of OR-Tools").
A worked example is no measurement: from "Example:" or "worked example:" on, up to a
sentence that says why or what was measured, nothing is judged. Definitions, defaults and
spec limits ("5 s by default", "the target: < 10 %") carry no measuring verb and pass.
Not caught: unitless measured figures (a ratio, a count of nodes) — review catches those.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("solver", "controller", "service", "models", "experiments", "batchplace")

_NUMBER = r"[~≈]?\s*\d[\d,]*(?:\.\d+)?(?:e-\d+)?(?:\s*(?:–|-|to|/)\s*\d[\d,]*(?:\.\d+)?(?:e-\d+)?)*"
_UNIT = (
    r"(?:\s+(?:s|ms|µs|min|h)|\s*(?:%|×|x|GB|GiB|MB)"  # "0.3 s" (not "429s"), "12 %", "10×", "0.3 GB"
    r"|\s+points?(?= (?:of|less|more|below|above|ahead|behind|short)\b))(?![\w])"
)
_MEASURED_VALUE = re.compile(_NUMBER + _UNIT)
_MEASURING = re.compile(
    r"\b(?:measured(?=\s*(?::|on\b|at\b|in\b|against\b|over\b|with\b|worse\b|better\b|[~≈\d]))|took|peaked at|returned in|costs?)\b",
    re.IGNORECASE,
)
_WORDS_AFTER_VERB = 16
_PERCENTILE = re.compile(r"\bp(?:50|90|99)\b(?:\s+(?!≤|<)\S+){0,6}?\s+" + _NUMBER + r"\s+(?:s|ms|min)(?![\w])")
_COMPARATIVE = re.compile(_NUMBER + r"\s*(?:×|x|%)\s+(?:faster|slower|cheaper|less time|more time)\b", re.IGNORECASE)
_RELATIVE_CHANGE = re.compile(r"\(\s*[+−-]\s*\d+(?:\.\d+)?\s*%\s*\)")
_IMPORT_TIME = re.compile(r"[~≈]\s*\d+(?:\.\d+)?\s*s\b[^.]{0,40}?\b(?:to import|of (?:OR-Tools|SciPy|pandas))", re.IGNORECASE)
_EXAMPLE = re.compile(r"\b(?:[Ww]orked )?[Ee]xample\b(?=\s*[:,])")
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?]\)))\s+(?=[A-Z(`\"])")
_OUT_OF_EXAMPLE = re.compile(r"^Why\b|\bmeasured\b", re.IGNORECASE)

ALLOWED: dict[tuple[str, str], str] = {}
"""(file, a phrase of the flagged text) → why it is no measurement. Empty: keep it so."""


def _documentation(path: Path) -> list[tuple[int, str]]:
    """(first line, text) of every docstring paragraph and every comment block of `path`."""
    source = path.read_text(encoding="utf-8")
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            line = node.lineno
            for paragraph in re.split(r"\n\s*\n", node.value.value):
                found.append((line, " ".join(paragraph.split())))
                line += paragraph.count("\n") + 2
    block: list[str] = []
    start = 0
    last = -1
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        if token.start[0] != last + 1 and block:
            found.append((start, " ".join(block)))
            block = []
        if not block:
            start = token.start[0]
        block.append(token.string.lstrip("#").strip())
        last = token.start[0]
    if block:
        found.append((start, " ".join(block)))
    return found


def _judged(text: str) -> str:
    """`text` less its worked examples: a sentence that opens one ("Example: …", "…;
    worked example: …") from that phrase on, and the sentences after it up to one that
    says why or what was measured."""
    kept: list[str] = []
    in_example = False
    for sentence in _SENTENCE_END.split(text):
        if in_example and not _OUT_OF_EXAMPLE.search(sentence):
            continue
        in_example = False
        example = _EXAMPLE.search(sentence)
        if example:
            kept.append(sentence[: example.start()])
            in_example = True
        else:
            kept.append(sentence)
    return " ".join(kept)


def measured_phrases(text: str) -> list[str]:
    """The phrases of `text` (one paragraph) that state a number measured on a run."""
    judged = _judged(text)
    hits: list[str] = []
    for verb in _MEASURING.finditer(judged):
        window = " ".join(judged[verb.end():].split(" ")[: _WORDS_AFTER_VERB + 1])
        value = _MEASURED_VALUE.search(window)
        if value:
            hits.append(judged[verb.start(): verb.end() + 1 + value.end()].strip())
    for pattern in (_COMPARATIVE, _RELATIVE_CHANGE, _IMPORT_TIME, _PERCENTILE):
        hits += [m.group(0) for m in pattern.finditer(judged)]
    return hits


def _offences() -> list[str]:
    offences = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = str(path.relative_to(ROOT))
            for line, text in _documentation(path):
                for phrase in measured_phrases(text):
                    if not any(file == name and allowed in phrase for file, allowed in ALLOWED):
                        offences.append(f"{name}:{line}: {phrase!r}")
    return offences


def test_no_measured_number_in_code_documentation() -> None:
    offences = _offences()
    assert not offences, (
        "measured numbers in docstrings or comments; move them to docs/results.md "
        "('Measurements the code cites') and cite the section:\n" + "\n".join(offences)
    )


@pytest.mark.parametrize(
    "text",
    [
        "Presolve is skipped (measured 0.5 s per stage at 3,400 variables).",
        "Measured on 2 cores: 0.3–0.7 s per stage at 1,300–3,800 variables.",
        "the default leaves room: the search process peaked at 0.30 GB resident",
        "HiGHS in-process, ~10× faster on 1,000 nodes",
        "Cost, measured on a 3.7 MB input (best of 7): 0.68 → 0.77 s (+12 %)",
        "OR-Tools and SciPy take ~0.5 s to import, which every command would pay",
        "measured on 2 workers: the quick-start job solves under `ulimit -v 320000` (0.31 GiB)",
        "a numpy scalar read costs ~10x a list's",
    ],
)
def test_measured_phrases_are_caught(text: str) -> None:
    assert measured_phrases(text)


@pytest.mark.parametrize(
    "text",
    [
        "Worked example: thresholds cpu 80 %; n1 at 95 % took 47.5 % of it.",
        "Example, 1,000 nodes / 1,637 pods, 1 s: greedy took 0.3 s of wall time.",
        "margin `lease_duration_s − renew_deadline_s` (5 s by default) covers its time",
        "within the limit plus a small overshoot (the target: < 10 %)",
        "A node's measured usage is not labelled by pod: a node at 90 % cpu",
        "measured far slower on these models than one worker (docs/results.md)",
    ],
)
def test_examples_and_definitions_pass(text: str) -> None:
    assert measured_phrases(text) == []


_CITATION = re.compile(r'docs/results\.md[^"]{0,40}?"([^"]+)"')


def test_citations_name_a_section_of_the_results() -> None:
    """A docstring's `docs/results.md, "Section"` names a heading or a bold lead-in there
    (case aside), so a renamed section fails here rather than leaving the code pointing
    nowhere."""
    results = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    titles = [line.lower() for line in results.splitlines() if line.startswith("#")]
    titles += [bold.lower() for bold in re.findall(r"\*\*([^*]+)\*\*", results)]
    cited = 0
    dangling = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for line, text in _documentation(path):
                for citation in _CITATION.finditer(text):
                    cited += 1
                    if not any(citation.group(1).lower() in title for title in titles):
                        dangling.append(f"{path.relative_to(ROOT)}:{line}: {citation.group(1)!r}")
    assert cited > 0
    assert not dangling, "citations of docs/results.md naming no section there:\n" + "\n".join(dangling)
