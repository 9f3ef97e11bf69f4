"""The API resources the controller reads and writes, and their REST paths.

Pure data: no I/O. `controller.kube` turns a `ResourceKind` into requests, the informers
watch the `WATCHED` ones, and `deploy/rbac.yaml` grants exactly the verbs listed in
`VERBS` (a test compares the two).

Kinds from CRDs (`crd=True`) are watched only where the API server serves them: a cluster
without Volcano's HyperNode CRD simply has no HyperNodes. The DRA kinds
(`resource.k8s.io/v1`) are built in from Kubernetes 1.34 on, but are marked so too: an older
server does not serve the group, and a cluster without it simply has no DRA devices. So are
the Kubernetes Workload API kinds (`scheduling.k8s.io`, behind the GenericWorkload feature
gate: Workload v1alpha1 in 1.35, with its pod groups inline and pods naming them in
`spec.workloadRef`; Workload and PodGroup objects v1alpha2 in 1.36 and v1beta1 in 1.37), each
at the newest version the server serves (`OLDER_VERSIONS`): a cluster without them has no
such gangs.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ResourceKind",
    "PODS",
    "NODES",
    "VOLCANO_PODGROUPS",
    "XK8S_PODGROUPS",
    "QUEUES",
    "HYPERNODES",
    "PRIORITY_CLASSES",
    "NUMATOPOLOGIES",
    "VCJOBS",
    "LEASES",
    "EVENTS",
    "NAMESPACES",
    "PROVISIONING_REQUESTS",
    "POD_TEMPLATES",
    "DEVICE_CLASSES",
    "RESOURCE_SLICES",
    "RESOURCE_CLAIMS",
    "RESOURCE_CLAIM_TEMPLATES",
    "DRA_KINDS",
    "KUBE_WORKLOADS",
    "KUBE_WORKLOADS_V1ALPHA2",
    "KUBE_WORKLOADS_V1ALPHA1",
    "KUBE_PODGROUPS",
    "KUBE_PODGROUPS_V1ALPHA2",
    "WORKLOAD_API_KINDS",
    "OLDER_VERSIONS",
    "WATCHED",
    "VERBS",
]


@dataclass(frozen=True)
class ResourceKind:
    """One REST resource: `group` "" is the core API."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    crd: bool = False
    field_selector: str | None = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version_path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def collection_path(self, namespace: str | None = None) -> str:
        """`/api/v1/namespaces/ns/pods`, or all namespaces when `namespace` is None."""
        if self.namespaced and namespace is not None:
            return f"{self.group_version_path}/namespaces/{namespace}/{self.plural}"
        return f"{self.group_version_path}/{self.plural}"

    def object_path(self, namespace: str | None, name: str, subresource: str | None = None) -> str:
        path = f"{self.collection_path(namespace if self.namespaced else None)}/{name}"
        return f"{path}/{subresource}" if subresource else path

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


PODS = ResourceKind(
    "", "v1", "pods", "Pod", namespaced=True, field_selector="status.phase!=Succeeded,status.phase!=Failed"
)
NODES = ResourceKind("", "v1", "nodes", "Node", namespaced=False)
NAMESPACES = ResourceKind("", "v1", "namespaces", "Namespace", namespaced=False)
EVENTS = ResourceKind("", "v1", "events", "Event", namespaced=True)
PRIORITY_CLASSES = ResourceKind("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False)
LEASES = ResourceKind("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
VOLCANO_PODGROUPS = ResourceKind("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", True, crd=True)
XK8S_PODGROUPS = ResourceKind("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", True, crd=True)
QUEUES = ResourceKind("scheduling.volcano.sh", "v1beta1", "queues", "Queue", False, crd=True)
HYPERNODES = ResourceKind("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode", False, crd=True)
NUMATOPOLOGIES = ResourceKind("nodeinfo.volcano.sh", "v1alpha1", "numatopologies", "Numatopology", False, crd=True)
VCJOBS = ResourceKind("batch.volcano.sh", "v1alpha1", "jobs", "Job", True, crd=True)
# --provisioning-class only (`controller.provisioning`): read each cycle, never watched.
PROVISIONING_REQUESTS = ResourceKind("autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest", True, crd=True)
POD_TEMPLATES = ResourceKind("", "v1", "podtemplates", "PodTemplate", namespaced=True)
DEVICE_CLASSES = ResourceKind("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False, crd=True)
RESOURCE_SLICES = ResourceKind("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False, crd=True)
RESOURCE_CLAIMS = ResourceKind("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, crd=True)
RESOURCE_CLAIM_TEMPLATES = ResourceKind(
    "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True, crd=True
)
DRA_KINDS = (DEVICE_CLASSES, RESOURCE_SLICES, RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES)
KUBE_WORKLOADS = ResourceKind("scheduling.k8s.io", "v1beta1", "workloads", "Workload", True, crd=True)
KUBE_WORKLOADS_V1ALPHA2 = ResourceKind("scheduling.k8s.io", "v1alpha2", "workloads", "Workload", True, crd=True)
KUBE_WORKLOADS_V1ALPHA1 = ResourceKind("scheduling.k8s.io", "v1alpha1", "workloads", "Workload", True, crd=True)
KUBE_PODGROUPS = ResourceKind("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup", True, crd=True)
KUBE_PODGROUPS_V1ALPHA2 = ResourceKind("scheduling.k8s.io", "v1alpha2", "podgroups", "PodGroup", True, crd=True)
WORKLOAD_API_KINDS = (KUBE_WORKLOADS, KUBE_WORKLOADS_V1ALPHA2, KUBE_WORKLOADS_V1ALPHA1, KUBE_PODGROUPS, KUBE_PODGROUPS_V1ALPHA2)
OLDER_VERSIONS: dict[ResourceKind, tuple[ResourceKind, ...]] = {
    KUBE_WORKLOADS_V1ALPHA2: (KUBE_WORKLOADS,),
    KUBE_WORKLOADS_V1ALPHA1: (KUBE_WORKLOADS, KUBE_WORKLOADS_V1ALPHA2),
    KUBE_PODGROUPS_V1ALPHA2: (KUBE_PODGROUPS,),
}
"""An older version → the newer ones of the same resource: the older is watched only where no
newer one is served (a server serving several holds the same objects under each)."""

WATCHED: tuple[ResourceKind, ...] = (
    PODS,
    NODES,
    PRIORITY_CLASSES,
    VOLCANO_PODGROUPS,
    XK8S_PODGROUPS,
    QUEUES,
    HYPERNODES,
    NUMATOPOLOGIES,
    VCJOBS,
    *DRA_KINDS,
    *WORKLOAD_API_KINDS,
)
"""Listed and watched into the caches; the CRD kinds only where served."""

VERBS: dict[tuple[str, str], tuple[str, ...]] = {
    # (API group, resource) → the verbs the controller uses on it, and nothing more.
    ("", "pods"): ("get", "list", "watch", "patch"),  # get: re-read after a 409 or a bind of unknown outcome; patch: provisioning annotations
    ("", "pods/binding"): ("create",),
    ("", "pods/eviction"): ("create",),
    ("", "pods/status"): ("patch",),  # a pending pod's PodScheduled condition, as kube-scheduler writes it
    ("", "nodes"): ("get", "list", "watch"),  # get: each target node read just before a gang's binds
    ("", "events"): ("create",),
    ("scheduling.k8s.io", "priorityclasses"): ("list", "watch"),
    ("scheduling.k8s.io", "workloads"): ("list", "watch"),
    ("scheduling.k8s.io", "podgroups"): ("list", "watch"),
    ("scheduling.k8s.io", "podgroups/status"): ("patch",),  # its scheduling condition, as kube-scheduler writes it
    ("coordination.k8s.io", "leases"): ("get", "create", "update"),
    ("scheduling.volcano.sh", "podgroups"): ("list", "watch", "patch"),  # status lives in the main resource
    ("scheduling.volcano.sh", "queues"): ("list", "watch"),
    ("scheduling.x-k8s.io", "podgroups"): ("list", "watch"),
    ("scheduling.x-k8s.io", "podgroups/status"): ("patch",),
    ("topology.volcano.sh", "hypernodes"): ("list", "watch"),
    ("nodeinfo.volcano.sh", "numatopologies"): ("list", "watch"),
    ("batch.volcano.sh", "jobs"): ("list", "watch"),
    ("metrics.k8s.io", "nodes"): ("list",),  # --usage-source metrics-server: NodeMetrics
    ("autoscaling.x-k8s.io", "provisioningrequests"): ("list", "create", "delete"),  # --provisioning-class
    ("", "podtemplates"): ("create", "delete"),  # --provisioning-class: the requests' pod templates
    ("resource.k8s.io", "deviceclasses"): ("list", "watch"),
    ("resource.k8s.io", "resourceslices"): ("list", "watch"),
    ("resource.k8s.io", "resourceclaims"): ("list", "watch"),
    ("resource.k8s.io", "resourceclaims/status"): ("update",),  # status.allocation and reservedFor, before the bind
    ("resource.k8s.io", "resourceclaimtemplates"): ("list", "watch"),
}
"""The least privilege the controller needs; `deploy/rbac.yaml` grants exactly this."""
