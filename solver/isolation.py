"""Run the CP-SAT search in a child process, so that whatever it does costs one answer.

CP-SAT is C++. When it fails natively — `std::bad_alloc` turned into `abort()`, a crash in a
subsolver, an allocation that grows until the kernel's OOM killer steps in, a search that
never returns — Python cannot catch it: the process around it dies, and with it the
controller (a crash loop on the same snapshot) or every request in flight in `serve`.
So `run_isolated` forks: the child runs the search and sends its result back through a
pipe; the parent only waits. What the caller sees instead of a dead process is a
`SolverDied` naming the cause, and `solver.place` answers with greedy's placement.

Why fork, not a pool of spawned workers: the child inherits the snapshot, the `Problem`
and the greedy hint already built, copy-on-write, so nothing is serialised on the way in
(a 1,213-node snapshot with 6,208 running pods would cost more to pickle than to solve);
only the result (a placement) is pickled on the way out. The child runs solver code only
(no Kubernetes client, no HTTP), and the locks it may meet are reset at fork (logging's)
or do not exist (`solver.memo` and `models.cached` are lock-free: Python 3.11's
`functools.cached_property` is not, and a search forked while another thread was inside one
waited for ever on the lock it was copied holding); a child that deadlocks anyway is killed
at its deadline like a hung search, and says where (below). Linux only, like the clusters
it serves.

The memory ceiling, `memory_limit_bytes`, is what the child may use beyond what it shares
with the parent, held two ways, because neither alone holds it:
  - an address-space limit (`RLIMIT_AS`) of the child's size at fork plus the ceiling: a
    runaway allocation fails at once — `MemoryError` in Python, `std::bad_alloc` (an
    abort) in C++ — and the child dies alone. But memory the parent had freed is still
    mapped, and the child may reuse it without the limit noticing;
  - so the parent also reads the child's private memory (`Private_Clean + Private_Dirty`
    of `/proc/PID/smaps_rollup`: pages it allocated or copied on write, not the ones it
    still shares) every `MEMORY_POLL_S`, or less often when a read costs more than
    `MEMORY_POLL_SHARE` of that, and kills it past the ceiling.
The address-space limit counts thread stacks and arenas that are reserved but never
touched, a few hundred MB for CP-SAT's workers: a ceiling far below 1 GiB can stop a
search that would have fit.

An address-space limit the process inherited (`ulimit -v` in the shell that started it)
cannot be raised by the child: asking for the ceiling above it made `setrlimit` fail, and
every search died before it began ("exited with code 71"). The child now takes the lower
of the two, so the search runs under the inherited limit whenever it fits there: a small
job solves under a limit barely above what the parent needs to load OR-Tools, a large
snapshot needs more, and under a limit too tight for it glibc cannot give a worker thread its
thread-local data (the limits measured: docs/results.md, "The search's sub-process and its
memory"). When a search dies under such a limit, its reason names the limit and
what to do (`_Limit.reached`), not a ceiling it never reached.

The child's standard error (CP-SAT's own messages, its log lines) is read by the parent and
written through to the parent's standard error; its last lines go into the reason. A child
still running `STACKS_AFTER_S` past its deadline writes its Python stack there first
(faulthandler), so a hang is logged with where it hung and its reason names the innermost
frame.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import pickle
import resource
import selectors
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from models.placement import FallbackCause

__all__ = [
    "SolverDied", "DeathCause", "run_isolated", "SearchFailed", "search_or_failure", "DEFAULT_MEMORY_LIMIT_BYTES",
    "KILL_GRACE_S", "memory_poll_s",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

DeathCause = Literal["crashed", "memory", "timeout"]

DEFAULT_MEMORY_LIMIT_BYTES = 4 << 30
"""What one CP-SAT search may allocate, 4 GiB: an order of magnitude above the search
process's peak on the openb regression snapshot and on 10,000 nodes / 5,000 pending pods
(the peaks measured: docs/results.md, "The search's sub-process and its memory"), and
still five searches side by side on a 24 GB machine."""

KILL_GRACE_S = 2.0
"""How long past its deadline the child may take (it extracts the placement after the
search, and CP-SAT may overshoot its own limit) before it is killed as hung."""

STACKS_AFTER_S = 0.5 * KILL_GRACE_S
"""Past its deadline by this much, the child writes its Python stack to standard error
(passed through to the log) before it is killed: a hung search says where it hung."""

MEMORY_POLL_S = 0.05
"""How often the parent reads the child's private memory at most. A read walks the child's
page tables, which map all the parent had at the fork, so its cost grows with the parent
(docs/results.md, "The search's sub-process and its memory")."""

MEMORY_POLL_SHARE = 0.1
"""The share of a core the memory reads may take: the next read waits ten times as long as
the last one took, when that is longer than `MEMORY_POLL_S`. Why: the read is kernel work
on a core the search and the LP bound beside it need, and under the controller's largest
clusters reading every `MEMORY_POLL_S` took a large share of a core for the whole search
(docs/results.md, "The search's sub-process and its memory"). The ceiling still holds between reads:
`RLIMIT_AS` stops fresh allocations at once, and only memory the parent had freed can be
taken unseen until the next read."""

_STDERR_TAIL_BYTES = 2048
_MAX_FD = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
if _MAX_FD == resource.RLIM_INFINITY:
    _MAX_FD = 1 << 20
_EXIT_UNPICKLABLE = 71


class SolverDied(Exception):
    """The search process ended without an answer: `cause` says how, the message says what
    was seen (signal, exit code, the last line it wrote)."""

    def __init__(self, cause: DeathCause, message: str) -> None:
        super().__init__(message)
        self.cause: DeathCause = cause


@dataclass
class _Collected:
    payload: bytearray
    stderr_tail: bytearray
    stack: bytearray = field(default_factory=bytearray)  # the start of the stack the child wrote when hung
    finished: bool = False  # both pipes reached end of file
    private_bytes: int = 0  # the child's private memory when it was killed for it (0: it was not)


def run_isolated(
    work: Callable[[], T],
    *,
    deadline: float,
    memory_limit_bytes: int | None,
    meanwhile: Callable[[], object] | None = None,
) -> T:
    """`work()` in a forked child; its return value, or the exception it raised, re-raised here.

    `deadline` is a `time.perf_counter()` instant (the same monotonic clock in both
    processes): the child is killed `KILL_GRACE_S` after it. Raises `SolverDied` when the
    child dies, overruns or runs out of memory. `meanwhile()` runs here while the child
    works — after the fork, so the child never inherits it half done — for work the
    caller needs whatever the child answers (its exception kills the child and is
    re-raised): on two cores it costs the call no wall time while the search lasts longer."""
    result_read, result_write = os.pipe()
    stderr_read, stderr_write = os.pipe()
    ours = None if memory_limit_bytes is None else _address_space_bytes() + memory_limit_bytes
    inherited = inherited_address_space_limit()
    # The child may not raise a limit it inherited (`setrlimit` fails, the child dies before
    # the search): under a tighter `ulimit -v`, that limit is the child's ceiling.
    ulimit_bytes = inherited if inherited is not None and (ours is None or inherited < ours) else None
    ceiling = ulimit_bytes if ulimit_bytes is not None else ours
    limit = _Limit(memory_limit_bytes=memory_limit_bytes, ulimit_bytes=ulimit_bytes)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        _child(work, result_read, result_write, stderr_read, stderr_write, ceiling, stacks_at=deadline + STACKS_AFTER_S)
    os.close(result_write)
    os.close(stderr_write)
    collected = None
    try:
        if meanwhile is not None:
            meanwhile()
        collected = _collect(result_read, stderr_read, pid, kill_at=deadline + KILL_GRACE_S, memory_limit_bytes=memory_limit_bytes)
    finally:
        os.close(result_read)
        os.close(stderr_read)
        if collected is None or not collected.finished:  # overran, or we were interrupted
            os.kill(pid, signal.SIGKILL)
        status = os.waitpid(pid, 0)[1]  # both pipes closed: the child is exiting
    tail = collected.stderr_tail.decode("utf-8", "replace").strip()
    if collected.private_bytes:
        used = f"{collected.private_bytes / (1 << 30):.2f} GiB"
        raise SolverDied("memory", f"used {used}, past the memory ceiling of {_gib(memory_limit_bytes)}: killed{_last_line(tail)}")
    if not collected.finished:
        hung_at = _hung_at(collected.stack.decode("utf-8", "replace"))
        raise SolverDied("timeout", f"no answer {KILL_GRACE_S:.0f} s past the deadline: killed{hung_at or _last_line(tail)}")
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and collected.payload:
        outcome, value = pickle.loads(bytes(collected.payload))
        if outcome == "error":
            if isinstance(value, MemoryError):
                raise SolverDied("memory", f"out of memory {limit.reached()}{_last_line(tail)}")
            raise value
        return value  # type: ignore[no-any-return]
    raise _death(status, tail, limit)


@dataclass(frozen=True)
class SearchFailed:
    """A search that gave no answer, as its caller's FALLBACK states it: `cause` and `reason`."""

    cause: FallbackCause
    reason: str


def search_or_failure(
    work: Callable[[], T],
    *,
    deadline: float,
    memory_limit_bytes: int | None,
    raise_errors: bool,
    what: str,
    meanwhile: Callable[[], object] | None = None,
) -> T | SearchFailed:
    """`work()` through `run_isolated`, or why it gave no answer — the one policy for every
    CP-SAT search (a placement, a rebalance plan): a dead child is a `SearchFailed` whatever
    the caller asked for (there is nothing to raise: the process around it lives on); an
    exception the search raised is re-raised when `raise_errors` (engine `cpsat`: a bug must
    not hide behind greedy's answer), else a `SearchFailed` "engine_error" with its text.
    `what` names the search in the log (`"cpsat"`, `"rebalance"`)."""
    try:
        return run_isolated(work, deadline=deadline, memory_limit_bytes=memory_limit_bytes, meanwhile=meanwhile)
    except SolverDied as died:
        log.error("%s: the search process died (%s): %s", what, died.cause, died, extra={"fallback_cause": died.cause})
        return SearchFailed(died.cause, f"CP-SAT {died}")
    except Exception as error:
        if raise_errors:
            raise
        log.exception("%s: CP-SAT failed; greedy's answer instead", what)
        return SearchFailed("engine_error", f"CP-SAT failed: {type(error).__name__}: {error}")


def _child(
    work: Callable[[], object],
    result_read: int,
    result_write: int,
    stderr_read: int,
    stderr_write: int,
    ceiling: int | None,
    *,
    stacks_at: float,
) -> None:
    code = 0
    try:
        os.close(result_read)
        os.close(stderr_read)
        os.dup2(stderr_write, 2)
        os.close(stderr_write)
        # The parent's sockets (a server's listening socket, its clients' connections) stay
        # the parent's: held open here they would outlive a closed connection or a restart.
        os.closerange(3, result_write)
        os.closerange(result_write + 1, _MAX_FD)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # the parent handles Ctrl-C; the child just dies
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _own_streams()
        if ceiling is not None:
            resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))
        faulthandler.dump_traceback_later(max(0.0, stacks_at - time.perf_counter()), file=2)
        try:
            payload = pickle.dumps(("ok", work()), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as error:  # noqa: BLE001 — every failure goes back to the parent
            try:
                payload = pickle.dumps(("error", error), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001
                payload = pickle.dumps(("error", RuntimeError(f"{type(error).__name__}: {error}")))
        view = memoryview(payload)
        while view:
            view = view[os.write(result_write, view) :]
    except BaseException as error:  # noqa: BLE001
        code = _EXIT_UNPICKLABLE
        try:  # into the tail the parent reads, so the reason names it
            os.write(2, f"{type(error).__name__}: {error}\n".encode("utf-8", "replace"))
        except BaseException:  # noqa: BLE001, S110 — nothing left to report it through
            pass
    finally:
        os._exit(code)


def _own_streams() -> None:
    """Give the child its own `sys.stdout` and `sys.stderr`, and point every log handler
    that writes to a stream at the new `sys.stderr`: a stream object's lock is not reset at
    fork, so when another of the parent's threads was inside a write (a log line into a
    full pipe: a log collector that stalls), the child's first log line would wait for ever
    on the copy. The new ones write to the descriptors 1 and 2 (the pipe to the parent); the
    descriptors of other streams (a log file) are closed in the child anyway."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        try:
            stream = open(fd, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)  # noqa: SIM115 — the child's for its life
        except OSError:  # started with it closed (`>&-`): there is nowhere to write it
            stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
        setattr(sys, name, stream)
    loggers = [logging.getLogger(), *(x for x in logging.Logger.manager.loggerDict.values() if isinstance(x, logging.Logger))]
    for logger in loggers:
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler):
                handler.stream = sys.stderr  # not `setStream`: it would flush the old stream, taking its lock


def _collect(result_read: int, stderr_read: int, pid: int, *, kill_at: float, memory_limit_bytes: int | None) -> _Collected:
    """Read the child's result and standard error until both end, `kill_at` passes or the
    child's private memory passes `memory_limit_bytes`; standard error is passed through to
    ours as it comes."""
    collected = _Collected(payload=bytearray(), stderr_tail=bytearray())
    open_pipes = {result_read, stderr_read}
    next_read = 0.0  # `time.perf_counter()` seconds: when the child's memory is read next
    with selectors.DefaultSelector() as selector:
        for fd in open_pipes:
            selector.register(fd, selectors.EVENT_READ)
        while open_pipes:
            now = time.perf_counter()
            left = kill_at - now
            if left <= 0:
                return collected
            if memory_limit_bytes is not None:
                if now >= next_read:
                    private = _private_bytes(pid)
                    if private > memory_limit_bytes:
                        collected.private_bytes = private
                        return collected
                    next_read = now + memory_poll_s(time.perf_counter() - now)
                left = min(left, max(0.0, next_read - time.perf_counter()))
            for key, _ in selector.select(timeout=left):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fd)
                    open_pipes.discard(key.fd)
                elif key.fd == result_read:
                    collected.payload += chunk
                else:
                    _pass_through(chunk)
                    _keep_stack(collected, collected.stderr_tail[-len(_STACK_MARK) :] + chunk, chunk)
                    collected.stderr_tail = (collected.stderr_tail + chunk)[-_STDERR_TAIL_BYTES:]
    collected.finished = True
    return collected


def _pass_through(chunk: bytes) -> None:
    try:
        sys.stderr.buffer.write(chunk)  # type: ignore[union-attr]
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):  # a replaced or closed stderr: the tail still goes into the reason
        pass


_OUT_OF_MEMORY_SIGNS = ("bad_alloc", "MemoryError", "cannot allocate memory", "out of memory")
"""What a child that hit the ceiling writes last: C++'s `std::bad_alloc`, Python's
`MemoryError`, glibc's "cannot allocate memory for thread-local data" (a worker thread that
could not start)."""


@dataclass(frozen=True)
class _Limit:
    """What bounds the child's address space: the memory ceiling, or a tighter limit the
    process inherited (`ulimit_bytes`, from `ulimit -v`), which the reason must then name."""

    memory_limit_bytes: int | None
    ulimit_bytes: int | None

    def reached(self) -> str:
        """Which limit a child that ran out of memory met, and what to do about an inherited one.

        Example: `ulimit -v 3900000` in the shell → "under the inherited virtual-memory limit
        (ulimit -v = 3.72 GiB): …". CP-SAT's worker threads reserve address space they never
        touch (stacks, allocator arenas: a few hundred MB), so a limit on address space stops a
        search whose memory would fit; the memory ceiling holds what the search really uses."""
        if self.ulimit_bytes is None:
            return f"at the memory ceiling of {_gib(self.memory_limit_bytes)}"
        return (
            f"under the inherited virtual-memory limit (ulimit -v = {_gib(self.ulimit_bytes)}): CP-SAT's worker "
            "threads reserve more address space than they use; raise or lift the limit (ulimit -v unlimited) "
            f"and cap the search with --solver-memory instead ({_gib(self.memory_limit_bytes)} now)"
        )


def _death(status: int, tail: str, limit: _Limit) -> SolverDied:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            how = f"killed by {signal.Signals(number).name}"
        except ValueError:  # a real-time signal has no name
            how = f"killed by signal {number}"
    else:
        how = f"exited with code {os.WEXITSTATUS(status)} and no answer"
    out_of_memory = any(sign in tail.lower() for sign in map(str.lower, _OUT_OF_MEMORY_SIGNS))
    # Under an inherited limit, a child that could not even report (no pickled answer, no
    # sign written) most likely failed to allocate before it could: the limit is named too.
    if out_of_memory or (limit.ulimit_bytes is not None and _silent(status)):
        return SolverDied("memory", f"{how}, out of memory {limit.reached()}{_last_line(tail)}")
    return SolverDied("crashed", f"{how}{_last_line(tail)}")


def _silent(status: int) -> bool:
    """A death that says nothing of its cause: an abort, or the child's own last-resort exit."""
    if os.WIFSIGNALED(status):
        return os.WTERMSIG(status) in (signal.SIGABRT, signal.SIGSEGV)
    return os.WEXITSTATUS(status) == _EXIT_UNPICKLABLE


def _last_line(tail: str) -> str:
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return f" ({lines[-1][:200]})" if lines else ""


_STACK_MARK = b"(most recent call first):"


def _keep_stack(collected: _Collected, seam: bytes, chunk: bytes) -> None:
    """Keep the start of the stack a hung child writes (`STACKS_AFTER_S`): its innermost
    frames come first, and the stack is deeper than the tail keeps (a server's frames sit
    under the search's). `seam` is `chunk` after the tail's last bytes, for a mark split
    between two reads."""
    if collected.stack:
        if len(collected.stack) < _STDERR_TAIL_BYTES:
            collected.stack += chunk
        return
    at = seam.find(_STACK_MARK)
    if at >= 0:
        collected.stack = bytearray(seam[at + len(_STACK_MARK) :]) or bytearray(b"\n")


def _hung_at(stack: str) -> str:
    """The innermost frame of the stack a hung child wrote, or ""."""
    frames = [line.strip() for line in stack.splitlines() if line.strip().startswith("File ")]
    return f" (hung at {frames[0][:200]})" if frames else ""


def _gib(size: int | None) -> str:
    return "no limit" if size is None else f"{size / (1 << 30):.2f} GiB"


def memory_poll_s(read_s: float) -> float:
    """Seconds to the next read of the child's memory after one that took `read_s`
    (`MEMORY_POLL_SHARE`). Example: a 1.5 ms read → 0.05 s; a 40 ms read → 0.4 s."""
    return max(MEMORY_POLL_S, read_s / MEMORY_POLL_SHARE)


def _private_bytes(pid: int) -> int:
    """Memory the child holds alone: pages it allocated, or copied from the parent's on
    write (0 once it has exited)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            text = rollup.read()
    except OSError:
        return 0
    total_kib = 0
    for line in text.splitlines():
        if line.startswith(("Private_Clean:", "Private_Dirty:")):
            total_kib += int(line.split()[1])
    return total_kib * 1024


def inherited_address_space_limit() -> int | None:
    """The address-space limit (`RLIMIT_AS`, soft) this process runs under — inherited, e.g.
    from `ulimit -v` in the shell that started it; None when there is none."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def _address_space_bytes() -> int:
    """This process's virtual size now (the first field of /proc/self/statm, in pages)."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()
