"""One-line builders for tiny openb clusters and pod lists (tests only)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from experiments.cluster_state import ClusterState, PodRequest
from experiments.trace_openb import GPU_MODELS, OpenbNodes, OpenbPods


def make_nodes(*specs: tuple[int, int, str], memory_mib: int = 1 << 20) -> OpenbNodes:
    """`make_nodes((96000, 8, "G2"), (16000, 2, "T4"))`: (cpu milli, GPUs, model) per node."""
    return OpenbNodes(
        names=tuple(f"n{i}" for i in range(len(specs))),
        cpu_milli=np.array([s[0] for s in specs], dtype=np.int64),
        memory_mib=np.full(len(specs), memory_mib, dtype=np.int64),
        gpus=np.array([s[1] for s in specs], dtype=np.int64),
        model=np.array([GPU_MODELS.index(s[2]) for s in specs], dtype=np.int64),
    )


def make_pods(*shapes: tuple[int, int, int], spec: str = "") -> OpenbPods:
    """`make_pods((4000, 1, 500), (8000, 0, 0))`: (cpu milli, num_gpu, gpu milli) per pod."""
    count = len(shapes)
    mask = 0
    for name in filter(None, spec.split("|")):
        mask |= 1 << GPU_MODELS.index(name)
    return OpenbPods(
        names=tuple(f"p{i}" for i in range(count)),
        cpu_milli=np.array([s[0] for s in shapes], dtype=np.int64),
        memory_mib=np.full(count, 1024, dtype=np.int64),
        num_gpu=np.array([s[1] for s in shapes], dtype=np.int64),
        gpu_milli=np.array([s[2] for s in shapes], dtype=np.int64),
        gpu_spec=np.full(count, mask, dtype=np.int64),
        gpu_spec_text=tuple(spec for _ in shapes),
        creation_time=np.arange(count, dtype=np.float64),
        deletion_time=np.arange(count, dtype=np.float64) + 100.0,
    )


def pod(cpu_milli: int = 1000, num_gpu: int = 0, gpu_milli: int = 0, *, spec: int = 0, index: int = 0) -> PodRequest:
    return PodRequest(index=index, cpu_milli=cpu_milli, memory_mib=1024, num_gpu=num_gpu, gpu_milli=gpu_milli, spec=spec)


def occupy(state: ClusterState, node: int, *, cpu_milli: int = 0, devices: dict[int, int] | None = None) -> None:
    """Take `cpu_milli` and `devices` ({device: milli}) on `node` as running work would."""
    if cpu_milli:
        state.bind(pod(cpu_milli, index=-1), node, ())
    for device, milli in (devices or {}).items():
        if milli == 1000:
            state.bind(pod(0, 1, 1000, index=-1), node, (device,))
        else:
            state.bind(pod(0, 1, milli, index=-1), node, (device,))


def write_tiny_trace(folder: Path) -> None:
    """An openb-format trace folder: 12 nodes, 60 pods (the `default` list), fast to replay."""
    nodes = ["sn,cpu_milli,memory_mib,gpu,model"]
    nodes += [f"node-{index:02d},32000,131072,{2 + index % 3 * 2},{'V100M16' if index % 2 else 'T4'}" for index in range(12)]
    (folder / "openb_node_list_gpu_node.csv").write_text("\n".join(nodes) + "\n")
    pods = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"]
    shapes = [(4000, 1, 1000), (2000, 1, 500), (8000, 2, 1000), (1000, 1, 250), (6000, 0, 0), (4000, 4, 1000)]
    for index in range(60):
        cpu, gpus, milli = shapes[index % len(shapes)]
        pods.append(f"pod-{index:03d},{cpu},8192,{gpus},{milli},,LS,Running,{index},{index + 100},{index}")
    (folder / "openb_pod_list_default.csv").write_text("\n".join(pods) + "\n")
