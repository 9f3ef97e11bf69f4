"""The two halves of DRA reading meet: devices loaded from ResourceSlices (`models.dra`)
are what the CEL selectors of DeviceClasses (`solver.dra_cel`) read — typed attributes,
qualified names, capacities in base units, versions ordered as semver."""

from __future__ import annotations

from solver.dra_cel import compile_selector
from tests.models._dra_yaml import GPU_CLASS, MIG_CLASS, MIG_SLICE, gpu_slice, load_dra


def _devices():
    snapshot = load_dra(GPU_CLASS, MIG_CLASS, gpu_slice("n1"), MIG_SLICE).snapshot
    return snapshot, [device for resource_slice in snapshot.dra.resource_slices for device in resource_slice.devices]


def test_each_class_s_own_selectors_pick_its_devices() -> None:
    snapshot, devices = _devices()
    picked = {}
    for device_class in snapshot.dra.device_classes:
        selectors = [
            compile_selector(expression, where=f"DeviceClass {device_class.name} selectors[{i}]")
            for i, expression in enumerate(device_class.selectors)
        ]
        picked[device_class.name] = sorted(d.name for d in devices if all(s.matches(d) for s in selectors))
    assert picked["gpu.nvidia.com"] == sorted(d.name for d in devices)  # every device of the driver
    assert picked["mig.nvidia.com"] == sorted(d.name for d in devices if d.attributes.get("gpu.nvidia.com/type") == "mig")
    assert picked["mig.nvidia.com"] and len(picked["mig.nvidia.com"]) < len(devices)


def test_typed_attributes_capacities_and_versions_of_loaded_devices() -> None:
    _, devices = _devices()
    gpu_5 = next(d for d in devices if d.name == "gpu-5")
    expectations = {
        'device.attributes["gpu.nvidia.com"].nvlinkDomain == 1': True,  # an int, compared as one
        'device.attributes["gpu.nvidia.com"]["mig-capable"] == false': True,  # a bool
        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) == 0': True,
        'device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("81920Mi"))': False,
        'device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("550.9.0"))': True,  # 54 > 9
        'device.attributes["resource.kubernetes.io"].pcieRoot == "pci0001:00"': True,  # a qualified name
    }
    for expression, expected in expectations.items():
        assert compile_selector(expression, where="test").matches(gpu_5) is expected, expression
