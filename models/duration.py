"""Go duration strings (`time.ParseDuration`), as Volcano reads `sla-waiting-time`.

Input: the text of an annotation or a flag, e.g. `"30m"`, `"1h2m3s"`, `"1.5h"`,
`"1h2m3s4ms5us6ns"`. Output: seconds as a float. Units are Go's: `ns`, `us` (or `µs`,
`μs`), `ms`, `s`, `m`, `h`; a number without a unit is refused except `"0"` — as Go.

Errors are `DurationError` (a `ValueError`) saying what is wrong with the text; callers
add the field path (`models.loaders` raise `FieldError`, the CLI exits 2). Not promised:
Go's overflow at ~290 years — a duration past `MAX_DURATION_S` is refused as too long.
"""

from __future__ import annotations

import re

__all__ = ["DurationError", "MAX_DURATION_S", "parse_go_duration", "format_minutes"]

MAX_DURATION_S = 100 * 365 * 24 * 3600.0
"""A century: longer waits are a unit mistake, not a service level."""

_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


class DurationError(ValueError):
    """Text that is not a Go duration, or not a positive one."""


def parse_go_duration(text: str, *, positive: bool = True) -> float:
    """Seconds in `text`. Example: `"1h30m"` → 5400.0, `"90s"` → 90.0, `"banana"` → DurationError."""
    body = text.strip()
    sign = -1.0 if body.startswith("-") else 1.0
    body = body.lstrip("+-")
    if body == "0":
        seconds = 0.0
    else:
        position, seconds = 0, 0.0
        while position < len(body):
            match = _PART.match(body, position)
            if match is None:
                raise DurationError(f"not a duration: {text!r} (write e.g. 30m, 1h30m, 90s)")
            seconds += float(match.group(1)) * _UNIT_S[match.group(2)]
            position = match.end()
        if not body:
            raise DurationError(f"not a duration: {text!r} (write e.g. 30m, 1h30m, 90s)")
    seconds *= sign
    if positive and seconds <= 0:
        raise DurationError(f"must be a positive duration, got {text!r}")
    if seconds > MAX_DURATION_S:
        raise DurationError(f"duration {text!r} is longer than a century")
    return seconds


def format_minutes(seconds: float) -> str:
    """`2820.0` → `"47 min"`, `5400.0` → `"90 min"`, `45.0` → `"45 s"`: how reasons say a wait."""
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.0f} min"
