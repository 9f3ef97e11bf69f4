"""How the dashboard writes numbers: GPUs in devices, CPU in cores, memory in GiB, ages.

Quantities arrive in the snapshot's base units (milli-GPU, millicores, bytes) and leave
as short strings a person reads: `gpus_text(2500)` → `"2.5"`, `cpu_text(191500)` →
`"191.5"`, `memory_text(2**31)` → `"2 GiB"`, `age_text(3 * 3600 + 60)` → `"3h1m"`.
Pure functions; the templates call them as filters.
"""

from __future__ import annotations

from collections.abc import Mapping

from models.snapshot import CPU, GPU, GPU_MILLI_PER_DEVICE, MEMORY, Snapshot

__all__ = [
    "PALETTE_SIZE",
    "gpus_text",
    "cpu_text",
    "memory_text",
    "amount_text",
    "unit_of",
    "age_text",
    "percent_text",
    "queue_slots",
    "resources_text",
]

PALETTE_SIZE = 12
"""Queue colors `q0` … `q11` in ui.css; queues past twelve reuse them in order."""

_GIB = 2**30


def _short(value: float) -> str:
    """Up to two decimals, no trailing zeros: 2.50 → "2.5", 8.0 → "8", 0.333 → "0.33"."""
    text = f"{value:,.2f}".rstrip("0").rstrip(".")
    return text or "0"


def gpus_text(gpu_milli: int) -> str:
    return _short(gpu_milli / GPU_MILLI_PER_DEVICE)


def cpu_text(cpu_milli: int) -> str:
    return _short(cpu_milli / 1000)


def memory_text(memory_bytes: int) -> str:
    return f"{_short(memory_bytes / _GIB)} GiB"


def amount_text(resource: str, amount: int) -> str:
    """An amount of `resource` in the unit a person reads (`unit_of` says which)."""
    if resource == GPU:
        return gpus_text(amount)
    if resource == CPU:
        return cpu_text(amount)
    if resource == MEMORY:
        return memory_text(amount)
    return f"{amount:,}"


def unit_of(resource: str) -> str:
    return {GPU: "GPUs", CPU: "cores", MEMORY: ""}.get(resource, "")


def resources_text(resources: Mapping[str, int]) -> str:
    """`{"cpu": 4000, "gpu": 8000}` → `"8 GPUs, 4 cores"` (GPU first, then CPU, memory, the rest)."""
    order = [GPU, CPU, MEMORY, *sorted(name for name in resources if name not in (GPU, CPU, MEMORY))]
    parts = []
    for name in order:
        amount = resources.get(name, 0)
        if amount:
            unit = unit_of(name) or ("" if name == MEMORY else name)
            parts.append(f"{amount_text(name, amount)} {unit}".strip())
    return ", ".join(parts) or "nothing"


def age_text(seconds: float | None) -> str:
    """`"—"` when unknown; else the two largest units: 45 s → "45s", 3,660 s → "1h1m", 2 days → "2d0h"."""
    if seconds is None or seconds < 0:
        return "—"
    whole = int(seconds)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes}m"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def percent_text(fraction: float) -> str:
    return f"{fraction * 100:.1f} %"


def queue_slots(snapshot: Snapshot) -> dict[str, int]:
    """Each queue's color slot: queues in name order, slot = position mod `PALETTE_SIZE`."""
    return {name: position % PALETTE_SIZE for position, name in enumerate(sorted(q.name for q in snapshot.queues))}
