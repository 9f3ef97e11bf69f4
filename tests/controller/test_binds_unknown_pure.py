"""Binds of unknown outcome and caches behind, without an API server: the assumed-pod cache
holds a possibly bound pod's room until a read settles it, and an informer is not current
from a watch error until it has listed again."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.assumed import AssumedPods
from controller.errors import NotFound, Unavailable
from controller.informer import Informer
from controller.kinds import PODS, VOLCANO_PODGROUPS, ResourceKind
from controller.observe import AssumedBind, ClusterView, observe
from models.snapshot import NodeName, PodKey
from tests.controller._cluster_queries import wait_until
from tests.controller._controller_builders import node, pod

POD = PodKey("ns/p-0")


class _Ticks:
    """A clock that only moves when told to."""

    def __init__(self) -> None:
        self.t = 0.0

    def monotonic(self) -> float:
        return self.t

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        return bool(stop and stop.is_set())


def _on(node_name: str, gpus: str = "") -> dict:
    copy = pod("p-0", node_name=node_name)
    if gpus:
        copy["metadata"]["annotations"] = {"batchplace.io/gpus": gpus}
    return copy


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=10_000), min_size=1, max_size=20))
def test_a_bind_of_unknown_outcome_stays_held_however_long_while_the_cache_shows_the_pod_pending(steps: list[float]) -> None:
    clock = _Ticks()
    assumed = AssumedPods(clock=clock, ttl_s=300.0)  # type: ignore[arg-type]
    assumed.maybe_bound(POD, NodeName("n1"), (2, 3))
    for seconds in steps:
        clock.t += seconds
        assumed.prune(lambda key: pod("p-0"))  # the informer's copy: still pending (it may be older than the bind)
    assert assumed.state().binds == {POD: AssumedBind(node=NodeName("n1"), gpus=(2, 3))}
    assert assumed.unknown() == [POD]


def test_a_held_bind_keeps_its_gpus_out_of_the_next_snapshot() -> None:
    assumed = AssumedPods()
    assumed.maybe_bound(POD, NodeName("n1"), (0, 1))
    view = ClusterView(pods=(pod("p-0", gpus=2),), nodes=(node("n1", gpus=4),))
    snapshot = observe(view, scheduler_names=("batchplace",), assumed=assumed.state()).snapshot
    (held,) = snapshot.pods
    assert (held.phase, held.node, held.gpu_indices) == ("running", "n1", (0, 1))


def test_a_read_settles_it_bound_elsewhere_with_the_pods_own_gpus_or_released_when_pending_or_gone() -> None:
    assumed = AssumedPods()
    assumed.maybe_bound(POD, NodeName("n1"), (0, 1))
    assumed.settle(POD, _on("n7", gpus="4,5"))  # a 409 "already assigned to node n7", learnt from the pod
    assert assumed.state().binds == {POD: AssumedBind(node=NodeName("n7"), gpus=(4, 5))} and not assumed.unknown()
    for read in (pod("p-0"), None):
        assumed = AssumedPods()
        assumed.maybe_bound(POD, NodeName("n1"), (0, 1))
        assumed.settle(POD, read)
        assert assumed.state().binds == {} and not assumed.unknown()


def test_the_informer_showing_the_pod_bound_or_gone_releases_the_hold() -> None:
    for copy in (_on("n1", gpus="0,1"), None):
        assumed = AssumedPods()
        assumed.maybe_bound(POD, NodeName("n1"), (0, 1))
        assumed.prune(lambda key: copy)
        assert len(assumed) == 0


def test_an_accepted_bind_is_not_downgraded_to_unknown_by_a_late_retry() -> None:
    assumed = AssumedPods()
    assumed.bound(POD, NodeName("n1"), (0,))
    assumed.maybe_bound(POD, NodeName("n2"), (3,))
    assert assumed.state().binds == {POD: AssumedBind(node=NodeName("n1"), gpus=(0,))} and not assumed.unknown()


@dataclass
class _Lists:
    """A WatchSource whose watches fail until `healed`, counting lists."""

    lists: int = 0
    healed: threading.Event = field(default_factory=threading.Event)
    failed: threading.Event = field(default_factory=threading.Event)

    def list(self, kind: ResourceKind) -> "_Listed":
        self.lists += 1
        return _Listed(items=[pod("p-0")], resource_version=str(self.lists))

    def watch(self, kind: ResourceKind, *, resource_version: str, timeout_s: int = 300) -> Iterator:
        if not self.healed.is_set():
            self.failed.set()
            raise Unavailable("connection refused", verb="watch", what=str(kind))
        time.sleep(0.01)  # a quiet watch the server ends: the informer watches again
        return iter(())


@dataclass
class _Listed:
    items: list
    resource_version: str


def test_an_informer_is_behind_from_a_watch_error_until_it_has_listed_again() -> None:
    source = _Lists()
    informer = Informer(source, PODS, clock=_Ticks())  # type: ignore[arg-type]
    assert not informer.current and informer.behind == "not listed yet"
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert source.failed.wait(5)
        # the watch has raised; the informer thread records it a moment later
        wait_until(lambda: "connection refused" in informer.behind, timeout_s=5, interval_s=0.01, what="the watch error recorded")
        assert not informer.current
        lists = source.lists
        source.healed.set()
        wait_until(lambda: informer.current, timeout_s=5, interval_s=0.01, what="the informer current again")
        assert source.lists > lists, "current again only after a new list"
    finally:
        stop.set()
        thread.join(5)


@dataclass
class _Uninstalled(_Lists):
    """The CRD's collection answers 404 after the first list: it was uninstalled."""

    def list(self, kind: ResourceKind) -> "_Listed":
        if self.lists:
            raise NotFound("the server could not find the requested resource", verb="list", what=str(kind))
        return super().list(kind)

    def watch(self, kind: ResourceKind, *, resource_version: str, timeout_s: int = 300) -> Iterator:
        self.failed.set()
        raise NotFound("the server could not find the requested resource", verb="watch", what=str(kind))


def test_an_uninstalled_crds_informer_is_empty_and_current_not_behind_for_ever() -> None:
    source = _Uninstalled()
    informer = Informer(source, VOLCANO_PODGROUPS, clock=_Ticks())  # type: ignore[arg-type]
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert source.failed.wait(5)
        wait_until(lambda: informer.current and not informer.items(), timeout_s=5, interval_s=0.01, what="empty and current")
    finally:
        stop.set()
        thread.join(5)
