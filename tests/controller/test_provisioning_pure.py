"""`controller.provisioning` without an API server: the request builder (podSets counted by
hand), which gangs get a request (solved by the real engines), and `reconcile`'s answer for
each condition the autoscaler writes."""

from __future__ import annotations

import shlex
import subprocess
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from batchplace.cli import app
from controller import provisioning as prov
from controller.observe import ClusterView, PodGroupRef, observe
from controller.testing.control_plane import REPO_ROOT
from models.snapshot import PodGroupKey, PodKey
from tests.builders import solve_checked
from tests.controller._controller_builders import node, pod, pod_group

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
REF = PodGroupRef(key=PodGroupKey("ns/train"), flavor="volcano", namespace="ns", name="train", uid="uid-pg-train", status={})


def _gang(*pods: dict[str, Any]) -> prov.WaitingGang:
    return prov.WaitingGang(ref=REF, pods=tuple(pods), why="capacity: short of gpu")


def _request(attempt: int = 1, **true: str) -> dict[str, Any]:
    """Our request for REF, as the API server returns it, with conditions type → lastTransitionTime (True)."""
    request, _ = prov.build_request(_gang(pod("train-0", gpus=8)), class_name=prov.ATOMIC_SCALE_UP, attempt=attempt)
    conditions = [
        {"type": kind, "status": "True", "reason": "R", "message": "m", "lastTransitionTime": at} for kind, at in true.items()
    ]
    return {**request, "status": {"conditions": conditions}}


def _reconcile(requests: list[dict[str, Any]], *, gangs: dict[str, prov.WaitingGang] | None = None,
               pending: dict[str, dict[str, Any]] | None = None, now: datetime = NOW) -> prov.Reconciliation:
    pending = pending or {}
    return prov.reconcile(
        {REF.uid: _gang()} if gangs is None else gangs, requests, refs={REF.uid: REF},
        pending_pods={PodKey(k): v for k, v in pending.items()}, binding=set(),
        group_of={PodKey(k): REF.uid for k in pending}, class_name=prov.ATOMIC_SCALE_UP, backoff_s=60, now=now,
    )


def _annotated(name: str, request: str) -> dict[str, Any]:
    """A pending pod of the gang that consumes `request`."""
    member = pod(name)
    member["metadata"]["annotations"].update({prov.CONSUME_ANNOTATION: request, prov.CLASS_ANNOTATION: prov.ATOMIC_SCALE_UP})
    return member


def _at(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---- the builder ----


def test_one_template_per_pod_shape_counted_by_its_pods() -> None:
    ps = pod("train-ps-0", cpu="4")
    workers = [pod(f"train-worker-{i}", cpu="8", gpus=8) for i in range(3)]
    request, templates = prov.build_request(_gang(ps, *workers), class_name=prov.ATOMIC_SCALE_UP, attempt=2)
    assert request["metadata"]["name"] == "batchplace-train-2"
    assert request["spec"] == {
        "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
        "podSets": [
            {"podTemplateRef": {"name": "batchplace-train-2-t0"}, "count": 1},
            {"podTemplateRef": {"name": "batchplace-train-2-t1"}, "count": 3},
        ],
    }
    assert [t["metadata"]["name"] for t in templates] == ["batchplace-train-2-t0", "batchplace-train-2-t1"]
    worker_container = templates[1]["template"]["spec"]["containers"][0]
    assert worker_container["resources"]["requests"] == {"cpu": "8", "nvidia.com/gpu": "8"}
    owner = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "name": "train", "uid": "uid-pg-train"}
    for obj in (request, *templates):
        assert obj["metadata"]["ownerReferences"] == [owner]
        assert obj["metadata"]["namespace"] == "ns"
        assert obj["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "batchplace"}


@given(st.lists(st.tuples(st.sampled_from(["1", "4", "8"]), st.sampled_from([0, 1, 8])), min_size=1, max_size=40))
def test_every_pod_is_counted_once_in_the_podset_of_its_shape(shapes: list[tuple[str, int]]) -> None:
    pods = [pod(f"p-{index:02d}", cpu=cpu, gpus=gpus) for index, (cpu, gpus) in enumerate(shapes)]
    request, templates = prov.build_request(_gang(*pods), class_name=prov.ATOMIC_SCALE_UP, attempt=1)
    counts = {s["podTemplateRef"]["name"]: s["count"] for s in request["spec"]["podSets"]}
    assert list(counts) == [t["metadata"]["name"] for t in templates]
    by_shape = {}
    for template in templates:
        requests = template["template"]["spec"]["containers"][0]["resources"]["requests"]
        by_shape[(requests["cpu"], int(requests.get("nvidia.com/gpu", 0)))] = counts[template["metadata"]["name"]]
    assert by_shape == {shape: shapes.count(shape) for shape in set(shapes)}


def test_fields_the_api_server_fills_per_pod_do_not_split_a_shape() -> None:
    first, second = pod("w-0", gpus=8), pod("w-1", gpus=8)
    for index, member in enumerate((first, second)):
        member["spec"].update(nodeName="", hostname=f"w-{index}", volumes=[{"name": f"kube-api-access-{index}"}])
        member["spec"]["containers"][0]["volumeMounts"] = [{"name": f"kube-api-access-{index}", "mountPath": "/var"}]
    request, templates = prov.build_request(_gang(first, second), class_name=prov.CHECK_CAPACITY, attempt=1)
    assert request["spec"]["podSets"] == [{"podTemplateRef": {"name": "batchplace-train-1-t0"}, "count": 2}]
    assert "volumes" not in templates[0]["template"]["spec"]


def test_a_long_podgroup_name_gives_names_within_253_characters_and_apart() -> None:
    first, second = "a" * 250, "a" * 249 + "b"
    names = {prov.request_name(first, 1), prov.request_name(second, 1)}
    assert len(names) == 2 and all(len(name) + len("-t31") <= 253 for name in names)


# ---- which gangs ----


def _observed(queue_capability: dict[str, str] | None) -> tuple[Any, Any]:
    """A 16-GPU gang (2 pods × 8 GPUs) on one 8-GPU node, in queue q (capability given or none)."""
    group = pod_group("big", min_member=2, queue="q")
    members = [pod(f"big-{i}", group="big", gpus=8) for i in range(2)]
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"},
             "spec": {"weight": 1, **({"capability": queue_capability} if queue_capability else {})}}
    view = ClusterView(nodes=(node("n0", cpu=64, memory="256Gi", gpus=8),), volcano_pod_groups=(group,),
                       pods=tuple(members), queues=(queue,))
    observation = observe(view, scheduler_names=("batchplace",))
    return observation, {f"ns/{m['metadata']['name']}": m for m in members}


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_a_gang_short_of_gpus_waits_for_capacity_and_asks_for_both_pods(engine: str) -> None:
    observation, raw = _observed(None)
    gangs = prov.waiting_for_capacity(observation, solve_checked(observation.snapshot, engine), raw)
    (gang,) = gangs.values()
    assert gang.ref.name == "big" and [p["metadata"]["name"] for p in gang.pods] == ["big-0", "big-1"]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_a_gang_held_by_its_queue_capability_gets_no_request(engine: str) -> None:
    observation, raw = _observed({"nvidia.com/gpu": "8"})
    decision = solve_checked(observation.snapshot, engine)
    (outcome,) = decision.podgroups
    assert outcome.state == "pending" and any(reason.rule == "quota" for reason in outcome.reasons)
    assert prov.waiting_for_capacity(observation, decision, raw) == {}


# ---- reconcile ----


def test_a_waiting_gang_without_a_request_gets_attempt_1_and_its_pods_wait_for_it_to_exist() -> None:
    answer = _reconcile([], pending={"ns/train-0": pod("train-0")})
    assert [(c.gang.ref.name, c.attempt) for c in answer.creates] == [("train", 1)]
    assert (answer.annotations, answer.events) == ((), ())  # annotated once the request is read back
    listed = _reconcile([_request()], pending={"ns/train-0": pod("train-0")})
    assert listed.annotations == (prov.Annotate("ns", "train-0", "batchplace-train-1"),) and listed.creates == ()


def test_the_requested_event_names_the_request_its_class_and_the_pods() -> None:
    event = prov.requested_event(prov.Create(_gang(pod("train-0"), pod("train-1")), 3), class_name=prov.CHECK_CAPACITY)
    assert (event.kind, event.name, event.reason) == ("PodGroup", "train", "ProvisioningRequested")
    assert event.message == (
        "ProvisioningRequest ns/batchplace-train-3 (check-capacity.autoscaling.x-k8s.io) asks for 2 pods the cluster "
        "has no room for: capacity: short of gpu"
    )


def test_a_cycle_creates_at_most_its_share_and_new_attempts_first() -> None:
    refs = [PodGroupRef(key=PodGroupKey(f"ns/g{i:02d}"), flavor="volcano", namespace="ns", name=f"g{i:02d}",
                        uid=f"uid-{i:02d}", status={}) for i in range(25)]
    gangs = {ref.uid: prov.WaitingGang(ref=ref, pods=(pod(f"{ref.name}-0"),), why="") for ref in refs}
    revoked, _ = prov.build_request(gangs["uid-24"], class_name=prov.ATOMIC_SCALE_UP, attempt=1)
    revoked["status"] = {"conditions": [{"type": "CapacityRevoked", "status": "True", "lastTransitionTime": _at(1)}]}
    answer = prov.reconcile(gangs, [revoked], refs={ref.uid: ref for ref in refs}, pending_pods={}, binding=set(),
                            group_of={}, class_name=prov.ATOMIC_SCALE_UP, backoff_s=60, now=NOW)
    assert len(answer.creates) == 20
    assert (answer.creates[0].gang.ref.name, answer.creates[0].attempt) == ("g24", 2)
    assert [c.gang.ref.name for c in answer.creates[1:]] == [f"g{i:02d}" for i in range(19)]


def test_pods_already_annotated_are_not_written_again() -> None:
    answer = _reconcile([_request()], pending={"ns/train-0": _annotated("train-0", "batchplace-train-1")})
    assert answer == prov.Reconciliation()


def test_provisioned_says_so_and_keeps_the_request() -> None:
    answer = _reconcile([_request(Provisioned=_at(1))])
    assert (answer.creates, answer.deletes) == ((), ())
    assert [(e.type, e.reason) for e in answer.events] == [("Normal", "Provisioned")]


def test_failed_waits_its_backoff_then_a_new_attempt_replaces_it() -> None:
    soon = _reconcile([_request(Failed=_at(30))])
    assert (soon.creates, soon.deletes) == ((), ())
    assert [(e.type, e.reason) for e in soon.events] == [("Warning", "ProvisioningFailed")]
    later = _reconcile([_request(Failed=_at(61))], pending={"ns/train-0": _annotated("train-0", "batchplace-train-1")})
    assert [d.request["metadata"]["name"] for d in later.deletes] == ["batchplace-train-1"]
    assert [c.attempt for c in later.creates] == [2]
    assert later.annotations == ()  # not stripped then written again: named once the new request exists
    assert soon.events[0].message == later.events[0].message  # one Event per failure, however many cycles see it


def test_the_backoff_doubles_with_each_attempt() -> None:
    assert _reconcile([_request(3, Failed=_at(200))]).creates == ()  # 60 s × 2² = 240 s
    assert [c.attempt for c in _reconcile([_request(3, Failed=_at(241))]).creates] == [4]


@pytest.mark.parametrize("lost", ["CapacityRevoked", "BookingExpired"])
def test_capacity_lost_while_the_gang_waits_asks_again_at_once(lost: str) -> None:
    answer = _reconcile([_request(Provisioned=_at(600), **{lost: _at(1)})])
    assert [c.attempt for c in answer.creates] == [2] and len(answer.deletes) == 1


def test_a_gang_that_no_longer_waits_for_capacity_loses_its_request_and_its_pods_the_annotations() -> None:
    answer = _reconcile([_request()], gangs={}, pending={"ns/train-0": _annotated("train-0", "batchplace-train-1")})
    assert [d.why for d in answer.deletes] == ["its gang started or waits for another reason than capacity"]
    assert answer.creates == () and answer.annotations == (prov.Annotate("ns", "train-0", None),)


def test_a_request_whose_podgroup_is_gone_is_deleted() -> None:
    answer = prov.reconcile(
        {}, [_request()], refs={}, pending_pods={}, binding=set(), group_of={}, class_name=prov.ATOMIC_SCALE_UP,
        backoff_s=60, now=NOW,
    )
    assert [d.why for d in answer.deletes] == ["its PodGroup is gone"]


def test_an_annotation_someone_else_wrote_is_left_alone() -> None:
    assert _reconcile([], gangs={}, pending={"ns/train-0": _annotated("train-0", "their-request")}).annotations == ()


# ---- the flag ----


def test_a_class_that_is_no_dns_subdomain_is_one_line_naming_the_flag() -> None:
    result = CliRunner().invoke(app, ["controller", "--no-leader-elect", "--provisioning-class", "Atomic_ScaleUp"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--provisioning-class: 'Atomic_ScaleUp' is not a DNS subdomain name" in result.stderr


CONDITIONS = st.sampled_from([None, "Provisioned", "Failed", "CapacityRevoked", "BookingExpired", "Accepted"])


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3), CONDITIONS, st.integers(0, 600)), min_size=1, max_size=8))
def test_pods_name_only_requests_that_exist_and_every_waiting_gang_has_or_gets_one(
    cases: list[tuple[bool, int, str | None, int]]
) -> None:
    """Per gang: does it wait for capacity; its request's attempt (0: none); the request's one
    True condition; seconds since it turned True."""
    refs, gangs, requests, pending, group_of = {}, {}, [], {}, {}
    for index, (waits, attempt, condition, age_s) in enumerate(cases):
        ref = PodGroupRef(key=PodGroupKey(f"ns/g{index}"), flavor="xk8s", namespace="ns", name=f"g{index}",
                          uid=f"uid-{index}", status={})
        refs[ref.uid] = ref
        member = _annotated(f"g{index}-0", prov.request_name(ref.name, attempt)) if attempt else pod(f"g{index}-0")
        gang = prov.WaitingGang(ref=ref, pods=(member,), why="")
        if waits:
            gangs[ref.uid] = gang
        pending[PodKey(f"ns/g{index}-0")], group_of[PodKey(f"ns/g{index}-0")] = member, ref.uid
        if attempt:
            request, _ = prov.build_request(gang, class_name=prov.ATOMIC_SCALE_UP, attempt=attempt)
            if condition:
                request["status"] = {"conditions": [{"type": condition, "status": "True", "lastTransitionTime": _at(age_s)}]}
            requests.append(request)
    answer = prov.reconcile(gangs, requests, refs=refs, pending_pods=pending, binding=set(), group_of=group_of,
                            class_name=prov.ATOMIC_SCALE_UP, backoff_s=60, now=NOW)
    deleted = {d.request["metadata"]["name"] for d in answer.deletes}
    kept = {r["metadata"]["name"] for r in requests} - deleted
    assert {a.request for a in answer.annotations} <= kept | {None}
    created = {c.gang.ref.uid for c in answer.creates}
    written = {f"ns/{a.name}": a.request for a in answer.annotations}
    for key, member in pending.items():  # a waiting gang's pods consume its request once it exists
        after = written.get(key, member["metadata"]["annotations"].get(prov.CONSUME_ANNOTATION))
        if group_of[key] in gangs and group_of[key] not in created:
            assert after in kept
    for uid in gangs:
        assert uid in created or any(r["metadata"]["ownerReferences"][0]["uid"] == uid and r["metadata"]["name"] in kept for r in requests)
    for uid in set(refs) - set(gangs):
        assert uid not in created
        assert not any(r["metadata"]["ownerReferences"][0]["uid"] == uid and r["metadata"]["name"] in kept for r in requests)


@pytest.mark.parametrize("configured", ["", prov.ATOMIC_SCALE_UP])
def test_the_deployment_passes_the_configmap_s_class_and_nothing_when_it_is_empty(configured: str) -> None:
    """The Deployment's command line, run by sh as in the container (echoed, not executed)."""
    deployment = yaml.safe_load((REPO_ROOT / "deploy" / "deployment.yaml").read_text())
    script = deployment["spec"]["template"]["spec"]["containers"][0]["args"][0].replace("exec batchplace", "echo batchplace", 1)
    configmap = yaml.safe_load((REPO_ROOT / "deploy" / "configmap.yaml").read_text())
    env = {"PERIOD": "1", "TIME_LIMIT": "2", "ENGINE": "auto", "SCHEDULER_NAMES": "batchplace", "LOG_LEVEL": "info",
           "PROVISIONING_CLASS": configured, "PATH": "/usr/bin:/bin"}
    words = shlex.split(subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, check=True).stdout)
    assert configmap["data"]["provisioning-class"] == ""
    if configured:
        assert words[words.index("--provisioning-class") + 1] == configured
    else:
        assert "--provisioning-class" not in words
