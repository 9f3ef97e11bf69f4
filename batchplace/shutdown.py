"""How the long-running commands (`controller`, `manager`) stop on SIGTERM and SIGINT.

The signal sets the command's `stop` event, which the main thread waits on with
`controller.timing.wait_in_main_thread` (an untimed wait can miss the signal); the command
then releases its Lease and joins its threads (each join is bounded, and every thread is a
daemon). A shutdown that still has not finished `STACKS_AFTER_S` later is stuck somewhere
no bound reaches — a thread the interpreter waits for at exit, a request without a
timeout — and Kubernetes will kill the pod at the end of its grace period (30 s by
default) without a word. So the signal also arms `faulthandler` to write every thread's
stack to stderr at that point: the log then says where the process hung, as the search's
sub-process does (`solver.isolation`).
"""

from __future__ import annotations

import faulthandler
import signal
import sys
import threading

__all__ = ["STACKS_AFTER_S", "stop_on_signals"]

STACKS_AFTER_S = 15.0
"""Half of a pod's default termination grace period: the stacks are written before the kill."""


def stop_on_signals(stop: threading.Event) -> None:
    """SIGTERM and SIGINT set `stop`; the first also arms the stuck-shutdown stacks."""

    def on_signal(signum: int, _frame: object) -> None:
        if not stop.is_set():
            _arm_stacks()
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)


def _arm_stacks() -> None:
    """Arm the stacks on stderr; where stderr is no file (a captured stream), there is nowhere
    to write them, and stopping matters more."""
    try:
        faulthandler.dump_traceback_later(STACKS_AFTER_S, exit=False, file=sys.stderr)
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both OSError and ValueError
        pass
