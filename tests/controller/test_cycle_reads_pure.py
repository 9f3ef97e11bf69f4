"""Observe with the state it keeps across cycles (`CycleReads`) gives the observation a fresh
observe gives, cycle after cycle, as pods come, bind, change and go, nodes change, a bind
is assumed before the watch shows it, a node is overcommitted and repaired, and a bad object
is rejected."""

from __future__ import annotations

import copy
import dataclasses
import re
import sys
from collections.abc import Iterable
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from controller.observe import AssumedBind, AssumedState, ClusterView, Observation, observe
from controller.reads import CycleReads
from models.snapshot import NodeName, PodKey
from solver.place import SolveConfig, place
from tests.controller._controller_builders import node, pod, pod_group

JsonObject = dict[str, Any]
NODES = 3
GPUS_PER_NODE = 4  # eight pods of up to 2 GPUs bound to three nodes: some nodes overcommitted, repaired
GROUPS = 2
POD_NAMES = 8

steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, POD_NAMES - 1), st.integers(-1, GROUPS - 1), st.integers(1, 3), st.integers(0, 2)),
        st.tuples(st.just("bind"), st.integers(0, POD_NAMES - 1), st.integers(0, NODES - 1)),
        st.tuples(st.just("assume"), st.integers(0, POD_NAMES - 1), st.integers(0, NODES - 1)),
        st.tuples(st.just("delete"), st.integers(0, POD_NAMES - 1)),
        st.tuples(st.just("swap"), st.integers(0, POD_NAMES - 1), st.integers(0, POD_NAMES - 1)),
        st.tuples(st.just("node_cpu"), st.integers(0, NODES - 1), st.integers(1, 8)),
        st.tuples(st.just("min_member"), st.integers(0, GROUPS - 1), st.integers(1, 3)),
        st.tuples(st.just("bad_quantity"), st.integers(0, POD_NAMES - 1)),
        st.tuples(st.just("renumber"),),
    ),
    min_size=1,
    max_size=12,
)


class _Cluster:
    """Objects as an informer holds them: each write gives the object a new resourceVersion."""

    def __init__(self) -> None:
        self.version = 0
        self.objects: dict[tuple[str, str], JsonObject] = {}
        self.binds: dict[PodKey, AssumedBind] = {}
        for n in range(NODES):
            self.put(node(f"n{n}", cpu=4, gpus=GPUS_PER_NODE))
        for g in range(GROUPS):
            self.put(pod_group(f"g{g}", min_member=1))

    def put(self, obj: JsonObject) -> None:
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)
        self.objects[obj["kind"], obj["metadata"]["name"]] = obj

    def changed(self, kind: str, name: str) -> JsonObject | None:
        obj = self.objects.get((kind, name))
        return None if obj is None else copy.deepcopy(obj)  # an update is a new object, as the watch delivers it

    def apply(self, step: tuple[Any, ...]) -> None:
        what, *args = step
        if what == "add":
            index, group, cpu, gpus = args
            self.put(pod(f"p{index}", cpu=str(cpu), gpus=gpus, group=f"g{group}" if group >= 0 else None))
        elif what == "bind" and (obj := self.changed("Pod", f"p{args[0]}")) is not None:
            obj["spec"]["nodeName"], obj["status"]["phase"] = f"n{args[1]}", "Running"
            self.put(obj)
        elif what == "assume" and ("Pod", f"p{args[0]}") in self.objects:
            self.binds[PodKey(f"ns/p{args[0]}")] = AssumedBind(node=NodeName(f"n{args[1]}"))
        elif what == "delete":
            self.objects.pop(("Pod", f"p{args[0]}"), None)
            self.binds.pop(PodKey(f"ns/p{args[0]}"), None)
        elif what == "swap":  # a bound pod ends and a pending one binds to its node in the same cycle
            ending, starting = self.objects.get(("Pod", f"p{args[0]}")), self.changed("Pod", f"p{args[1]}")
            if ending is not None and starting is not None and ending["spec"].get("nodeName") and args[0] != args[1]:
                self.apply(("delete", args[0]))
                starting["spec"]["nodeName"], starting["status"]["phase"] = ending["spec"]["nodeName"], "Running"
                self.put(starting)
        elif what == "node_cpu" and (obj := self.changed("Node", f"n{args[0]}")) is not None:
            obj["status"]["allocatable"]["cpu"] = obj["status"]["capacity"]["cpu"] = str(args[1])
            self.put(obj)
        elif what == "min_member" and (obj := self.changed("PodGroup", f"g{args[0]}")) is not None:
            obj["spec"]["minMember"] = args[1]
            self.put(obj)
        elif what == "bad_quantity" and (obj := self.changed("Pod", f"p{args[0]}")) is not None:
            obj["spec"]["containers"][0]["resources"]["requests"]["memory"] = "10E"  # above the ceiling: rejected
            self.put(obj)
        elif what == "renumber":  # the informer lists again: same objects, another order
            self.objects = dict(reversed(list(self.objects.items())))

    def view(self) -> ClusterView:
        kinds: dict[str, list[JsonObject]] = {"Node": [], "Pod": [], "PodGroup": []}
        for (kind, _), obj in self.objects.items():
            kinds[kind].append(obj)
        return ClusterView(nodes=tuple(kinds["Node"]), pods=tuple(kinds["Pod"]), volcano_pod_groups=tuple(kinds["PodGroup"]))

    def assumed(self) -> AssumedState:
        return AssumedState(binds=dict(self.binds))


def _unnumbered(texts: Iterable[str]) -> list[str]:
    """The lines without document numbers: kept reads number an object as it was first seen,
    a fresh observe by its place in this cycle's input; both name the object itself."""
    return [re.sub(r"document \d+ ", "document ", text) for text in texts]


def _same(kept: Observation, fresh: Observation) -> None:
    assert kept.snapshot == fresh.snapshot
    assert _unnumbered(kept.warnings) == _unnumbered(fresh.warnings)
    assert _unnumbered(r.message for r in kept.rejected) == _unnumbered(r.message for r in fresh.rejected)
    assert [dataclasses.replace(r, message="") for r in kept.rejected] == [dataclasses.replace(r, message="") for r in fresh.rejected]
    assert kept.repairs == fresh.repairs
    assert (kept.running, kept.terminating) == (fresh.running, fresh.terminating)
    assert kept.pods == fresh.pods
    config = SolveConfig(engine="greedy")
    assert place(kept.snapshot, config).placement == place(fresh.snapshot, config).placement


@settings(max_examples=120, deadline=None)
@given(steps=steps)
@example(steps=[("add", 0, 0, 1, 1), ("bind", 0, 0), ("add", 1, 0, 1, 1), ("swap", 0, 1)])  # a node's GPU pods replaced one for one
def test_observe_with_kept_reads_is_observe_from_scratch_every_cycle(steps: list[tuple[Any, ...]]) -> None:
    cluster = _Cluster()
    reads = CycleReads()
    for step in [("renumber",), *steps]:
        cluster.apply(step)
        view, assumed = cluster.view(), cluster.assumed()
        kept = observe(view, scheduler_names=("batchplace",), assumed=assumed, reads=reads)
        _same(kept, observe(view, scheduler_names=("batchplace",), assumed=assumed))


def test_an_unchanged_cluster_is_read_once() -> None:
    cluster = _Cluster()
    for index in range(4):
        cluster.apply(("add", index, index % GROUPS, 1, index % 2))
    reads = CycleReads()
    for _ in range(3):
        observe(cluster.view(), scheduler_names=("batchplace",), reads=reads)
    objects = len(cluster.objects)
    assert (reads.memo.misses, reads.memo.hits) == (objects, 2 * objects)


def test_each_nodes_overcommit_check_is_made_again_only_when_its_pods_change() -> None:
    cluster = _Cluster()
    for index in range(3):
        cluster.apply(("add", index, index % GROUPS, 1, 0))
        cluster.apply(("bind", index, index))  # one pod on each of the three nodes
    reads = CycleReads()
    for _ in range(3):
        observe(cluster.view(), scheduler_names=("batchplace",), reads=reads)
    assert (reads.steps.fresh, reads.steps.reused) == (NODES, 2 * NODES)
    cluster.apply(("node_cpu", 0, 2))  # node n0 is a new object: its check is made again
    observe(cluster.view(), scheduler_names=("batchplace",), reads=reads)
    assert (reads.steps.fresh, reads.steps.reused) == (NODES + 1, 3 * NODES - 1)


def test_a_bind_assumed_before_the_watch_shows_it_is_not_the_pending_pod_read_before() -> None:
    cluster = _Cluster()
    cluster.apply(("add", 0, 0, 1, 0))
    reads = CycleReads()
    pending = observe(cluster.view(), scheduler_names=("batchplace",), reads=reads)
    assert [p.phase for p in pending.snapshot.pods] == ["pending"]
    cluster.apply(("assume", 0, 1))
    bound = observe(cluster.view(), scheduler_names=("batchplace",), assumed=cluster.assumed(), reads=reads)
    assert [(p.phase, p.node) for p in bound.snapshot.pods] == [("running", "n1")]


def test_what_is_made_of_a_document_is_made_once_per_version_and_forgotten_once_unused() -> None:
    made: list[str] = []

    def make(document: JsonObject) -> str:
        made.append(document["metadata"]["name"])
        return f"{document['metadata']['name']}@{document['metadata'].get('resourceVersion')}"

    def document(name: str, version: str | None) -> JsonObject:
        return {"metadata": {"name": name, "uid": f"uid-{name}", **({"resourceVersion": version} if version else {})}}

    reads = CycleReads()
    assert reads.per_version("ref", [document("a", "1"), document("b", "1")], make) == ["a@1", "b@1"]
    assert reads.per_version("ref", [document("a", "1"), document("b", "2")], make) == ["a@1", "b@2"]
    assert made == ["a", "b", "b"], "a's version 1 made once, b made again at its version 2"
    reads.per_version("ref", [document("b", "2")], make)
    assert reads.per_version("ref", [document("a", "1"), document("c", None), document("c", None)], make) == ["a@1", "c@None", "c@None"]
    assert made == ["a", "b", "b", "a", "c", "c"], "a forgotten once a call did not use it; c, without a version, made every time"


def test_each_cycle_keeps_the_keys_of_the_first_and_holds_none_of_its_own() -> None:
    """A cycle's numbers and versions are kept under the key objects stored the first cycle:
    the keys a later cycle builds to look them up die with it, so the garbage collector does
    not walk a new key per object every cycle (`controller.reads`)."""

    def document(uid: str, version: str) -> JsonObject:
        return {"kind": "Pod", "metadata": {"name": "p", "uid": uid, "resourceVersion": version}}

    reads = CycleReads()
    first = document("uid-a", "7")
    first_number = list(reads.numbered([first]))
    reads.per_version("ref", [first], lambda d: d["metadata"]["name"])
    later_uid, later_version = "".join(["uid-", "a"]), "".join(["7"])  # equal strings, other objects
    assert later_uid is not first["metadata"]["uid"]
    before = sys.getrefcount(later_uid), sys.getrefcount(later_version)
    later = document(later_uid, later_version)
    assert list(reads.numbered([later])) == first_number
    assert reads.per_version("ref", [later], lambda d: "made again") == ["p"]
    del later
    assert (sys.getrefcount(later_uid), sys.getrefcount(later_version)) == before, "a kept key holds the later cycle's strings"
