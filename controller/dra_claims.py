"""DRA claims: what kube-scheduler writes on a ResourceClaim before it binds, written here.

Why: since Kubernetes 1.34 the scheduler allocates DRA devices. It writes the claim's
`status.allocation` (the devices and the node they are used from) and adds the pod to
`status.reservedFor`, and only then binds the pod; the kubelet starts no pod whose claims
are not allocated and reserved for it. batchplace places pods with their claims
(`Placement.claims`), so the controller writes what kube-scheduler would.

Pure parts (plan): `claim_index` reads the cached claims; `claim_writes` turns a gang's binds
and the placement's `ClaimAllocation`s into one `ClaimWrite` per claim the gang's pods use.
Which claim object a pod's `spec.resourceClaims` entry means: the one the placement or the
entry names (`resourceClaimName`); for a template, the one the pod's
`status.resourceClaimStatuses` names, else the claim in its namespace whose controller owner
is the pod and whose `resource.kubernetes.io/pod-claim-name` annotation is the entry (what
Kubernetes' resourceclaim controller makes). A claim already allocated (shared, or by an
earlier cycle) only gets the pod added to `reservedFor`.

Writes (act, `ClaimWriter`): before a gang's binds, each of its claims is updated through
the status subresource with the resourceVersion of the object the cycle planned from — a
conflict means someone changed it since: the gang binds nothing and the next cycle plans
from what changed. A claim not found, or a write that fails, fails the whole gang before any
bind, as a node gone does (`controller.act`); the claims already written for it are put back
(`release`), so there is never a bind without its allocation, nor an allocation left held
for a pod that was not bound. A pod whose bind fails after its claims were written is
released the same way (kube-scheduler's Unreserve).

Written claims are kept (`AssumedClaims`) until the watch shows them: the next cycle must
see their devices taken, or it could give them again.

Released claims: batchplace reads claims every cycle, so a claim whose allocation was
cleared frees its devices in the next snapshot. Clearing stale reservations (pods gone) and
deallocating claims nobody reserves is the job of Kubernetes' resourceclaim controller in
kube-controller-manager, which every DRA cluster runs; batchplace does not duplicate it
(docs/controller.md).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from controller.errors import ApiError, Conflict, NotFound
from controller.kinds import RESOURCE_CLAIMS, ResourceKind
from models.dra import DeviceResult
from models.loaders.dra_objects import POD_CLAIM_NAME_ANNOTATION
from models.placement import Bind, ClaimAllocation
from models.snapshot import NodeName, PodKey, Snapshot

__all__ = [
    "AssumedClaims",
    "ClaimIndex",
    "ClaimWrite",
    "ClaimWriter",
    "Consumer",
    "claim_index",
    "claim_statuses",
    "claim_writes",
]

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class ClaimIndex:
    """The cached ResourceClaims: by `ns/name`, and those a template made, by (pod, entry)."""

    objects: Mapping[str, JsonObject]
    generated: Mapping[tuple[str, str], str]  # (owner pod `ns/name`, pod-claim-name) → claim `ns/name`


def claim_index(claims: Iterable[JsonObject]) -> ClaimIndex:
    objects: dict[str, JsonObject] = {}
    generated: dict[tuple[str, str], str] = {}
    for claim in claims:
        metadata = claim.get("metadata") or {}
        namespace, name = str(metadata.get("namespace") or "default"), str(metadata.get("name", ""))
        key = f"{namespace}/{name}"
        objects[key] = claim
        entry = (metadata.get("annotations") or {}).get(POD_CLAIM_NAME_ANNOTATION)
        owner = next(
            (o for o in metadata.get("ownerReferences") or () if o.get("kind") == "Pod" and o.get("controller")), None
        )
        if entry and owner is not None:
            generated[(f"{namespace}/{owner.get('name', '')}", str(entry))] = key
    return ClaimIndex(objects=objects, generated=generated)


def claim_statuses(pod: JsonObject) -> dict[str, str]:
    """A pod's `status.resourceClaimStatuses`: entry name → the claim made for it (those with one)."""
    statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or ()
    return {
        str(item["name"]): str(item["resourceClaimName"])
        for item in statuses
        if isinstance(item, dict) and item.get("name") and item.get("resourceClaimName")
    }


class SeenPod(Protocol):
    """What the write needs of a pod as the cycle saw it (`controller.observe.PodRef`)."""

    @property
    def uid(self) -> str: ...

    @property
    def claim_statuses(self) -> Mapping[str, str]: ...


@dataclass(frozen=True)
class Consumer:
    """A pod a claim is reserved for (`status.reservedFor[]`: resource pods, name, uid)."""

    pod: PodKey
    uid: str

    @property
    def name(self) -> str:
        return self.pod.partition("/")[2]


@dataclass(frozen=True)
class ClaimWrite:
    """One claim to write before a gang's binds: its allocation (None: allocated already,
    only reserved) and the pods bound this cycle that use it."""

    asked_by: str  # "pod ns/p claim gpus": what the messages name
    claim: str | None  # `ns/name`; None when no object was found
    devices: tuple[DeviceResult, ...] | None
    node: NodeName | None
    consumers: tuple[Consumer, ...]
    obj: JsonObject | None = field(default=None, compare=False, repr=False)  # as the cycle read it; None: not found


def claim_writes(
    binds: Sequence[Bind],
    allocations: Sequence[ClaimAllocation],
    snapshot: Snapshot,
    *,
    pods: Mapping[PodKey, SeenPod],
    index: ClaimIndex,
) -> tuple[ClaimWrite, ...]:
    """The claims `binds`' pods use, one write each (several pods may share one): each
    `ClaimAllocation` reserved for one of them, with its devices; then each other claim a
    bound pod's `spec.resourceClaims` names, which must be allocated already."""
    bound = {bind.pod for bind in binds}
    writes: dict[str, ClaimWrite] = {}
    covered: set[tuple[PodKey, str]] = set()
    for allocation in allocations:
        consumers = [pod for pod in allocation.reserved_for if pod in bound]
        if not consumers:
            continue
        covered.update((pod, allocation.pod_claim) for pod in consumers)
        claim = allocation.claim or _claim_of(allocation.pod, allocation.pod_claim, None, pods, index)
        _add(writes, index, f"pod {allocation.pod} claim {allocation.pod_claim}", claim, consumers, pods,
             devices=allocation.devices, node=allocation.node)
    for bind in binds:
        pod = snapshot.pod_by_key.get(bind.pod)
        for entry in pod.resource_claims if pod is not None else ():
            if (bind.pod, entry.name) in covered:
                continue
            claim = _claim_of(bind.pod, entry.name, entry.resource_claim_name, pods, index)
            _add(writes, index, f"pod {bind.pod} claim {entry.name}", claim, [bind.pod], pods, devices=None, node=None)
    return tuple(writes.values())


def _add(
    writes: dict[str, ClaimWrite], index: ClaimIndex, asked_by: str, claim: str | None, consumers: Sequence[PodKey],
    pods: Mapping[PodKey, SeenPod], *, devices: tuple[DeviceResult, ...] | None, node: NodeName | None,
) -> None:
    """One more write, or more consumers of a claim already written (its devices kept)."""
    reserved = tuple(Consumer(pod=pod, uid=_uid(pods, pod)) for pod in consumers)
    key = claim or f"?{asked_by}"
    known = writes.get(key)
    if known is not None:
        fresh = tuple(c for c in reserved if c not in known.consumers)
        writes[key] = replace(known, consumers=(*known.consumers, *fresh), devices=known.devices or devices, node=known.node or node)
        return
    obj = index.objects.get(claim) if claim is not None else None
    writes[key] = ClaimWrite(asked_by=asked_by, claim=claim, devices=devices, node=node, consumers=reserved, obj=obj)


def _uid(pods: Mapping[PodKey, SeenPod], pod: PodKey) -> str:
    seen = pods.get(pod)
    return seen.uid if seen is not None else ""


def _claim_of(
    pod: PodKey, entry: str, named: str | None, pods: Mapping[PodKey, SeenPod], index: ClaimIndex
) -> str | None:
    """The claim a pod's entry means: named, else made for it (its status, else its owner)."""
    namespace = pod.partition("/")[0]
    if named is not None:
        return f"{namespace}/{named}"
    seen = pods.get(pod)
    made = seen.claim_statuses.get(entry) if seen is not None else None
    if made is not None:
        return f"{namespace}/{made}"
    return index.generated.get((pod, entry))


# ---- writes ----


class ClaimApi(Protocol):
    def replace(
        self, kind: ResourceKind, namespace: str | None, name: str, body: Mapping[str, Any], *, subresource: str | None = None
    ) -> JsonObject: ...


@dataclass(frozen=True)
class Written:
    """A claim this cycle wrote, and what the write did, for `release` to put back."""

    claim: str
    allocated: bool  # this write set the allocation (release clears it when nobody else holds it)
    consumers: tuple[Consumer, ...]
    obj: JsonObject  # as the API server answered the write


class AssumedClaims:
    """Claims written but maybe not yet shown by the watch: the cached object is replaced by
    the written one until the cache holds that version or a newer one (resourceVersions of
    one object compared as numbers, as Kubernetes' own assume cache does)."""

    def __init__(self) -> None:
        self._written: dict[str, JsonObject] = {}
        self._lock = threading.Lock()

    def wrote(self, key: str, obj: JsonObject) -> None:
        with self._lock:
            self._written[key] = obj

    def overlay(self, claims: Sequence[JsonObject]) -> tuple[JsonObject, ...]:
        """`claims` with each written one in place of an older cached version."""
        with self._lock:
            if not self._written:
                return tuple(claims)
            cached = {_key(claim): claim for claim in claims}
            for key, obj in list(self._written.items()):
                seen = cached.get(key)
                if seen is None or _version(seen) >= _version(obj):
                    del self._written[key]  # deleted, or the watch caught up
                else:
                    cached[key] = obj
            return tuple(cached.values())


class ClaimWriter:
    """Writes a gang's `ClaimWrite`s, all or none (see the module docstring)."""

    def __init__(self, api: ClaimApi, assumed: AssumedClaims) -> None:
        self._api = api
        self._assumed = assumed

    def write(self, writes: Sequence[ClaimWrite]) -> tuple[list[Written], str]:
        """Write each claim; (what was written, "") — or, at the first failure, everything
        written put back and ([], why)."""
        written: list[Written] = []
        for write in writes:
            try:
                done = self._write_one(write)
            except _Refused as refused:
                self.release(written)
                return [], f"{write.asked_by}: {refused}"
            if done is not None:
                written.append(done)
        return written, ""

    def _write_one(self, write: ClaimWrite) -> Written | None:
        if write.claim is None:
            raise _Refused("no ResourceClaim found (neither named, nor in the pod's resourceClaimStatuses, nor owned by the pod)")
        obj = write.obj
        if obj is None:
            raise _Refused(f"ResourceClaim {write.claim} not found")
        status = dict(obj.get("status") or {})
        allocation = status.get("allocation")
        allocating = False
        if write.devices is not None:
            if allocation is None:
                status["allocation"] = allocation_body(write.devices, write.node)
                allocating = True
            elif _results(allocation) != [_result_body(device) for device in write.devices]:
                raise _Refused(f"ResourceClaim {write.claim} is allocated other devices already")
        elif allocation is None:
            raise _Refused(f"ResourceClaim {write.claim} is not allocated")
        reserved = list(status.get("reservedFor") or [])
        have = {entry.get("uid") for entry in reserved}
        added = tuple(consumer for consumer in write.consumers if consumer.uid not in have)
        if not added and not allocating:
            return None
        status["reservedFor"] = [*reserved, *({"resource": "pods", "name": c.name, "uid": c.uid} for c in added)]
        answer = self._replace(write.claim, {**obj, "status": status})
        return Written(claim=write.claim, allocated=allocating, consumers=added, obj=answer)

    def _replace(self, claim: str, body: JsonObject) -> JsonObject:
        namespace, _, name = claim.partition("/")
        try:
            answer = self._api.replace(RESOURCE_CLAIMS, namespace, name, body, subresource="status")
        except Conflict:
            raise _Refused(f"ResourceClaim {claim} changed since this cycle read it (conflict)") from None
        except NotFound:
            raise _Refused(f"ResourceClaim {claim} is gone") from None
        except ApiError as error:
            raise _Refused(f"ResourceClaim {claim} not written: {error}") from None
        self._assumed.wrote(claim, answer)
        return answer

    def release(self, written: Sequence[Written], pods: Iterable[PodKey] | None = None) -> None:
        """Put back what `written` did (for `pods` only, when given): the pods leave
        `reservedFor`, and an allocation written this cycle is cleared when nobody else
        holds the claim. Best effort: a failure is logged, and the claim stays as written —
        its devices held, as Kubernetes holds them until its resourceclaim controller frees them."""
        only = set(pods) if pods is not None else None
        for done in written:
            leaving = {c.uid for c in done.consumers if only is None or c.pod in only}
            if not leaving:
                continue
            status = dict(done.obj.get("status") or {})
            status["reservedFor"] = [e for e in status.get("reservedFor") or () if e.get("uid") not in leaving]
            if done.allocated and not status["reservedFor"]:
                status.pop("allocation", None)
            try:
                self._replace(done.claim, {**done.obj, "status": status})
            except _Refused as refused:
                log.warning("claim %s not put back: %s", done.claim, refused, extra={"claim": done.claim})


class _Refused(Exception):
    """A claim write that cannot be done: the gang binds nothing."""


def allocation_body(devices: Sequence[DeviceResult], node: NodeName | None) -> JsonObject:
    """`status.allocation` as the API defines it: the device results and, for devices of a
    node, a node selector matching that node by name (as kube-scheduler writes it)."""
    body: JsonObject = {"devices": {"results": [_result_body(device) for device in devices]}}
    if node is not None:
        body["nodeSelector"] = {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
        }
    return body


def _result_body(device: DeviceResult) -> JsonObject:
    body: JsonObject = {"request": device.request, "driver": device.driver, "pool": device.pool, "device": device.device}
    if device.admin_access:
        body["adminAccess"] = True
    return body


def _results(allocation: JsonObject) -> list[JsonObject]:
    results = (allocation.get("devices") or {}).get("results") or []
    return [
        {k: v for k, v in result.items() if k in ("request", "driver", "pool", "device") or (k == "adminAccess" and v)}
        for result in results
    ]


def _key(obj: JsonObject) -> str:
    metadata = obj.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name', '')}"


def _version(obj: JsonObject) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0
