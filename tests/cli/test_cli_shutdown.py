"""`batchplace.shutdown`: SIGTERM stops a long-running command, and a shutdown still stuck
`STACKS_AFTER_S` later writes every thread's stack to stderr (the commands run it as
`controller` and `manager` do; the threshold is shortened in the child process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    import batchplace.shutdown as shutdown

    shutdown.STACKS_AFTER_S = float(sys.argv[1])
    stop = threading.Event()
    shutdown.stop_on_signals(stop)

    def stuck_in_a_request():
        time.sleep(30)

    threading.Thread(target=stuck_in_a_request, name="stuck", daemon=True).start()
    os.kill(os.getpid(), signal.SIGTERM)
    assert stop.wait(5), "SIGTERM did not set stop"
    print("stop set", flush=True)
    time.sleep(float(sys.argv[2]))
    """
)


def _run(stacks_after_s: float, shutdown_s: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(stacks_after_s), str(shutdown_s)],
        capture_output=True, text=True, timeout=60, check=False,
    )


def test_a_shutdown_stuck_past_the_threshold_writes_every_threads_stack() -> None:
    done = _run(stacks_after_s=0.2, shutdown_s=1.5)
    assert done.returncode == 0, done.stderr
    assert "stop set" in done.stdout
    assert "most recent call first" in done.stderr, done.stderr
    assert "stuck_in_a_request" in done.stderr  # the stuck thread's frame is named


def test_a_shutdown_that_ends_in_time_writes_nothing() -> None:
    done = _run(stacks_after_s=3.0, shutdown_s=0.1)
    assert done.returncode == 0, done.stderr
    assert "stop set" in done.stdout
    assert "most recent call first" not in done.stderr


MISSED_SIGNAL_CHILD = textwrap.dedent(
    """
    import signal, threading, time
    import batchplace.shutdown as shutdown
    from controller.timing import wait_in_main_thread

    stop = threading.Event()
    shutdown.stop_on_signals(stop)

    def signal_this_thread():
        time.sleep(0.3)
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

    threading.Thread(target=signal_this_thread, name="signalled", daemon=True).start()
    wait_in_main_thread(stop)
    print("stop seen", flush=True)
    """
)


def test_the_main_thread_sees_a_signal_its_wait_was_not_woken_by() -> None:
    """SIGTERM handled at the C level in another thread does not wake a main thread asleep in
    a lock (as when it lands just before the main thread blocks): the Python handler runs
    only when the main thread next runs bytecode. An untimed `stop.wait()` there never
    returns; `wait_in_main_thread` must."""
    done = subprocess.run([sys.executable, "-c", MISSED_SIGNAL_CHILD], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert "stop seen" in done.stdout
