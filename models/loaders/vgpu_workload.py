"""Volcano vGPU asks of a workload's pods turned into `gpu` requests, once the nodes' device
memory is known (`vgpu` says how one ask becomes a share of a device and why).

Input: the joined `Workload` (pods with the vGPU asks their containers made, job tasks)
and each node's device memory. Output: the same workload, in place, with each pod's and
its job task's vGPUs in `gpu` milli-GPU. Worked example: a pod asking vgpu-memory 8000
on 32000-MiB devices gets `gpu: 250`, and so does its task.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from models.errors import FieldError, Location
from models.snapshot import GPU, GPU_MILLI_PER_DEVICE, ResourceList, Task

from .grouping import Workload
from .raw import Warnings, build_model
from .vgpu import device_memory_mib, vgpu_milli
from .workloads import PodTemplate

__all__ = ["apply_vgpu"]


def apply_vgpu(workload: Workload, memories: Sequence[int | None], warnings: Warnings) -> None:
    """Put every pod's vGPUs into its `gpu` request, and its job task's, in place.
    `memories`: each node's device memory in MiB, or None (`node_vgpu`)."""
    memory_mib = device_memory_mib(memories)
    resolved: dict[int, PodTemplate] = {}  # id of a template → the same with its vGPUs in `gpu`
    by_task: dict[tuple[str, str | None], ResourceList] = {}  # (PodGroup key, task) → requests
    pods = []
    for pod in workload.pods:
        template = pod.template
        if template.vgpu:
            if id(template) not in resolved:
                milli = _pod_milli(template, memory_mib, warnings)
                requests = {**template.requests, GPU: milli} if milli else dict(template.requests)
                resolved[id(template)] = dataclasses.replace(template, requests=requests, vgpu=())
            pod = dataclasses.replace(pod, template=resolved[id(template)])
            by_task[(f"{pod.namespace}/{pod.group_name}", pod.task_name)] = pod.template.requests
        pods.append(pod)
    workload.pods = pods
    for key, job in workload.jobs.items():
        tasks = tuple(
            _with_requests(task, by_task[(key, task.name)]) if (key, task.name) in by_task else task
            for task in job.tasks
        )
        workload.jobs[key] = dataclasses.replace(job, tasks=tasks)


def _pod_milli(template: PodTemplate, memory_mib: int | None, warnings: Warnings) -> int:
    first = template.vgpu[0]
    if template.requests.get(GPU):
        message = "asks for vGPUs and for GPUs (nvidia.com/gpu or batchplace.io/gpu-milli): one or the other"
        raise FieldError(message, location=first.location, path=first.path)
    milli = vgpu_milli(template.vgpu, memory_mib, warnings)
    if milli > GPU_MILLI_PER_DEVICE and milli % GPU_MILLI_PER_DEVICE:
        message = f"the containers' vGPUs add up to {milli} milli-GPU: whole GPUs, or a fraction of one, not both"
        raise FieldError(message, location=first.location, path=first.path)
    return milli


def _with_requests(task: Task, requests: ResourceList) -> Task:
    """A job's task with its pods' requests (their vGPUs in `gpu`)."""
    return build_model(Task, Location(), **{**task.model_dump(), "requests": requests})
