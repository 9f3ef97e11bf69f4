"""Semantic versions (semver 2.0), the `version` attribute type of DRA devices.

A ResourceSlice device's attribute is a bool, an int, a string or a version; models read
versions into `Version` so a string attribute is never guessed to be one, and the CEL
selectors (`solver.dra_cel`: `semver()`, `isGreaterThan`, `compareTo`) order them as
Kubernetes' semver library does.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = ["Version", "is_semver"]


@functools.total_ordering
@dataclass(frozen=True)
class Version:
    """A semantic version (semver 2.0), the `version` attribute type of a ResourceSlice device.

    Ordered as semver orders: numerically by major, minor, patch; a pre-release is lower than
    its release; build metadata is ignored for order and equality.
    """

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str, normalize: bool = False) -> "Version":
        """Strict semver; `normalize` first accepts what Kubernetes' `semver(text, true)` does:
        a leading "v", a missing minor or patch, leading zeros (`v01.2` → 1.2.0)."""
        if not isinstance(text, str):
            raise TypeError(f"semver() takes a string, got {text!r}")
        if normalize:
            text = _normalized_semver(text)
        match = _SEMVER.fullmatch(text)
        if match is None:
            raise ValueError(f"{text!r} is not a semantic version (MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD])")
        prerelease = tuple(match["prerelease"].split(".")) if match["prerelease"] else ()
        return cls(int(match["major"]), int(match["minor"]), int(match["patch"]), prerelease)

    def __str__(self) -> str:
        core = f"{self.major}.{self.minor}.{self.patch}"
        return f"{core}-{'.'.join(self.prerelease)}" if self.prerelease else core

    def _order_key(self) -> tuple:
        # A release sorts after all its pre-releases; numeric identifiers sort before
        # alphanumeric ones and compare as numbers.
        pre = tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in self.prerelease)
        return (self.major, self.minor, self.patch, not self.prerelease, pre)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._order_key() < other._order_key()


_NUMBER = r"0|[1-9]\d*"
_PRE_PART = r"(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
_SEMVER = re.compile(
    rf"(?P<major>{_NUMBER})\.(?P<minor>{_NUMBER})\.(?P<patch>{_NUMBER})"
    rf"(?:-(?P<prerelease>{_PRE_PART}(?:\.{_PRE_PART})*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
)


def _normalized_semver(text: str) -> str:
    match = _LOOSE_SEMVER.fullmatch(text)
    if match is None:
        return text  # left for the strict parse to refuse
    numbers = match["core"].split(".")
    numbers += ["0"] * (3 - len(numbers))
    return ".".join(str(int(number)) for number in numbers) + (match["rest"] or "")


_LOOSE_SEMVER = re.compile(r"v?(?P<core>\d+(?:\.\d+){0,2})(?P<rest>[-+].*)?")


def is_semver(text: object, normalize: bool = False) -> bool:
    """Whether `Version.parse` accepts `text` (Kubernetes' `isSemver`)."""
    try:
        Version.parse(text, normalize)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return True
