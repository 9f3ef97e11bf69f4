"""The string functions of CEL's strings extension, which Kubernetes' CEL environments (DRA
selectors among them) include and the CEL library solver.dra_cel uses does not.

Called as methods (`device.attributes["gpu.nvidia.com"].productName.lowerAscii()`); the
library passes the receiver as the first argument. Indexes count code points, as CEL's do.
A bad argument raises, which makes the selector not match the device being evaluated.
"""

from __future__ import annotations

__all__ = ["STRING_FUNCTIONS"]


def _split(text: str, separator: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    return text.split(separator, limit - 1 if limit > 0 else -1) if separator else _split_code_points(text, limit)


def _split_code_points(text: str, limit: int) -> list[str]:
    if 0 < limit < len(text):
        return [*text[: limit - 1], text[limit - 1 :]]
    return list(text)


def _index_of(text: str, sub: str, offset: int = 0) -> int:
    _check_index(text, offset)
    return text.find(sub, offset)


def _last_index_of(text: str, sub: str, offset: int | None = None) -> int:
    if offset is None:
        return text.rfind(sub)
    _check_index(text, offset)
    return text.rfind(sub, 0, offset + len(sub))


def _substring(text: str, start: int, end: int | None = None) -> str:
    end = len(text) if end is None else end
    _check_index(text, start)
    _check_index(text, end)
    if start > end:
        raise ValueError(f"substring: start {start} is after end {end}")
    return text[start:end]


def _char_at(text: str, index: int) -> str:
    _check_index(text, index)
    return text[index : index + 1]


def _replace(text: str, old: str, new: str, count: int = -1) -> str:
    return text.replace(old, new, count)


def _check_index(text: str, index: int) -> None:
    if not 0 <= index <= len(text):
        raise IndexError(f"index {index} out of range for a string of {len(text)} characters")


STRING_FUNCTIONS = {
    "lowerAscii": lambda text: "".join(c.lower() if c.isascii() else c for c in text),
    "upperAscii": lambda text: "".join(c.upper() if c.isascii() else c for c in text),
    "trim": str.strip,
    "split": _split,
    "join": lambda parts, separator="": separator.join(parts),
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "substring": _substring,
    "charAt": _char_at,
    "replace": _replace,
}
