"""The Snapshot: the one validated, frozen input every engine sees.

Input comes from a loader (`models.loaders`: Kubernetes YAML, JSON, later live objects);
output goes to `solver`. Everything is already defaulted and resolved here — priorities
are numbers, HyperNode selectors are member lists, vcjobs are PodGroups with pods — so the
solver never parses, defaults or guesses (DESIGN.md, "The snapshot").

Quantities are integers in base units: `cpu` in millicores, `memory` in bytes, `gpu` in
milli-GPUs (1000 = one whole device), `pods` a count, any other resource in its own
integer unit. Each is
at most its ceiling (`models.quantity`: a node, pod, task or NUMA cell `resource_ceiling`,
a queue's quotas and a PodGroup's minResources `quota_ceiling`), so every sum the solver
forms fits int64 and CP-SAT; priorities and weights are int32 as in Kubernetes and
Volcano, and times lie in Kubernetes' years 1–9999, for the same reason.

`pods` is what the kubelet counts: a node runs at most `allocatable["pods"]` pods, and every
pod — running or pending, whatever it asks — takes one (`POD_SLOT`). So it is a node
resource no request names: a pod's or task's `requests` may not list it, and a node that
does not state it allows the kubelet's default, `KUBELET_DEFAULT_MAX_PODS` = 110. Every node
the kubelet reports states it; the default is for hand-written nodes (the JSON form, test
builders), and it is the kubelet's rather than "no limit" so that such a node means what the
same node in a cluster would. Queues do not count pods (Volcano's queues hold cpu, memory
and scalar resources; the pod count is a node predicate there too).

Pods are the unit of placement. A pending pod belongs to a PodGroup and one of its tasks,
and takes its requests, node selector, node affinity, tolerations and NUMA policy from
that task, so the replicas of a task are interchangeable (what the CP-SAT engine
aggregates on). A running pod holds a node, and GPU indices when it uses GPUs; running
pods of other schedulers have no PodGroup and only take capacity. A pending pod may carry
scheduling gates (`Pod.scheduling_gates`, per pod: Kueue and operators lift them one pod at
a time); a gated pod is pending and out of every engine's reach until its gates are gone.

A node may carry its measured load (`NodeUsage`: percents averaged over a window, and when
they were taken), and the snapshot says how load counts (`UsagePolicy`: thresholds past
which a node takes no new pod, the usage tier's weights, when a reading is too old to
judge). Both are data like any other: the controller fills them from its metrics source, a
file from the `batchplace.io/usage` annotation (`models.loaders.node_usage`).

Online/offline colocation (`solver.rules.colocation`): a pod or task may be `offline`
(Volcano's `volcano.sh/qos-level: BE`, or a PriorityClass flagged offline), a node is a
colocation node by Volcano's labels (`Node.colocation`), and the snapshot says how much of
a colocation node's allocatable is kept back from offline pods (`ColocationPolicy`). A
node's usage may say how much of it online pods use apart from offline ones
(`NodeUsage.online_cpu_percent`, `online_memory_percent`), and how much of each GPU device
online pods use (`NodeUsage.online_gpu_device_percent`), which lets offline pods borrow the
unused part of a device online pods share (`Gpu.lent_milli`, set from rule colocation's
columns by `solver.rules.counted`).

What it does not promise: that the cluster it describes is schedulable, or that a
PodGroup's queue exists (a PodGroup naming an unknown queue is valid input; it stays
pending with that reason, as Volcano leaves it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain, repeat
from typing import Annotated, Any, Literal, NewType, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from models.cached import cached_property
from models.dra import DraObjects, PodResourceClaim
from models.duration import MAX_DURATION_S
from models.node_affinity import NodeSelectorTerm, PreferredSchedulingTerm
from models.pod_affinity import InterPodConstraints, PodAffinityTerm
from models.quantity import GPU_MILLI_CEILING, ceiling_problem, resource_ceiling

__all__ = [
    "NodeName",
    "QueueName",
    "PodGroupKey",
    "PodKey",
    "ResourceList",
    "QuotaList",
    "INT32_MAX",
    "EARLIEST_TIME_S",
    "LATEST_TIME_S",
    "CPU",
    "MEMORY",
    "GPU",
    "LENT_GPU",
    "PODS",
    "POD_SLOT",
    "KUBELET_DEFAULT_MAX_PODS",
    "GPU_MILLI_PER_DEVICE",
    "sum_resources",
    "ROOT_QUEUE",
    "DEFAULT_QUEUE",
    "Taint",
    "Toleration",
    "Gpu",
    "NumaCell",
    "HostPort",
    "WILDCARD_HOST_IP",
    "NodeUsage",
    "UsagePolicy",
    "ColocationPolicy",
    "COLOCATION_LABEL",
    "OVERSUBSCRIPTION_LABEL",
    "ReservationPolicy",
    "USAGE_PERCENT_CEILING",
    "Node",
    "HyperNode",
    "Queue",
    "NetworkTopology",
    "Task",
    "PodGroup",
    "Pod",
    "PriorityClass",
    "Snapshot",
    "SnapshotLimits",
    "pod_group_key",
    "gpu_devices",
    "is_fractional_gpu",
]

NodeName = NewType("NodeName", str)
QueueName = NewType("QueueName", str)
PodGroupKey = NewType("PodGroupKey", str)  # "namespace/name"
PodKey = NewType("PodKey", str)  # "namespace/name"

CPU = "cpu"
MEMORY = "memory"
GPU = "gpu"
PODS = "pods"
LENT_GPU = "batchplace.io/lent-gpu"
"""Where an offline pod's fractional GPU request counts on its node when it holds a lent
device (`Gpu.lent_milli`): apart from `gpu`, which online pods count against."""
POD_SLOT = 1
"""What every pod takes of its node's `pods`."""
KUBELET_DEFAULT_MAX_PODS = 110
"""The kubelet's `--max-pods` default: what a node that does not state `pods` allows."""
GPU_MILLI_PER_DEVICE = 1000
MAX_GPUS_PER_NODE = GPU_MILLI_CEILING // GPU_MILLI_PER_DEVICE
ROOT_QUEUE = QueueName("root")
DEFAULT_QUEUE = QueueName("default")

COLOCATION_LABEL = "volcano.sh/colocation"
"""Volcano's node label: colocation enabled on the node ("true"/"false")."""
OVERSUBSCRIPTION_LABEL = "volcano.sh/oversubscription"
"""Volcano's node label: the node offers oversubscribed resources to offline pods."""
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
"""What Go's `strconv.ParseBool` reads as true / false (Volcano parses its labels with it)."""

INT32_MAX = 2**31 - 1
EARLIEST_TIME_S = -62_135_596_800.0
"""0001-01-01T00:00:00Z, the earliest time Kubernetes writes, in unix seconds."""
LATEST_TIME_S = 253_402_300_799.0
"""9999-12-31T23:59:59Z, the latest."""

NonNegativeInt = Annotated[int, Field(ge=0)]
Int32 = Annotated[int, Field(ge=-INT32_MAX - 1, le=INT32_MAX)]
Index = Annotated[int, Field(ge=0, le=INT32_MAX)]
TimeS = Annotated[float, Field(ge=EARLIEST_TIME_S, le=LATEST_TIME_S)]
GateName = Annotated[str, Field(min_length=1)]
"""A scheduling gate's name, `spec.schedulingGates[].name` (`example.com/quota-check`)."""


def _within_ceilings(quota: bool):  # noqa: ANN202 - a pydantic wrap validator
    """Each amount at most its resource's ceiling; an error names the resource in its loc
    (`pods[3].requests.memory`), as pydantic names any other field."""

    def validate(value: object, handler: ValidatorFunctionWrapHandler) -> dict[str, int]:
        resources: dict[str, int] = handler(value)
        errors = [
            InitErrorDetails(type=PydanticCustomError("quantity_ceiling", problem), loc=(name,), input=amount)
            for name, amount in resources.items()
            if (problem := ceiling_problem(name, amount, quota=quota)) is not None
        ]
        if errors:
            raise ValidationError.from_exception_data("ResourceList", errors)
        return resources

    return WrapValidator(validate)


ResourceList = Annotated[dict[str, NonNegativeInt], _within_ceilings(quota=False)]
"""Resource name → amount in base units, each within `resource_ceiling`; a missing name means zero."""
QuotaList = Annotated[dict[str, NonNegativeInt], _within_ceilings(quota=True)]
"""A queue's or PodGroup's resource list, each amount within `quota_ceiling`; a missing name
means zero (or, in a capability, no cap)."""

NumaPolicy = Literal["none", "best-effort", "restricted", "single-numa-node"]

WILDCARD_HOST_IP = "0.0.0.0"
"""A host port bound on every address of the node (`hostIP` unset, as the kubelet binds it)."""


def pod_group_key(namespace: str, name: str) -> PodGroupKey:
    return PodGroupKey(f"{namespace}/{name}")


def gpu_devices(gpu_milli: int) -> int:
    """Whole devices a request takes: `8000` → 8; a fraction (`500`) takes part of one, → 0."""
    return gpu_milli // GPU_MILLI_PER_DEVICE if gpu_milli % GPU_MILLI_PER_DEVICE == 0 else 0


def is_fractional_gpu(gpu_milli: int) -> bool:
    """A request of 1–999 milli-GPU shares one device with others."""
    return 0 < gpu_milli < GPU_MILLI_PER_DEVICE


def sum_resources(amounts: Sequence[dict[str, int]]) -> dict[str, int]:
    """The sum of `amounts` per resource, names in order of first appearance: one pass per
    resource in C, not a Python addition per amount and resource — what adding up 100,000
    pods' requests each cycle needs. Example: [{"cpu": 1000}, {"cpu": 500, "gpu": 1000}]
    → {"cpu": 1500, "gpu": 1000}."""
    names = dict.fromkeys(chain.from_iterable(amounts))
    count = len(amounts)
    return {name: sum(map(dict.get, amounts, repeat(name, count), repeat(0, count))) for name in names}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", ignored_types=(cached_property,))

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with `update`, without the `cached_property` values computed on the
        original. Why: pydantic copies the instance's `__dict__`, where those values live, so
        a node copied with new `gpus` would keep the old `gpu_by_index`."""
        copied = super().model_copy(update=update, deep=deep)
        if update:
            for name in _cached_names(type(self)):
                copied.__dict__.pop(name, None)
        return copied


def _cached_names(cls: type) -> tuple[str, ...]:
    return tuple(name for klass in cls.__mro__ for name, value in vars(klass).items() if isinstance(value, cached_property))


def _check_requests(requests: Mapping[str, int]) -> None:
    """No `pods` (every pod takes one, module docstring); GPUs whole devices or a fraction of one."""
    if PODS in requests:
        raise ValueError(f"requests may not name {PODS!r}: every pod takes one of its node's {PODS}, whatever it asks")
    gpu_milli = requests.get(GPU, 0)
    if gpu_milli > GPU_MILLI_PER_DEVICE and gpu_milli % GPU_MILLI_PER_DEVICE:
        raise ValueError(
            f"gpu request of {gpu_milli} milli-GPU is neither whole devices (a multiple of 1000) "
            "nor a fraction of one device (1-999)"
        )


class Taint(_Frozen):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Toleration(_Frozen):
    key: str | None = Field(None, description="None with operator Exists tolerates every taint")
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None


class Gpu(_Frozen):
    index: Index
    numa_cell: Index = 0
    used_milli: int = Field(
        0, ge=0, le=GPU_MILLI_PER_DEVICE, description="taken by work the snapshot lists no pod for"
    )
    lent_milli: int | None = Field(
        None,
        ge=0,
        le=GPU_MILLI_PER_DEVICE,
        description="milli-GPU offline pods with fractional requests may hold on this device, apart from what "
        "online pods requested: 1000 − online usage − margin (`solver.rules.counted` sets it on a colocation "
        "node's shared devices, from rule colocation's columns); None: the device is not lent, offline pods count as any pod",
    )


class HostPort(_Frozen):
    """One `containers[].ports[]` entry with a `hostPort`: the node's port the kubelet binds for
    the pod, so no other pod on that node may bind it (rule `nodeports`). `host_ip` "0.0.0.0"
    (the default, `hostIP` unset) binds every address of the node."""

    port: int = Field(ge=1, le=65535, description="`hostPort`")
    protocol: Literal["TCP", "UDP", "SCTP"] = "TCP"
    host_ip: str = Field(WILDCARD_HOST_IP, min_length=1, description="`hostIP`; 0.0.0.0: every address")


class NumaCell(_Frozen):
    id: Index
    cpu_milli: int | None = Field(None, ge=0, le=resource_ceiling(CPU), description="None: not known, not enforced")
    memory_bytes: int | None = Field(None, ge=0, le=resource_ceiling(MEMORY))


USAGE_PERCENT_CEILING = 1000.0
"""Usage is a percent of the node's allocatable; a node's system daemons, outside its
allocatable, can take it past 100, but not tenfold: a larger number is a unit mistake."""
UsagePercent = Annotated[float, Field(ge=0, le=USAGE_PERCENT_CEILING, allow_inf_nan=False)]


class NodeUsage(_Frozen):
    """A node's measured load, averaged over `window_s` seconds ending at `observed_at_s`:
    what `solver.rules.usage` holds against thresholds and the objective's usage tier
    prefers low. None for a resource nobody measures (GPU utilisation without an exporter).

    Example: `{cpu_percent: 91.5, memory_percent: 40, observed_at_s: 1714564800, window_s: 300}`
    — the node's CPUs were 91.5 % busy on average over the five minutes up to that time."""

    cpu_percent: UsagePercent | None = Field(None, description="CPU in use, percent of allocatable cpu")
    memory_percent: UsagePercent | None = Field(None, description="memory in use, percent of allocatable memory")
    gpu_percent: UsagePercent | None = Field(None, description="mean utilisation of the node's GPUs, percent")
    online_cpu_percent: UsagePercent | None = Field(
        None,
        description="CPU in use by everything but offline pods (online pods, system daemons), percent of allocatable "
        "cpu; None: not measured apart (then `cpu_percent` stands for it on a node no offline pod runs on)",
    )
    online_memory_percent: UsagePercent | None = Field(
        None, description="memory in use by everything but offline pods, percent of allocatable memory; None as above"
    )
    online_gpu_device_percent: dict[Index, UsagePercent] | None = Field(
        None,
        description="per GPU device index: percent of that device used by online work (e.g. DCGM's GPU_UTIL of "
        "the online pods' devices), `{0: 35, 1: 80}`; a device left out is not measured; None: no device measured",
    )
    observed_at_s: TimeS = Field(description="unix seconds: the end of the averaging window (the newest sample)")
    window_s: float = Field(0.0, ge=0, le=LATEST_TIME_S, description="seconds the readings are averaged over")


class UsagePolicy(_Frozen):
    """How node usage counts in a cycle (`solver.rules.usage`, the objective's usage tier).

    Defaults are Volcano's `usage` plugin's: CPU and memory above 80 % take no new pods, and
    readings older than 5 minutes are not judged. A threshold of None judges nothing for
    that resource. Weights say how much each resource counts in the usage tier (0: not at all).
    """

    cpu_threshold_percent: UsagePercent | None = 80.0
    memory_threshold_percent: UsagePercent | None = 80.0
    gpu_threshold_percent: UsagePercent | None = Field(
        None, description="None by default: a training job keeps its GPUs near 100 %, which is no overload"
    )
    cpu_weight: int = Field(1, ge=0, le=100)
    memory_weight: int = Field(1, ge=0, le=100)
    gpu_weight: int = Field(1, ge=0, le=100)
    max_age_s: float = Field(300.0, gt=0, le=LATEST_TIME_S, description="older readings are stale: never judged")
    judged_at_s: TimeS | None = Field(
        None,
        description="unix seconds the readings' age is counted at (the controller's clock); None: the newest "
        "reading of the snapshot, so a file or a posted snapshot judges its nodes against each other",
    )


class ColocationPolicy(_Frozen):
    """How much of a colocation node offline pods may use (`solver.rules.colocation`).

    On a colocation node with fresh usage, offline pods share `allocatable − online usage −
    margin` of cpu and of memory, the margin being a percent of allocatable (Volcano's agent
    offers a ratio of `allocatable − usage` instead; a margin keeps a fixed headroom however
    low the online load). `enabled` False ignores every offline flag and colocation label."""

    enabled: bool = True
    cpu_margin_percent: float = Field(10.0, ge=0, le=100, allow_inf_nan=False)
    memory_margin_percent: float = Field(10.0, ge=0, le=100, allow_inf_nan=False)
    gpu_margin_percent: float = Field(
        10.0, ge=0, le=100, allow_inf_nan=False, description="kept back on each lent GPU device, percent of one device"
    )


def _go_bool(text: str | None) -> bool | None:
    return True if text in _GO_TRUE else False if text in _GO_FALSE else None


WaitingS = Annotated[float, Field(gt=0, le=MAX_DURATION_S, allow_inf_nan=False)]
DeadlineS = Annotated[float, Field(gt=0, le=MAX_DURATION_S, allow_inf_nan=False)]
"""A pod's `spec.activeDeadlineSeconds`: the kubelet ends the pod that long after it started,
so its run is bounded by it (rule `reservation` lets such a pod backfill a held node)."""


class ReservationPolicy(_Frozen):
    """When a PodGroup waits too long (`solver.reservation`, rule `reservation`).

    A PodGroup pending longer than its waiting time gets nodes held for it. Its waiting
    time is its own (`PodGroup.sla_waiting_s`, the `sla-waiting-time` annotation Volcano's
    `sla` plugin reads), else its queue's (`Queue.sla_waiting_s`), else `sla_waiting_s`
    here (the controller's default, as the `sla` plugin's argument), else none: it never
    gets a reservation. Waiting is counted from `creation_time` to `judged_at_s`.

    Example: `{sla_waiting_s: 1800, judged_at_s: 1714564800}` — every PodGroup without a
    waiting time of its own gets one of 30 minutes, counted at that instant."""

    sla_waiting_s: WaitingS | None = Field(None, description="default waiting time (s); None: no default")
    judged_at_s: TimeS | None = Field(
        None,
        description="unix seconds waiting is counted at (the controller's clock); None: the newest PodGroup "
        "creation time of the snapshot, so a file or a posted snapshot without a clock still decides the same "
        "way every time",
    )


class Node(_Frozen):
    name: NodeName
    allocatable: ResourceList
    labels: dict[str, str] = Field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    gpu_model: str | None = None
    gpus: tuple[Gpu, ...] = Field(
        (), description="one entry per device; filled as indices 0..n-1 on cell 0 when omitted"
    )
    numa_cells: tuple[NumaCell, ...] = ()
    usage: NodeUsage | None = Field(None, description="measured load; None: not measured (never blocks the node)")

    @model_validator(mode="before")
    @classmethod
    def _default_pod_count(cls, data: object) -> object:
        """A node that does not state `pods` allows the kubelet's default (module docstring)."""
        if isinstance(data, dict) and isinstance(data.get("allocatable"), dict) and PODS not in data["allocatable"]:
            data = {**data, "allocatable": {**data["allocatable"], PODS: KUBELET_DEFAULT_MAX_PODS}}
        return data

    @model_validator(mode="before")
    @classmethod
    def _default_gpus(cls, data: object) -> object:
        """A node that declares `gpu` allocatable but no devices gets devices 0..n-1."""
        if isinstance(data, dict) and not data.get("gpus") and isinstance(data.get("allocatable"), dict):
            gpu_milli = data["allocatable"].get(GPU, 0)
            if isinstance(gpu_milli, int) and 0 < gpu_milli <= MAX_GPUS_PER_NODE * GPU_MILLI_PER_DEVICE:
                data = {**data, "gpus": [{"index": i} for i in range(gpu_milli // GPU_MILLI_PER_DEVICE)]}
        return data

    @model_validator(mode="after")
    def _gpus_match_allocatable(self) -> "Node":
        gpu_milli = self.allocatable.get(GPU, 0)
        if gpu_milli % GPU_MILLI_PER_DEVICE:
            raise ValueError(f"allocatable gpu must be whole devices, got {gpu_milli} milli-GPU")
        if len(self.gpus) != gpu_milli // GPU_MILLI_PER_DEVICE:
            raise ValueError(
                f"node lists {len(self.gpus)} GPU devices but allocatable gpu is "
                f"{gpu_milli // GPU_MILLI_PER_DEVICE}"
            )
        indices = [gpu.index for gpu in self.gpus]
        if len(set(indices)) != len(indices):
            raise ValueError(f"GPU indices repeat: {sorted(indices)}")
        measured = (self.usage.online_gpu_device_percent or {}) if self.usage is not None else {}
        unknown = sorted(set(measured) - set(indices))
        if unknown:
            raise ValueError(
                f"usage.online_gpu_device_percent names GPU {unknown[0]}, but the node has devices {sorted(indices)}"
            )
        return self

    @model_validator(mode="wrap")
    @classmethod
    def _validated_once(cls, data: object, handler: ValidatorFunctionWrapHandler) -> "Node":
        """A `Node` given to a `Snapshot` as an instance was validated when it was made:
        pydantic does not validate its fields again, and this (defined last, so it runs
        first) keeps the checks above from running again on every snapshot it joins — a
        snapshot built from the nodes of the last one that did not change (the trace
        replay, what-if variants) pays for its new nodes only."""
        return data if isinstance(data, Node) else handler(data)

    @cached_property
    def gpu_by_index(self) -> dict[int, Gpu]:
        return {gpu.index: gpu for gpu in self.gpus}

    @cached_property
    def lends_gpus(self) -> bool:
        """Some device of this node is lent to offline pods (`Gpu.lent_milli`); kept on the
        node because every problem build asks it of every node."""
        return any(gpu.lent_milli is not None for gpu in self.gpus)

    @property
    def colocation(self) -> bool:
        """A colocation node, where offline pods use what online pods requested but do not use:
        label `volcano.sh/oversubscription` true, or `volcano.sh/colocation` true with
        `volcano.sh/oversubscription` not set to false (values as Go's `strconv.ParseBool`)."""
        oversubscription = _go_bool(self.labels.get(OVERSUBSCRIPTION_LABEL))
        if oversubscription is not None:
            return oversubscription
        return _go_bool(self.labels.get(COLOCATION_LABEL)) is True


class HyperNode(_Frozen):
    """A network domain (Volcano `topology.volcano.sh`): tier 1 = closest (leaf switch)."""

    name: str
    tier: int = Field(ge=0)
    node_members: tuple[NodeName, ...] = ()
    hypernode_members: tuple[str, ...] = ()


class Queue(_Frozen):
    name: QueueName
    parent: QueueName | None = Field(None, description="None: a child of the root queue")
    weight: int = Field(1, ge=1, le=INT32_MAX)
    capability: QuotaList | None = Field(None, description="hard cap; a missing resource is not capped")
    deserved: QuotaList | None = Field(None, description="fixed deserved share instead of water-filling")
    guarantee: QuotaList = Field(default_factory=dict, description="reserved minimum, never reclaimed")
    reclaimable: bool = True
    priority: Int32 = 0
    state: Literal["open", "closed"] = "open"
    sla_waiting_s: WaitingS | None = Field(
        None, description="waiting time of its PodGroups that state none (`ReservationPolicy`); None: the default"
    )


class NetworkTopology(_Frozen):
    mode: Literal["hard", "soft"] = "hard"
    highest_tier_allowed: int | None = Field(
        None, ge=1, description="hard mode is enforced only when a tier limit is set (Volcano)"
    )


class SubGroup(_Frozen):
    """A gang inside a PodGroup: a data-parallel shard, one serving replica (leader and
    workers), a prefill or decode role. Its pods (`Pod.sub_group`) start together or not at
    all (`min_member` of them, running pods counted) and, under a hard `network_topology`,
    sit inside one domain of its tier; the PodGroup's own `min_member` and topology hold over
    all its pods as before (solver.rules.gang, solver.rules.topology).

    Why its own object rather than a PodGroup per shard: the job starts only when enough of
    its sub-groups start (`PodGroup.min_sub_groups`), and the shards share the job's domain
    (one spine), so choosing every shard's domain is one decision (Volcano 1.14's
    `subGroupPolicy`, KAI's SubGroups, the Kubernetes Workload API's pod group replicas)."""

    name: str = Field(min_length=1, description="unique in its PodGroup, e.g. `decode-1` or `shard-0`")
    policy: str = Field(
        "",
        description="the policy or role that made it (Volcano's subGroupPolicy name, a LeaderWorkerSet, a "
        "JobSet replicated Job); `PodGroup.min_sub_groups` counts started sub-groups per policy",
    )
    min_member: NonNegativeInt = Field(0, description="its pods that must run for it to start (0: any one)")
    network_topology: NetworkTopology | None = None


class Task(_Frozen):
    """A pod template inside a PodGroup; all its pods ask for the same."""

    name: str
    min_available: NonNegativeInt = 0
    requests: ResourceList = Field(default_factory=dict)
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    required_node_affinity: tuple[NodeSelectorTerm, ...] = Field(
        (),
        description="required node affinity's nodeSelectorTerms, ORed (models.node_affinity); empty: no "
        "requirement (Kubernetes refuses an empty list, so no requirement is lost)",
    )
    preferred_node_affinity: tuple[PreferredSchedulingTerm, ...] = Field(
        (), description="preferred node affinity's weighted terms, a soft preference (solver.objective, locality)"
    )
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="labels every pod of the task carries: what other pods' selectors see (solver.rules.pod_affinity)",
    )
    inter_pod: InterPodConstraints = Field(
        default_factory=InterPodConstraints,
        description="pod (anti-)affinity and topology spread (models.pod_affinity); hard parts are rules "
        "pod_affinity and topology_spread, preferred parts the objective's locality tier",
    )
    depends_on: tuple[str, ...] = ()
    numa_policy: NumaPolicy = "none"
    offline: bool = Field(
        False,
        description="offline (best-effort) pods: Volcano's volcano.sh/qos-level BE, or an offline PriorityClass; "
        "on colocation nodes they use what online pods requested but do not use (solver.rules.colocation)",
    )
    host_ports: tuple[HostPort, ...] = Field(
        (), description="the host ports each of its pods binds on its node (solver.rules.nodeports)"
    )
    active_deadline_s: DeadlineS | None = Field(
        None,
        description="`activeDeadlineSeconds` of its pods: each runs at most this long once started (the kubelet "
        "ends it), so it may backfill a node held for a PodGroup that cannot start there sooner "
        "(solver.rules.reservation); None: no bound",
    )

    @field_validator("requests")
    @classmethod
    def _requests_shape(cls, requests: ResourceList) -> ResourceList:
        _check_requests(requests)
        return requests


class PodGroup(_Frozen):
    namespace: str
    name: str
    queue: QueueName = DEFAULT_QUEUE
    priority: Int32 = 0
    min_member: NonNegativeInt = 0
    min_resources: QuotaList | None = None
    creation_time: TimeS = Field(0.0, description="unix seconds; older PodGroups go first among equals")
    preemptable: bool = True
    may_preempt: bool = Field(
        True,
        description="False when a pending pod's preemptionPolicy is Never (its own, else its PriorityClass's): "
        "the PodGroup waits for room and never evicts to make it (preempt or reclaim), as Kubernetes and Volcano",
    )
    tasks: tuple[Task, ...] = ()
    task_min_available_total: NonNegativeInt | None = Field(
        None,
        description="the sum of the PodGroup's minTaskMember as declared (Volcano's TaskMinAvailableTotal) when "
        "its tasks here carry less of it: a task split by pod shape, or named but without pods; None: the sum "
        "of the tasks' min_available",
    )
    network_topology: NetworkTopology | None = None
    sub_groups: tuple[SubGroup, ...] = Field(
        (), description="gangs inside the gang, each with its minimum and topology (`SubGroup`); empty: none"
    )
    min_sub_groups: dict[str, NonNegativeInt] = Field(
        default_factory=dict,
        description="policy → how many of its sub-groups must start for the PodGroup to start (Volcano's "
        "`minSubGroups`); a policy not named: none",
    )
    sla_waiting_s: WaitingS | None = Field(
        None,
        description="`sla-waiting-time`: seconds it may wait pending before nodes are held for it "
        "(`ReservationPolicy`); None: its queue's, else the snapshot's default",
    )

    @cached_property
    def key(self) -> PodGroupKey:
        """Made once per object: every pass over the cycle's PodGroups asks for it."""
        return pod_group_key(self.namespace, self.name)

    @cached_property
    def task_by_name(self) -> dict[str, Task]:
        return {task.name: task for task in self.tasks}

    @cached_property
    def sub_group_by_name(self) -> dict[str, SubGroup]:
        return {sub.name: sub for sub in self.sub_groups}

    @model_validator(mode="after")
    def _tasks_are_consistent(self) -> "PodGroup":
        names = [task.name for task in self.tasks]
        if len(set(names)) != len(names):
            raise ValueError(f"task names repeat: {sorted(names)}")
        for index, task in enumerate(self.tasks):
            for dependency in task.depends_on:
                if dependency not in names:
                    raise ValueError(f"tasks[{index}] ({task.name}) depends on unknown task {dependency!r}")
        _reject_dependency_cycle(self.tasks)
        sub_names = [sub.name for sub in self.sub_groups]
        if len(set(sub_names)) != len(sub_names):
            raise ValueError(f"sub-group names repeat: {sorted(sub_names)}")
        policies = {sub.policy for sub in self.sub_groups}
        for policy in self.min_sub_groups:
            if policy not in policies:
                raise ValueError(f"min_sub_groups names policy {policy!r}, which no sub-group has")
        return self


def _reject_dependency_cycle(tasks: tuple[Task, ...]) -> None:
    depends_on = {task.name: task.depends_on for task in tasks}
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done

    def visit(name: str, trail: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            raise ValueError(f"task dependencies form a cycle: {' -> '.join([*trail, name])}")
        state[name] = 1
        for dependency in depends_on[name]:
            visit(dependency, [*trail, name])
        state[name] = 2

    for name in depends_on:
        visit(name, [])


class Pod(_Frozen):
    namespace: str
    name: str
    phase: Literal["pending", "running"]
    pod_group: PodGroupKey | None = Field(None, description="None only for running pods of other schedulers")
    task: str | None = None
    sub_group: str | None = Field(None, description="the `SubGroup` of its PodGroup it belongs to; None: none")
    requests: ResourceList = Field(default_factory=dict)
    node: NodeName | None = Field(None, description="set exactly when running")
    gpu_indices: tuple[Index, ...] = ()
    numa_cell: Index | None = Field(None, description="the cell a single-numa-node pod holds")
    priority: Int32 = 0
    preemptable: bool = True
    start_time: TimeS | None = None
    checkpoint_time: TimeS | None = Field(
        None,
        description="unix seconds of its last checkpoint (`batchplace.io/last-checkpoint`): an eviction loses "
        "only the GPU-time run since, not since its start (solver.objective, disruption)",
    )
    labels: dict[str, str] = Field(
        default_factory=dict, description="a running pod's labels; a pending pod is seen with its task's"
    )
    required_anti_affinity: tuple[PodAffinityTerm, ...] = Field(
        (), description="a running pod's required pod anti-affinity, which keeps pods it selects off its domain"
    )
    offline: bool = Field(False, description="an offline pod (`Task.offline`); a pending pod's is its task's")
    host_ports: tuple[HostPort, ...] = Field(
        (), description="the host ports it binds on its node (`Task.host_ports`); a pending pod's are its task's"
    )
    active_deadline_s: DeadlineS | None = Field(
        None,
        description="`activeDeadlineSeconds`: a running pod ends by `start_time` + this (the kubelet ends it); "
        "a pending pod's is its task's (`Task.active_deadline_s`); None: no bound",
    )
    scheduling_gates: tuple[GateName, ...] = Field(
        (),
        description="names of the pod's `spec.schedulingGates` (`example.com/quota-check`): while any remains the "
        "pod is not ready to be scheduled — no engine places it, the API server refuses to bind it, it counts as "
        "pending and its PodGroup's reason names the gates (solver.rules.gated); a running pod has none",
    )
    resource_claims: tuple[PodResourceClaim, ...] = Field(
        (), description="`spec.resourceClaims`: the DRA claims or claim templates it needs (models.dra)"
    )
    scheduled_reason: str | None = Field(
        None,
        description="a pending pod's `PodScheduled` condition reason as its object says it: `Unschedulable` when "
        "an added node could start it (what autoscalers act on), another word when policy holds it "
        "(`QueueQuotaExceeded`, …; the controller writes them); None when it has none. Shown, never decided on",
    )

    @cached_property
    def key(self) -> PodKey:
        """Made once per object: every pass of a cycle over its pods asks for it, several
        times a pod (docs/results.md, "Steady state at 10,000 nodes")."""
        return PodKey(f"{self.namespace}/{self.name}")

    @field_validator("requests")
    @classmethod
    def _requests_shape(cls, requests: ResourceList) -> ResourceList:
        _check_requests(requests)
        return requests

    @model_validator(mode="after")
    def _phase_matches_fields(self) -> "Pod":
        if self.phase == "running" and self.node is None:
            raise ValueError("a running pod needs a node")
        if self.phase == "running" and self.scheduling_gates:
            raise ValueError("a running pod has no scheduling gates (the API server binds no pod while a gate remains)")
        if len(set(self.scheduling_gates)) != len(self.scheduling_gates):
            raise ValueError(f"scheduling gate names repeat: {list(self.scheduling_gates)}")
        if self.sub_group is not None and self.pod_group is None:
            raise ValueError(f"sub_group {self.sub_group!r} needs a pod_group")
        if self.phase == "pending":
            if self.node is not None:
                raise ValueError("a pending pod has no node")
            if self.pod_group is None or self.task is None:
                raise ValueError("a pending pod needs its pod_group and task")
        return self


PreemptionPolicy = Literal["PreemptLowerPriority", "Never"]


class PriorityClass(_Frozen):
    name: str
    value: Int32
    global_default: bool = False
    preemption_policy: PreemptionPolicy = "PreemptLowerPriority"
    offline: bool = Field(
        False, description="pods of this class are offline (annotation volcano.sh/qos-level: BE on the PriorityClass)"
    )


class SnapshotLimits(_Frozen):
    """Sizes past which a snapshot is refused instead of solved slowly or exhausting memory."""

    max_nodes: int = 50_000
    max_pods: int = 500_000
    max_pod_groups: int = 100_000


class Snapshot(_Frozen):
    """Everything one scheduling cycle sees. Build with `Snapshot.model_validate(...)`."""

    nodes: tuple[Node, ...] = ()
    hypernodes: tuple[HyperNode, ...] = ()
    queues: tuple[Queue, ...] = ()
    pod_groups: tuple[PodGroup, ...] = ()
    pods: tuple[Pod, ...] = ()
    priority_classes: tuple[PriorityClass, ...] = ()
    usage_policy: UsagePolicy = Field(default_factory=UsagePolicy, description="how node usage counts")
    colocation_policy: ColocationPolicy = Field(
        default_factory=ColocationPolicy, description="how much of a colocation node offline pods may use"
    )
    reservation_policy: ReservationPolicy = Field(
        default_factory=ReservationPolicy, description="when a PodGroup that waits too long gets nodes held for it"
    )
    dra: DraObjects = Field(
        default_factory=DraObjects, description="DRA device classes, resource slices, claims and claim templates"
    )

    @model_validator(mode="before")
    @classmethod
    def _add_default_queue(cls, data: object) -> object:
        """Volcano's `default` queue exists even when nobody declared it (weight 1)."""
        if isinstance(data, dict) and isinstance(data.get("queues", ()), (list, tuple)):
            queues = list(data.get("queues") or ())
            names = {q.name if isinstance(q, Queue) else q.get("name") if isinstance(q, dict) else None for q in queues}
            if DEFAULT_QUEUE not in names:
                data = {**data, "queues": [*queues, {"name": DEFAULT_QUEUE}]}
        return data

    @model_validator(mode="after")
    def _within_limits(self) -> "Snapshot":
        limits = SnapshotLimits()
        for what, count, limit in (
            ("nodes", len(self.nodes), limits.max_nodes),
            ("pods", len(self.pods), limits.max_pods),
            ("pod_groups", len(self.pod_groups), limits.max_pod_groups),
        ):
            if count > limit:
                raise ValueError(f"snapshot too large: {count} {what}, at most {limit}")
        return self

    @model_validator(mode="after")
    def _names_are_unique(self) -> "Snapshot":
        for what, keys in (
            ("node", [n.name for n in self.nodes]),
            ("hypernode", [h.name for h in self.hypernodes]),
            ("queue", [q.name for q in self.queues]),
            ("pod group", [g.key for g in self.pod_groups]),
            ("pod", [p.key for p in self.pods]),
            ("priority class", [c.name for c in self.priority_classes]),
        ):
            if len(set(keys)) == len(keys):
                continue
            seen: set[str] = set()
            for key in keys:
                if key in seen:
                    raise ValueError(f"duplicate {what} {key!r}")
                seen.add(key)
        return self

    @model_validator(mode="after")
    def _queue_tree_is_a_tree(self) -> "Snapshot":
        parents = {q.name: q.parent for q in self.queues}
        for queue in self.queues:
            if queue.parent is not None and queue.parent not in parents and queue.parent != ROOT_QUEUE:
                raise ValueError(f"queue {queue.name!r} has unknown parent {queue.parent!r}")
            seen = {queue.name}
            parent = queue.parent
            while parent is not None and parent != ROOT_QUEUE:
                if parent in seen:
                    raise ValueError(f"queue parents form a cycle through {queue.name!r}")
                seen.add(parent)
                parent = parents.get(parent)
        return self

    @model_validator(mode="after")
    def _hypernodes_form_a_forest(self) -> "Snapshot":
        if not self.hypernodes:
            return self
        nodes = {n.name for n in self.nodes}
        tiers = {h.name: h.tier for h in self.hypernodes}
        parent_of: dict[str, str] = {}
        for hypernode in self.hypernodes:
            for member in hypernode.node_members:
                if member not in nodes:
                    raise ValueError(f"hypernode {hypernode.name!r} lists unknown node {member!r}")
            for member in hypernode.hypernode_members:
                if member not in tiers:
                    raise ValueError(f"hypernode {hypernode.name!r} lists unknown hypernode {member!r}")
                if tiers[member] >= hypernode.tier:
                    raise ValueError(
                        f"hypernode {hypernode.name!r} (tier {hypernode.tier}) contains "
                        f"{member!r} of tier {tiers[member]}; members must be of a lower tier"
                    )
            for member in (*hypernode.node_members, *hypernode.hypernode_members):
                if member in parent_of:
                    raise ValueError(
                        f"{member!r} is a member of both {parent_of[member]!r} and {hypernode.name!r}"
                    )
                parent_of[member] = hypernode.name
        return self

    @model_validator(mode="after")
    def _pods_reference_what_exists(self) -> "Snapshot":
        groups = {g.key: g for g in self.pod_groups}
        nodes = {n.name: n for n in self.nodes}
        for pod in self.pods:
            if pod.pod_group is not None:
                group = groups.get(pod.pod_group)
                if group is None:
                    raise ValueError(f"pod {pod.key} names unknown pod group {pod.pod_group!r}")
                task = group.task_by_name.get(pod.task or "")
                if task is None:
                    raise ValueError(f"pod {pod.key} names unknown task {pod.task!r} of {group.key}")
                if pod.sub_group is not None and pod.sub_group not in group.sub_group_by_name:
                    raise ValueError(f"pod {pod.key} names unknown sub-group {pod.sub_group!r} of {group.key}")
                if pod.phase == "pending" and pod.requests != task.requests:
                    raise ValueError(
                        f"pending pod {pod.key} requests {pod.requests} but its task {task.name!r} "
                        f"requests {task.requests}"
                    )
                if pod.phase == "pending" and pod.host_ports != task.host_ports:
                    raise ValueError(
                        f"pending pod {pod.key} binds host ports {[p.model_dump() for p in pod.host_ports]} but its "
                        f"task {task.name!r} binds {[p.model_dump() for p in task.host_ports]}"
                    )
                if pod.phase == "pending" and pod.offline != task.offline:
                    raise ValueError(
                        f"pending pod {pod.key} is {'offline' if pod.offline else 'online'} but its task "
                        f"{task.name!r} is {'offline' if task.offline else 'online'}"
                    )
            if pod.phase == "running":
                node = nodes.get(NodeName(pod.node or ""))
                if node is None:
                    raise ValueError(f"running pod {pod.key} is on unknown node {pod.node!r}")
                unknown = [i for i in pod.gpu_indices if i not in node.gpu_by_index]
                if unknown:
                    raise ValueError(f"running pod {pod.key} holds GPUs {unknown} that node {node.name} lacks")
        return self

    def with_usage_policy(self, policy: UsagePolicy, *, nodes: Sequence[Node] | None = None) -> "Snapshot":
        """The same snapshot judged under `policy`, with `nodes` in place of its own when given
        (a new, validated Snapshot; every other object is shared)."""
        return self.replaced(usage_policy=policy, nodes=nodes)

    def replaced(
        self,
        *,
        nodes: Sequence[Node] | None = None,
        pods: Sequence[Pod] | None = None,
        pod_groups: Sequence[PodGroup] | None = None,
        usage_policy: UsagePolicy | None = None,
        hypernodes: Sequence[HyperNode] | None = None,
    ) -> "Snapshot":
        """The same snapshot with the parts given in place of its own: a new, validated
        Snapshot, every other object shared — the one way to rebuild one, so no field is
        dropped when a field is added (what-if's cycle, rebalancing's checked snapshot, the
        scale-up plan's bought nodes, the counted snapshot of `solver.rules.counted`)."""
        changed: dict[str, object] = {}
        if nodes is not None:
            changed["nodes"] = tuple(nodes)
        if hypernodes is not None:
            changed["hypernodes"] = tuple(hypernodes)
        if pods is not None:
            changed["pods"] = tuple(pods)
        if pod_groups is not None:
            changed["pod_groups"] = tuple(pod_groups)
        if usage_policy is not None:
            changed["usage_policy"] = usage_policy
        return Snapshot(**{name: changed.get(name, getattr(self, name)) for name in Snapshot.model_fields})

    # ---- read-only indices (derived once, never stored twice) ----

    @cached_property
    def node_by_name(self) -> dict[NodeName, Node]:
        return {n.name: n for n in self.nodes}

    @cached_property
    def queue_by_name(self) -> dict[QueueName, Queue]:
        return {q.name: q for q in self.queues}

    @cached_property
    def pod_group_by_key(self) -> dict[PodGroupKey, PodGroup]:
        return {g.key: g for g in self.pod_groups}

    @cached_property
    def pod_by_key(self) -> dict[PodKey, Pod]:
        return {p.key: p for p in self.pods}

    @cached_property
    def pods_by_group(self) -> dict[PodGroupKey, tuple[Pod, ...]]:
        grouped: dict[PodGroupKey, list[Pod]] = {g.key: [] for g in self.pod_groups}
        for pod in self.pods:
            if pod.pod_group is not None:
                grouped[pod.pod_group].append(pod)
        return {key: tuple(pods) for key, pods in grouped.items()}

    @cached_property
    def hypernode_by_name(self) -> dict[str, HyperNode]:
        return {h.name: h for h in self.hypernodes}

    @cached_property
    def hypernode_chain(self) -> dict[NodeName, tuple[str, ...]]:
        """Each node's HyperNodes from tier 1 upward: `{"n1": ("leaf-a", "spine")}`."""
        if not self.hypernodes:
            return dict.fromkeys((n.name for n in self.nodes), ())
        parent_of: dict[str, str] = {}
        for hypernode in self.hypernodes:
            for member in (*hypernode.node_members, *hypernode.hypernode_members):
                parent_of[member] = hypernode.name
        chains: dict[NodeName, tuple[str, ...]] = {}
        for node in self.nodes:
            chain: list[str] = []
            current = parent_of.get(node.name)
            while current is not None:
                chain.append(current)
                current = parent_of.get(current)
            chains[node.name] = tuple(chain)
        return chains

    def queue_ancestors(self, queue: QueueName) -> tuple[QueueName, ...]:
        """The queue itself, then its parents up to (not including) root."""
        chain: list[QueueName] = []
        current: QueueName | None = queue
        while current is not None and current != ROOT_QUEUE and current in self.queue_by_name:
            chain.append(current)
            current = self.queue_by_name[current].parent
        return tuple(chain)

    def task_of(self, pod: Pod) -> Task | None:
        if pod.pod_group is None or pod.task is None:
            return None
        return self.pod_group_by_key[pod.pod_group].task_by_name[pod.task]
