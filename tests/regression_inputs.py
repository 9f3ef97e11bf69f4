"""Inputs that once broke batchplace, as the tests read them.

`tests/data/regressions/` holds the files themselves (kept in the repository, so a clone
tests them); each test that reads one names what went wrong with it.
"""

from __future__ import annotations

import gzip
from functools import cache
from pathlib import Path

from models.loaders import load_snapshot_yaml_text
from models.snapshot import Snapshot

REGRESSIONS_DIR = Path(__file__).resolve().parent / "data" / "regressions"
EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"

OPENB_LAST_BATCH = REGRESSIONS_DIR / "openb-seed42-k64-last-batch.yaml.gz"
"""The openb trace (FGD protocol, seed 42) at its last 64-pod batch: 1,213 nodes, 6,208
running pods, 50 pending single-pod PodGroups. CP-SAT aborted the process on it
(`std::bad_alloc` with 2 workers)."""
OPENB_PENDING = 50


@cache
def openb_last_batch_text() -> str:
    return gzip.decompress(OPENB_LAST_BATCH.read_bytes()).decode("utf-8")


@cache
def openb_last_batch() -> Snapshot:
    return load_snapshot_yaml_text(openb_last_batch_text(), source=OPENB_LAST_BATCH.name).snapshot


BEST_EFFORT_REPLICAS = 20


@cache
def best_effort_job_text() -> str:
    """The quick-start's three k3d nodes and a vcjob of 20 replicas whose pods ask for
    nothing (BestEffort). CP-SAT's patterns grew without end on it: past 5 GB in 20 s."""
    hello = (EXAMPLES_DIR / "hello-volcano-job.yaml").read_text(encoding="utf-8")
    nodes = hello.split("---\napiVersion: scheduling.volcano.sh")[0]
    job = f"""---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: best-effort-job
  namespace: default
spec:
  minAvailable: {BEST_EFFORT_REPLICAS}
  schedulerName: volcano
  tasks:
    - replicas: {BEST_EFFORT_REPLICAS}
      name: worker
      template:
        spec:
          containers:
            - name: worker
              image: busybox:1.36
              command: ["sleep", "600"]
          restartPolicy: Never
"""
    return nodes + job


def best_effort_job() -> Snapshot:
    return load_snapshot_yaml_text(best_effort_job_text(), source="best-effort-job.yaml").snapshot
