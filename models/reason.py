"""Why a PodGroup waits, as a value: the rule that says it, a code and its numbers, and the
sentence rendered from them.

A `Reason` is the sentence itself (a `str`), so every place that shows reasons to people —
the JSON output contract, the HTTP responses, the CLI's tables, Events, the dashboard —
shows the same text, while code that acts on a reason reads its fields and never parses
the words: the controller maps `rule` to the PodGroup's condition, what-if lists the rules
that block a job. `solver.reasons` makes every Reason; this module only holds the type, so
that `models.placement` can carry it.

    reason = quota_exceeded("ml", resource="gpu", capability=64000, in_use=60000, needs=8000)
    reason == "quota: queue ml capability 64 gpu, 60 in use, job needs 8"
    (reason.rule, reason.code) == ("quota", "exceeded")
    reason.numbers["needs"] == 8000

`rule` is a rule's `NAME` (`solver.rules.RULES`) or one of the few sources that are no rule
(`solver.reasons.NOT_RULES`: a queue that is missing or closed, a pod no engine placed, …).

Read back from JSON (a client posting a `Decision` it was given), a sentence keeps its rule —
every sentence starts with it, "quota: …" — and loses its code and numbers (`read`): the one
place a reason's text is parsed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, NoReturn

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

__all__ = ["Number", "Reason", "UNREAD"]

Number = int | float | str | tuple[str, ...] | Mapping[str, int] | None
"""What a reason's numbers are: counts and amounts, the names it cites (a task, a queue, a
node), the names it lists (scheduling gates), counts per filter or resource, or None for a
number it does not have (no best domain, a drain with no known end)."""

UNREAD = ""
"""The code of a reason read back from its sentence (`Reason.read`): its code is not in the text."""


class Reason(str):
    """One reason, frozen: the sentence (the str), `rule`, `code` and `numbers` (module docstring)."""

    __slots__ = ("rule", "code", "numbers")
    rule: str
    code: str
    numbers: Mapping[str, Number]

    def __new__(cls, sentence: str, *, rule: str, code: str, numbers: Mapping[str, Number] = {}) -> Reason:
        self = super().__new__(cls, sentence)
        object.__setattr__(self, "rule", rule)
        object.__setattr__(self, "code", code)
        object.__setattr__(self, "numbers", _frozen(numbers))
        return self

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"a Reason is frozen: cannot set {name}")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"a Reason is frozen: cannot delete {name}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuilt, (str(self), self.rule, self.code, _thawed(self.numbers)))

    @classmethod
    def read(cls, sentence: str) -> Reason:
        """`sentence` itself when it is a Reason; else the Reason its text says: the rule is the
        words before the first colon, "quota: queue ml …" → "quota" (no code, no numbers)."""
        if isinstance(sentence, Reason):
            return sentence
        rule = sentence.split(":", 1)[0].strip() if ":" in sentence else ""
        return cls(sentence, rule=rule, code=UNREAD)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        """A string in every schema and every output; a Reason given stays one (its fields
        intact), a plain string given is `read`."""
        return core_schema.no_info_wrap_validator_function(
            _validated, core_schema.str_schema(), serialization=core_schema.to_string_ser_schema()
        )


def _validated(value: Any, handler: core_schema.ValidatorFunctionWrapHandler) -> Reason:
    return value if isinstance(value, Reason) else Reason.read(handler(value))


def _rebuilt(sentence: str, rule: str, code: str, numbers: Mapping[str, Number]) -> Reason:
    return Reason(sentence, rule=rule, code=code, numbers=numbers)


def _frozen(numbers: Mapping[str, Number]) -> Mapping[str, Number]:
    """Read-only numbers: nested counts read-only too, listed names a tuple."""
    return MappingProxyType({name: _frozen_number(value) for name, value in numbers.items()})


def _frozen_number(value: Any) -> Number:
    if isinstance(value, Mapping):
        return MappingProxyType(dict(value))
    if isinstance(value, Sequence) and not isinstance(value, str):
        return tuple(value)
    return value  # type: ignore[no-any-return]


def _thawed(numbers: Mapping[str, Number]) -> dict[str, Number]:
    """Plain dicts again, for pickling (a read-only mapping does not pickle)."""
    return {name: dict(value) if isinstance(value, Mapping) else value for name, value in numbers.items()}
