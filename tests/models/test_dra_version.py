"""A DRA `version` attribute: strict semver 2.0.0, ordered as the specification orders it
(the order a CEL selector's `compareTo` and `isGreaterThan` follow)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.dra import Version
from models.semver import Version as SemverVersion

SPEC_ORDER = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.0.1",
    "1.2.0",
    "2.0.0",
    "10.0.0",
]


def test_versions_sort_as_the_semver_specification_lists_them() -> None:
    shuffled = list(reversed(SPEC_ORDER))
    assert [str(v) for v in sorted(map(Version.parse, shuffled))] == SPEC_ORDER


def test_build_metadata_does_not_order_and_the_cel_selectors_read_the_same_type() -> None:
    built = Version.parse("550.54.15+cuda.12")
    assert built == Version.parse("550.54.15") and str(built) == "550.54.15"
    assert Version is SemverVersion  # one version type: what slices hold is what `semver()` compares


@pytest.mark.parametrize("text", ["1.2", "01.2.3", "1.2.3-", "1.2.3-01", "v1.2.3", "1.2.3 ", ""])
def test_text_that_is_not_strict_semver_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not a semantic version"):
        Version.parse(text)


_RELEASE = st.tuples(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50))


@given(_RELEASE, _RELEASE)
def test_release_order_is_numeric_not_textual(left: tuple[int, int, int], right: tuple[int, int, int]) -> None:
    parsed = [Version.parse(".".join(map(str, parts))) for parts in (left, right)]
    assert (parsed[0] < parsed[1]) == (left < right)
