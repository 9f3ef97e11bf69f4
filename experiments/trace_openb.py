"""Load Alibaba's openb GPU trace (cluster-trace-gpu-v2023, the FGD paper's data) into arrays.

Input: the CSVs of the openb trace, `cluster-trace-gpu-v2023/csv` in Alibaba's clusterdata
repository (github.com/alibaba/clusterdata), in a folder found by `trace_dir`: the node
list `openb_node_list_gpu_node.csv` (1,213 GPU nodes, 6,212 GPUs) and a pod list,
`openb_pod_list_default.csv` (8,152 pods) or one of its 23 variants. Output: frozen
`OpenbNodes` / `OpenbPods` of numpy columns, in file order, with quantities in the
trace's units (CPU in millicores, memory in MiB, GPU as `num_gpu` devices of
`gpu_milli` each). Nothing here schedules anything.

Trace citation (as the upstream README asks): Qizhen Weng, Lingyun Yang, Yinghao Yu, Wei
Wang, Xiaochuan Tang, Guodong Yang, Liping Zhang. "Beware of Fragmentation: Scheduling
GPU-Sharing Workloads with Fragmentation Gradient Descent". USENIX ATC '23.

What it does not promise: that a pod's `gpu_spec` names a model present in the node list
(a pod nobody can host simply fails), or times for the `multigpu*` variants, whose files
have only five columns — their `creation_time`/`deletion_time` are NaN.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "TRACE_ENV",
    "TRACE_SOURCE",
    "TraceNotFound",
    "check_trace",
    "DEFAULT_TRACE",
    "POD_LISTS",
    "GPU_MODELS",
    "OpenbNodes",
    "OpenbPods",
    "trace_dir",
    "load_nodes",
    "load_pods",
    "pod_list_path",
]

TRACE_ENV = "BATCHPLACE_OPENB_DIR"
TRACE_SOURCE = (
    "the openb trace, cluster-trace-gpu-v2023/csv in Alibaba's clusterdata repository (github.com/alibaba/clusterdata)"
)
NODE_LIST = "openb_node_list_gpu_node.csv"
DEFAULT_TRACE = "default"
POD_LISTS: tuple[str, ...] = (
    "default",
    "cpu0", "cpu037", "cpu050", "cpu072", "cpu100", "cpu200", "cpu235", "cpu250", "cpu300",
    "gpushare20", "gpushare40", "gpushare60", "gpushare80", "gpushare100",
    "gpuspec05", "gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33",
    "multigpu20", "multigpu30", "multigpu40", "multigpu50",
)  # fmt: skip
"""The 24 pod lists: `default` and its 23 variants (`openb_pod_list_<name>.csv`)."""

GPU_MODELS: tuple[str, ...] = ("A10", "G2", "G3", "P100", "T4", "V100M16", "V100M32")
"""GPU models in the node list, in a fixed order: `OpenbNodes.model` indexes this tuple."""

MIB = 1024 * 1024


@dataclass(frozen=True, eq=False)
class OpenbNodes:
    """The node list as columns; `model` indexes `GPU_MODELS` (−1: a CPU-only node)."""

    names: tuple[str, ...]
    cpu_milli: np.ndarray  # [N] int64
    memory_mib: np.ndarray  # [N] int64
    gpus: np.ndarray  # [N] int64 devices
    model: np.ndarray  # [N] int64

    @property
    def count(self) -> int:
        return len(self.names)

    @property
    def gpu_milli_total(self) -> int:
        """GPU capacity in milli-GPU: 6,212 GPUs → 6,212,000 for the GPU node list."""
        return int(self.gpus.sum()) * 1000


@dataclass(frozen=True, eq=False)
class OpenbPods:
    """A pod list as columns. `gpu_spec` holds the allowed models as a bitmask over
    `GPU_MODELS` (0: any model). Times are seconds from the trace start, NaN if absent."""

    names: tuple[str, ...]
    cpu_milli: np.ndarray  # [P] int64
    memory_mib: np.ndarray  # [P] int64
    num_gpu: np.ndarray  # [P] int64 devices, all on one node
    gpu_milli: np.ndarray  # [P] int64 per device: 1000 whole, 1-999 a share of one device, 0 none
    gpu_spec: np.ndarray  # [P] int64 bitmask over GPU_MODELS, 0 = any
    gpu_spec_text: tuple[str, ...]  # the raw `gpu_spec` column ("" = any), for tie-breaks that sort by it
    creation_time: np.ndarray  # [P] float64
    deletion_time: np.ndarray  # [P] float64

    @property
    def count(self) -> int:
        return len(self.names)

    @property
    def gpu_milli_requested(self) -> np.ndarray:
        """`[P]` total milli-GPU each pod asks for: 2 × 1000 → 2000, 1 × 460 → 460."""
        return self.num_gpu * self.gpu_milli

    def take(self, index: np.ndarray) -> "OpenbPods":
        """The pods at `index` (repeats allowed), in that order."""
        return OpenbPods(
            names=tuple(self.names[i] for i in index.tolist()),
            cpu_milli=self.cpu_milli[index],
            memory_mib=self.memory_mib[index],
            num_gpu=self.num_gpu[index],
            gpu_milli=self.gpu_milli[index],
            gpu_spec=self.gpu_spec[index],
            gpu_spec_text=tuple(self.gpu_spec_text[i] for i in index.tolist()),
            creation_time=self.creation_time[index],
            deletion_time=self.deletion_time[index],
        )


class TraceNotFound(FileNotFoundError):
    """The trace's CSVs are not where `trace_dir` looked: the message says which file and
    where; the caller says how to point at them (a CLI option, the variable)."""


def check_trace(explicit: str | Path | None, pod_lists: Iterable[str]) -> Path:
    """The trace folder (as `trace_dir` finds it) once its node list and the `pod_lists`
    are there, so a sweep fails before it starts rather than in every worker process."""
    directory = trace_dir(explicit)
    for path in (directory / NODE_LIST, *(pod_list_path(name, directory) for name in pod_lists)):
        if not path.is_file():
            raise TraceNotFound(f"openb trace file {path.name} not found in {directory}")
    return directory


def trace_dir(explicit: str | Path | None = None) -> Path:
    """Where the openb CSVs are: `explicit`, else `$BATCHPLACE_OPENB_DIR`, else the first
    `shared/traces/alibaba-openb-2023` found beside the working directory or a parent of
    this file (the repo sits next to `shared/`)."""
    if explicit is not None:
        return Path(explicit)
    if os.environ.get(TRACE_ENV):
        return Path(os.environ[TRACE_ENV])
    starts = [Path.cwd(), Path(__file__).resolve().parent]
    for start in starts:
        for folder in (start, *start.parents):
            for candidate in (folder / "shared" / "traces" / "alibaba-openb-2023",
                              folder / "traces" / "alibaba-openb-2023"):  # fmt: skip
                if (candidate / NODE_LIST).is_file():
                    return candidate
    raise TraceNotFound(f"openb trace not found (no folder holding {NODE_LIST} given, and ${TRACE_ENV} is not set)")


def pod_list_path(name: str, directory: str | Path | None = None) -> Path:
    """`default` → `<trace dir>/openb_pod_list_default.csv`; a path to a CSV is returned as is."""
    if name.endswith(".csv"):
        return Path(name)
    if name not in POD_LISTS:
        raise ValueError(f"unknown openb pod list {name!r}; choose one of {', '.join(POD_LISTS)}")
    return trace_dir(directory) / f"openb_pod_list_{name}.csv"


def _spec_mask(spec: str) -> int:
    """`"V100M16|V100M32"` → the bits of both models; `""` → 0 (any model). An unknown
    model name sets no bit, so a spec of only unknown models admits no node."""
    names = [part for part in spec.split("|") if part]
    if not names:
        return 0
    mask = 0
    for name in names:
        if name in GPU_MODELS:
            mask |= 1 << GPU_MODELS.index(name)
    return mask or (1 << len(GPU_MODELS))  # a bit no node has


def load_nodes(directory: str | Path | None = None, *, file: str = NODE_LIST) -> OpenbNodes:
    """The node list (GPU nodes by default, as the FGD artifact simulates)."""
    with open(trace_dir(directory) / file, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return OpenbNodes(
        names=tuple(row["sn"] for row in rows),
        cpu_milli=np.array([int(row["cpu_milli"]) for row in rows], dtype=np.int64),
        memory_mib=np.array([int(row["memory_mib"]) for row in rows], dtype=np.int64),
        gpus=np.array([int(row["gpu"]) for row in rows], dtype=np.int64),
        model=np.array([_model_index(row["model"], file, line) for line, row in enumerate(rows, start=2)], dtype=np.int64),
    )


def _model_index(model: str, file: str, line: int) -> int:
    """The index of a node's GPU model in `GPU_MODELS` (-1: none), or an error naming the row."""
    if not model:
        return -1
    if model not in GPU_MODELS:
        raise ValueError(f"{file} line {line}: unknown GPU model {model!r}; expected one of {', '.join(GPU_MODELS)}")
    return GPU_MODELS.index(model)


def load_pods(name: str = DEFAULT_TRACE, directory: str | Path | None = None) -> OpenbPods:
    """A pod list by variant name (`default`, `gpushare40`, …) or CSV path, in file order."""
    with open(pod_list_path(name, directory), newline="") as handle:
        rows = list(csv.DictReader(handle))

    def times(column: str) -> np.ndarray:
        return np.array([float(row[column]) if row.get(column) else np.nan for row in rows], dtype=np.float64)

    return OpenbPods(
        names=tuple(row["name"] for row in rows),
        cpu_milli=np.array([int(row["cpu_milli"]) for row in rows], dtype=np.int64),
        memory_mib=np.array([int(row["memory_mib"]) for row in rows], dtype=np.int64),
        num_gpu=np.array([int(row["num_gpu"]) for row in rows], dtype=np.int64),
        gpu_milli=np.array([int(row["gpu_milli"]) for row in rows], dtype=np.int64),
        gpu_spec=np.array([_spec_mask(row.get("gpu_spec") or "") for row in rows], dtype=np.int64),
        gpu_spec_text=tuple(row.get("gpu_spec") or "" for row in rows),
        creation_time=times("creation_time"),
        deletion_time=times("deletion_time"),
    )
