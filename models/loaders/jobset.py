"""Read a JobSet (`jobset.x-k8s.io/v1alpha2`, kubernetes-sigs/jobset): from the labels and
annotations JobSet puts on the Jobs it creates, which their pods inherit, or, when none of
its pods is in the input, from the object itself (`jobset_object`).

A JobSet makes, per replicated Job, `replicas` Jobs named `<jobset>-<replicated job>-<job
index>`; their pods carry `jobset.sigs.k8s.io/jobset-name`, `replicatedjob-name` and
`job-index` (as labels and annotations) and `jobset.sigs.k8s.io/job-key` (a hash of the Job).
Each Job replica is a unit that starts whole (a distributed trainer's ranks), so it is a
sub-group gang named as the Job, policy the replicated Job, task the replicated Job's name;
the JobSet is one PodGroup `<jobset>`, which starts only with every Job present whole (its
Jobs run as one job: by default one failed Job fails or restarts the whole JobSet). `owner_gang_groups` builds that
PodGroup from the pods. A Job's pods do not state its parallelism (the Job object is not
read: `kube_yaml` skips batch/v1 Job), so its members are the pods present — or the Job's
size from its JobSet, when that is in the input too (what the parent adds to its pods).

Exclusive placement: `alpha.jobset.sigs.k8s.io/exclusive-topology: <node label key>` on the
JobSet or a replicated Job's template is copied onto the pods; JobSet's pod webhook gives the
leader (completion index 0) a required pod affinity to its own job-key and anti-affinity to
other job-keys on that key, and admits the followers only once the leader is scheduled, with
a node selector for its value. batchplace reads that affinity and selector as any pod's, and
makes the key each Job's hard network topology at the tier whose HyperNodes group the nodes
by it (`exclusive_topology`); until the followers exist the gang is the leader alone, as the
pods present say.
"""

from __future__ import annotations

from models.errors import FieldError

from .owner_gang import OwnerGang
from .raw import Metadata, RawObject

__all__ = ["read_jobset_gang", "JOBSET_NAME_KEY", "JOBSET_REPLICATED_JOB_KEY", "JOBSET_EXCLUSIVE_TOPOLOGY_ANNOTATION"]

JOBSET_NAME_KEY = "jobset.sigs.k8s.io/jobset-name"
JOBSET_REPLICATED_JOB_KEY = "jobset.sigs.k8s.io/replicatedjob-name"
JOBSET_JOB_INDEX_KEY = "jobset.sigs.k8s.io/job-index"
JOBSET_EXCLUSIVE_TOPOLOGY_ANNOTATION = "alpha.jobset.sigs.k8s.io/exclusive-topology"
JOB_COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"


def read_jobset_gang(obj: RawObject, meta: Metadata) -> OwnerGang | None:
    """The Job replica a pod with `jobset.sigs.k8s.io/jobset-name` (label or annotation) is
    in; None for other pods. Its replicated-job name and job index must be there, as JobSet
    always sets them: else an error naming the missing key."""
    jobset = meta.tag(JOBSET_NAME_KEY)
    if not jobset:
        return None
    replicated_job = _required(obj, meta, JOBSET_REPLICATED_JOB_KEY, jobset)
    job_index = _required(obj, meta, JOBSET_JOB_INDEX_KEY, jobset)
    if not job_index.isdigit():
        message = f"a JobSet pod's job index is an integer, got {job_index!r}"
        raise FieldError(message, location=obj.location, path=(*obj.path, "metadata", "labels", JOBSET_JOB_INDEX_KEY))
    return OwnerGang(
        kind="JobSet",
        owner=jobset,
        name=f"{jobset}-{replicated_job}-{job_index}",
        task=replicated_job,
        size=None,
        leader=meta.tag(JOB_COMPLETION_INDEX_ANNOTATION) in (None, "0"),
        exclusive_topology=meta.tag(JOBSET_EXCLUSIVE_TOPOLOGY_ANNOTATION),
        policy=replicated_job,
        together=True,
    )


def _required(obj: RawObject, meta: Metadata, key: str, jobset: str) -> str:
    value = meta.tag(key)
    if not value:
        message = f"a JobSet pod ({JOBSET_NAME_KEY}: {jobset}) needs this label, as JobSet sets it; it is missing"
        raise FieldError(message, location=obj.location, path=(*obj.path, "metadata", "labels", key))
    return value

