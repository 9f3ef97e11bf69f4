"""Reads the conformance cases: one YAML file per case under `cases/`, named after its origin.

A case file is Kubernetes / Volcano YAML as `batchplace solve` reads it, plus one document of
kind `ConformanceCase` (first in the file) that says where the case comes from and what must
happen. That document is taken out before the rest goes to the loader:

    kind: ConformanceCase
    origin:                       # where a reader finds the original
      repository: volcano-sh/volcano
      file: pkg/scheduler/actions/preempt/preempt_test.go
      test: TestPreempt
      case: preempt one task of different job to fit both jobs on one node
    difference: preemptor-bound-same-cycle   # optional: an entry of docs/volcano-differences.md
    expect:
      binds: {c1/preemptor1: n1}  # pod -> node, or a list of allowed nodes
      bind_count: 2               # total binds; default: exactly the pods under `binds`
      evictions: [c1/preemptee1]  # exactly these pods evicted; default: none
      podgroups:
        c1/pg1: {state: pending, placed: 0, reason: gang}  # reason: a rule name (prefix)
        c1/pg2: {reason: dra, says: [gpus, claim-0]}        # words that rule's reason must contain
      queues:
        q1: {deserved: {cpu: 2000}}  # base units, as Decision.queues reports them
      within_one_of: [[s0-n1, s0-n2], [s1-n3, s1-n4]]  # every bind inside one of these sets
      same_node: [[c1/p1, c1/p2]] # each list's pods bound to one node
      claims:                     # DRA claims allocated this cycle: `ns/name`, or `ns/pod#entry`
        c1/gpus:                  # for a claim a template makes for that pod's entry
          node: n1
          devices: [gpus driver/pool/gpu-0, gpus driver/pool/gpu-1 admin]  # request, device, admin?
          one_of: [[...], [...]]  # instead of devices: any one of these sets (several answers fit)
          reserved_for: [c1/p1]
      sub_groups_started:         # policy -> its sub-groups that end with their minimum
        c1/pg1: {task2: 1}        # (running kept + bound), as the gang rule counts them
      sub_groups_placed:          # sub-group -> its pods running kept + bound
        c1/pg1: {task2-worker: 2}
    model: {...}                  # nested gangs the objects stand for (`case_model.py`)
    xfail:                        # engine -> the finding that makes it fail today
      greedy: greedy never preempts to free queue quota

Devices are compared as sets per claim, in the allocation's own words (`request` or
`request/subrequest`, `driver/pool/device`, `admin` for admin access): kube-scheduler's
allocator takes devices in listing order, batchplace's the fullest domains first, so a case
names the one answer the semantics allow, or under `one_of` every answer they allow.

Objects keep the original's names, except names the API server would refuse (kube-scheduler's
tests call nodes `nodeA`): those become their RFC 1123 form (`node-a`), since the loader
checks names as the API server does; extended resources get their limit beside their request,
as the API server wants.

Nothing here solves; `test_conformance.py` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from models.loaders import load_snapshot_documents
from models.loaders.kube_yaml import parse_yaml_documents
from models.snapshot import Snapshot
from solver.place import EngineName
from tests.conformance.case_model import with_case_model

__all__ = ["CASES_DIR", "ENGINES", "Case", "Origin", "Expected", "ExpectedClaim", "load_case", "case_paths"]

CASES_DIR = Path(__file__).resolve().parent / "cases"
ENGINES: tuple[EngineName, ...] = ("greedy", "cpsat", "auto")
CASE_KIND = "ConformanceCase"
_ORIGIN_REPOSITORIES = ("volcano-sh/volcano", "kubernetes/kubernetes")


@dataclass(frozen=True)
class Origin:
    repository: str
    file: str
    test: str
    case: str


@dataclass(frozen=True)
class ExpectedClaim:
    """One claim's allocation: its node, and the device sets that are right (any one of them)."""

    node: str | None
    answers: tuple[frozenset[str], ...]  # each "request driver/pool/device[ admin]"; empty: not checked
    reserved_for: frozenset[str] | None


@dataclass(frozen=True)
class Expected:
    binds: dict[str, tuple[str, ...]]
    bind_count: int
    evictions: frozenset[str]
    podgroups: dict[str, dict[str, object]]
    queues: dict[str, dict[str, dict[str, int]]]
    within_one_of: tuple[frozenset[str], ...]
    same_node: tuple[frozenset[str], ...] = ()
    claims: dict[str, ExpectedClaim] = field(default_factory=dict)
    sub_groups_started: dict[str, dict[str, int]] = field(default_factory=dict)
    sub_groups_placed: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    name: str
    path: Path
    origin: Origin
    expected: Expected
    snapshot: Snapshot
    difference: str | None = None
    xfail: dict[str, str] = field(default_factory=dict)


def case_paths() -> list[Path]:
    return sorted(CASES_DIR.rglob("*.yaml"))


def load_case(path: Path) -> Case:
    name = str(path.relative_to(CASES_DIR).with_suffix(""))
    documents = parse_yaml_documents(path.read_text(encoding="utf-8"), source=path.name)
    headers = [doc for _, _, doc in documents if isinstance(doc, Mapping) and doc.get("kind") == CASE_KIND]
    if len(headers) != 1:
        raise ValueError(f"{name}: needs exactly one {CASE_KIND} document, found {len(headers)}")
    header = headers[0]
    cluster = [entry for entry in documents if entry[2] is not header]
    origin = Origin(**header["origin"])
    if origin.repository not in _ORIGIN_REPOSITORIES:
        raise ValueError(f"{name}: origin repository {origin.repository!r} is not one this suite ports")
    xfail = dict(header.get("xfail") or {})
    unknown = set(xfail) - set(ENGINES)
    if unknown:
        raise ValueError(f"{name}: xfail names unknown engines {sorted(unknown)}")
    return Case(
        name=name,
        path=path,
        origin=origin,
        expected=_expected(header.get("expect") or {}),
        snapshot=with_case_model(load_snapshot_documents(cluster).snapshot, header.get("model") or {}, case=name),
        difference=header.get("difference"),
        xfail=xfail,
    )


def _expected(expect: Mapping[str, object]) -> Expected:
    known = {
        *("binds", "bind_count", "evictions", "podgroups", "queues", "within_one_of", "same_node", "claims"),
        *("sub_groups_started", "sub_groups_placed"),
    }
    unknown = set(expect) - known
    if unknown:
        raise ValueError(f"unknown expectation keys {sorted(unknown)}")
    binds = {
        pod: (nodes,) if isinstance(nodes, str) else tuple(nodes)
        for pod, nodes in dict(expect.get("binds") or {}).items()
    }
    return Expected(
        binds=binds,
        bind_count=int(expect.get("bind_count", len(binds))),
        evictions=frozenset(expect.get("evictions") or ()),
        podgroups={key: dict(value) for key, value in dict(expect.get("podgroups") or {}).items()},
        queues={key: dict(value) for key, value in dict(expect.get("queues") or {}).items()},
        within_one_of=tuple(frozenset(nodes) for nodes in expect.get("within_one_of") or ()),
        same_node=tuple(frozenset(pods) for pods in expect.get("same_node") or ()),
        claims={key: _expected_claim(key, value) for key, value in dict(expect.get("claims") or {}).items()},
        sub_groups_started={key: dict(value) for key, value in dict(expect.get("sub_groups_started") or {}).items()},
        sub_groups_placed={key: dict(value) for key, value in dict(expect.get("sub_groups_placed") or {}).items()},
    )


def _expected_claim(key: str, want: Mapping[str, object]) -> ExpectedClaim:
    unknown = set(want) - {"node", "devices", "one_of", "reserved_for"}
    if unknown or ("devices" in want and "one_of" in want):
        raise ValueError(f"claim {key}: unknown keys {sorted(unknown)}, or both devices and one_of")
    answers = [want["devices"]] if "devices" in want else list(want.get("one_of") or [])
    reserved = want.get("reserved_for")
    return ExpectedClaim(
        node=want.get("node"),  # type: ignore[arg-type]
        answers=tuple(frozenset(answer) for answer in answers),  # type: ignore[arg-type]
        reserved_for=None if reserved is None else frozenset(reserved),  # type: ignore[arg-type]
    )
