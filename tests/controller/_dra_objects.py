"""Raw DRA objects (`resource.k8s.io/v1`) for the controller's tests, and the claim Kubernetes'
resourceclaim controller makes from a template for a pod (our test control plane runs no
kube-controller-manager, so the tests make it as that controller would)."""

from __future__ import annotations

from typing import Any

from controller.testing.claim_controller import claim_for

JsonObject = dict[str, Any]
DRIVER = "gpu.example.com"
API_VERSION = "resource.k8s.io/v1"


def device_class(name: str = DRIVER) -> JsonObject:
    return {
        "apiVersion": API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def node_slice(node: str, gpus: int, *, nvlink_domain: int | None = None) -> JsonObject:
    """One complete pool per node: `gpus` devices `gpu-0` … with an index and memory (and an
    `nvlinkDomain` when given)."""
    devices = []
    for index in range(gpus):
        attributes: JsonObject = {"index": {"int": index}}
        if nvlink_domain is not None:
            attributes["nvlinkDomain"] = {"int": nvlink_domain}
        devices.append({"name": f"gpu-{index}", "attributes": attributes, "capacity": {"memory": {"value": "80Gi"}}})
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": devices,
        },
    }


def _devices(count: int, match_attribute: str | None = None) -> JsonObject:
    devices: JsonObject = {"requests": [{"name": "gpus", "exactly": {"deviceClassName": DRIVER, "count": count}}]}
    if match_attribute is not None:
        devices["constraints"] = [{"matchAttribute": f"{DRIVER}/{match_attribute}"}]
    return devices


def claim_template(name: str, namespace: str, *, gpus: int = 1, match_attribute: str | None = None) -> JsonObject:
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": _devices(gpus, match_attribute)}},
    }


def generated_claim(pod: JsonObject, entry: str, *, gpus: int = 1) -> JsonObject:
    """The claim the resourceclaim controller makes for `pod`'s entry `entry`
    (`controller.testing.claim_controller.claim_for`), with its name already generated."""
    claim = claim_for(pod, entry, {"devices": _devices(gpus)})
    metadata = claim["metadata"]
    metadata["name"] = metadata.pop("generateName") + "x7k2q"
    return claim


def claim_pod(name: str, namespace: str, *, template: str, entry: str = "gpu", group: str | None = None) -> JsonObject:
    """A pending pod of ours asking a claim from `template` (a v1.20 API server drops
    `spec.resourceClaims`; a 1.34 server keeps it)."""
    annotations = {"scheduling.k8s.io/group-name": group} if group else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {
            "schedulerName": "batchplace",
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
            "resourceClaims": [{"name": entry, "resourceClaimTemplateName": template}],
        },
    }
