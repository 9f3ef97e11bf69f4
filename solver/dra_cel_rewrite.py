"""Two parts of Kubernetes' DRA CEL environment the CEL library lacks, added by rewriting the
selector's source before it is compiled (solver.dra_cel).

- `cel.bind(name, value, body)`, which Kubernetes enables so a domain is written once
  (`cel.bind(dra, device.attributes["dra.example.com"], dra.a && dra.b)`), becomes
  `[value].map(name, body)[0]`: the same value bound to the same name, with no new function.
- `device.attributes[domain]` and `device.capacity[domain]` of a domain the device does not
  have are an empty map in Kubernetes, not an error, so `!has(device.attributes["x"].y)` is
  true there; each such index becomes `(domain in device.attributes ? device.attributes[domain] : {})`.
  `domain in device.attributes` still tests the domains the device has, as in Kubernetes.

Only these spellings are rewritten (`device.attributes[...]`, not `device["attributes"][...]`);
string literals are copied untouched.
"""

from __future__ import annotations

import re

__all__ = ["rewrite_selector"]

_BIND = re.compile(r"cel\s*\.\s*bind\s*\(")
_DOMAIN_INDEX = re.compile(r"device\s*\.\s*(?P<map>attributes|capacity)\s*\[")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPENERS = {"(": ")", "[": "]", "{": "}"}


def rewrite_selector(source: str) -> str:
    """The selector with `cel.bind` and domain lookups in the library's terms.

    Raises ValueError (the caller names where) for a `cel.bind` without a name and two
    expressions; the source must already parse, so brackets and literals are balanced.
    """
    out: list[str] = []
    index = 0
    while index < len(source):
        char = source[index]
        if char in "\"'":
            end = _literal_end(source, index)
            out.append(source[index:end])
            index = end
            continue
        starts_word = index == 0 or not (source[index - 1].isalnum() or source[index - 1] in "_.")
        bind = _BIND.match(source, index) if starts_word else None
        lookup = _DOMAIN_INDEX.match(source, index) if starts_word else None
        if bind:
            arguments, index = _arguments(source, bind.end(), ")")
            out.append(_bind(arguments))
        elif lookup:
            (domain,), index = _arguments(source, lookup.end(), "]")
            whole = f"device.{lookup['map']}"
            key = rewrite_selector(domain).strip()
            out.append(f"(({key}) in {whole} ? {whole}[{key}] : {{}})")
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _bind(arguments: list[str]) -> str:
    if len(arguments) != 3 or not _IDENTIFIER.fullmatch(arguments[0].strip()):
        raise ValueError("cel.bind takes a variable name and two expressions: cel.bind(name, value, body)")
    name, value, body = (rewrite_selector(argument).strip() for argument in arguments)
    return f"[{value}].map({name}, {body})[0]"


def _arguments(source: str, start: int, closer: str) -> tuple[list[str], int]:
    """The top-level comma-separated parts from `start` to the matching `closer`, and the index past it."""
    parts: list[str] = []
    depth = 0
    part_start = index = start
    while index < len(source):
        char = source[index]
        if char in "\"'":
            index = _literal_end(source, index)
            continue
        if char in _OPENERS:
            depth += 1
        elif char in ")]}":
            if depth == 0:
                if char != closer:
                    break
                parts.append(source[part_start:index])
                return parts, index + 1
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(source[part_start:index])
            part_start = index + 1
        index += 1
    raise ValueError(f"unbalanced brackets from position {start}")


def _literal_end(source: str, start: int) -> int:
    """Index past the string literal opening at `start` (single, double or triple quoted)."""
    quote = source[start] * 3 if source.startswith(source[start] * 3, start) else source[start]
    raw = start > 0 and source[start - 1] in "rR"
    index = start + len(quote)
    while index < len(source):
        if source[index] == "\\" and not raw:
            index += 2
            continue
        if source.startswith(quote, index):
            return index + len(quote)
        index += 1
    raise ValueError(f"unterminated string literal at position {start}")
