"""Solve the parts side by side in processes of their own, and never lose the caller to one.

Input: the parts' snapshots, the solve to run on each (a picklable callable: `place` with
the part's configuration bound), the answer to give for a part whose solve fails (greedy's,
computed here) and a wall-clock deadline. Output: one `PartAnswer` per part, in part order.

Why processes: the parts' searches are CPU-bound Python and native code, which threads
would run one at a time. Why spawned, not forked: the pool's workers start clean (no locks
or threads of the caller's, which in the HTTP service and the controller hold both), and
the same payload — a pickled snapshot and a function named by its module — could be sent
to workers on other machines. The cost is each worker's start (importing the solver) and
pickling each part on the way in.

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
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import get_context

from models.placement import Decision, Placement
from models.snapshot import Snapshot
from solver.partition.answer import PartAnswer, answer_of, failed_answer, timed_out_answer

__all__ = ["PartPool", "solve_parts"]

log = logging.getLogger(__name__)


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
    answers: list[PartAnswer | None] = [None] * len(parts)
    executor = ProcessPoolExecutor(max_workers=pool.at_a_time(len(parts)), mp_context=get_context("spawn"))
    waiting: set[Future[Decision]] = set()
    try:
        futures: dict[Future[Decision], int] = {executor.submit(solve, part): index for index, part in enumerate(parts)}
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
    finally:
        if waiting:
            _stop(executor)
        else:
            executor.shutdown(wait=True)
    return tuple(answer for answer in answers if answer is not None)


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
