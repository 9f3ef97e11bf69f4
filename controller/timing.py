"""Clock and backoff, injected into everything that waits, so tests can drive time.

`Clock` is the seam: `SystemClock` reads the real monotonic and wall clocks and sleeps on a
`threading.Event` (so a stop request wakes it). `Backoff` is exponential with full jitter
(AWS's "full jitter"; client-go's wait.Backoff with Jitter=1): attempt n waits a uniform
random time in [0, min(cap, base · 2ⁿ)], e.g. base 0.2 s, cap 5 s → up to 0.2, 0.4, 0.8,
1.6, 3.2, 5, 5, … s. `reset()` after a success.

Not promised: precise sleeps; a sleep ends early when `stop` is set.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Protocol

__all__ = [
    "SIGNAL_CHECK_S", "Clock", "SystemClock", "Backoff", "BackoffPolicy", "join_within", "rfc3339", "rfc3339_micro",
    "wait_in_main_thread",
]


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def now(self) -> datetime:
        """Wall-clock time, timezone-aware UTC (for timestamps written to the API)."""
        ...

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        """Sleep; True when `stop` was set meanwhile (the sleep ended early)."""
        ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(timezone.utc)

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        if stop is None:
            time.sleep(max(0.0, seconds))
            return False
        return stop.wait(max(0.0, seconds))


@dataclass(frozen=True)
class BackoffPolicy:
    base_s: float = 0.2
    cap_s: float = 5.0
    attempts: int = 4
    """Calls tried in one go (the first included) before the error is handed up."""

    def start(self, *, rng: random.Random | None = None) -> "Backoff":
        return Backoff(self, rng or random.Random())


@dataclass
class Backoff:
    policy: BackoffPolicy
    rng: random.Random
    failures: int = field(default=0)

    def next_delay_s(self, *, at_least_s: float | None = None) -> float:
        """The wait before the next try (and count one failure); `at_least_s` e.g. a Retry-After."""
        ceiling = min(self.policy.cap_s, self.policy.base_s * (2**self.failures))
        self.failures += 1
        delay = self.rng.uniform(0.0, ceiling)
        return max(delay, at_least_s or 0.0)

    def reset(self) -> None:
        self.failures = 0


SIGNAL_CHECK_S = 0.5
"""How often `wait_in_main_thread` wakes to let a signal's Python handler run."""


def wait_in_main_thread(stop: threading.Event) -> None:
    """Block the main thread until `stop` is set, waking every `SIGNAL_CHECK_S`.

    A command that stops on SIGTERM sets `stop` from a Python signal handler, and CPython
    runs those only in the main thread, between bytecodes. An untimed `stop.wait()` sleeps
    in a lock: a signal whose C-level handler ran just before the main thread blocked, or
    ran in another thread, leaves the Python handler pending while the main thread sleeps
    on, and the process ignores SIGTERM until the kill: a controller started under load and
    stopped at once sometimes did. Waking now and then bounds the delay to one period."""
    while not stop.wait(SIGNAL_CHECK_S):
        pass


def join_within(threads: Iterable[threading.Thread], timeout_s: float) -> None:
    """Join `threads`, `timeout_s` in all, not each: a shutdown waits its grace period once,
    however many threads are stuck in a request (they are daemons and end with the process)."""
    deadline = time.monotonic() + timeout_s
    for thread in list(threads):
        thread.join(max(0.0, deadline - time.monotonic()))


def rfc3339(moment: datetime) -> str:
    """`2025-03-01T09:01:00Z`: Kubernetes' `metav1.Time` (seconds)."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(moment: datetime) -> str:
    """`2025-03-01T09:01:00.123456Z`: Kubernetes' `metav1.MicroTime` (leases, events)."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
