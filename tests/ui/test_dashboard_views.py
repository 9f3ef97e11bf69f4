"""The dashboard's pure parts, without a browser: the cluster picture's cell states and
fragmentation, the PodGroups table's filter and sort, the units, the login helpers."""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

from models.snapshot import PodGroupKey, Snapshot
from service.ui.analysis import analyze
from service.ui.auth import safe_next, session_ok, session_value
from service.ui.cluster_view import build_cluster_view, fragmentation
from service.ui.podgroup_view import build_podgroup_detail, build_podgroup_rows, filter_rows, sort_rows
from service.ui.units import age_text, gpus_text, resources_text


def _node(name: str, gpus: int = 8, **extra: Any) -> dict[str, Any]:
    return {"name": name, "allocatable": {"cpu": 64_000, "memory": 2**38, "gpu": gpus * 1000}, **extra}


def _running(name: str, node: str, gpus: tuple[int, ...], gpu_milli: int, group: str = "team/run") -> dict[str, Any]:
    return {"namespace": "team", "name": name, "phase": "running", "pod_group": group, "task": "main", "node": node,
            "gpu_indices": list(gpus), "requests": {"cpu": 1000, "gpu": gpu_milli}}


def _group(name: str, *, gpu_milli: int, min_member: int = 1, queue: str = "team") -> dict[str, Any]:
    return {"namespace": "team", "name": name, "queue": queue, "min_member": min_member,
            "tasks": [{"name": "main", "min_available": min_member, "requests": {"cpu": 1000, "gpu": gpu_milli}}]}


def _pending(name: str, group: str, gpu_milli: int) -> dict[str, Any]:
    return {"namespace": "team", "name": name, "phase": "pending", "pod_group": f"team/{group}", "task": "main",
            "requests": {"cpu": 1000, "gpu": gpu_milli}}


def test_fragmentation_counts_what_the_pending_shapes_cannot_use() -> None:
    # the module docstring's worked example: pending shape 2 × 1 GPU;
    # node a free (1000, 1000, 400) fits it → 400 fragment; node b free (1000, 300) does not → 1300
    snapshot = Snapshot.model_validate({
        "nodes": [_node("a", 3), _node("b", 2)],
        "queues": [{"name": "team"}],
        "pod_groups": [_group("run", gpu_milli=600), _group("run2", gpu_milli=700), _group("want", gpu_milli=2000)],
        "pods": [_running("r-0", "a", (2,), 600), _running("r-1", "b", (1,), 700, group="team/run2"), _pending("w-0", "want", 2000)],
    })
    assert fragmentation(snapshot) == (400 + 1300, 2400 + 1300)


def test_cells_say_whole_shared_reserved_and_free() -> None:
    snapshot = Snapshot.model_validate({
        "nodes": [_node("n0", 4)],
        "queues": [{"name": "team"}],
        "pod_groups": [_group("run", gpu_milli=1000), _group("share", gpu_milli=500), _group("want", gpu_milli=1000)],
        "pods": [_running("r-0", "n0", (0,), 1000), _running("s-0", "n0", (1,), 500, group="team/share"),
                 _pending("w-0", "want", 1000)],
    })
    view = build_cluster_view(analyze(snapshot, now_s=0.0))
    cells = str(view.domains[0].nodes[0].cells)
    assert cells.count('class="g w q') == 1 and cells.count('class="g s q') == 1 and cells.count('class="g r q') == 1
    assert cells.count('<i class="g">') == 1 and 'style="--f:0.5"' in cells
    assert view.gpu_cells == 4 and view.gpus_free == 1 and view.gpus_reserved == 1
    assert {pod.state for pod in view.pods} == {"running", "reserved"}


def test_podgroup_rows_filter_by_reason_and_sort_by_state() -> None:
    snapshot = Snapshot.model_validate({
        "nodes": [_node("n0", 1)],
        "queues": [{"name": "team"}],
        "pod_groups": [_group("fits", gpu_milli=1000), _group("big", gpu_milli=1000, min_member=2)],
        "pods": [_pending("f-0", "fits", 1000), _pending("b-0", "big", 1000), _pending("b-1", "big", 1000)],
    })
    rows = build_podgroup_rows(analyze(snapshot, now_s=0.0))
    by_key = {row.key: row for row in rows}
    assert by_key["team/fits"].state == "starting" and by_key["team/big"].state == "pending"
    assert by_key["team/big"].reasons and by_key["team/big"].age_s is None
    assert [row.key for row in filter_rows(rows, text="GANG")] == ["team/big"]
    assert [row.key for row in sort_rows(rows, key="state", descending=False)] == ["team/big", "team/fits"]
    assert [row.key for row in sort_rows(rows, key="state", descending=True)] == ["team/fits", "team/big"]


def test_units_read_as_people_write_them() -> None:
    assert gpus_text(2500) == "2.5" and gpus_text(8000) == "8"
    assert resources_text({"cpu": 4000, "gpu": 8000, "memory": 2**31}) == "8 GPUs, 4 cores, 2 GiB"
    assert age_text(3_660) == "1h1m" and age_text(None) == "—"


def test_the_session_cookie_is_not_the_token_and_next_stays_on_the_dashboard() -> None:
    token = SecretStr("s3cret")
    assert "s3cret" not in session_value(token)
    assert session_ok(token, session_value(token)) and not session_ok(token, "x") and session_ok(None, None)
    assert safe_next("//evil.example/x") == "/ui/cluster" and safe_next("https://evil.example") == "/ui/cluster"
    assert safe_next("/ui/podgroups?state=pending") == "/ui/podgroups?state=pending"


def test_a_task_minimum_above_min_member_is_shown_as_not_applied() -> None:
    """min_member 1 < the task's minimum 2 (Volcano's bypass); min_member 2 = 2 applies it."""
    groups = [_group("bypass", gpu_milli=1000), _group("whole", gpu_milli=1000, min_member=2)]
    groups[0]["tasks"][0]["min_available"] = 2
    pods = [_pending(f"{g}-{i}", g, 1000) for g in ("bypass", "whole") for i in range(2)]
    snapshot = Snapshot.model_validate({"nodes": [_node("n0", 4)], "queues": [{"name": "team"}], "pod_groups": groups, "pods": pods})
    analysis = analyze(snapshot, now_s=0.0)
    (bypass,) = build_podgroup_detail(analysis, PodGroupKey("team/bypass")).tasks  # type: ignore[union-attr]
    (whole,) = build_podgroup_detail(analysis, PodGroupKey("team/whole")).tasks  # type: ignore[union-attr]
    assert (bypass.min_available, bypass.min_available_applies) == (2, False)
    assert (whole.min_available, whole.min_available_applies) == (2, True)


def test_a_task_shows_its_selector_and_node_affinity_and_how_many_nodes_admit_it() -> None:
    groups = [_group("h100-job", gpu_milli=1000), _group("any-job", gpu_milli=1000)]
    groups[0]["tasks"][0]["node_selector"] = {"pool": "train"}
    groups[0]["tasks"][0]["required_node_affinity"] = [
        {"match_expressions": [{"key": "gpu", "operator": "In", "values": ["h100"]}]}
    ]
    groups[0]["tasks"][0]["preferred_node_affinity"] = [
        {"weight": 20, "preference": {"match_expressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}
    ]
    nodes = [
        _node("a100-0", labels={"pool": "train", "gpu": "a100"}),
        _node("h100-0", labels={"pool": "train", "gpu": "h100"}),
        _node("h100-1", labels={"pool": "infer", "gpu": "h100"}),
    ]
    pods = [_pending("h100-job-0", "h100-job", 1000), _pending("any-job-0", "any-job", 1000)]
    snapshot = Snapshot.model_validate({"nodes": nodes, "queues": [{"name": "team"}], "pod_groups": groups, "pods": pods})
    analysis = analyze(snapshot, now_s=0.0)
    (h100,) = build_podgroup_detail(analysis, PodGroupKey("team/h100-job")).tasks  # type: ignore[union-attr]
    (anywhere,) = build_podgroup_detail(analysis, PodGroupKey("team/any-job")).tasks  # type: ignore[union-attr]
    assert h100.runs_on == "pool=train, gpu In [h100]: 1 of 3 nodes; prefers zone In [a] (20)"
    assert anywhere.runs_on == "any node: 3 of 3 nodes"


def _queue_at_capability_with_a_pending_gang() -> Snapshot:
    """q1 may hold 3 CPU and runs three priority-1 pods; a priority-10 pod preempts one.
    A 2-pod gang of 64 CPU each fits nowhere."""
    from tests.builders import make_gang, make_node, make_queue, make_snapshot, resources

    low = make_gang("low", replicas=3, queue="q1", priority=1, min_member=1, running_on=["n0", "n0", "n0"])
    high = make_gang("high", queue="q1", priority=10)
    huge = make_gang("huge", replicas=2, cpu=64)
    fits = make_gang("fits", replicas=1)
    return make_snapshot(
        nodes=[make_node("n0", cpu=8)],
        groups=[low, high, huge, fits],
        queues=[make_queue("q1", capability=resources(cpu=3))],
    )


def test_the_dashboard_solves_with_the_default_engine_of_the_command_line_and_the_controller() -> None:
    from controller.loop import ControllerConfig
    from service.ui.analysis import UI_SOLVE_CONFIG
    from solver.place import SolveConfig, place

    assert UI_SOLVE_CONFIG.engine == SolveConfig().engine == ControllerConfig().engine == "auto"
    snapshot = _queue_at_capability_with_a_pending_gang()
    analysis = analyze(snapshot, now_s=0.0)
    expected = place(snapshot, SolveConfig(time_limit_s=UI_SOLVE_CONFIG.time_limit_s))
    assert analysis.decision.placement == expected.placement
    assert analysis.answered_by == "CP-SAT (OPTIMAL)"


def test_the_dashboard_lists_exactly_the_events_the_controller_writes() -> None:
    from controller.observe import Observation, PodGroupRef
    from controller.plan import plan

    snapshot = _queue_at_capability_with_a_pending_gang()
    analysis = analyze(snapshot, now_s=0.0)
    refs = {
        group.key: PodGroupRef(key=group.key, flavor="volcano", namespace=group.namespace, name=group.name, uid="", status={})
        for group in snapshot.pod_groups
    }
    controller_plan = plan(Observation(snapshot=snapshot, pod_groups=refs), analysis.decision)
    written = set()
    for gang in controller_plan.gangs:
        for event in [*(e.event for e in gang.evictions), *(b.event for b in gang.binds if b.event is not None), *gang.events]:
            written.add((event.type, event.reason, f"{event.kind} {event.namespace}/{event.name}", event.message))
    shown = set()
    for group in snapshot.pod_groups:
        detail = build_podgroup_detail(analysis, group.key)
        assert detail is not None
        shown.update((e.type, e.reason, e.object, e.message) for e in detail.events)
    assert {reason for _, reason, _, _ in shown} == {"Preempted", "Unschedulable", "FailedScheduling", "Scheduled"}
    assert shown == written


def test_a_started_workflow_row_names_its_waiting_task() -> None:
    from tests.builders import make_gang, make_node, make_snapshot, make_task

    flow = make_gang("flow", tasks=[make_task("task-a"), make_task("task-b", depends_on=("task-a",))], min_member=1)
    analysis = analyze(make_snapshot(nodes=[make_node("n1")], groups=[flow]), now_s=0.0)
    (row,) = build_podgroup_rows(analysis)
    assert row.state == "starting"
    assert row.reasons == ("dependency: task-b waits for task-a (0 of 1 running)",)


def test_free_cells_of_a_node_held_for_an_overdue_gang_are_drawn_held_and_name_the_holder() -> None:
    # a 2 × 4-GPU gang past its 30 min waits; n0 runs a 2-GPU job, n1 is free: n1 is held, n0 still drains
    snapshot = Snapshot.model_validate({
        "nodes": [_node("n0", 4), _node("n1", 4)],
        "queues": [{"name": "team"}],
        "pod_groups": [_group("run", gpu_milli=2000), {**_group("big", gpu_milli=4000, min_member=2), "sla_waiting_s": 1800}],
        "pods": [_running("r-0", "n0", (0, 1), 2000), _pending("b-0", "big", 4000), _pending("b-1", "big", 4000)],
        "reservation_policy": {"judged_at_s": 3600},
    })
    rows = {row.name: row for row in build_cluster_view(analyze(snapshot, now_s=3600.0)).domains[0].nodes}
    assert rows["n1"].held_for == "team/big" and str(rows["n1"].cells).count('class="g h"') == 4
    assert rows["n0"].held_for is None and 'class="g h"' not in str(rows["n0"].cells)
