"""The CP-SAT search runs in a child process: whatever it does there costs one answer.

Each test makes the child really do the thing — abort, allocate past the ceiling, hang,
get killed mid-search — and checks that the caller gets a typed answer and carries on.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import resource
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from models.snapshot import Snapshot
from solver.checker import check_placement
from solver.isolation import KILL_GRACE_S, MEMORY_POLL_S, SolverDied, memory_poll_s, run_isolated
from solver.place import SolveConfig, place
from tests.builders import make_gang, make_node, make_snapshot

MIB = 1 << 20


def _soon(seconds: float = 5.0) -> float:
    return time.perf_counter() + seconds


def test_the_child_computes_and_the_parent_gets_the_value() -> None:
    parent = os.getpid()
    pid, total = run_isolated(lambda: (os.getpid(), int(np.arange(1000).sum())), deadline=_soon(), memory_limit_bytes=None)
    assert pid != parent
    assert total == 499500


def test_an_exception_in_the_child_is_raised_in_the_parent_with_its_type() -> None:
    def fails() -> None:
        raise ValueError("bad model row 7")

    with pytest.raises(ValueError, match="bad model row 7"):
        run_isolated(fails, deadline=_soon(), memory_limit_bytes=None)


def test_meanwhile_runs_here_while_the_child_works(tmp_path: Path) -> None:
    """The child waits for a file the parent's `meanwhile` writes: it can only answer if
    `meanwhile` runs in the parent, after the fork, before the parent waits for it."""
    marker = tmp_path / "meanwhile"
    ran_in: list[int] = []

    def child() -> int:
        while not marker.exists():
            time.sleep(0.005)
        return os.getpid()

    def meanwhile() -> None:
        ran_in.append(os.getpid())
        marker.write_text("go")

    pid = run_isolated(child, deadline=_soon(), memory_limit_bytes=None, meanwhile=meanwhile)
    assert ran_in == [os.getpid()] and pid != os.getpid()


def test_an_exception_in_meanwhile_kills_the_child_and_is_raised_here() -> None:
    before = _children()

    def fails() -> None:
        raise KeyError("bound")

    with pytest.raises(KeyError, match="bound"):
        run_isolated(lambda: time.sleep(30), deadline=_soon(60), memory_limit_bytes=None, meanwhile=fails)
    assert _children() == before, "the child was left running"


def test_the_parents_sockets_are_not_held_open_by_the_search() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()

        def probe() -> str:
            try:
                os.fstat(listener.fileno())
            except OSError as error:
                return errno.errorcode[error.errno]
            return "open"

        assert run_isolated(probe, deadline=_soon(), memory_limit_bytes=None) == "EBADF"


def test_a_native_abort_costs_the_answer_not_the_process() -> None:
    def aborts() -> None:
        os.write(2, b"terminate called after throwing an instance of 'std::length_error'\n")
        os.abort()

    with pytest.raises(SolverDied) as died:
        run_isolated(aborts, deadline=_soon(), memory_limit_bytes=None)
    assert died.value.cause == "crashed"
    assert "SIGABRT" in str(died.value) and "std::length_error" in str(died.value)


def test_an_allocation_past_the_ceiling_fails_in_the_child_alone() -> None:
    def hoards() -> int:
        return len(bytearray(512 * MIB))

    assert run_isolated(hoards, deadline=_soon(), memory_limit_bytes=1024 * MIB) == 512 * MIB
    with pytest.raises(SolverDied) as died:
        run_isolated(hoards, deadline=_soon(), memory_limit_bytes=128 * MIB)
    assert died.value.cause == "memory"
    assert "0.12 GiB" in str(died.value)


def test_pages_the_child_copies_from_the_parent_count_against_the_ceiling() -> None:
    """Writing to memory the parent had mapped allocates nothing the address-space limit
    sees: only the parent's reads of the child's private memory catch it."""
    inherited = np.ones(256 * MIB, dtype=np.uint8)  # written here, so every page is copied on the child's write

    def writes_every_page() -> int:
        inherited[:: resource.getpagesize()] = 2
        time.sleep(8)
        return 0

    started = time.perf_counter()
    with pytest.raises(SolverDied) as died:
        run_isolated(writes_every_page, deadline=_soon(15), memory_limit_bytes=64 * MIB)
    assert died.value.cause == "memory"
    assert time.perf_counter() - started < 8


def test_the_memory_is_read_less_often_when_a_read_costs_more() -> None:
    assert memory_poll_s(0.0015) == MEMORY_POLL_S
    assert memory_poll_s(0.04) == pytest.approx(0.4)
    assert memory_poll_s(0.4) > memory_poll_s(0.04)


def test_a_hung_child_is_killed_after_its_deadline() -> None:
    started = time.perf_counter()
    with pytest.raises(SolverDied) as died:
        run_isolated(lambda: time.sleep(600), deadline=_soon(0.2), memory_limit_bytes=None)
    assert died.value.cause == "timeout"
    assert time.perf_counter() - started < 0.2 + KILL_GRACE_S + 2.0


def _wait_for_ever() -> None:
    threading.Event().wait()


def test_a_hung_child_says_where_it_hung_before_it_is_killed(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SolverDied) as died:
        run_isolated(_wait_for_ever, deadline=_soon(0.2), memory_limit_bytes=None)
    assert died.value.cause == "timeout"
    assert "hung at" in str(died.value) and "in wait" in str(died.value), str(died.value)
    stack = capfd.readouterr().err
    assert "most recent call first" in stack and "in _wait_for_ever" in stack, stack[-2000:]


def _children() -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        text = (task / "children").read_text()
        found.update(int(pid) for pid in text.split())
    return found


def _bytes_waiting(read_end: int) -> int:
    return int.from_bytes(fcntl.ioctl(read_end, termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)


def test_a_child_forked_while_a_thread_is_stuck_writing_a_log_line_still_logs_and_answers(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A stream's lock is copied into the child as the fork found it: held, when another
    thread was inside a write (a full pipe: a stalled log collector). The child logs
    through its own stream, to the parent, and answers."""
    read_end, write_end = os.pipe()
    stuck = open(write_end, "w", encoding="utf-8", buffering=1 << 16)  # noqa: SIM115 — closed below
    log = logging.getLogger("tests.isolation.stuck_stream")
    handler = logging.StreamHandler(stuck)
    log.addHandler(handler)
    writer = threading.Thread(target=lambda: (stuck.write("x" * (1 << 20)), stuck.flush()), daemon=True)
    writer.start()
    capacity = fcntl.fcntl(read_end, fcntl.F_GETPIPE_SZ)
    try:
        while _bytes_waiting(read_end) < capacity:  # the writer is inside the write, holding the lock
            time.sleep(0.01)
        answer = run_isolated(lambda: (log.warning("written by the child"), 42)[1], deadline=_soon(2.0), memory_limit_bytes=None)
        assert answer == 42
        assert "written by the child" in capfd.readouterr().err
    finally:
        log.removeHandler(handler)
        os.set_blocking(read_end, False)  # the writer may end between a check and a read
        while writer.is_alive():
            try:
                os.read(read_end, 1 << 16)
            except BlockingIOError:
                writer.join(0.01)
        stuck.close()
        os.close(read_end)


def test_a_process_started_with_its_standard_output_closed_still_gets_answers() -> None:
    """A daemon started with `>&-`: the child has no descriptor 1 to give a stream to."""
    script = (
        "import os, sys, time\n"
        "os.close(1)\n"
        "from solver.isolation import run_isolated\n"
        "print(run_isolated(lambda: 6 * 7, deadline=time.perf_counter() + 5, memory_limit_bytes=None), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stderr.strip().splitlines()[-1] == "42", done.stderr[-2000:]


def _contended_snapshot() -> Snapshot:
    """More GPU asked than there is, in many shapes: the search runs until it is stopped."""
    nodes = [make_node(f"n{i}", cpu=8, gpus=8) for i in range(40)]
    gangs = [make_gang(f"job-{j}", replicas=1 + j % 5, cpu=1 + j % 3, gpus=1 + j % 4, min_member=1) for j in range(120)]
    return make_snapshot(nodes=nodes, groups=gangs)


def test_a_search_killed_mid_solve_answers_with_greedy_and_the_caller_goes_on() -> None:
    snapshot = _contended_snapshot()
    before = _children()
    killed: list[int] = []

    def kill_the_search() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not killed:
            for pid in _children() - before:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.01)

    killer = threading.Thread(target=kill_the_search)
    killer.start()
    decision = place(snapshot, SolveConfig(engine="cpsat", time_limit_s=20))
    killer.join()
    assert killed, "the search never ran in a child process"
    assert decision.status == "FALLBACK" and decision.fallback is not None
    assert decision.fallback.cause == "crashed" and "SIGKILL" in decision.fallback.reason
    assert decision.placement.binds, "greedy's placement is the answer"
    assert not check_placement(snapshot, decision.placement)
    # The process is whole: the next solve runs CP-SAT to an answer as usual.
    again = place(snapshot, SolveConfig(engine="cpsat", time_limit_s=3))
    assert again.status in ("OPTIMAL", "FEASIBLE", "FALLBACK")
    assert not check_placement(snapshot, again.placement)


def test_a_ceiling_below_what_cp_sat_needs_to_start_is_refused() -> None:
    with pytest.raises(ValueError, match="memory_limit_bytes"):
        SolveConfig(memory_limit_bytes=1 * MIB)


# ---- an address-space limit inherited from the shell (issue 29, item 10) ----

INHERITED_LIMIT_BYTES = 1 << 30
"""`ulimit -v 1048576`: room for a Python process with the solver's imports, not for 2 GiB more."""

_UNDER_THE_LIMIT = """
import sys, time
from solver.isolation import SolverDied, run_isolated
try:
    run_isolated(lambda: bytearray(2 << 30), deadline=time.perf_counter() + 30, memory_limit_bytes=4 << 30)
except SolverDied as died:
    print(died.cause, died, sep=": ")
"""


def _limited(limit_bytes: int) -> None:
    """As `ulimit -v` sets it in a shell: soft and hard, for the process and all it forks."""
    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))


def test_a_search_that_outgrows_an_inherited_ulimit_v_names_that_limit_not_the_ceiling() -> None:
    """Under `ulimit -v`, a child asking for its 4 GiB ceiling could not raise the limit it
    inherited and died before the search: "crashed: exited with code 71". It now runs under
    the inherited limit, and when it outgrows it the reason says which limit and what to do."""
    done = subprocess.run(
        [sys.executable, "-c", _UNDER_THE_LIMIT],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=120, check=False,
        preexec_fn=lambda: _limited(INHERITED_LIMIT_BYTES),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("memory: out of memory under the inherited virtual-memory limit (ulimit -v = 1.00 GiB)")
    assert "raise or lift the limit" in done.stdout and "--solver-memory" in done.stdout
