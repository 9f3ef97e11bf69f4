"""A NodeMetrics API (metrics.k8s.io/v1beta1) on this machine, registered with the test API server.

What metrics-server does for the aggregation layer, in a few lines: an HTTPS server on a
free 127.0.0.1 port answering discovery (`/apis/metrics.k8s.io/v1beta1`), the NodeMetrics
list and single NodeMetrics, from readings a test sets (`set_usage`). `register` creates
what makes the API server route `/apis/metrics.k8s.io/v1beta1/...` to it: a Service of
type ExternalName naming 127.0.0.1 on that port (the aggregator resolves such a Service to
its name, so no kube-proxy is needed) and an APIService for the group and version, then
waits for the APIService's condition Available and for the route to answer. The API server reaches it with the
front-proxy client certificate `ControlPlane` configures; this server does not check it,
and the APIService skips TLS verification of this server's self-signed certificate.

Not promised: the pods half of metrics-server, or authorization of the proxied user.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from controller.testing.control_plane import ControlPlane, ControlPlaneError, _run

__all__ = ["NodeMetricsServer", "register", "unregister"]

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
BASE = f"/apis/{GROUP}/{VERSION}"


class NodeMetricsServer:
    """HTTPS NodeMetrics on 127.0.0.1; `set_usage(node, cpu="3", memory="4Gi")` sets a reading."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._usage: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.requests: list[str] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return int(self._server.server_address[1])

    def set_usage(self, node: str, *, cpu: str, memory: str, at: datetime | None = None, window: str = "30s") -> None:
        moment = (at or datetime.now(timezone.utc)).astimezone(timezone.utc)
        with self._lock:
            self._usage[node] = {
                "metadata": {"name": node, "creationTimestamp": None},
                "timestamp": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "window": window,
                "usage": {"cpu": cpu, "memory": memory},
            }

    def forget(self, node: str) -> None:
        with self._lock:
            self._usage.pop(node, None)

    def __enter__(self) -> "NodeMetricsServer":
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        key, crt = self.workdir / "metrics.key", self.workdir / "metrics.crt"
        _run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(crt),
              "-days", "2", "-subj", "/CN=127.0.0.1"], "generating the metrics server's certificate")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(crt), str(key))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, name="node-metrics", daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def answer(self, path: str) -> tuple[int, Mapping[str, Any]]:
        path = path.split("?", 1)[0].rstrip("/")
        self.requests.append(path)
        with self._lock:
            items = [dict(item) for _, item in sorted(self._usage.items())]
        if path == BASE:
            return 200, {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": f"{GROUP}/{VERSION}",
                "resources": [{"name": "nodes", "singularName": "", "namespaced": False, "kind": "NodeMetrics", "verbs": ["get", "list"]}],
            }
        if path == f"{BASE}/nodes":
            return 200, {"kind": "NodeMetricsList", "apiVersion": f"{GROUP}/{VERSION}", "metadata": {}, "items": [
                {"kind": "NodeMetrics", "apiVersion": f"{GROUP}/{VERSION}", **item} for item in items
            ]}
        if path.startswith(f"{BASE}/nodes/"):
            name = path.rsplit("/", 1)[1]
            for item in items:
                if item["metadata"]["name"] == name:
                    return 200, {"kind": "NodeMetrics", "apiVersion": f"{GROUP}/{VERSION}", **item}
            return 404, _status(404, f'nodemetrics.metrics.k8s.io "{name}" not found')
        return 404, _status(404, "not found")


def _status(code: int, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code,
            "reason": "NotFound" if code == 404 else ""}


def _handler(server: NodeMetricsServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server protocol
            code, body = server.answer(self.path)
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            return

    return Handler


def register(plane: ControlPlane, server: NodeMetricsServer, *, namespace: str = "kube-system", timeout_s: float = 60.0) -> None:
    """Route metrics.k8s.io/v1beta1 of `plane` to `server`; wait until the APIService is Available."""
    name = "metrics-server"
    plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                  ok=(201, 409))
    plane.request("DELETE", f"/api/v1/namespaces/{namespace}/services/{name}", ok=(200, 404))
    plane.request("POST", f"/api/v1/namespaces/{namespace}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
        "spec": {"type": "ExternalName", "externalName": "127.0.0.1",
                 "ports": [{"name": "https", "port": server.port, "protocol": "TCP"}]},
    })
    service_name = f"{VERSION}.{GROUP}"
    plane.request("DELETE", f"/apis/apiregistration.k8s.io/v1/apiservices/{service_name}", ok=(200, 404))
    plane.request("POST", "/apis/apiregistration.k8s.io/v1/apiservices", {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": service_name},
        "spec": {"group": GROUP, "version": VERSION, "service": {"namespace": namespace, "name": name, "port": server.port},
                 "insecureSkipTLSVerify": True, "groupPriorityMinimum": 100, "versionPriority": 100},
    })
    deadline = time.monotonic() + timeout_s
    conditions: dict[str, Any] = {}
    while time.monotonic() < deadline:
        found = plane.request("GET", f"/apis/apiregistration.k8s.io/v1/apiservices/{service_name}")
        conditions = {c["type"]: c for c in found.get("status", {}).get("conditions", [])}
        if conditions.get("Available", {}).get("status") == "True":
            break
        time.sleep(0.2)
    else:
        raise ControlPlaneError(f"APIService {service_name} not Available after {timeout_s:.0f} s: {conditions}")
    # Available comes a moment before the API server routes the group: wait for the route too.
    while True:
        try:
            plane.request("GET", f"{BASE}/nodes")
            return
        except ControlPlaneError as error:
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"{BASE} not routed after {timeout_s:.0f} s: {error}") from None
            time.sleep(0.2)


def unregister(plane: ControlPlane) -> None:
    plane.request("DELETE", f"/apis/apiregistration.k8s.io/v1/apiservices/{VERSION}.{GROUP}", ok=(200, 404))
