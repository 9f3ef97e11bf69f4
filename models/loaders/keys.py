"""The label and annotation keys the Kubernetes loader reads: batchplace's own contract,
plus the Volcano / Kubernetes / scheduler-plugins / Kubeflow keys it honours.

batchplace's own keys (documented for users in docs/input.md):

    batchplace.io/gpu-milli      resource  a pod's fraction of one GPU, 1-999 milli-GPU
    batchplace.io/gpus           Pod       "0,1": device indices a running pod holds
    batchplace.io/gpu-numa       Node      "0,0,0,0,1,1,1,1": NUMA cell of each GPU index
    batchplace.io/numa-policy    Pod       none | best-effort | restricted | single-numa-node
    batchplace.io/task           Pod       task name inside a plain PodGroup (label or annotation)
    batchplace.io/usage          Node      "cpu=91.5,memory=40,gpu=70,observed=<RFC 3339>,window=300":
                                           measured load (`models.loaders.node_usage`); for colocation
                                           also online-cpu, online-memory and per GPU device
                                           online-gpu<i> ("online-gpu0=35,online-gpu1=80": percent of
                                           device i used by online work, which lends the rest of a
                                           shared device to offline pods, `solver.rules.colocation`)

Keys of other projects, read as they define them:

    volcano.sh/qos-level                   Pod (annotation): BE = offline (best effort); LC, HLS, LS or
                                           none = online. On a PriorityClass (batchplace's addition):
                                           BE makes every pod of the class offline (`solver.rules.colocation`)
    volcano.sh/oversubscription            Node label: "true" = a colocation node (offline pods use
                                           what online pods requested but do not use)
    volcano.sh/colocation                  Node label: "true" = a colocation node too, unless
                                           volcano.sh/oversubscription says "false"
    volcano.sh/preemptable                 Pod, PodGroup, vcjob (annotation, else label): "false" or
                                           anything not a boolean = not preemptable
    volcano.sh/task-spec                   Pod: the vcjob task it belongs to
    volcano.sh/job-name                    Pod: the vcjob that created it
    volcano.sh/numa-topology-policy        Pod: Volcano's name for the NUMA policy
    scheduling.k8s.io/group-name           Pod: its Volcano PodGroup
    scheduling.x-k8s.io/pod-group          Pod label: its scheduler-plugins PodGroup
    scheduling.volcano.sh/queue-name       Pod without PodGroup: queue of its one-pod PodGroup
    scheduling.x-k8s.io/queue              scheduler-plugins PodGroup: queue (label or annotation)
    volcano.sh/queue-name                  scheduler-plugins PodGroup: queue (label or annotation)
    nvidia.com/gpu.product                 Node label: GPU model
    nvidia.com/gpu.memory                  Node label: MiB of memory per GPU (GPU feature discovery)
    nvidia.com/gpu.count                   Node label: GPUs on the node (GPU feature discovery)
    volcano.sh/vgpu-number                 resource: vGPUs (pod), vGPU slots (node); `vgpu`
    volcano.sh/vgpu-memory                 resource: MiB of device memory per vGPU
    volcano.sh/vgpu-cores                  resource: percent of a device's cores per vGPU
    sla-waiting-time                       vcjob / PodGroup / Queue annotation: a Go duration ("30m"); past it, nodes
                                           are held for the pending PodGroup (Volcano's `sla` plugin reads it on jobs)
    volcano.sh/network-topology-mode       scheduler-plugins PodGroup, PyTorchJob (annotation): hard | soft
    volcano.sh/network-topology-highest-tier   the same: the highest HyperNode tier allowed
    training.kubeflow.org/job-name         Pod label: the Kubeflow training job that created it
    training.kubeflow.org/replica-type     Pod label: its replica type (master, worker), read as its task

    leaderworkerset.sigs.k8s.io/name       Pod label: the LeaderWorkerSet that created it; with
                                           group-index and worker-index (labels) and size
                                           (annotation), its group is one gang (`leader_worker_set`)
    leaderworkerset.sigs.k8s.io/exclusive-topology   Pod annotation: the node label key each group
                                           has to itself, enforced by the pod affinity LWS injects
    jobset.sigs.k8s.io/jobset-name         Pod label or annotation: the JobSet whose Job created it;
                                           with replicatedjob-name and job-index, its Job replica is
                                           one gang (`jobset`)
    alpha.jobset.sigs.k8s.io/exclusive-topology   Pod annotation: as LWS's, for a Job replica

Those of LWS and JobSet are defined in their modules, each beside its reader. A pod's
`spec.schedulingGroup.podGroupName` (the Kubernetes Workload API) is a field, not a key: it
names a `scheduling.k8s.io` PodGroup (`kube_pod_group`).

and, not read but set on the pods a PyTorchJob expands into, as Kubeflow's training operator
sets them: `training.kubeflow.org/operator-name` and `training.kubeflow.org/job-role`.
"""

from __future__ import annotations

GPU_MILLI_RESOURCE = "batchplace.io/gpu-milli"
GPUS_ANNOTATION = "batchplace.io/gpus"
GPU_NUMA_ANNOTATION = "batchplace.io/gpu-numa"
NUMA_POLICY_ANNOTATION = "batchplace.io/numa-policy"
TASK_KEY = "batchplace.io/task"
USAGE_ANNOTATION = "batchplace.io/usage"
CHECKPOINT_ANNOTATION = "batchplace.io/last-checkpoint"

PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"
QOS_LEVEL_ANNOTATION = "volcano.sh/qos-level"
OFFLINE_QOS_LEVELS = frozenset({"BE"})
"""Volcano's `qosLevelMap` gives BE -1 and `IsPreemptablePod` is "level < 0": BE alone is offline."""
SLA_WAITING_TIME_ANNOTATION = "sla-waiting-time"
VOLCANO_TASK_ANNOTATION = "volcano.sh/task-spec"
VOLCANO_JOB_NAME_KEY = "volcano.sh/job-name"
VOLCANO_PARTITION_ID_LABEL = "volcano.sh/partition-id"  # a vcjob pod's partition: its index // partitionSize
VOLCANO_JOB_NAMESPACE_LABEL = "volcano.sh/job-namespace"
VOLCANO_QUEUE_LABEL = "volcano.sh/queue-name"
VOLCANO_NUMA_POLICY_ANNOTATION = "volcano.sh/numa-topology-policy"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
XK8S_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
POD_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
XK8S_QUEUE_KEYS = ("scheduling.x-k8s.io/queue", "volcano.sh/queue-name")
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
VGPU_NUMBER = "volcano.sh/vgpu-number"
VGPU_MEMORY = "volcano.sh/vgpu-memory"
VGPU_CORES = "volcano.sh/vgpu-cores"
VGPU_RESOURCES = frozenset({VGPU_NUMBER, VGPU_MEMORY, VGPU_CORES})

NVIDIA_GPU_RESOURCE = "nvidia.com/gpu"

NETWORK_TOPOLOGY_MODE_ANNOTATION = "volcano.sh/network-topology-mode"
NETWORK_TOPOLOGY_TIER_ANNOTATION = "volcano.sh/network-topology-highest-tier"

KUBEFLOW_JOB_NAME_LABEL = "training.kubeflow.org/job-name"
KUBEFLOW_REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
KUBEFLOW_OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
KUBEFLOW_JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
