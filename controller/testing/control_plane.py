"""A real Kubernetes control plane on this machine: etcd + kube-apiserver, no kubelets.

What envtest (controller-runtime) does, in Python: start etcd and kube-apiserver on free
127.0.0.1 ports in a temporary directory, with generated service-account keys and a static
token file, wait for `/readyz`, write kubeconfigs, install the CRDs of `deploy/crds/` and the
DRA kinds of `deploy/dra-crds/` (resource.k8s.io/v1, which v1.20 does not serve), and
tear it all down on `stop()`. The test suite, `batchplace demo --live` and the benchmark
all run against this class, so what they exercise is a real API server — admission,
optimistic concurrency, watch bookmarks, 409s and 410s — not a fake.

Binaries: `etcd` from Debian's `etcd-server`; `kube-apiserver` v1.20.2 built from Debian's
`kubernetes` source package by `scripts/build-kube-apiserver.sh`, which this class runs
when no binary is given (it returns in well under a second once the binary is cached
under `${BATCHPLACE_CACHE:-~/.cache/batchplace}`, and takes some minutes the first time).
`BATCHPLACE_KUBE_APISERVER` names a binary to use instead.

Tokens (`--token-auth-file`): `admin_token` is in group `system:masters`;
`controller_token` is the user `system:serviceaccount:batchplace-system:batchplace`, which
has no rights until `deploy/rbac.yaml` (or a test) grants them — so a test can prove the
ClusterRole holds exactly the verbs the controller uses; `manager_token` is the user
`system:serviceaccount:batchplace-system:batchplace-manager` (same groups), the multi-cluster
manager's identity, with no rights until `deploy/multicluster/manager-rbac.yaml` (in a
manager) or `worker-rbac.yaml` (in a worker) grants them. `write_kubeconfig(path,
token=...)` writes a kubeconfig for any of the three. Authorization is RBAC.

Not promised: anything a kubelet, the scheduler or the controller-manager would do. Pods
stay Pending, no garbage collection, no namespace deletion finalization, evicted pods stay
Terminating until someone deletes them (see `controller.testing.kubelet`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import yaml

from controller.testing.files import BUILD_SCRIPT, CRDS_DIR, DRA_CRDS_DIR, RBAC_FILE
from controller.timing import wait_in_main_thread

__all__ = [
    "ControlPlane",
    "ControlPlaneError",
    "REPO_ROOT",
    "CONTROLLER_USER",
    "MANAGER_USER",
    "find_kube_apiserver",
    "free_port",
]

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The checkout, for what only runs there (tests, scripts/); what an installed package reads is in `files`."""
CONTROLLER_NAMESPACE = "batchplace-system"
CONTROLLER_USER = f"system:serviceaccount:{CONTROLLER_NAMESPACE}:batchplace"
MANAGER_USER = f"system:serviceaccount:{CONTROLLER_NAMESPACE}:batchplace-manager"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"


class ControlPlaneError(RuntimeError):
    """The control plane could not be built or started; the message says which step and why."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def find_kube_apiserver() -> Path:
    """`BATCHPLACE_KUBE_APISERVER`, else the cached build (built now when missing)."""
    named = os.environ.get("BATCHPLACE_KUBE_APISERVER")
    if named:
        if not os.access(named, os.X_OK) or Path(named).is_dir():
            raise ControlPlaneError(f"BATCHPLACE_KUBE_APISERVER={named}: not an executable file")
        return Path(named)
    started = time.monotonic()
    result = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-25:])
        raise ControlPlaneError(
            f"{BUILD_SCRIPT.name} failed (exit {result.returncode}); BATCHPLACE_KUBE_APISERVER=PATH uses a "
            f"kube-apiserver you have instead:\n{tail}"
        )
    binary = Path(result.stdout.strip().splitlines()[-1])
    log.info("kube-apiserver ready at %s (%.1f s)", binary, time.monotonic() - started)
    return binary


class ControlPlane:
    """etcd + kube-apiserver on 127.0.0.1. Use as a context manager, or `start()` / `stop()`."""

    def __init__(
        self,
        *,
        workdir: Path | None = None,
        apiserver_binary: Path | None = None,
        etcd_binary: str = "etcd",
        crds_dir: Path | None = CRDS_DIR,
        dra_crds_dir: Path | None = DRA_CRDS_DIR,
        extra_apiserver_args: Sequence[str] = (),
    ) -> None:
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="batchplace-cp-", dir=_fast_tmp()))
        self._apiserver_binary = apiserver_binary
        self._etcd_binary = etcd_binary
        self._crds_dir = crds_dir
        self._dra_crds_dir = dra_crds_dir
        self._extra_args = tuple(extra_apiserver_args)
        self._etcd: subprocess.Popen[bytes] | None = None
        self._apiserver: subprocess.Popen[bytes] | None = None
        self._apiserver_start: tuple[Path, str] | None = None  # (binary, etcd URL), for a restart
        self.port = 0
        self.admin_token = os.urandom(16).hex()
        self.controller_token = os.urandom(16).hex()
        self.manager_token = os.urandom(16).hex()

    # ---- addresses and credentials ----

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_file(self) -> Path:
        """The API server's self-signed serving certificate (valid for 127.0.0.1)."""
        return self.workdir / "certs" / "apiserver.crt"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    def write_kubeconfig(self, path: Path, *, token: str, server: str | None = None) -> Path:
        """A kubeconfig for `token` at `server` (the API server, or a proxy in front of it)."""
        server = server or self.url
        cluster: dict[str, object] = {"server": server}
        if server.startswith("https://"):
            cluster["certificate-authority"] = str(self.ca_file)
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "local", "cluster": cluster}],
            "users": [{"name": "user", "user": {"token": token}}],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": "user"}}],
            "current-context": "local",
        }
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        path.chmod(0o600)
        return path

    # ---- lifecycle ----

    def __enter__(self) -> "ControlPlane":
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self, *, timeout_s: float = 90.0) -> None:
        binary = self._apiserver_binary or find_kube_apiserver()
        if shutil.which(self._etcd_binary) is None:
            raise ControlPlaneError(f"{self._etcd_binary!r} not found on PATH: install etcd (Debian's etcd-server; {BUILD_SCRIPT.name} installs it)")
        try:
            self._write_credentials()
            etcd_url = self._start_etcd()
            self._start_apiserver(binary, etcd_url)
            self._wait_ready(timeout_s)
            self.write_kubeconfig(self.admin_kubeconfig, token=self.admin_token)
            for crds in (self._crds_dir, self._dra_crds_dir):
                if crds is not None:
                    self.install_crds(sorted(crds.glob("*.yaml")))
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for process in (self._apiserver, self._etcd):
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)
        self._apiserver = self._etcd = None
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def kill_apiserver(self) -> None:
        """SIGKILL kube-apiserver (etcd keeps running): open connections are cut, in-flight
        requests may or may not have been written — the outage a fault test needs."""
        if self._apiserver is not None:
            self._apiserver.kill()
            self._apiserver.wait(timeout=10)

    def restart_apiserver(self, *, timeout_s: float = 90.0) -> None:
        """Start kube-apiserver again on the same port, over the same etcd and certificates."""
        if self._apiserver_start is None:
            raise ControlPlaneError("restart_apiserver before start")
        self._start_apiserver(*self._apiserver_start)
        self._wait_ready(timeout_s)

    def is_running(self) -> bool:
        return all(p is not None and p.poll() is None for p in (self._etcd, self._apiserver))

    def pids(self) -> dict[str, int]:
        """The running processes' ids by name, so a benchmark can read their CPU time."""
        named = (("etcd", self._etcd), ("kube-apiserver", self._apiserver))
        return {name: process.pid for name, process in named if process is not None}

    # ---- steps ----

    def _write_credentials(self) -> None:
        (self.workdir / "certs").mkdir(parents=True, exist_ok=True)
        key = self.workdir / "sa.key"
        _run(["openssl", "genrsa", "-out", str(key), "2048"], "generating the service-account key")
        _run(["openssl", "rsa", "-in", str(key), "-pubout", "-out", str(self.workdir / "sa.pub")], "deriving its public key")
        self._write_front_proxy_credentials()
        groups = f"system:serviceaccounts,system:serviceaccounts:{CONTROLLER_NAMESPACE}"
        (self.workdir / "tokens.csv").write_text(
            f'{self.admin_token},admin,admin,"system:masters"\n'
            f'{self.controller_token},{CONTROLLER_USER},batchplace-uid,"{groups}"\n'
            f'{self.manager_token},{MANAGER_USER},batchplace-manager-uid,"{groups}"\n',
            encoding="utf-8",
        )

    def _write_front_proxy_credentials(self) -> None:
        """A front-proxy CA and the client certificate it signs: the API server presents it
        when it proxies to an aggregated API (`controller.testing.metrics_api`), and trusts
        the user it names in request headers — kubeadm's front-proxy pair, for one machine."""
        certs = self.workdir / "certs"
        ca_key, ca_crt = certs / "front-proxy-ca.key", certs / "front-proxy-ca.crt"
        key, csr, crt = certs / "front-proxy-client.key", certs / "front-proxy-client.csr", certs / "front-proxy-client.crt"
        _run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca_crt),
              "-days", "2", "-subj", "/CN=front-proxy-ca"], "generating the front-proxy CA")
        _run(["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
              "-subj", "/CN=front-proxy-client"], "generating the front-proxy client key")
        _run(["openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key), "-CAcreateserial",
              "-out", str(crt), "-days", "2"], "signing the front-proxy client certificate")

    def _start_etcd(self) -> str:
        client_port, peer_port = free_port(), free_port()
        client_url, peer_url = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
        args = [
            self._etcd_binary,
            "--name=batchplace",
            f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=batchplace={peer_url}",
            "--log-level=warn",
            "--quota-backend-bytes=4294967296",
        ]
        self._etcd = _spawn(args, self.workdir / "etcd.log")
        return client_url

    def _start_apiserver(self, binary: Path, etcd_url: str) -> None:
        self._apiserver_start = (binary, etcd_url)
        self.port = self.port or free_port()
        args = [
            str(binary),
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            "--insecure-port=0",
            f"--cert-dir={self.workdir / 'certs'}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={self.workdir / 'sa.pub'}",
            f"--service-account-signing-key-file={self.workdir / 'sa.key'}",
            f"--token-auth-file={self.workdir / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            # No controller-manager: nobody would make service-account tokens, nor lift the
            # not-ready taint TaintNodesByCondition puts on every new Node.
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
            "--allow-privileged=true",
            "--max-requests-inflight=2000",
            "--max-mutating-requests-inflight=1000",
            "--enable-priority-and-fairness=false",
            "--watch-cache=true",
            # The aggregation layer (APIService objects, e.g. metrics.k8s.io): proxied requests carry
            # this client certificate and the user in these headers.
            f"--requestheader-client-ca-file={self.workdir / 'certs' / 'front-proxy-ca.crt'}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={self.workdir / 'certs' / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={self.workdir / 'certs' / 'front-proxy-client.key'}",
            "--v=0",
            *self._extra_args,
        ]
        self._apiserver = _spawn(args, self.workdir / "kube-apiserver.log")

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # the serving cert does not exist until the server made it
        last_error = "no answer yet"
        while time.monotonic() < deadline:
            for name, process in (("etcd", self._etcd), ("kube-apiserver", self._apiserver)):
                if process is None or process.poll() is not None:
                    raise ControlPlaneError(f"{name} exited during start-up; last lines:\n{self._log_tail(name)}")
            request = urllib.request.Request(f"{self.url}/readyz", headers={"Authorization": f"Bearer {self.admin_token}"})
            try:
                with urllib.request.urlopen(request, timeout=2, context=context) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError) as error:
                last_error = str(error)
            time.sleep(0.2)
        raise ControlPlaneError(f"kube-apiserver not ready after {timeout_s:.0f} s ({last_error}):\n{self._log_tail('kube-apiserver')}")

    def _log_tail(self, name: str, lines: int = 20) -> str:
        path = self.workdir / f"{name}.log"
        if not path.exists():
            return "(no log)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    # ---- CRDs ----

    def install_crds(self, paths: Sequence[Path], *, timeout_s: float = 30.0) -> None:
        """Create each CRD and wait until the API server serves it (condition Established)."""
        names = []
        for path in paths:
            for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
                if not document:
                    continue
                self.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", document, ok=(201, 409))
                names.append(document["metadata"]["name"])
        deadline = time.monotonic() + timeout_s
        for name in names:
            while True:
                crd = self.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
                # `conditions` is null until the API server first looks at the CRD
                conditions = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
                if conditions.get("Established") == "True":
                    break
                if time.monotonic() > deadline:
                    raise ControlPlaneError(f"CRD {name} not established after {timeout_s:.0f} s: {conditions}")
                time.sleep(0.1)

    def apply_yaml(self, path: Path) -> None:
        """Create the objects of a manifest (the kinds of `_MANIFEST_PATHS`); existing ones are kept."""
        for document in yaml.safe_load_all(Path(path).read_text(encoding="utf-8")):
            if not document:
                continue
            base, namespaced = _MANIFEST_PATHS[(document["apiVersion"], document["kind"])]
            namespace = document["metadata"].get("namespace", "default")
            collection = base.format(namespace=namespace) if namespaced else base
            self.request("POST", collection, document, ok=(201, 409))

    def request(self, method: str, path: str, body: object = None, *, ok: Sequence[int] = (200, 201)) -> dict:
        """A raw admin request (set-up only; the controller talks through `controller.kube`)."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.admin_token}", "Content-Type": "application/json"},
        )
        context = ssl.create_default_context(cafile=str(self.ca_file))
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            if error.code in ok:
                return json.loads(error.read() or b"{}")
            raise ControlPlaneError(f"{method} {path}: HTTP {error.code}: {error.read()[:500]!r}") from None


_MANIFEST_PATHS: dict[tuple[str, str], tuple[str, bool]] = {
    ("v1", "Namespace"): ("/api/v1/namespaces", False),
    ("v1", "ServiceAccount"): ("/api/v1/namespaces/{namespace}/serviceaccounts", True),
    ("v1", "ConfigMap"): ("/api/v1/namespaces/{namespace}/configmaps", True),
    ("v1", "Service"): ("/api/v1/namespaces/{namespace}/services", True),
    ("apps/v1", "Deployment"): ("/apis/apps/v1/namespaces/{namespace}/deployments", True),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): ("/apis/rbac.authorization.k8s.io/v1/clusterroles", False),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", False),
    ("rbac.authorization.k8s.io/v1", "Role"): ("/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles", True),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ("/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings", True),
    ("policy/v1beta1", "PodDisruptionBudget"): ("/apis/policy/v1beta1/namespaces/{namespace}/poddisruptionbudgets", True),
}


def _fast_tmp() -> str | None:
    """etcd fsyncs on every write; tmpfs keeps that cheap when the machine has one."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def _spawn(args: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    log_file = log_path.open("wb")
    try:
        return subprocess.Popen(args, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    finally:
        log_file.close()


def _run(args: list[str], what: str) -> None:
    result = subprocess.run(args, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ControlPlaneError(f"{what} failed: {' '.join(args)}: {result.stderr.strip()}")


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m controller.testing.control_plane DIR`: start one, write `admin.kubeconfig` and
    `controller.kubeconfig` (batchplace's ServiceAccount, deploy/rbac.yaml applied) into DIR,
    print `ready <url> etcd=<pid> kube-apiserver=<pid>`, and run until stdin closes or SIGTERM — for tools that must not import
    this package (the benchmark in `experiments`)."""
    import argparse
    import signal
    import sys
    import threading

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    args.directory.mkdir(parents=True, exist_ok=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    with ControlPlane() as plane:
        plane.apply_yaml(RBAC_FILE)
        plane.write_kubeconfig(args.directory / "admin.kubeconfig", token=plane.admin_token)
        plane.write_kubeconfig(args.directory / "controller.kubeconfig", token=plane.controller_token)
        pids = " ".join(f"{name}={pid}" for name, pid in plane.pids().items())
        print(f"ready {plane.url} {pids}", flush=True)
        threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
        wait_in_main_thread(done)


if __name__ == "__main__":
    main()
