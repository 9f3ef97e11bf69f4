"""ResourceSlices read into `models.dra`: NVIDIA-style GPUs (typed attributes qualified by the
driver's domain, memory capacity in bytes), a MIG-partitionable device (shared counters,
counters consumed, taints), and which pool generations count (`counted_devices`)."""

from __future__ import annotations

from models.dra import ResourceClaim, Version, counted_devices
from models.loaders.json_snapshot import load_snapshot_json, snapshot_to_json
from tests.models._dra_yaml import GPU_CLASS, MIG_CLASS, MIG_SLICE, gpu_slice, load_dra

GIB = 2**30


def test_an_nvidia_slice_s_gpus_keep_their_typed_attributes_under_qualified_names() -> None:
    snapshot = load_dra(GPU_CLASS, gpu_slice("n1")).snapshot
    (resource_slice,) = snapshot.dra.resource_slices
    assert (resource_slice.driver, resource_slice.node_name, resource_slice.pool.name) == ("gpu.nvidia.com", "n1", "n1")
    assert [device.name for device in resource_slice.devices] == [f"gpu-{index}" for index in range(8)]
    gpu_5 = resource_slice.devices[5]
    assert gpu_5.driver == "gpu.nvidia.com"
    assert gpu_5.attributes == {
        "gpu.nvidia.com/type": "gpu",
        "gpu.nvidia.com/productName": "NVIDIA H100 80GB HBM3",
        "gpu.nvidia.com/uuid": "GPU-00000005-aaaa-bbbb-cccc-000000000000",
        "gpu.nvidia.com/index": 5,
        "gpu.nvidia.com/nvlinkDomain": 1,
        "gpu.nvidia.com/driverVersion": Version(major=550, minor=54, patch=15),
        "resource.kubernetes.io/pcieRoot": "pci0001:00",
        "gpu.nvidia.com/mig-capable": False,
    }
    assert type(gpu_5.attributes["gpu.nvidia.com/mig-capable"]) is bool
    assert type(gpu_5.attributes["gpu.nvidia.com/index"]) is int
    assert gpu_5.capacity == {"gpu.nvidia.com/memory": 80 * GIB}


def test_a_mig_partitionable_device_keeps_shared_counters_consumption_and_taints() -> None:
    snapshot = load_dra(MIG_CLASS, MIG_SLICE).snapshot
    (resource_slice,) = snapshot.dra.resource_slices
    (counter_set,) = resource_slice.shared_counters
    assert (counter_set.name, counter_set.counters) == ("gpu-0-counters", {"memory": 80 * GIB, "multiprocessors": 132})
    small, whole = resource_slice.devices
    assert small.consumes_counters[0].counter_set == "gpu-0-counters"
    assert small.consumes_counters[0].counters == {"memory": 10 * GIB, "multiprocessors": 16}
    assert whole.consumes_counters[0].counters == {"memory": 80 * GIB, "multiprocessors": 132}
    assert small.taints == ()
    assert [(taint.key, taint.value, taint.effect) for taint in whole.taints] == [("example.com/unhealthy", "ecc", "NoSchedule")]


def test_a_snapshot_with_dra_objects_survives_its_json_form() -> None:
    snapshot = load_dra(GPU_CLASS, MIG_CLASS, gpu_slice("n1"), MIG_SLICE).snapshot
    again = load_snapshot_json(snapshot_to_json(snapshot))
    assert again.dra == snapshot.dra
    assert isinstance(again.dra.resource_slices[0].devices[0].attributes["gpu.nvidia.com/driverVersion"], Version)


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    old = gpu_slice("n1", generation=1, name="n1-old")
    new = gpu_slice("n1", generation=2, name="n1-new")
    census = counted_devices(load_dra(GPU_CLASS, old, new).snapshot.dra.resource_slices)
    assert {counted.slice_name for counted in census.devices} == {"n1-new"}
    assert len(census.devices) == 8
    assert census.incomplete_pools == ()


def test_an_incomplete_newest_generation_counts_nothing_not_even_the_older_one() -> None:
    old = gpu_slice("n1", generation=1, name="n1-old")
    half_written = gpu_slice("n1", generation=2, count=2, name="n1-new-part-1")
    other_node = gpu_slice("n2")
    census = counted_devices(load_dra(GPU_CLASS, old, half_written, other_node).snapshot.dra.resource_slices)
    assert {counted.slice_name for counted in census.devices} == {"n2-gpu.nvidia.com"}
    assert census.incomplete_pools == (("gpu.nvidia.com", "n1"),)


def test_a_pool_written_in_two_slices_counts_when_both_are_there() -> None:
    first = gpu_slice("n1", pool="rack-a", count=2, name="rack-a-1")
    second = gpu_slice("n2", pool="rack-a", count=2, name="rack-a-2")
    census = counted_devices(load_dra(GPU_CLASS, first, second).snapshot.dra.resource_slices)
    assert len(census.devices) == 16
    assert {counted.pool for counted in census.devices} == {"rack-a"}


def test_devices_an_allocation_names_are_taken_by_that_claim_and_admin_access_takes_none() -> None:
    slices = load_dra(GPU_CLASS, gpu_slice("n1")).snapshot.dra.resource_slices
    claim = ResourceClaim.model_validate(
        {
            "namespace": "ml",
            "name": "train-0-gpus",
            "allocation": [
                {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-0"},
                {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-1"},
                {"request": "watch", "driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-2", "admin_access": True},
                {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "elsewhere", "device": "gpu-3"},
            ],
        }
    )
    census = counted_devices(slices, [claim])
    taken = {counted.device.name: counted.taken_by for counted in census.devices if counted.taken_by}
    assert taken == {"gpu-0": "ml/train-0-gpus", "gpu-1": "ml/train-0-gpus"}


NETWORK_SLICES = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: rack-a-nics}
spec:
  driver: nic.example.com
  nodeSelector:
    nodeSelectorTerms:
    - matchExpressions: [{key: example.com/rack, operator: In, values: [a]}]
  pool: {name: rack-a, generation: 0, resourceSliceCount: 1}
  devices:
  - {name: nic-0, attributes: {example.com/rdma: {bool: true}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: everywhere}
spec:
  driver: fabric.example.com
  allNodes: true
  pool: {name: fabric, generation: 0, resourceSliceCount: 1}
  devices: [{name: channel-0}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: per-device}
spec:
  driver: fabric.example.com
  perDeviceNodeSelection: true
  pool: {name: per-device, generation: 0, resourceSliceCount: 1}
  devices: [{name: channel-1, nodeName: n1}]
"""


def test_slices_reachable_from_selected_nodes_or_all_nodes_say_so_and_per_device_nodes_are_not_counted() -> None:
    result = load_dra(NETWORK_SLICES)
    rack, everywhere, per_device = result.snapshot.dra.resource_slices
    assert (rack.node_name, rack.all_nodes) == (None, False)
    assert rack.node_selector[0].match_expressions[0].values == ("a",)
    assert rack.devices[0].attributes == {"example.com/rdma": True}
    assert (everywhere.node_name, everywhere.node_selector, everywhere.all_nodes) == (None, (), True)
    assert per_device.devices == ()
    assert result.warnings == ("DRA fields read but not used by placement yet: ResourceSlice spec.perDeviceNodeSelection",)
