"""ResourceClaims, ResourceClaimTemplates and pods' `spec.resourceClaims` read into
`models.dra`: `exactly` with count or All, `firstAvailable` alternatives in order,
`matchAttribute` constraints, an allocation already written (results, node selector,
reservedFor) and the pod a template made a claim for."""

from __future__ import annotations

import pydantic
import pytest

from models.dra import DraObjects, ExactDeviceRequest, PodResourceClaim
from tests.models._dra_yaml import GPU_CLASS, MIG_CLASS, load_dra

TRAINING_TEMPLATE = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: eight-gpus-one-nvlink, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly:
          deviceClassName: gpu.nvidia.com
          count: 8
          selectors:
          - cel: {expression: "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"}
      - name: nic
        exactly: {deviceClassName: gpu.nvidia.com, allocationMode: All}
      constraints:
      - requests: [gpus]
        matchAttribute: gpu.nvidia.com/nvlinkDomain
      - matchAttribute: resource.kubernetes.io/pcieRoot
"""

ALLOCATED_CLAIM = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: worker-0-gpu-x7k2p
  namespace: ml
  ownerReferences:
  - {apiVersion: v1, kind: Pod, name: worker-0, uid: 1111, controller: true}
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - {name: full, deviceClassName: gpu.nvidia.com}
      - {name: slice, deviceClassName: mig.nvidia.com, count: 2}
status:
  allocation:
    devices:
      results:
      - {request: gpu/full, driver: gpu.nvidia.com, pool: n1, device: gpu-3}
    nodeSelector:
      nodeSelectorTerms:
      - matchFields: [{key: metadata.name, operator: In, values: [n1]}]
  reservedFor:
  - {resource: pods, name: worker-0, uid: 1111}
"""

POD_WITH_CLAIMS = """
apiVersion: v1
kind: Pod
metadata: {name: worker-1, namespace: ml}
spec:
  schedulerName: batchplace
  containers: [{name: train, image: trainer}]
  resourceClaims:
  - {name: gpus, resourceClaimTemplateName: eight-gpus-one-nvlink}
  - {name: shared, resourceClaimName: worker-0-gpu-x7k2p}
"""


def test_a_template_s_requests_keep_count_all_selectors_and_constraints() -> None:
    (template,) = load_dra(GPU_CLASS, TRAINING_TEMPLATE).snapshot.dra.resource_claim_templates
    assert template.key == "ml/eight-gpus-one-nvlink"
    gpus, nic = template.requests
    assert gpus.exactly == ExactDeviceRequest(
        device_class_name="gpu.nvidia.com",
        count=8,
        selectors=("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",),
    )
    assert (nic.exactly.allocation_mode, nic.exactly.count) == ("All", 1)  # type: ignore[union-attr]
    assert [(c.requests, c.match_attribute) for c in template.constraints] == [
        (("gpus",), "gpu.nvidia.com/nvlinkDomain"),
        ((), "resource.kubernetes.io/pcieRoot"),
    ]


def test_a_claim_s_first_available_alternatives_keep_their_order_and_its_allocation_is_read() -> None:
    (claim,) = load_dra(GPU_CLASS, MIG_CLASS, ALLOCATED_CLAIM).snapshot.dra.resource_claims
    (request,) = claim.requests
    assert request.exactly is None
    assert [(sub.name, sub.device_class_name, sub.count) for sub in request.first_available] == [
        ("full", "gpu.nvidia.com", 1),
        ("slice", "mig.nvidia.com", 2),
    ]
    assert [(r.request, r.driver, r.pool, r.device) for r in claim.allocation or ()] == [
        ("gpu/full", "gpu.nvidia.com", "n1", "gpu-3")
    ]
    assert claim.allocation_node_selector[0].match_fields[0].values == ("n1",)
    assert claim.reserved_for == ("worker-0",)
    assert claim.owner_pod == "worker-0"


def test_a_claim_without_status_is_not_allocated() -> None:
    text = ALLOCATED_CLAIM.split("status:")[0]
    (claim,) = load_dra(GPU_CLASS, MIG_CLASS, text).snapshot.dra.resource_claims
    assert (claim.allocation, claim.reserved_for) == (None, ())


def test_a_pod_s_resource_claims_name_a_template_or_a_claim() -> None:
    snapshot = load_dra(GPU_CLASS, MIG_CLASS, TRAINING_TEMPLATE, ALLOCATED_CLAIM, POD_WITH_CLAIMS).snapshot
    (pod,) = snapshot.pods
    assert pod.resource_claims == (
        PodResourceClaim(name="gpus", resource_claim_template_name="eight-gpus-one-nvlink"),
        PodResourceClaim(name="shared", resource_claim_name="worker-0-gpu-x7k2p"),
    )


def test_a_pod_without_resource_claims_has_none_and_a_snapshot_without_dra_is_empty() -> None:
    text = POD_WITH_CLAIMS.split("  resourceClaims:")[0]
    result = load_dra(text)
    assert result.snapshot.pods[0].resource_claims == ()
    assert result.snapshot.dra.resource_slices == result.snapshot.dra.resource_claims == ()
    assert result.warnings == ()


def test_a_snapshot_s_dra_objects_refuse_a_request_of_an_unknown_class_when_built_directly() -> None:
    """The JSON form is checked as the YAML loader checks it (the loader names the field first)."""
    claim = {"namespace": "ml", "name": "c", "requests": [{"name": "gpus", "exactly": {"device_class_name": "tpu"}}]}
    with pytest.raises(pydantic.ValidationError, match="claim ml/c request 'gpus' names unknown device class 'tpu'"):
        DraObjects.model_validate({"resource_claims": [claim]})
    assert DraObjects.model_validate({"device_classes": [{"name": "tpu"}], "resource_claims": [claim]}).claim_by_key
