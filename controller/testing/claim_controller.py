"""Kubernetes' resourceclaim controller, the part that makes claims, for a cluster without one.

In a DRA cluster, kube-controller-manager's resourceclaim controller makes a ResourceClaim
for each `spec.resourceClaims` entry of a pod that names a ResourceClaimTemplate, before
the scheduler looks at the pod: the template's spec, a name generated from the pod's and
the entry's, the pod as its controller owner, the annotation
`resource.kubernetes.io/pod-claim-name` naming the entry, and the claim's name written into
the pod's `status.resourceClaimStatuses`. The test control plane runs no
kube-controller-manager; `make_claims` does that step for the live tests and the demo.

The pods are given as created from their manifests (with `spec.resourceClaims`) plus the
uid the API server gave them: a v1.20 API server drops `spec.resourceClaims` and
`status.resourceClaimStatuses` from pods it stores, so neither can be read back there.

Not promised: the rest of that controller (deleting a pod's claims when it is done,
removing stale reservations, deallocating claims nobody reserves).
"""

from __future__ import annotations

from typing import Any

from controller.kinds import PODS, RESOURCE_CLAIM_TEMPLATES, RESOURCE_CLAIMS
from models.loaders.dra_objects import POD_CLAIM_NAME_ANNOTATION

__all__ = ["claim_for", "make_claims"]

JsonObject = dict[str, Any]


def claim_for(pod: JsonObject, entry: str, template_spec: JsonObject) -> JsonObject:
    """The claim made for `pod`'s entry `entry` from a template whose `spec.spec` is
    `template_spec`: owned by the pod (controller), annotated with the entry."""
    metadata = pod["metadata"]
    return {
        "apiVersion": RESOURCE_CLAIMS.api_version,
        "kind": RESOURCE_CLAIMS.kind,
        "metadata": {
            "generateName": f"{metadata['name']}-{entry}-",
            "namespace": metadata["namespace"],
            "annotations": {POD_CLAIM_NAME_ANNOTATION: entry},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": metadata["name"], "uid": metadata["uid"],
                 "controller": True, "blockOwnerDeletion": True}
            ],
        },
        "spec": template_spec,
    }


def make_claims(client: Any, pods: list[JsonObject]) -> dict[tuple[str, str], str]:
    """Create each template claim of `pods` (each with its uid) through `client` (a
    `controller.kube.KubeClient`); (pod `ns/name`, entry) → the claim's name."""
    made: dict[tuple[str, str], str] = {}
    for pod in pods:
        metadata = pod["metadata"]
        namespace = metadata["namespace"]
        statuses = []
        for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
            template_name = entry.get("resourceClaimTemplateName")
            if not template_name:
                continue
            template = client.get(RESOURCE_CLAIM_TEMPLATES, namespace, template_name)
            claim = client.create(RESOURCE_CLAIMS, namespace, claim_for(pod, entry["name"], template["spec"]["spec"]))
            made[(f"{namespace}/{metadata['name']}", entry["name"])] = claim["metadata"]["name"]
            statuses.append({"name": entry["name"], "resourceClaimName": claim["metadata"]["name"]})
        if statuses:
            body = {"status": {"resourceClaimStatuses": statuses}}
            client.patch(PODS, namespace, metadata["name"], body, subresource="status", strategic=True)
    return made
