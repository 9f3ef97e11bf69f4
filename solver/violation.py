"""`Violation`: one broken hard rule, as every rule's `check` reports it.

It lives below both `solver.checker` (which collects violations) and `solver.rules.*`
(which produce them), so that neither imports the other: `checker` imports the rules, the
rules import only this module and `solver.after`. `solver.checker` re-exports it.

The helpers word quantities for messages in their base units, with the unit named:
`describe_amount("gpu", 9000)` → `"9000 milli-GPU"`,
`describe_resources({"cpu": 4000, "gpu": 2000})` → `"cpu 4000m, gpu 2000 milli-GPU"`.
Numbers are never rounded or converted, so a message can be compared with the snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from models.snapshot import CPU, GPU, MEMORY

__all__ = ["Violation", "describe_amount", "describe_resources"]


@dataclass(frozen=True)
class Violation:
    """One hard rule broken by a placement.

    `rule` is the rule module's `NAME` (`"capacity"`); `subject` is what it is about: a pod
    key `"ns/name"`, a PodGroup key, a node name or a queue name; `message` is one sentence
    with the numbers, e.g. `node gpu-a-1: gpu 9000 > allocatable 8000 milli-GPU after placement`.
    """

    rule: str
    subject: str
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.subject}: {self.message}"


_UNITS = {CPU: "m", MEMORY: " bytes", GPU: " milli-GPU"}


def describe_amount(resource: str, amount: int) -> str:
    """`("cpu", 4000)` → `"4000m"`; `("memory", 2**30)` → `"1073741824 bytes"`; others bare."""
    return f"{amount}{_UNITS.get(resource, '')}"


def describe_resources(resources: Mapping[str, int]) -> str:
    """`{"gpu": 2000, "cpu": 4000}` → `"cpu 4000m, gpu 2000 milli-GPU"` (sorted; `"nothing"` if empty)."""
    parts = [f"{name} {describe_amount(name, amount)}" for name, amount in sorted(resources.items()) if amount]
    return ", ".join(parts) if parts else "nothing"
