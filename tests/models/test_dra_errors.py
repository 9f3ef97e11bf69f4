"""Bad DRA input is an error naming file, document, object and field; fields read but not
used by placement are said in ONE warning for the whole input."""

from __future__ import annotations

import pytest

from tests.models._dra_yaml import GPU_CLASS, MIG_CLASS, MIG_SLICE, gpu_slice, load_dra, load_dra_error


def _claim(request: str, *, name: str = "c") -> str:
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}, namespace: ml}}
spec:
  devices:
    requests:
    - {request}
"""


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        (
            "{name: gpus, exactly: {deviceClassName: gpu.nvidia.com, count: -2}}",
            "spec.devices.requests[0].exactly.count: must be >= 1, got -2",
        ),
        (
            "{name: gpus, exactly: {deviceClassName: gpu.nvidia.com, allocationMode: Some}}",
            "spec.devices.requests[0].exactly.allocationMode: must be ExactCount or All, got 'Some'",
        ),
        (
            "{name: gpus, exactly: {deviceClassName: gpu.nvidia.com, allocationMode: All, count: 2}}",
            "spec.devices.requests[0].exactly.count: must not be set with allocationMode All",
        ),
        (
            "{name: gpus, exactly: {deviceClassName: gpu.nvidia.com}, firstAvailable: [{name: a, deviceClassName: gpu.nvidia.com}]}",
            "spec.devices.requests[0]: request 'gpus': exactly one of exactly, firstAvailable must be set",
        ),
        ("{name: gpus}", "spec.devices.requests[0]: request 'gpus': exactly one of exactly, firstAvailable must be set"),
        (
            "{name: gpus, exactly: {deviceClassName: gpu.amd.com}}",
            "spec.devices.requests[0].exactly.deviceClassName: no DeviceClass 'gpu.amd.com' in the input",
        ),
        (
            "{name: gpus, firstAvailable: [{name: a, deviceClassName: gpu.nvidia.com}, {name: b, deviceClassName: tpu}]}",
            "spec.devices.requests[0].firstAvailable[1].deviceClassName: no DeviceClass 'tpu' in the input",
        ),
        (
            "{name: gpus, firstAvailable: [{name: a, deviceClassName: gpu.nvidia.com, count: 0}]}",
            "spec.devices.requests[0].firstAvailable[0].count: must be >= 1, got 0",
        ),
        (
            "{name: gpus, exactly: {deviceClassName: gpu.nvidia.com, selectors: [{cel: {}}]}}",
            "spec.devices.requests[0].exactly.selectors[0].cel.expression: required, got nothing",
        ),
    ],
)
def test_a_bad_claim_request_names_file_object_and_field(request_text: str, expected: str) -> None:
    message = load_dra_error(GPU_CLASS, _claim(request_text))
    assert message.startswith("dra.yaml: document 2 (ResourceClaim ml/c): ")
    assert expected in message


def test_a_template_naming_a_missing_class_names_the_template() -> None:
    template = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: t}
spec:
  spec:
    devices:
      requests: [{name: gpus, exactly: {deviceClassName: gpu.nvidia.com}}]
"""
    message = load_dra_error(template)
    assert message == (
        "dra.yaml: document 1 (ResourceClaimTemplate default/t): "
        "spec.spec.devices.requests[0].exactly.deviceClassName: no DeviceClass 'gpu.nvidia.com' in the input"
    )


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("nodeName: n1", "allNodes: false", "spec: exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection must be set, got none"),
        ("nodeName: n1", "nodeName: n1\n  allNodes: true", "got nodeName, allNodes"),
        ("generation: 1", "generation: -1", "spec.pool.generation: must be >= 0, got -1"),
        ("resourceSliceCount: 1", "resourceSliceCount: 0", "spec.pool.resourceSliceCount: must be >= 1, got 0"),
        ("index: {int: 3}", "index: {int: 3, string: three}", "spec.devices[3].attributes.index: exactly one of bool, int, string, version"),
        ("index: {int: 3}", "index: {}", "spec.devices[3].attributes.index: exactly one of bool, int, string, version"),
        ("index: {int: 3}", "index: {int: three}", "spec.devices[3].attributes.index.int: expected an integer"),
        ("driverVersion: {version: 550.54.15}", "driverVersion: {version: '550.54'}", "is not a semantic version"),
        ("memory: {value: 80Gi}", "memory: {value: eighty}", "spec.devices[0].capacity.memory.value: 'eighty' is not a Kubernetes quantity"),
        ("memory: {value: 80Gi}", "memory: {value: -1Gi}", "spec.devices[0].capacity.memory.value: must not be negative"),
    ],
)
def test_a_bad_slice_names_file_object_and_field(old: str, new: str, expected: str) -> None:
    text = gpu_slice("n1")
    assert old in text
    message = load_dra_error(text.replace(old, new, 1))
    assert message.startswith("dra.yaml: document 1 (ResourceSlice n1-gpu.nvidia.com): ")
    assert expected in message


def test_a_bad_taint_effect_and_counter_are_named() -> None:
    bad_effect = MIG_SLICE.replace("effect: NoSchedule", "effect: Sometimes")
    assert "spec.devices[1].taints[0].effect: Input should be" in load_dra_error(MIG_CLASS, bad_effect)
    bad_counter = MIG_SLICE.replace('multiprocessors: {value: "132"}', "multiprocessors: {value: lots}", 1)
    assert "spec.sharedCounters[0].counters.multiprocessors.value: 'lots' is not" in load_dra_error(MIG_CLASS, bad_counter)


def test_a_pod_claim_naming_both_a_claim_and_a_template_is_named() -> None:
    pod = """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  schedulerName: batchplace
  containers: [{name: c, image: x}]
  resourceClaims:
  - {name: gpus, resourceClaimName: a, resourceClaimTemplateName: b}
"""
    assert load_dra_error(pod) == (
        "dra.yaml: document 1 (Pod default/p): spec.resourceClaims[0]: resource claim 'gpus': "
        "exactly one of resourceClaimName, resourceClaimTemplateName must be set"
    )
    twice = pod.replace("resourceClaimName: a, resourceClaimTemplateName: b}", "resourceClaimName: a}\n  - {name: gpus, resourceClaimName: c}")
    assert "spec.resourceClaims[1].name: 'gpus' is listed twice" in load_dra_error(twice)


def test_fields_read_but_not_used_are_one_warning_for_the_whole_input() -> None:
    configured_class = GPU_CLASS + "  config: [{opaque: {driver: gpu.nvidia.com, parameters: {sharing: time-slicing}}}]\n"
    claims = [
        _claim(
            "{name: gpus, exactly: {deviceClassName: gpu.nvidia.com, tolerations: [{operator: Exists}]}}\n"
            "    constraints: [{distinctAttribute: gpu.nvidia.com/uuid}]",
            name=f"c{index}",
        )
        for index in range(5)
    ]
    result = load_dra(configured_class, gpu_slice("n1"), *claims)
    assert result.warnings == (
        "DRA fields read but not used by placement yet: DeviceClass spec.config, "
        "ResourceClaim spec.devices.constraints.distinctAttribute, "
        "ResourceClaim spec.devices.requests.exactly.tolerations",
    )


def test_dra_objects_using_only_read_fields_warn_nothing() -> None:
    assert load_dra(GPU_CLASS, MIG_CLASS, gpu_slice("n1"), MIG_SLICE).warnings == ()


def test_a_dra_object_written_twice_names_both_documents() -> None:
    message = load_dra_error(GPU_CLASS, gpu_slice("n1"), GPU_CLASS)
    assert message == (
        "dra.yaml: document 3 (DeviceClass gpu.nvidia.com): duplicate DeviceClass 'gpu.nvidia.com'; "
        "the first is in dra.yaml: document 1 (DeviceClass gpu.nvidia.com)"
    )
    claim = _claim("{name: gpus, exactly: {deviceClassName: gpu.nvidia.com}}")
    assert "duplicate ResourceClaim 'ml/c'" in load_dra_error(GPU_CLASS, claim, claim)
    assert "duplicate ResourceSlice 'n1-gpu.nvidia.com'" in load_dra_error(gpu_slice("n1"), gpu_slice("n1"))
