"""One controller cycle's stages run by hand against the live API server, for the DRA tests:
the caches read once, the pods as a 1.34 API server would return them, acting once."""

from __future__ import annotations

import dataclasses
import threading
from datetime import datetime, timezone

from controller.act import ActReport, Actuator
from controller.caches import ClusterCaches
from controller.kube import KubeClient
from controller.observe import ClusterView
from controller.plan import Plan

JsonObject = dict


def cached_view(client: KubeClient) -> ClusterView:
    """What the controller's caches hold once synced and current."""
    stop = threading.Event()
    caches = ClusterCaches(client, scheduler_names=("batchplace",))
    caches.start(stop)
    try:
        assert caches.wait_synced(30) and caches.wait_current(10)
        return caches.view()
    finally:
        stop.set()


def as_served_by_1_34(view: ClusterView, bodies: dict[str, JsonObject], made: dict[tuple[str, str], str]) -> ClusterView:
    """`view` with each pod of `bodies` (`ns/name` → its manifest) carrying its
    `spec.resourceClaims`, and `status.resourceClaimStatuses` naming the claims `made` for
    it, as a 1.34 API server returns them: v1.20 drops both."""
    pods = []
    for pod in view.pods:
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        if key in bodies:
            statuses = [{"name": entry, "resourceClaimName": claim} for (owner, entry), claim in made.items() if owner == key]
            pod = {
                **pod,
                "spec": {**pod["spec"], "resourceClaims": bodies[key]["spec"].get("resourceClaims") or []},
                "status": {**pod.get("status", {}), "resourceClaimStatuses": statuses},
            }
        pods.append(pod)
    return dataclasses.replace(view, pods=tuple(pods))


def act_once(actuator: Actuator, the_plan: Plan) -> ActReport:
    try:
        return actuator.act(the_plan, now=datetime.now(timezone.utc), transition_id="t")
    finally:
        actuator.close()
