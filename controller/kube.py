"""The edge: the only module of `controller` that imports the `kubernetes` client.

Input: calls from the informers (list, watch), the actuator (bind, evict, patch, events),
the leader elector (leases), the metrics.k8s.io usage source (NodeMetrics) and the
test/demo helpers (create, delete). Output: plain JSON
dicts exactly as the API server sends them — the form `models.loaders` reads — and, for
every failure, an error of `controller.errors` chained `from` the client's exception
(`ApiException` by HTTP status; urllib3 and socket failures → `Unavailable`).

Every call goes through the official client's `ApiClient` (its configuration, bearer
token refresh and TLS) with plain JSON bodies, and the response is read raw: no generated
model is built or validated for a list of 5,000 pods nor for each of 5,000 binds, and a
binding's response — whose `V1Binding.target` the client cannot deserialize — is judged
by its HTTP status alone.

Eviction: `policy/v1` where the server serves it (Kubernetes ≥ 1.22), else `policy/v1beta1`
(1.20, what the test control plane runs); found by discovery once, on first use.

Not promised: retries. One method is one HTTP request; the error's class says whether to
try again (`ApiError.retry`), and callers retry with their injected backoff.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from controller.errors import ApiError, Gone, Invalid, NotFound, Unavailable, error_for_status
from controller import write_fence
from controller.kinds import EVENTS, LEASES, PODS, ResourceKind
from controller.write_fence import WriteLease

__all__ = ["KubeClient", "ListResult", "WatchEvent", "JsonObject"]

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
DEFAULT_TIMEOUT_S = (5.0, 30.0)  # (connect, read)
METRICS_GROUP, METRICS_VERSION = "metrics.k8s.io", "v1beta1"
_TRANSPORT_ERRORS = (urllib3.exceptions.HTTPError, OSError, socket.timeout)


@dataclass(frozen=True)
class ListResult:
    items: list[JsonObject]
    resource_version: str


@dataclass(frozen=True)
class WatchEvent:
    type: str  # ADDED, MODIFIED, DELETED, BOOKMARK
    object: JsonObject


class KubeClient:
    """A thin, typed-at-the-edges wrapper of the official client's `ApiClient`."""

    def __init__(self, configuration: k8s.Configuration, *, pool_size: int = 32) -> None:
        configuration.connection_pool_maxsize = pool_size
        # Our callers retry with backoff; urllib3 only re-opens a pooled connection the server closed.
        configuration.retries = urllib3.Retry(total=2, connect=2, read=0, redirect=0, status=0)
        self.configuration = configuration
        self._api = k8s.ApiClient(configuration)
        write_fence.install(self._api.rest_client.pool_manager)
        self._eviction_version: str | None = None
        self._lock = threading.Lock()
        self._streams: set[Any] = set()

    # ---- construction ----

    @classmethod
    def from_kubeconfig(cls, path: str | Path | None = None, *, context: str | None = None, **kwargs: Any) -> "KubeClient":
        """`path` None: the in-cluster service account (what a Deployment uses)."""
        configuration = k8s.Configuration()
        if path is None:
            k8s_config.load_incluster_config(client_configuration=configuration)
        else:
            k8s_config.load_kube_config(config_file=str(path), context=context, client_configuration=configuration)
        return cls(configuration, **kwargs)

    @property
    def host(self) -> str:
        return str(self.configuration.host)

    def close(self) -> None:
        """Cut the open watch streams (their informers see `Unavailable` and stop) and the pool."""
        with self._lock:
            streams = list(self._streams)
        for response in streams:
            try:
                response.shutdown()
            except Exception:  # already closed
                pass
        self._api.close()

    # ---- the one request primitive ----

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: object = None,
        content_type: str = "application/json",
        timeout_s: float | tuple[float, float] = DEFAULT_TIMEOUT_S,  # a float: the whole call's
        verb: str = "",
        what: str = "",
        lease: WriteLease | None = None,
    ) -> Any:
        """One HTTP request; returns the raw urllib3 response (2xx only) — the caller reads it.
        `lease`: a write only the Lease holder may send — its timeout is the lease's write
        budget, and it is sent only while `lease.may_write()` (checked by the connection right
        before the request goes out, `controller.write_fence`); else `WriteNotSent`."""
        headers = {"Accept": "application/json", "Content-Type": content_type}
        request = self._api.param_serialize(
            method=method,
            resource_path=path,
            query_params=list(query),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        if lease is not None and lease.write_timeout_s is not None:
            timeout_s = lease.write_timeout_s
        try:
            with write_fence.fenced(lease.may_write if lease is not None else None):
                response = self._api.call_api(*request, _request_timeout=timeout_s)
        except ApiException as error:
            raise _mapped(error, verb or method, what or path) from error
        except _TRANSPORT_ERRORS as error:
            raise Unavailable(f"{type(error).__name__}: {error}", verb=verb or method, what=what or path) from error
        if not 200 <= response.status <= 299:
            try:
                text = response.read().decode("utf-8", errors="replace")
            except _TRANSPORT_ERRORS:
                text = ""
            raise error_for_status(
                response.status,
                _status_message(text) or str(response.reason),
                verb=verb or method,
                what=what or path,
                retry_after_s=_retry_after(response.headers),
            )
        return response.response

    def _json(self, method: str, path: str, **kwargs: Any) -> JsonObject:
        response = self._request(method, path, **kwargs)
        try:
            data = response.data
        except _TRANSPORT_ERRORS as error:
            raise Unavailable(f"reading the answer: {error}", verb=kwargs.get("verb", method), what=path) from error
        if not data:
            return {}
        result = json.loads(data)
        return result if isinstance(result, dict) else {"items": result}

    # ---- reading ----

    def get(self, kind: ResourceKind, namespace: str | None, name: str, *, from_watch_cache: bool = False) -> JsonObject:
        """The object; `from_watch_cache`: as the API server's watch cache has it
        (`resourceVersion=0`: no etcd read, at most the watch's few milliseconds behind)."""
        query = [("resourceVersion", "0")] if from_watch_cache else []
        return self._json("GET", kind.object_path(namespace, name), query=query, verb="get", what=f"{kind} {_ref(namespace, name)}")

    def list(
        self,
        kind: ResourceKind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        page_size: int = 1000,
    ) -> ListResult:
        """All objects (paged with `continue`) and the list's resourceVersion to watch from."""
        items: list[JsonObject] = []
        continue_token: str | None = None
        while True:
            query = [("limit", str(page_size))]
            if kind.field_selector:
                query.append(("fieldSelector", kind.field_selector))
            if label_selector:
                query.append(("labelSelector", label_selector))
            if continue_token:
                query.append(("continue", continue_token))
            page = self._json("GET", kind.collection_path(namespace), query=query, verb="list", what=str(kind))
            items.extend(page.get("items") or [])
            metadata = page.get("metadata") or {}
            continue_token = metadata.get("continue")
            if not continue_token:
                return ListResult(items=items, resource_version=str(metadata.get("resourceVersion", "")))

    def list_node_metrics(self) -> list[JsonObject]:
        """Every NodeMetrics of `metrics.k8s.io/v1beta1` (metrics-server's aggregated API),
        through the client's `CustomObjectsApi`: `NotFound` when nobody serves that API."""
        what = f"{METRICS_GROUP}/{METRICS_VERSION} nodes"
        try:
            answer = k8s.CustomObjectsApi(self._api).list_cluster_custom_object(
                METRICS_GROUP, METRICS_VERSION, "nodes", _request_timeout=DEFAULT_TIMEOUT_S
            )
        except ApiException as error:
            raise _mapped(error, "list", what) from error
        except _TRANSPORT_ERRORS as error:
            raise Unavailable(f"{type(error).__name__}: {error}", verb="list", what=what) from error
        items = answer.get("items") if isinstance(answer, dict) else None
        return [item for item in items or [] if isinstance(item, dict)]

    def watch(self, kind: ResourceKind, *, resource_version: str, timeout_s: int = 300) -> Iterator[WatchEvent]:
        """Events after `resource_version`, with bookmarks, until the server ends the stream.

        Raises `Gone` when the version is too old (the caller relists), `Unavailable` when
        the stream is cut, and any other `ApiError` the server sends as an ERROR event.
        """
        query = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_s)),
        ]
        if kind.field_selector:
            query.append(("fieldSelector", kind.field_selector))
        response = self._request(
            "GET", kind.collection_path(), query=query, timeout_s=(5.0, timeout_s + 30.0), verb="watch", what=str(kind)
        )
        with self._lock:
            self._streams.add(response)
        try:
            for line in _lines(response):
                event = json.loads(line)
                event_type = event.get("type")
                obj = event.get("object") or {}
                if event_type == "ERROR":
                    code = int(obj.get("code") or 500)
                    message = obj.get("message") or "watch error"
                    if code == 410:
                        raise Gone(message, verb="watch", what=str(kind), status=410)
                    raise error_for_status(code, message, verb="watch", what=str(kind))
                yield WatchEvent(type=str(event_type), object=obj)
        except ApiError:
            raise
        except _TRANSPORT_ERRORS as error:
            raise Unavailable(f"watch stream cut: {type(error).__name__}: {error}", verb="watch", what=str(kind)) from error
        except ValueError as error:  # a line cut in half
            raise Unavailable(f"watch stream garbled: {error}", verb="watch", what=str(kind)) from error
        finally:
            with self._lock:
                self._streams.discard(response)
            response.close()  # never back to the pool: a stream left early still has bytes in flight

    def served(self, kinds: Sequence[ResourceKind]) -> set[ResourceKind]:
        """Which of `kinds` the server serves now (discovery per group version)."""
        found: set[ResourceKind] = set()
        by_group_version: dict[str, list[ResourceKind]] = {}
        for kind in kinds:
            by_group_version.setdefault(kind.group_version_path, []).append(kind)
        for path, group_kinds in by_group_version.items():
            try:
                resources = self._json("GET", path, verb="discover", what=path).get("resources") or []
            except NotFound:
                continue
            plurals = {resource.get("name") for resource in resources}
            found.update(kind for kind in group_kinds if kind.plural in plurals)
        return found

    # ---- writing ----

    def create(self, kind: ResourceKind, namespace: str | None, body: Mapping[str, Any]) -> JsonObject:
        name = (body.get("metadata") or {}).get("name") or (body.get("metadata") or {}).get("generateName", "")
        return self._json(
            "POST", kind.collection_path(namespace), body=dict(body), verb="create", what=f"{kind} {_ref(namespace, name)}"
        )

    def replace(
        self, kind: ResourceKind, namespace: str | None, name: str, body: Mapping[str, Any], *, subresource: str | None = None
    ) -> JsonObject:
        """PUT of the object or of its `subresource` ("status"); `metadata.resourceVersion` in
        `body` makes it conditional (409 when it moved)."""
        return self._json(
            "PUT",
            kind.object_path(namespace, name, subresource),
            body=dict(body),
            verb="update",
            what=f"{kind}{'/' + subresource if subresource else ''} {_ref(namespace, name)}",
        )

    def patch(
        self,
        kind: ResourceKind,
        namespace: str | None,
        name: str,
        body: Mapping[str, Any],
        *,
        subresource: str | None = None,
        strategic: bool = False,
    ) -> JsonObject:
        """A JSON merge patch (RFC 7386) of the object or of its `subresource` ("status");
        `strategic`: a strategic merge patch instead (built-in kinds only), whose lists merge
        by their key — a pod's conditions by type, so one condition is written without the others."""
        return self._json(
            "PATCH",
            kind.object_path(namespace, name, subresource),
            body=dict(body),
            content_type=STRATEGIC_MERGE_PATCH if strategic else MERGE_PATCH,
            verb="patch",
            what=f"{kind}{'/' + subresource if subresource else ''} {_ref(namespace, name)}",
        )

    def delete(
        self, kind: ResourceKind, namespace: str | None, name: str, *, grace_period_s: int | None = None
    ) -> None:
        body: JsonObject = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_s is not None:
            body["gracePeriodSeconds"] = grace_period_s
        _finish(self._request("DELETE", kind.object_path(namespace, name), body=body, verb="delete", what=f"{kind} {_ref(namespace, name)}"))

    def bind(
        self, namespace: str, name: str, node: str, *,
        annotations: Mapping[str, str] = {}, lease: WriteLease | None = None,
    ) -> None:
        """POST pods/binding: assign the pod to `node`, and write `annotations` onto it in the
        same update (the API server copies a Binding's annotations to the pod). 409
        `Conflict` when it is already assigned. `lease` as for `_request`."""
        metadata: JsonObject = {"name": name, "namespace": namespace}
        if annotations:
            metadata["annotations"] = dict(annotations)
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": metadata, "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        _finish(self._request(
            "POST", PODS.object_path(namespace, name, "binding"), body=body, verb="bind", what=f"{namespace}/{name} to {node}",
            lease=lease,
        ))

    def evict(self, namespace: str, name: str, *, lease: WriteLease | None = None) -> None:
        """The Eviction API (respects PodDisruptionBudgets: a refusal is `TooManyRequests`);
        `lease` as for `_request`."""
        version = self._policy_version()
        body = {
            "apiVersion": version,
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        _finish(self._request(
            "POST", PODS.object_path(namespace, name, "eviction"), body=body, verb="evict", what=f"{namespace}/{name}",
            lease=lease,
        ))

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        _finish(self._request(
            "POST", EVENTS.collection_path(namespace), body=dict(body), verb="create", what=f"event in {namespace}"
        ))

    # ---- leases ----

    def get_lease(self, namespace: str, name: str) -> JsonObject | None:
        try:
            return self.get(LEASES, namespace, name)
        except NotFound:
            return None

    # ---- discovery ----

    def _policy_version(self) -> str:
        with self._lock:
            if self._eviction_version is None:
                try:
                    groups = self._json("GET", "/apis/policy", verb="discover", what="policy")
                    versions = {v.get("groupVersion") for v in groups.get("versions") or []}
                except NotFound:
                    versions = set()
                self._eviction_version = "policy/v1" if "policy/v1" in versions else "policy/v1beta1"
                log.info("evictions use %s", self._eviction_version)
            return self._eviction_version


# ---- helpers ----


def _ref(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def _finish(response: Any) -> None:
    """Read what is left of the answer, then hand the connection back: a connection returned
    with unread bytes would feed them to the next request as its status line."""
    try:
        response.drain_conn()
    except _TRANSPORT_ERRORS:
        pass
    response.release_conn()


def _lines(response: Any) -> Iterator[bytes]:
    """Newline-delimited JSON of a watch, whatever the chunk boundaries."""
    buffer = bytearray()
    for chunk in response.stream(amt=None, decode_content=False):
        buffer.extend(chunk)
        while True:
            end = buffer.find(b"\n")
            if end < 0:
                break
            line = bytes(buffer[:end]).strip()
            del buffer[: end + 1]
            if line:
                yield line
    if buffer.strip():
        yield bytes(buffer).strip()


def _status_message(text: str) -> str:
    """The `message` of a `Status` body, else the text itself (cut short)."""
    try:
        body = json.loads(text)
    except ValueError:
        return text.strip()[:300]
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return text.strip()[:300]


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    value = (headers or {}).get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _mapped(error: ApiException, verb: str, what: str) -> ApiError:
    if error.status in (None, 0):
        return Unavailable(str(error.reason or error), verb=verb, what=what)
    status = int(error.status)
    if status < 400:
        return Invalid(f"unexpected HTTP {status}", verb=verb, what=what, status=status)
    return error_for_status(
        status, _status_message(error.body or "") or str(error.reason), verb=verb, what=what, retry_after_s=_retry_after(error.headers)
    )
