"""Gang-aware scale-up: a ProvisioningRequest for each gang that waits for capacity
(`batchplace controller --provisioning-class CLASS`; off by default).

Cluster Autoscaler buys nodes for single pending pods, one loop at a time, so a 4-node gang
can get 3 nodes and wait forever on them. Its ProvisioningRequest
(`autoscaling.x-k8s.io/v1`) asks for a whole set of pods at once: with the class
`best-effort-atomic-scale-up.autoscaling.x-k8s.io` it adds all the nodes or none, with
`check-capacity.autoscaling.x-k8s.io` it only says whether the room is there. Kueue asks
this way for the workloads it admits; batchplace asks for exactly the gangs whose every
reason to wait is one an added node could lift (`solver.reasons.nodes_would_help`) — never
for a gang held by its queue's capability, a dependency or a reservation, whose nodes would
idle.

Each cycle (leader only, after `act`), `reconcile` compares the gangs that wait for
capacity with the requests that exist (found by label, so a restarted controller picks up
its own) and the controller carries out its answer:

    gang waits for capacity, no request     PodTemplates (one per pod shape) + the request,
                                            named `batchplace-<podgroup>-<attempt>`
    its request Provisioned=True            an Event; the request stays until the gang starts
    its request Failed=True                 a Warning Event; after a backoff (doubling from
                                            `backoff_s`, at most 30 min, counted from the
                                            condition's lastTransitionTime) a new attempt
    CapacityRevoked or BookingExpired=True  a new attempt at once
    gang started, left, or no longer waits  request and PodTemplates deleted
    for capacity (now e.g. its quota)

Every pending pod of a gang whose request exists carries the annotations the autoscaler reads
to count it as consuming the request (`autoscaling.x-k8s.io/consume-provisioning-request`,
`autoscaling.x-k8s.io/provisioning-class-name`), so it buys no node for the pod by itself;
they are written the cycle after the request is created (never naming one the API refused),
only when they differ from the pod's, and removed from a pod left pending once its request
is gone. The Event `ProvisioningRequested` follows a create that succeeded.

A request asks for every pending pod of the gang, its minimum and the pods beyond it alike:
a pod left out would be bought a node for on its own, one at a time. The spec is immutable upstream: a gang whose pods change keeps its request until a
new attempt. Objects are owner-referenced to the PodGroup (the garbage collector removes them
with it) and deleted explicitly too (the gang may leave while the controller runs).

Errors: the API not served (the CRD not installed) or refused by RBAC is logged once and
tried again a minute later; scheduling is never held up by it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller.errors import ApiError, Conflict, Forbidden, NotFound
from controller.kinds import POD_TEMPLATES, PODS, PROVISIONING_REQUESTS
from controller.kube import KubeClient
from controller.observe import Observation, PodGroupRef
from controller.plan import EmitEvent, podgroup_event
from models.placement import Decision
from models.snapshot import PodGroupKey, PodKey
from solver.reasons import nodes_would_help

__all__ = [
    "CONSUME_ANNOTATION",
    "CLASS_ANNOTATION",
    "CHECK_CAPACITY",
    "ATOMIC_SCALE_UP",
    "PROVISIONING_CLASSES",
    "WaitingGang",
    "Create",
    "Delete",
    "Annotate",
    "Reconciliation",
    "request_name",
    "build_request",
    "waiting_for_capacity",
    "reconcile",
    "requested_event",
    "Provisioner",
]

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]

CONSUME_ANNOTATION = "autoscaling.x-k8s.io/consume-provisioning-request"
CLASS_ANNOTATION = "autoscaling.x-k8s.io/provisioning-class-name"
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
ATOMIC_SCALE_UP = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
PROVISIONING_CLASSES = (ATOMIC_SCALE_UP, CHECK_CAPACITY)
"""The classes Cluster Autoscaler implements; a cloud's own class is accepted too."""

MANAGED_BY = ("app.kubernetes.io/managed-by", "batchplace")
PODGROUP_ANNOTATION = "batchplace.io/podgroup"
ATTEMPT_ANNOTATION = "batchplace.io/provisioning-attempt"
NAME_PREFIX = "batchplace-"
MAX_NAME_CHARS = 253  # a DNS subdomain, for both kinds
MAX_BACKOFF_S = 1800.0
RETRY_UNSERVED_S = 60.0  # how long to wait before asking again an API that was not served or refused
CREATES_PER_CYCLE = 20  # requests created per cycle (new attempts first): the rest next cycle, so a cycle stays short
ANNOTATIONS_PER_CYCLE = 500  # pod patches per cycle, likewise

_POD_FIELDS = (  # what the autoscaler's scheduling simulation of a template pod reads
    "nodeSelector",
    "affinity",
    "tolerations",
    "topologySpreadConstraints",
    "priorityClassName",
    "priority",
    "preemptionPolicy",
    "overhead",
    "runtimeClassName",
    "hostNetwork",
)
_CONTAINER_FIELDS = ("name", "image", "resources", "ports")


# ---- what a gang asks for ----


@dataclass(frozen=True)
class WaitingGang:
    """A PodGroup that waits only for capacity, and its pending pods (raw, sorted by name)."""

    ref: PodGroupRef
    pods: tuple[JsonObject, ...]
    why: str  # its reasons, joined, for the Event


def request_name(group: str, attempt: int) -> str:
    """`batchplace-<podgroup>-<attempt>`; cut and suffixed with a hash past 253 characters."""
    return _bounded(f"{NAME_PREFIX}{group}-{attempt}", room=6)


def _bounded(name: str, *, room: int = 0) -> str:
    """`name` when it fits (with `room` characters left for a suffix); else cut, with a hash
    of the whole name, so two long names stay apart."""
    limit = MAX_NAME_CHARS - room
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[: limit - 11].rstrip('-.')}-{digest}"


def _template_spec(pod: JsonObject) -> JsonObject:
    """The part of a pod's spec that decides where it fits: containers' resources, images and
    ports, node selection, tolerations, spread, priority. Fields the API server fills per pod
    (the ServiceAccount token volume, nodeName, hostname) are left out, so the pods of one
    task share one template."""
    spec = pod.get("spec") or {}
    kept: JsonObject = {key: spec[key] for key in _POD_FIELDS if key in spec}
    for containers in ("initContainers", "containers"):
        if spec.get(containers):
            kept[containers] = [{k: c[k] for k in _CONTAINER_FIELDS if k in c} for c in spec[containers]]
    return kept


def build_request(
    gang: WaitingGang, *, class_name: str, attempt: int
) -> tuple[JsonObject, list[JsonObject]]:
    """(the ProvisioningRequest, its PodTemplates) for `gang`: one template per distinct
    template spec (`_template_spec`), in the order of the first pod having it, each counted
    by its pods. Deterministic: the same gang and attempt give the same objects."""
    ref = gang.ref
    name = request_name(ref.name, attempt)
    shapes: dict[str, tuple[JsonObject, list[JsonObject]]] = {}
    for pod in gang.pods:
        spec = _template_spec(pod)
        shapes.setdefault(json.dumps(spec, sort_keys=True), (spec, []))[1].append(pod)
    owner = {
        "apiVersion": ref.kind.api_version,
        "kind": "PodGroup",
        "name": ref.name,
        "uid": ref.uid,
    }
    metadata = {
        "namespace": ref.namespace,
        "labels": {MANAGED_BY[0]: MANAGED_BY[1]},
        "ownerReferences": [owner],
    }
    templates = []
    pod_sets = []
    for index, (spec, pods) in enumerate(shapes.values()):
        template_name = f"{name}-t{index}"
        labels = dict((pods[0].get("metadata") or {}).get("labels") or {})
        templates.append({
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {**metadata, "name": template_name},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        })
        pod_sets.append({"podTemplateRef": {"name": template_name}, "count": len(pods)})
    request_spec: JsonObject = {"provisioningClassName": class_name, "podSets": pod_sets}
    request = {
        "apiVersion": PROVISIONING_REQUESTS.api_version,
        "kind": "ProvisioningRequest",
        "metadata": {
            **metadata,
            "name": name,
            "annotations": {PODGROUP_ANNOTATION: ref.name, ATTEMPT_ANNOTATION: str(attempt)},
        },
        "spec": request_spec,
    }
    return request, templates


def waiting_for_capacity(
    observation: Observation, decision: Decision, raw_pods: Mapping[PodKey, JsonObject]
) -> dict[str, WaitingGang]:
    """PodGroup uid → the gang, for every PodGroup object the decision leaves pending whose
    every reason a node could lift. Its pods: its pending pods in the snapshot."""
    pending: dict[PodGroupKey, list[JsonObject]] = {}
    for pod in observation.snapshot.pods:
        raw = raw_pods.get(pod.key)
        if pod.phase == "pending" and pod.pod_group is not None and raw is not None:
            pending.setdefault(pod.pod_group, []).append(raw)
    gangs: dict[str, WaitingGang] = {}
    for outcome in decision.podgroups:
        ref = observation.pod_groups.get(outcome.name)
        pods = pending.get(outcome.name)
        if outcome.state != "pending" or ref is None or not pods or not nodes_would_help(outcome.reasons):
            continue
        pods.sort(key=lambda raw: str((raw.get("metadata") or {}).get("name", "")))
        gangs[ref.uid] = WaitingGang(ref=ref, pods=tuple(pods), why="; ".join(map(str, outcome.reasons)))
    return gangs


# ---- what to do ----


@dataclass(frozen=True)
class Create:
    gang: WaitingGang
    attempt: int


@dataclass(frozen=True)
class Delete:
    request: JsonObject
    why: str


@dataclass(frozen=True)
class Annotate:
    """Set (`request` a name) or remove (`request` None) a pod's consume annotations."""

    namespace: str
    name: str
    request: str | None


@dataclass(frozen=True)
class Reconciliation:
    deletes: tuple[Delete, ...] = ()
    creates: tuple[Create, ...] = ()
    annotations: tuple[Annotate, ...] = ()
    events: tuple[EmitEvent, ...] = ()


def _conditions(request: JsonObject) -> dict[str, JsonObject]:
    """type → condition, for those whose status is True."""
    found = (request.get("status") or {}).get("conditions") or []
    return {str(c.get("type")): c for c in found if isinstance(c, dict) and c.get("status") == "True"}


def _attempt(request: JsonObject) -> int:
    try:
        return int(((request.get("metadata") or {}).get("annotations") or {}).get(ATTEMPT_ANNOTATION, "1"))
    except ValueError:
        return 1


def _owner_uid(request: JsonObject) -> str:
    owners = (request.get("metadata") or {}).get("ownerReferences") or []
    return next((str(o.get("uid")) for o in owners if o.get("kind") == "PodGroup"), "")


def _seconds_since(condition: JsonObject, now: datetime) -> float:
    """Seconds since the condition's lastTransitionTime (0 when it has none readable)."""
    try:
        since = datetime.fromisoformat(str(condition.get("lastTransitionTime", "")).replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return (now - since).total_seconds()


def _ref_name(request: JsonObject) -> str:
    metadata = request.get("metadata") or {}
    return f"{metadata.get('namespace')}/{metadata.get('name')}"


def reconcile(
    gangs: Mapping[str, WaitingGang],
    requests: Sequence[JsonObject],
    *,
    refs: Mapping[str, PodGroupRef],
    pending_pods: Mapping[PodKey, JsonObject],
    binding: frozenset[PodKey] | set[PodKey],
    group_of: Mapping[PodKey, str],
    class_name: str,
    backoff_s: float,
    now: datetime,
) -> Reconciliation:
    """What to create, delete, annotate and say this cycle. Pure.

    `gangs`: those waiting for capacity (`waiting_for_capacity`), by PodGroup uid;
    `requests`: ours that exist; `refs`: every PodGroup object, by uid (a gang gone or not);
    `pending_pods`: our pending pods; `binding`: those the decision binds this cycle (their
    annotations are left alone); `group_of`: pending pod → its PodGroup's uid."""
    by_gang: dict[str, list[JsonObject]] = {}
    for request in requests:
        by_gang.setdefault(_owner_uid(request), []).append(request)
    deletes: list[Delete] = []
    creates: list[Create] = []
    events: list[EmitEvent] = []
    live: dict[str, str] = {}  # PodGroup uid → the name of its existing request, which its pods consume
    for uid, found in sorted(by_gang.items()):
        found.sort(key=_attempt)
        *older, latest = found
        deletes.extend(Delete(request, "a later attempt exists") for request in older)
        gang = gangs.get(uid)
        if gang is None:
            why = "its gang started or waits for another reason than capacity" if uid in refs else "its PodGroup is gone"
            deletes.append(Delete(latest, why))
            continue
        name = _ref_name(latest)
        attempt = _attempt(latest)
        true = _conditions(latest)
        if "Failed" in true:
            failed = true["Failed"]
            wait_s = min(backoff_s * 2 ** (attempt - 1), MAX_BACKOFF_S)
            left_s = wait_s - _seconds_since(failed, now)
            events.append(_event(gang.ref, "Warning", "ProvisioningFailed", name, failed,
                                 f"a new request {wait_s:.0f} s after the failure", key="Failed"))
            if left_s <= 0:
                deletes.append(Delete(latest, "it failed"))
                creates.append(Create(gang, attempt + 1))
            else:
                live[uid] = str((latest.get("metadata") or {}).get("name"))
            continue
        lost = next((kind for kind in ("CapacityRevoked", "BookingExpired") if kind in true), None)
        if lost is not None:
            events.append(_event(gang.ref, "Warning", f"Provisioning{lost}", name, true[lost], "a new request now", key=lost))
            deletes.append(Delete(latest, lost))
            creates.append(Create(gang, attempt + 1))
            continue
        if "Provisioned" in true:
            events.append(_event(gang.ref, "Normal", "Provisioned", name, true["Provisioned"],
                                 "the gang is placed as the new nodes join", key="Provisioned"))
        live[uid] = str((latest.get("metadata") or {}).get("name"))
    recreations = len(creates)
    firsts = [Create(gang, 1) for uid, gang in sorted(gangs.items()) if uid not in by_gang]
    creates.extend(firsts[: max(0, CREATES_PER_CYCLE - recreations)])
    creating = {create.gang.ref.uid for create in creates}
    annotations = []
    for key, pod in sorted(pending_pods.items()):
        group = group_of.get(key, "")
        if key in binding or group in creating:  # a new request's pods are annotated once it exists
            continue
        has = ((pod.get("metadata") or {}).get("annotations") or {})
        wanted = live.get(group)
        current = has.get(CONSUME_ANNOTATION)
        if wanted is not None and (current != wanted or has.get(CLASS_ANNOTATION) != class_name):
            annotations.append(Annotate(str(pod["metadata"].get("namespace")), str(pod["metadata"]["name"]), wanted))
        elif wanted is None and current is not None and str(current).startswith(NAME_PREFIX):
            annotations.append(Annotate(str(pod["metadata"].get("namespace")), str(pod["metadata"]["name"]), None))
    return Reconciliation(tuple(deletes), tuple(creates), tuple(annotations[:ANNOTATIONS_PER_CYCLE]), tuple(events))


def requested_event(create: Create, *, class_name: str) -> EmitEvent:
    """The Event on the PodGroup once its request is created."""
    ref, pods = create.gang.ref, len(create.gang.pods)
    name = request_name(ref.name, create.attempt)
    return podgroup_event(
        ref, type_="Normal", reason="ProvisioningRequested",
        message=f"ProvisioningRequest {ref.namespace}/{name} ({class_name}) asks for {pods} pod{'s' if pods != 1 else ''} "
        f"the cluster has no room for: {create.gang.why}",
        dedupe_key=f"provisioning/{ref.namespace}/{name}/Requested",
    )


def _event(ref: PodGroupRef, type_: str, reason: str, request: str, condition: JsonObject, then: str, *, key: str) -> EmitEvent:
    said = ": ".join(str(part) for part in (condition.get("reason"), condition.get("message")) if part)
    return podgroup_event(
        ref, type_=type_, reason=reason, message=f"ProvisioningRequest {request}: {key}{f' ({said})' if said else ''}; {then}",
        dedupe_key=f"provisioning/{request}/{key}",
    )


# ---- carrying it out ----


@dataclass
class Provisioner:
    """Reads our requests, `reconcile`s, and writes the answer (one cycle's worth at most)."""

    client: KubeClient
    class_name: str
    backoff_s: float = 60.0
    _unserved_until: float = 0.0
    _unserved_said: str = ""
    _logged: dict[str, str] = field(default_factory=dict)  # the last answer's Events: dedupe key → message

    def sync(
        self, observation: Observation, decision: Decision | None, raw_pods: Sequence[JsonObject], *, now: datetime,
        monotonic_s: float,
    ) -> Reconciliation | None:
        """One pass; its Events are returned for the actuator to send. `decision` None: a cycle
        with no PodGroup to place (requests left over are deleted). None when the API was not
        read (not served, refused: logged once, tried again `RETRY_UNSERVED_S` later)."""
        if monotonic_s < self._unserved_until:
            return None
        try:
            requests = self.client.list(PROVISIONING_REQUESTS, label_selector="=".join(MANAGED_BY)).items
        except (NotFound, Forbidden) as error:
            self._unserved(error, monotonic_s)
            return None
        except ApiError as error:
            log.warning("provisioning requests not read this cycle: %s", error)
            return None
        if self._unserved_said:
            log.info("provisioning requests are read again")
            self._unserved_said = ""
        by_key = {f"{(pod.get('metadata') or {}).get('namespace')}/{(pod.get('metadata') or {}).get('name')}": pod for pod in raw_pods}
        gangs = waiting_for_capacity(observation, decision, by_key) if decision is not None else {}
        refs = {ref.uid: ref for ref in observation.pod_groups.values()}
        pending = {pod.key: by_key[pod.key] for pod in observation.snapshot.pods if pod.phase == "pending" and pod.key in by_key}
        group_of = {
            pod.key: observation.pod_groups[pod.pod_group].uid
            for pod in observation.snapshot.pods
            if pod.key in pending and pod.pod_group in observation.pod_groups
        }
        answer = reconcile(
            gangs, requests, refs=refs, pending_pods=pending, binding={bind.pod for bind in decision.placement.binds} if decision is not None else set(),
            group_of=group_of, class_name=self.class_name, backoff_s=self.backoff_s, now=now,
        )
        created = self._apply(answer, monotonic_s)
        answer = dataclasses.replace(answer, events=(*answer.events, *created))
        for event in answer.events:  # each logged once: an Event of this answer not said in the last one
            if event.dedupe_key is not None and self._logged.get(event.dedupe_key) != event.message:
                log.log(logging.WARNING if event.type == "Warning" else logging.INFO, "%s/%s: %s", event.namespace, event.name,
                        event.message, extra={"podgroup": f"{event.namespace}/{event.name}", "reason": event.reason})
        self._logged = {event.dedupe_key: event.message for event in answer.events if event.dedupe_key is not None}
        return answer

    def _unserved(self, error: ApiError, monotonic_s: float) -> None:
        self._unserved_until = monotonic_s + RETRY_UNSERVED_S
        said = type(error).__name__
        if said != self._unserved_said:
            hint = "is the ProvisioningRequest CRD installed?" if isinstance(error, NotFound) else "does RBAC grant it?"
            log.error(
                "--provisioning-class: %s (%s); no scale-up is asked for, scheduling goes on; tried again in %.0f s",
                error, hint, RETRY_UNSERVED_S, extra={"provisioning_error": said},
            )
            self._unserved_said = said

    def _apply(self, answer: Reconciliation, monotonic_s: float) -> list[EmitEvent]:
        """Write the answer; the Events of the requests created."""
        for delete in answer.deletes:
            self._delete(delete)
        created = []
        for create in answer.creates:
            done = self._create(create, monotonic_s)
            if done is None:
                break
            if done:
                created.append(requested_event(create, class_name=self.class_name))
        for annotate in answer.annotations:
            value = annotate.request
            body = {"metadata": {"annotations": {CONSUME_ANNOTATION: value, CLASS_ANNOTATION: self.class_name if value else None}}}
            try:
                self.client.patch(PODS, annotate.namespace, annotate.name, body)
            except NotFound:
                pass
            except ApiError as error:
                log.warning("provisioning annotations of pod %s/%s not written: %s", annotate.namespace, annotate.name, error)
        return created

    def _delete(self, delete: Delete) -> None:
        metadata = delete.request.get("metadata") or {}
        namespace, name = str(metadata.get("namespace")), str(metadata.get("name"))
        pod_sets = (delete.request.get("spec") or {}).get("podSets") or []
        try:
            self.client.delete(PROVISIONING_REQUESTS, namespace, name)
            for pod_set in pod_sets:
                try:
                    self.client.delete(POD_TEMPLATES, namespace, str((pod_set.get("podTemplateRef") or {}).get("name")))
                except NotFound:
                    pass
        except NotFound:
            pass
        except ApiError as error:
            log.warning("provisioning request %s/%s not deleted: %s", namespace, name, error)
            return
        log.info("provisioning request %s/%s deleted: %s", namespace, name, delete.why,
                 extra={"provisioning_request": f"{namespace}/{name}"})

    def _create(self, create: Create, monotonic_s: float) -> bool | None:
        """True when created; False when not (logged; tried again next cycle); None when the
        API is not served or refused (no more creates this cycle)."""
        request, templates = build_request(create.gang, class_name=self.class_name, attempt=create.attempt)
        namespace = create.gang.ref.namespace
        try:
            for template in templates:  # first, so the autoscaler never reads a request without them
                try:
                    self.client.create(POD_TEMPLATES, namespace, template)
                except Conflict:  # left by an earlier try of this attempt
                    pass
            self.client.create(PROVISIONING_REQUESTS, namespace, request)
        except Conflict:
            return False  # already there: read next cycle
        except (NotFound, Forbidden) as error:
            self._unserved(error, monotonic_s)
            return None
        except ApiError as error:
            log.warning("provisioning request for %s not created: %s", create.gang.ref.key, error)
            return False
        pods = sum(pod_set["count"] for pod_set in request["spec"]["podSets"])
        log.info(
            "provisioning request %s/%s created (%s, %d pods): %s", namespace, request["metadata"]["name"], self.class_name, pods,
            create.gang.why, extra={"provisioning_request": f"{namespace}/{request['metadata']['name']}", "pods": pods},
        )
        return True

