"""The two usage sources of `--usage-source`: metrics.k8s.io (metrics-server) and Prometheus.

Each turns what it reads into `UsageSample`s, percent of the node's allocatable, for
`controller.usage` to average over its window.

- `MetricsApiSource` lists `metrics.k8s.io/v1beta1` NodeMetrics through the API server
  (`KubeClient.list_node_metrics`: the aggregated API metrics-server registers). A
  NodeMetrics says `usage.cpu` and `usage.memory` as quantities, averaged by metrics-server
  over its own `window`, at `timestamp`; divided by the Node's allocatable they are percents.
  Example: usage cpu 6 (cores) on a node with 8 allocatable → 75 %. It has no GPU figure.
  One sample per node per poll; the controller's window averages successive polls.
- `PrometheusSource` asks a Prometheus server's HTTP API (`/api/v1/query_range`) for the
  window's samples of one query per resource, each of which must answer percents, one series
  per node, carrying the node's name in label `node_label` (default `node`). The defaults
  read node-exporter (`DEFAULT_QUERIES`) and NVIDIA's DCGM exporter for GPU utilisation;
  a cluster whose series name nodes otherwise rewrites them with `label_replace`. Samples
  of the three queries at one time become one `UsageSample`.

Failures raise `UsageSourceError` (Prometheus: no answer, an error status, a malformed
answer) or an `ApiError` of `controller.errors` (metrics.k8s.io not served: `NotFound`;
RBAC: `Forbidden`); `controller.usage` logs them and polls again later. A value that is not
a finite number is skipped; a percent above `USAGE_PERCENT_CEILING` is cut to it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import httpx

from controller.kube import KubeClient
from controller.usage import UsageSample, UsageSourceError
from models.quantity import QuantityError, to_base_units
from models.snapshot import CPU, INT32_MAX, MEMORY, USAGE_PERCENT_CEILING, Node, NodeName

__all__ = ["MetricsApiSource", "PrometheusSource", "DEFAULT_QUERIES", "SOURCES", "QUERY_RESOURCES"]

SOURCES = ("none", "metrics-server", "prometheus")
QUERY_RESOURCES = ("cpu", "memory", "gpu", "online-cpu", "online-memory", "online-gpu")
"""What `--usage-query` may name. `online-cpu` / `online-memory` (no default): percent of the
node's allocatable used by everything but offline pods, for colocation; e.g. with cAdvisor and
kube-state-metrics' pod annotations (`--metric-annotations-allowlist=pods=[volcano.sh/qos-level]`):
`100 * sum by (node) (rate(container_cpu_usage_seconds_total{container!=""}[2m]) * on (namespace, pod)
group_left () (kube_pod_annotations{annotation_volcano_sh_qos_level!="BE"})) / sum by (node)
(kube_node_status_allocatable{resource="cpu"})`. Without them a node running offline pods has its
offline room measured by nobody: it offers no oversubscribed room and evicts nothing.
`online-gpu` (no default): per device (label `gpu`), percent of the device used by online work,
for lending shared devices' unused part to offline pods; e.g. when only online pods run on the
devices it is read from, `avg by (node, gpu) (DCGM_FI_DEV_GPU_UTIL)` (with DCGM's `Hostname`
copied to `node` by `label_replace`), or with DCGM's per-pod labels, the online pods' series only."""
"""The values of `--usage-source`."""

DEFAULT_QUERIES: Mapping[str, str] = {
    "cpu": '100 * (1 - avg by (node) (rate(node_cpu_seconds_total{mode="idle"}[2m])))',
    "memory": "100 * (1 - sum by (node) (node_memory_MemAvailable_bytes) / sum by (node) (node_memory_MemTotal_bytes))",
    "gpu": "avg by (node) (DCGM_FI_DEV_GPU_UTIL)",
}


DEVICE_RESOURCE = "online-gpu"
DEVICE_LABEL = "gpu"
"""The label of a per-device series naming its device index, as DCGM's exporter names it."""


def _device_index(label: object) -> int | None:
    """`"3"` → 3; None when absent or not a whole number."""
    text = str(label) if label is not None else ""
    return int(text) if text.isascii() and text.isdigit() and int(text) <= INT32_MAX else None


def _percent(value: float) -> float | None:
    if not math.isfinite(value):
        return None
    return min(max(value, 0.0), USAGE_PERCENT_CEILING)


class MetricsApiSource:
    """NodeMetrics through the API server (module docstring)."""

    name = "metrics-server"

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    def read(self, *, since_s: float, now_s: float, nodes: Mapping[NodeName, Node]) -> Sequence[UsageSample]:
        return node_metrics_samples(self.client.list_node_metrics(), nodes)


def node_metrics_samples(items: Sequence[Mapping[str, Any]], nodes: Mapping[NodeName, Node]) -> list[UsageSample]:
    """NodeMetrics objects → samples; items naming no known node, or unreadable, are skipped.

    Example: `{metadata: {name: n1}, timestamp: 2024-05-01T12:00:00Z, usage: {cpu: 6, memory: 4Gi}}`
    on a node with 8 cpu and 16Gi allocatable → n1 at 1714564800: cpu 75 %, memory 25 %."""
    samples = []
    for item in items:
        name = NodeName(str((item.get("metadata") or {}).get("name", "")))
        node = nodes.get(name)
        usage = item.get("usage") or {}
        at_s = _timestamp(item.get("timestamp"))
        if node is None or at_s is None:
            continue
        samples.append(
            UsageSample(
                node=name,
                at_s=at_s,
                cpu_percent=_share(usage.get("cpu"), node.allocatable.get(CPU, 0), scale=1000),
                memory_percent=_share(usage.get("memory"), node.allocatable.get(MEMORY, 0), scale=1),
            )
        )
    return samples


def _share(quantity: object, allocatable: int, *, scale: int) -> float | None:
    if quantity is None or allocatable <= 0:
        return None
    try:
        amount = to_base_units(quantity, scale=scale)  # type: ignore[arg-type]
    except QuantityError:
        return None
    return _percent(100.0 * amount / allocatable)


def _timestamp(text: object) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)).timestamp()


class PrometheusSource:
    """Percent queries over Prometheus' HTTP API (module docstring)."""

    name = "prometheus"

    def __init__(
        self,
        url: str,
        *,
        queries: Mapping[str, str] = DEFAULT_QUERIES,
        node_label: str = "node",
        step_s: float = 15.0,
        timeout_s: float = 5.0,
        client: httpx.Client | None = None,
    ) -> None:
        unknown = set(queries) - set(QUERY_RESOURCES)
        if unknown:
            raise ValueError(f"usage queries for {', '.join(QUERY_RESOURCES)} only, got {sorted(unknown)}")
        self.url = url.rstrip("/")
        self.queries = dict(queries)
        self.node_label = node_label
        self.step_s = step_s
        self.client = client or httpx.Client(timeout=timeout_s)

    def read(self, *, since_s: float, now_s: float, nodes: Mapping[NodeName, Node]) -> Sequence[UsageSample]:
        merged: dict[tuple[NodeName, float], dict[str, Any]] = {}
        for resource, query in self.queries.items():
            for node, at_s, value, device in self._range(query, start_s=since_s, end_s=now_s):
                fields = merged.setdefault((node, at_s), {})
                if resource == DEVICE_RESOURCE:
                    percent = _percent(value)
                    known = nodes.get(node)
                    if device is not None and percent is not None and (known is None or device in known.gpu_by_index):
                        fields.setdefault("online_gpu_device_percent", {})[device] = percent
                else:
                    fields[f"{resource.replace('-', '_')}_percent"] = _percent(value)
        return [UsageSample(node=node, at_s=at_s, **fields) for (node, at_s), fields in sorted(merged.items())]

    def _range(self, query: str, *, start_s: float, end_s: float) -> list[tuple[NodeName, float, float, int | None]]:
        """(node, time, value, device index from label `gpu` or None) of every point of `query`
        from `start_s` to `end_s`."""
        params = {"query": query, "start": f"{start_s:.3f}", "end": f"{end_s:.3f}", "step": f"{self.step_s:g}"}
        try:
            response = self.client.get(f"{self.url}/api/v1/query_range", params=params)
        except httpx.HTTPError as error:
            raise UsageSourceError(f"{self.url}: {type(error).__name__}: {error}") from error
        try:
            body = response.json()
        except ValueError:
            raise UsageSourceError(f"{self.url}: HTTP {response.status_code}, not JSON") from None
        if not isinstance(body, dict) or body.get("status") != "success":
            error = body.get("error") if isinstance(body, dict) else None
            raise UsageSourceError(f"{self.url}: HTTP {response.status_code}: {error or 'no success status'} ({query})")
        data = body.get("data") or {}
        if data.get("resultType") != "matrix":
            raise UsageSourceError(f"{self.url}: expected a matrix for {query!r}, got {data.get('resultType')!r}")
        points = []
        for series in data.get("result") or []:
            metric = series.get("metric") or {}
            node = metric.get(self.node_label)
            if not node:
                continue
            device = _device_index(metric.get(DEVICE_LABEL))
            for at_s, text in series.get("values") or []:
                try:
                    points.append((NodeName(str(node)), float(at_s), float(text), device))
                except (TypeError, ValueError):
                    continue
        return points

    def close(self) -> None:
        self.client.close()
