"""The files the demos and the local control plane read at run time, found in the package.

`batchplace demo` solves the seed examples, `demo --live` also applies Volcano's CRDs and
batchplace's RBAC and may build kube-apiserver: those files must be there wherever the
package is installed (a wheel in a venv, the container image), not only in a checkout. In
the repository they live where users know them — `examples/`, `deploy/`,
`scripts/build-kube-apiserver.sh` — and this package holds symbolic links to them, which
the wheel build follows (package data in pyproject.toml), so each file has one copy in
the repository and one in the wheel.

`importlib.resources` finds the package's directory. It is a directory on disk: the build
script is run by bash, and pip installs wheels unpacked.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["EXAMPLES_DIR", "DEPLOY_DIR", "CRDS_DIR", "DRA_CRDS_DIR", "RBAC_FILE", "BUILD_SCRIPT"]


def _package_dir() -> Path:
    root = files(__package__)
    if not isinstance(root, Path):
        raise RuntimeError(f"{__package__} must be installed as a directory (not zipped): it runs a shell script from there")
    return root


EXAMPLES_DIR = _package_dir() / "examples"
"""The seed scenarios (examples/ in the repository)."""
DEPLOY_DIR = _package_dir() / "deploy"
"""The manifests a cluster gets (deploy/ in the repository): CRDs and RBAC are shipped."""
CRDS_DIR = DEPLOY_DIR / "crds"
DRA_CRDS_DIR = DEPLOY_DIR / "dra-crds"
"""resource.k8s.io/v1 as CRDs, for the local control plane only: its kube-apiserver (v1.20)
does not serve DRA, which Kubernetes 1.34+ serves itself."""
RBAC_FILE = DEPLOY_DIR / "rbac.yaml"
BUILD_SCRIPT = _package_dir() / "build-kube-apiserver.sh"
"""Builds and caches kube-apiserver when `BATCHPLACE_KUBE_APISERVER` names none."""
