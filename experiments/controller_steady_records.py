"""What one run of `experiments.controller_steady` is asked and what it saw: its config, each
new pod's creation and bind, the controller's cycles, CPU and requests — plain frozen values
that `experiments.controller_steady_report` sums up and writes down.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GANG_PODS", "CycleRecord", "PodRecord", "SteadyConfig", "SteadyRun"]

GANG_PODS = 8  # minMember of every gang, running or new


@dataclass(frozen=True)
class SteadyConfig:
    nodes: int = 10_000
    running: int = 100_000
    engine: str = "auto"
    time_limit_s: float | None = None  # None: the controller's own default
    interval_s: float = 1.0
    duration_s: float = 60.0
    seed: int = 42
    threads: int = 8
    drain_s: float = 120.0  # after the last submission, how long the bench waits for its gangs
    warm_up_timeout_s: float = 1800.0  # the first cycles over every node and running pod

    def gangs(self) -> int:
        """New gangs submitted: one per interval. Example: 60 s every 1 s → 60."""
        return max(1, int(round(self.duration_s / self.interval_s)))


@dataclass(frozen=True)
class PodRecord:
    gang: str
    pod: str
    created_unix: float  # this bench's clock when the create returned
    creation_timestamp: str  # the object's, one-second resolution
    bound_unix: float | None  # the watch first saw spec.nodeName set
    node: str | None


@dataclass(frozen=True)
class CycleRecord:
    """One line of the controller's cycle log (a cycle that bound something)."""

    finished_unix: float
    seconds: float
    observe_seconds: float
    solve_seconds: float
    act_seconds: float
    bound: int
    engine: str


@dataclass(frozen=True)
class SteadyRun:
    config: SteadyConfig
    gpu_running_pods: int
    cpu_running_pods: int
    running_create_seconds: float  # the running pods: create + status Running
    warm_up_seconds: float  # controller start → warm-up gang bound and writes settled
    window_start_unix: float  # first submission
    window_end_unix: float  # last gang bound, or the drain's end
    gangs_finished: int  # old gangs deleted during the window
    pods: tuple[PodRecord, ...]
    cycles: tuple[CycleRecord, ...]  # those that started in the window
    cpu_seconds: dict[str, float]  # per process and the machine's, in the window
    requests: dict[str, int]  # `VERB resource` → requests the API server served in the window (all clients)
    warm_up_requests: dict[str, int]  # the same, controller start → warm-up settled
