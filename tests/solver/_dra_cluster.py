"""A small DRA cluster in YAML for the rule `dra` tests: nodes with NVIDIA-style GPU slices
(8 GPUs, NVLink domains of 4; tests/models/_dra_yaml.py), a queue, PodGroups whose pods
name claims (from templates, or a claim by name), running pods holding allocations."""

from __future__ import annotations

from models.loaders import load_snapshot_yaml_text
from models.snapshot import Snapshot
from tests.models._dra_yaml import GPU_CLASS, MIG_CLASS, documents, gpu_slice

DOMAIN = "gpu.nvidia.com/nvlinkDomain"


def node(name: str, *, cpu: int = 64) -> str:
    return f"""
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
status:
  allocatable: {{cpu: "{cpu}", memory: 512Gi, pods: "110"}}
"""


def queue(name: str = "default", capability: str = "") -> str:
    cap = f"\n  capability: {{{capability}}}" if capability else ""
    return f"""
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {{name: {name}}}
spec:
  weight: 1{cap}
"""


def template(name: str, count: int, *, domain: bool = False, device_class: str = "gpu.nvidia.com", namespace: str = "default") -> str:
    constraint = f"\n      constraints:\n      - matchAttribute: {DOMAIN}" if domain else ""
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly: {{deviceClassName: {device_class}, count: {count}}}{constraint}
"""


def group(name: str, min_member: int, *, queue_name: str = "default") -> str:
    return f"""
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: {name}, namespace: default}}
spec: {{minMember: {min_member}, queue: {queue_name}}}
"""


def pod(name: str, group_name: str, *, template_name: str | None = None, claim: str | None = None, node_name: str | None = None, cpu: int = 1) -> str:
    entry = (
        f"\n  resourceClaims:\n  - name: gpus\n    resourceClaimTemplateName: {template_name}" if template_name else
        f"\n  resourceClaims:\n  - name: gpus\n    resourceClaimName: {claim}" if claim else ""
    )
    where = f"\n  nodeName: {node_name}" if node_name else ""
    phase = "Running" if node_name else "Pending"
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  annotations: {{scheduling.k8s.io/group-name: {group_name}}}
spec:
  schedulerName: volcano{where}
  containers:
  - name: main
    image: busybox
    resources: {{requests: {{cpu: "{cpu}"}}}}{entry}
status: {{phase: {phase}}}
"""


def allocated_claim(name: str, node_name: str, devices: list[int], *, owner: str | None = None) -> str:
    results = "".join(
        f"\n        - {{request: gpus, driver: gpu.nvidia.com, pool: {node_name}, device: gpu-{i}}}" for i in devices
    )
    owned = (
        f"\n  ownerReferences: [{{apiVersion: v1, kind: Pod, name: {owner}, uid: u-{owner}, controller: true}}]"
        f"\n  annotations: {{resource.kubernetes.io/pod-claim-name: gpus}}"
        if owner
        else ""
    )
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: {name}
  namespace: default{owned}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {{deviceClassName: gpu.nvidia.com, count: {len(devices)}}}
status:
  allocation:
    devices:
      results:{results}
"""


def cluster(*parts: str, nodes: int = 2) -> Snapshot:
    base = [GPU_CLASS, MIG_CLASS, queue()]
    for i in range(1, nodes + 1):
        base += [node(f"n{i}"), gpu_slice(f"n{i}")]
    return load_snapshot_yaml_text(documents(*base, *parts), source="dra-cluster.yaml").snapshot


def first_available_template(name: str, alternatives: list[tuple[str, str, int]]) -> str:
    """A template whose one request `gpus` offers (sub-request, class, count) alternatives in order."""
    subs = "".join(
        f"\n          - {{name: {sub}, deviceClassName: {device_class}, count: {count}}}" for sub, device_class, count in alternatives
    )
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: {name}, namespace: default}}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        firstAvailable:{subs}
"""


def shared_claim(name: str, count: int) -> str:
    """A claim made by hand (no owner), to be named by several pods."""
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}, namespace: default}}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {{deviceClassName: gpu.nvidia.com, count: {count}}}
"""
