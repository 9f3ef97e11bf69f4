"""Solve the parts as tasks on a Ray cluster, for when one machine's cores are not enough.

Input and output as `solver.partition.pool.solve_parts`, whose Ray branch this is: the same
payload (a part's snapshot and the picklable solve) sent as a Ray task per part instead of
to a spawned process. The answers are the same as the local pool's given the same worker
count (`pool.PartPool.workers`): each part's `place()` is deterministic, its time share set
before the parts are sent.

Where: `address` is Ray's (`ray://head:10001`, or `auto` on a node of the cluster), or
"local" for a cluster started in this process. Connecting happens once per process (Ray
keeps one connection); its workers stay up between calls, so a part pays no process start.

Failing is as for the local pool: a task raising or its worker dying (Ray raises either at
`ray.get`) answers with `rescue`'s placement; a task not done by `deadline` is cancelled
(forced: its worker is stopped) and answers with `rescue`'s too.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from models.placement import Decision, Placement
from models.snapshot import Snapshot
from solver.partition.answer import PartAnswer, answer_of, failed_answer, timed_out_answer

__all__ = ["connected_ray", "ray_cpus", "solve_parts_on_ray", "RayUnavailable"]

_connect_lock = threading.Lock()


class RayUnavailable(RuntimeError):
    """Ray is not installed, or the cluster at the address given cannot be reached."""


def connected_ray(address: str) -> Any:
    """The `ray` module, connected to `address` (once per process): for the partitioned
    solve's parts and for any other work sent to the same cluster (the FGD sweep's runs)."""
    try:
        import ray
    except ImportError as error:
        raise RayUnavailable("a Ray address needs Ray: pip install 'batchplace[ray]'") from error
    with _connect_lock:
        if not ray.is_initialized():
            _check_reachable(address)
            try:
                ray.init(
                    address=None if address == "local" else address,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as error:
                raise RayUnavailable(f"Ray cluster at {address!r}: {error}") from error
    return ray


CONNECT_TIMEOUT_S = 5.0
"""How long the head's port may take to accept a connection (`_check_reachable`)."""


def _check_reachable(address: str) -> None:
    """Fail fast on a head that does not answer: Ray's own connect retries for minutes. A
    `host:port` or `ray://host:port` address must accept a TCP connection within
    `CONNECT_TIMEOUT_S`; "local" and "auto" are Ray's to resolve."""
    if address in ("local", "auto"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise RayUnavailable(f"Ray address {address!r}: expected ray://HOST:PORT, HOST:PORT, auto or local")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise RayUnavailable(f"Ray cluster at {address!r} does not answer: {error}") from None


def ray_cpus(address: str) -> int:
    """The CPUs of the Ray cluster at `address`: how many parts it solves at a time."""
    return max(1, int(connected_ray(address).cluster_resources().get("CPU", 1)))


def _solve_one(solve: Callable[[Snapshot], Decision], part: Snapshot) -> Decision:
    return solve(part)


def solve_parts_on_ray(
    parts: Sequence[Snapshot],
    *,
    solve: Callable[[Snapshot], Decision],
    rescue: Callable[[Snapshot], Placement],
    deadline: float,
    address: str,
    meanwhile: Callable[[], None],
) -> tuple[PartAnswer, ...]:
    """Each part's answer, solved as a Ray task on the cluster at `address` (module docstring)."""
    ray = connected_ray(address)
    remote = ray.remote(num_cpus=1, max_retries=0)(_solve_one)
    refs = [remote.remote(solve, part) for part in parts]
    meanwhile()
    done, _ = ray.wait(refs, num_returns=len(refs), timeout=max(0.0, deadline - time.perf_counter()))
    finished = set(done)
    answers = []
    for index, (ref, part) in enumerate(zip(refs, parts, strict=True)):
        if ref not in finished:
            ray.cancel(ref, force=True)
            answers.append(timed_out_answer(index, part, rescue))
            continue
        try:
            answers.append(answer_of(ray.get(ref)))
        except Exception as error:  # noqa: BLE001 - a task's failure, whatever it raised, is that part's alone
            answers.append(failed_answer(error, part, rescue))
    return tuple(answers)
