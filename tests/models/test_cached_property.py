"""The models' `cached_property` holds no lock: a search forked while another thread is
computing a cached value reads its own snapshot's value and answers. With Python 3.11's
`functools.cached_property`, the child waits for ever on the lock it was copied holding
(a fuzzed service call was killed as hung, 7 s for a 0.5 s limit)."""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path

from models.cached import cached_property
from models.snapshot import Snapshot
from solver.isolation import run_isolated
from tests.builders import make_gang, make_node, make_snapshot

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("models", "solver", "controller", "service", "experiments", "batchplace")


class _Slow:
    """A value whose computation waits until it is let go, for the instance told to."""

    def __init__(self, gate: threading.Event | None) -> None:
        self.gate = gate
        self.inside = threading.Event()

    @cached_property
    def value(self) -> str:
        if self.gate is not None:
            self.inside.set()
            self.gate.wait()
        return f"value of {id(self)}"


def test_a_child_forked_while_another_thread_computes_the_property_reads_its_own() -> None:
    gate = threading.Event()
    held, own = _Slow(gate), _Slow(None)
    other = threading.Thread(target=lambda: held.value, daemon=True)
    other.start()
    try:
        assert held.inside.wait(10)
        started = time.perf_counter()
        assert run_isolated(lambda: own.value, deadline=time.perf_counter() + 2.0, memory_limit_bytes=None) == own.value
        assert time.perf_counter() - started < 2.0
    finally:
        gate.set()
        other.join(10)
    assert held.value == f"value of {id(held)}"


def test_the_value_is_computed_once_per_instance_and_kept_apart_per_instance() -> None:
    calls: list[int] = []

    class Counted:
        def __init__(self, n: int) -> None:
            self.n = n

        @cached_property
        def doubled(self) -> int:
            calls.append(self.n)
            return 2 * self.n

    one, two = Counted(1), Counted(2)
    assert (one.doubled, one.doubled, two.doubled) == (2, 2, 4)
    assert calls == [1, 2]
    assert isinstance(Counted.doubled, cached_property)


def test_a_snapshots_cached_values_are_its_own() -> None:
    first = make_snapshot(nodes=[make_node("n0", gpus=8)], groups=[make_gang("a", replicas=2, gpus=1)])
    second = make_snapshot(nodes=[make_node("n1", gpus=8)], groups=[make_gang("b", replicas=1, gpus=1)])
    assert isinstance(Snapshot.__dict__["pod_by_key"], cached_property)
    assert set(first.pod_by_key) != set(second.pod_by_key)
    assert first.pod_by_key is first.pod_by_key


def test_no_module_uses_the_locking_stdlib_cached_property() -> None:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module == "functools" and any(
                    alias.name == "cached_property" for alias in node.names
                ):
                    found.append(str(path.relative_to(ROOT)))
                elif isinstance(node, ast.Attribute) and node.attr == "cached_property" and getattr(node.value, "id", "") == "functools":
                    if path.relative_to(ROOT) != Path("models/cached.py"):
                        found.append(str(path.relative_to(ROOT)))
    assert found == [], f"use models.cached.cached_property (no lock to be copied held into a forked search): {found}"
