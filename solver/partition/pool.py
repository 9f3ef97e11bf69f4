"""Solve the parts side by side in processes of their own, and never lose the caller to one.

Input: the parts' snapshots, the solve to run on each (a picklable callable: `place` with
the part's configuration bound), the answer to give for a part whose solve fails (greedy's,
computed here) and a wall-clock deadline. Output: one `PartAnswer` per part, in part order.

Why processes: the parts' searches are CPU-bound Python and native code, which threads
would run one at a time. Why spawned, not forked: the pool's workers start clean (no locks
or threads of the caller's, which in the HTTP service and the controller hold both), and
the same payload — a pickled snapshot and a function named by its module — could be sent
to workers on other machines. The cost is pickling each part on the way in, and each
worker's start (importing the solver, about a second) — paid once per process, not per call:
the workers are kept warm between calls (`_WarmWorkers`), since the controller and the
service solve a cycle after another, and a pool started per call would spend the first
second of every limit starting. A worker is replaced after `TASKS_PER_WORKER` parts, so
what a long-lived worker might accumulate stays bounded. A call that finds the warm
workers busy (a concurrent call in the service) starts workers of its own for that call.

Spawned workers import the caller's main module again: a script that calls `place()` at
import time must do so under `if __name__ == "__main__":`, or every worker dies starting and
every part answers with `rescue` (the commands, the service and the controller do).

On a Ray cluster (`PartPool.ray_address`, `solver.partition.ray_pool`) the same payload
runs as Ray tasks instead, with the same answers: a part's `place()` reads its budget in
deterministic time, not from where it runs.

A part that fails answers with `rescue(part)` — greedy's placement of that part — and the
others keep theirs: "native code can die". Failing is: the solve raising (it is logged), the
worker dying (the pool is then broken and every part still out fails alike), or the part
not answering by `deadline`; the pool's workers still running then are stopped, so a hung
solve never outlives the call.
"""

from __future__ import annotations

import logging
import os
import pickle
import threading
import time
from collections.abc import Callable, Sequence
from collections.abc import Iterator
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import get_context

from models.placement import Decision, Placement
from models.snapshot import Snapshot
from solver.partition.answer import PartAnswer, answer_of, failed_answer, timed_out_answer

__all__ = ["PartPool", "solve_parts", "TASKS_PER_WORKER"]

log = logging.getLogger(__name__)

TASKS_PER_WORKER = 200
"""Parts a worker solves before it is replaced: what a long-lived worker may accumulate stays bounded."""

PARENT_POLL_S = 1.0
"""How often a worker checks that the process that started it is still there."""


@dataclass(frozen=True)
class PartPool:
    """Where the parts run: `workers` at a time, in spawned processes on this machine, or as
    tasks on the Ray cluster at `ray_address` ("local": one started in this process)."""

    workers: int
    ray_address: str | None = None

    @staticmethod
    def of(workers: int | None, ray_address: str | None) -> PartPool:
        """`workers` None: this machine's cores, or the Ray cluster's CPUs (connecting to it)."""
        if workers is None and ray_address is not None:
            from solver.partition.ray_pool import RayUnavailable, ray_cpus  # Ray: an optional extra

            try:
                workers = ray_cpus(ray_address)
            except RayUnavailable as error:
                log.error("partition: %s; the parts run on this machine", error)
                ray_address = None
        if workers is None:
            workers = os.cpu_count() or 1
        return PartPool(max(1, workers), ray_address)

    def at_a_time(self, parts: int) -> int:
        """Parts solving at once: one per part, at most one per worker."""
        return max(1, min(parts, self.workers))


def solve_parts(
    parts: Sequence[Snapshot],
    *,
    solve: Callable[[Snapshot], Decision],
    rescue: Callable[[Snapshot], Placement],
    deadline: float,
    pool: PartPool,
    meanwhile: Callable[[], None] = lambda: None,
) -> tuple[PartAnswer, ...]:
    """Each part's answer (module docstring); `deadline` is `time.perf_counter()` seconds.
    `meanwhile` runs here once the parts are sent, while they solve (its errors are the
    caller's)."""
    if pool.ray_address is not None:
        from solver.partition.ray_pool import RayUnavailable, solve_parts_on_ray  # Ray: an optional extra

        try:
            return solve_parts_on_ray(
                parts, solve=solve, rescue=rescue, deadline=deadline, address=pool.ray_address, meanwhile=meanwhile
            )
        except RayUnavailable as error:  # raised before any part is sent
            log.error("partition: %s; the parts run on this machine", error)
    with _WARM.lease(pool.at_a_time(len(parts))) as executor:
        healthy = False
        try:
            answers, healthy = _solve_on(executor, parts, solve=solve, rescue=rescue, deadline=deadline, meanwhile=meanwhile)
        finally:
            if not healthy:  # hung or dead workers, or `meanwhile` raised with parts still out
                _WARM.discard(executor)
    return answers


def _solve_on(
    executor: ProcessPoolExecutor,
    parts: Sequence[Snapshot],
    *,
    solve: Callable[[Snapshot], Decision],
    rescue: Callable[[Snapshot], Placement],
    deadline: float,
    meanwhile: Callable[[], None],
) -> tuple[tuple[PartAnswer, ...], bool]:
    """Each part's answer from `executor`'s workers, and whether the workers are still fit to
    keep: False when a part missed the deadline (its worker is still busy) or a worker died."""
    answers: list[PartAnswer | None] = [None] * len(parts)
    # Pickled here, before `meanwhile` runs: the executor would pickle them in its own thread,
    # while `meanwhile` fills the memos the solver keeps on the same models.
    payloads = [pickle.dumps((solve, part), protocol=pickle.HIGHEST_PROTOCOL) for part in parts]
    futures: dict[Future[Decision], int] = {executor.submit(_run, payload): index for index, payload in enumerate(payloads)}
    waiting = set(futures)
    meanwhile()
    while waiting:
        done, waiting = wait(waiting, timeout=max(0.0, deadline - time.perf_counter()), return_when=FIRST_EXCEPTION)
        for future in done:
            answers[futures[future]] = _answer(future, parts[futures[future]], rescue)
        if not done:
            break  # the deadline passed
    for future in waiting:
        answers[futures[future]] = timed_out_answer(futures[future], parts[futures[future]], rescue)
    healthy = not waiting and not any(isinstance(future.exception(), BrokenProcessPool) for future in futures)
    return tuple(answer for answer in answers if answer is not None), healthy


class _WarmWorkers:
    """The process's one pool of spawned workers, kept between calls (module docstring).
    `lease` hands it to one call at a time — started, or started again with another worker
    count; a call that finds it leased gets a pool of its own, shut down after the call.
    `discard` stops a pool whose workers are hung or dead, so the next call starts fresh."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self._workers = 0

    @contextmanager
    def lease(self, workers: int) -> Iterator[ProcessPoolExecutor]:
        if not self._lock.acquire(blocking=False):
            executor = _new_executor(workers)
            try:
                yield executor
            finally:
                _stop(executor)
            return
        try:
            if self._executor is None or self._workers != workers:
                if self._executor is not None:
                    _stop(self._executor)
                self._executor, self._workers = _new_executor(workers), workers
            yield self._executor
        finally:
            self._lock.release()

    def discard(self, executor: ProcessPoolExecutor) -> None:
        _stop(executor)
        if self._executor is executor:
            self._executor = None

    def started(self) -> ProcessPoolExecutor | None:
        """The warm pool, if one is started (for tests and diagnostics)."""
        return self._executor


_WARM = _WarmWorkers()


def _new_executor(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=get_context("spawn"), max_tasks_per_child=TASKS_PER_WORKER,
        initializer=_exit_with_parent, initargs=(os.getpid(),),
    )  # fmt: skip


def _exit_with_parent(parent: int) -> None:
    """In each worker: end it once the process that started it is gone. Warm workers wait
    between calls, and a parent killed outright (`SIGKILL`, the OOM killer) would otherwise
    leave them waiting for good: each holds its task queue's both ends, so it never reads an
    end of file."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _run(payload: bytes) -> Decision:
    """In the worker: one part's solve, as `_solve_on` pickled it."""
    solve, part = pickle.loads(payload)
    return solve(part)


def _answer(future: Future[Decision], part: Snapshot, rescue: Callable[[Snapshot], Placement]) -> PartAnswer:
    error = future.exception()
    if error is None:
        return answer_of(future.result())
    return failed_answer(error, part, rescue)


def _stop(executor: ProcessPoolExecutor) -> None:
    """Shut the pool down without waiting for the solves still running: their workers are
    stopped. (`ProcessPoolExecutor` has no public way to stop a busy worker before Python
    3.14's `terminate_workers`; its `_processes` are the workers it started.)"""
    workers = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        if process.is_alive():
            process.terminate()
    for process in workers:
        process.join(timeout=5)
