"""Hand-written DRA manifests (`resource.k8s.io/v1`) shared by the tests/models/test_dra_*.py
files: an NVIDIA-style node slice of 8 GPUs on two NVLink domains, a MIG-partitionable
device, device classes; and loading helpers."""

from __future__ import annotations

import pytest

from models.errors import SnapshotError
from models.loaders import LoadResult, load_snapshot_yaml_text

SOURCE = "dra.yaml"

GPU_CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.nvidia.com'"}
"""

MIG_CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: mig.nvidia.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.nvidia.com'"}
  - cel: {expression: "device.attributes['gpu.nvidia.com'].type == 'mig'"}
"""


def _gpu(index: int) -> str:
    return f"""
  - name: gpu-{index}
    attributes:
      type: {{string: gpu}}
      productName: {{string: NVIDIA H100 80GB HBM3}}
      uuid: {{string: GPU-0000000{index}-aaaa-bbbb-cccc-000000000000}}
      index: {{int: {index}}}
      nvlinkDomain: {{int: {index // 4}}}
      driverVersion: {{version: 550.54.15}}
      resource.kubernetes.io/pcieRoot: {{string: pci000{index // 4}:00}}
      mig-capable: {{bool: false}}
    capacity:
      memory: {{value: 80Gi}}"""


def gpu_slice(node: str = "n1", *, pool: str | None = None, generation: int = 1, count: int = 1, name: str | None = None) -> str:
    """One node's slice of 8 GPUs (indices 0-7, NVLink domains 0 and 1)."""
    devices = "".join(_gpu(index) for index in range(8))
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {name or f"{node}-gpu.nvidia.com"}}}
spec:
  driver: gpu.nvidia.com
  nodeName: {node}
  pool: {{name: {pool or node}, generation: {generation}, resourceSliceCount: {count}}}
  devices:{devices}
"""


MIG_SLICE = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n2-mig}
spec:
  driver: gpu.nvidia.com
  nodeName: n2
  pool: {name: n2, generation: 3, resourceSliceCount: 1}
  sharedCounters:
  - name: gpu-0-counters
    counters:
      memory: {value: 80Gi}
      multiprocessors: {value: "132"}
  devices:
  - name: gpu-0-mig-1g.10gb-0
    attributes:
      type: {string: mig}
      profile: {string: 1g.10gb}
      parentIndex: {int: 0}
    capacity:
      memory: {value: 10Gi}
    consumesCounters:
    - counterSet: gpu-0-counters
      counters:
        memory: {value: 10Gi}
        multiprocessors: {value: "16"}
  - name: gpu-0-mig-7g.80gb-0
    attributes:
      type: {string: mig}
      profile: {string: 7g.80gb}
      parentIndex: {int: 0}
    capacity:
      memory: {value: 80Gi}
    consumesCounters:
    - counterSet: gpu-0-counters
      counters:
        memory: {value: 80Gi}
        multiprocessors: {value: "132"}
    taints:
    - {key: example.com/unhealthy, value: ecc, effect: NoSchedule}
"""


def documents(*texts: str) -> str:
    return "\n---\n".join(text.strip("\n") for text in texts)


def load_dra(*texts: str) -> LoadResult:
    return load_snapshot_yaml_text(documents(*texts), source=SOURCE)


def load_dra_error(*texts: str) -> str:
    """The one-line message of the SnapshotError the manifests raise."""
    with pytest.raises(SnapshotError) as caught:
        load_dra(*texts)
    return str(caught.value)
