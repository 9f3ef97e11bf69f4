"""The dashboard in a real browser (headless Chromium) against a real uvicorn server: each
page on seed snapshots uploaded through the file picker and on a 1,000-node synthetic
snapshot; a what-if submitted and drawn; malformed uploads answered with a sentence.

Screenshots of every page go to `results/ui-screenshots/`; with
`BATCHPLACE_UPDATE_SCREENSHOTS=1`, `test_readme_screenshots` also refreshes the README's
`docs/img/ui-*.png` (a plain run never rewrites tracked files).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from experiments.synthetic import synthetic_snapshot
from tests.service.service_helpers import EXAMPLES_DIR, LiveServer
from tests.ui.conftest import REPO_ROOT

DOCS_IMG = REPO_ROOT / "docs" / "img"
GANG_20_REASON = "gang: 3 of min 20 pods fit (needs 80 cpu, 12 cpu free)"

Page = Any  # playwright.sync_api.Page, imported lazily by the fixture


def upload(page: Page, server: LiveServer, path: Path) -> str:
    """Upload `path` through the file picker; the upload's key (`?s=`) of the Cluster page it opens."""
    page.goto(f"{server.url}/ui/upload")
    page.set_input_files("form.upload input[type=file]", str(path))
    page.click("form.upload button[type=submit]")
    page.wait_for_url(re.compile(r"/ui/cluster\?s=[0-9a-f]{16}$"))
    return page.url.rsplit("=", 1)[1]


def shoot(page: Page, directory: Path, name: str, *, full_page: bool = True) -> Path:
    path = directory / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    assert path.stat().st_size > 5_000
    return path


@pytest.fixture(scope="module")
def big_snapshot_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1,000 nodes × 8 GPUs, 80 % preloaded, 400 pending pods: some gangs wait."""
    snapshot = synthetic_snapshot(nodes=1_000, pending_pods=400, preload=0.8, seed=3)
    path = tmp_path_factory.mktemp("snapshots") / "synthetic-1000.json"
    path.write_text(snapshot.model_dump_json(exclude_defaults=True))
    return path


# ---- seed snapshots ----


def test_cluster_page_draws_each_gpu_by_state_in_the_hypernode_tree(page: Page, ui_server: LiveServer, screenshots: Path) -> None:
    upload(page, ui_server, EXAMPLES_DIR / "gpu-topology.yaml")
    assert page.locator("#picture .g").count() == 64
    assert page.locator("#gpu-cells").inner_text() == "64"
    # spine → leaf → node
    leaf_b = page.locator('.domain[data-domain="spine"] .domain[data-domain="leaf-b"]')
    assert leaf_b.locator(".node").count() == 4
    # the 16-GPU hard-topology gang is bound this cycle inside leaf-b: its cells are reserved
    assert page.locator('.node[data-node="gpu-b-0"] .g.r').count() == 8
    assert page.locator('.node[data-node="gpu-b-1"] .g.r').count() == 8
    assert page.locator('.domain[data-domain="leaf-a"] .g.r').count() == 0
    # gpu-a-0 is wholly free, gpu-a-3 wholly held
    assert page.locator('.node[data-node="gpu-a-0"] .g:not(.w):not(.s):not(.r)').count() == 8
    assert page.locator('.node[data-node="gpu-a-3"] .g.w').count() == 8
    page.hover('.node[data-node="gpu-b-1"] .g >> nth=3')
    tip = page.locator("#tip")
    tip.wait_for(state="visible")
    assert "gpu-b-1 · GPU 3" in tip.inner_text()
    assert "research/llm-pretrain-worker-" in tip.inner_text() and "reserved" in tip.inner_text()
    assert "50.0 %" in page.locator('.ratio[data-resource="gpu"]').inner_text()
    shoot(page, screenshots, "cluster-gpu-topology")


def test_podgroups_page_gives_the_pending_gangs_reason_and_filters_and_sorts(page: Page, ui_server: LiveServer, screenshots: Path) -> None:
    key = upload(page, ui_server, EXAMPLES_DIR / "gang-min-available-20.yaml")
    page.click("nav >> text=PodGroups")
    row = page.locator('tr.pg[data-pg="default/gang-job"]')
    assert row.locator(".state").inner_text() == "pending"
    assert GANG_20_REASON in row.locator(".reason").inner_text()
    assert "0 / 20" in row.inner_text()
    assert page.locator("#answered-by").inner_text() == "decided by CP-SAT (OPTIMAL)"  # auto, as solve and the controller
    page.select_option("select[name=state]", "running")
    page.click(".filters button[type=submit]")
    assert page.locator("tr.pg").count() == 0 and "0 of 1 PodGroups" in page.locator("#pg-count").inner_text()
    page.goto(f"{ui_server.url}/ui/podgroups?s={key}&q=12+cpu+free")
    assert page.locator("tr.pg").count() == 1
    shoot(page, screenshots, "podgroups-gang-20")
    page.click('tr.pg[data-pg="default/gang-job"] a')
    page.wait_for_url(re.compile(r"/ui/podgroups/default/gang-job\?s="))
    assert GANG_20_REASON in page.locator("ul.reasons").inner_text()
    assert page.locator("table.pods tbody tr").count() == 20
    assert "20/20 tasks in gang unschedulable: gang: 3 of min 20" in page.locator("table.events").inner_text()
    assert page.locator("table.events tbody tr").count() == 21  # Unschedulable on the PodGroup, FailedScheduling on each pod
    assert page.locator("#answered-by").inner_text() == "decided by CP-SAT (OPTIMAL)"
    shoot(page, screenshots, "podgroup-gang-job")


def test_podgroups_sort_by_column(page: Page, ui_server: LiveServer) -> None:
    upload(page, ui_server, EXAMPLES_DIR / "queue-weights.yaml")
    page.click("nav >> text=PodGroups")
    page.click("th >> text=queue")
    page.wait_for_url(re.compile(r"sort=queue&order=asc"))
    asc = page.locator("tr.pg").evaluate_all("rows => rows.map(row => row.dataset.pg)")
    page.click("th >> text=queue")
    page.wait_for_url(re.compile(r"sort=queue&order=desc"))
    desc = page.locator("tr.pg").evaluate_all("rows => rows.map(row => row.dataset.pg)")
    assert len(asc) == len(desc) == 12  # 6 jobs in each of queue-a, queue-b
    assert all(key.startswith("default/job-a-") for key in asc[:6]) and all(key.startswith("default/job-b-") for key in desc[:6])
    assert page.locator("tr.pg.pending").count() >= 1


def test_queues_page_draws_each_queues_bars_with_weighted_deserved_shares(page: Page, ui_server: LiveServer, screenshots: Path) -> None:
    upload(page, ui_server, EXAMPLES_DIR / "queue-weights.yaml")
    page.click("nav >> text=Queues")
    queue_a = page.locator('tr.queue[data-queue="queue-a"]')
    queue_b = page.locator('tr.queue[data-queue="queue-b"]')
    assert queue_a.locator(".bar").count() == 2 and queue_b.locator(".bar").count() == 2  # cpu, memory: no GPUs
    cpu_a = queue_a.locator('.bar[data-resource="cpu"]')
    cpu_b = queue_b.locator('.bar[data-resource="cpu"]')
    assert int(cpu_b.get_attribute("data-deserved")) == 2 * int(cpu_a.get_attribute("data-deserved")) > 0  # weights 1:2
    assert cpu_a.locator(".mark.deserved").count() == 1 and cpu_a.locator(".pend").count() == 1
    assert "deserved 1 ·" in queue_a.inner_text() and "deserved 2 ·" in queue_b.inner_text()
    assert "pending" in queue_a.locator(".pending-count").inner_text()
    shoot(page, screenshots, "queues-weights")


def test_what_if_draws_where_a_job_lands_and_says_why_another_cannot_start(page: Page, ui_server: LiveServer, screenshots: Path) -> None:
    upload(page, ui_server, EXAMPLES_DIR / "gpu-topology.yaml")
    page.click("nav >> text=What-if")
    page.fill("input[name=pods]", "1")
    page.fill("input[name=gpus]", "8")
    page.click("#whatif button[type=submit]")
    verdict = page.locator(".verdict.starts")
    verdict.wait_for()
    assert "default/what-if-job starts now: 1 of 1 pods placed (min 1) on gpu-a-0." in verdict.inner_text()
    assert page.locator('.node[data-node="gpu-a-0"].land-node .g.land').count() == 8
    shoot(page, screenshots, "what-if-starts")
    # three 8-GPU pods inside one leaf: leaf-a has one free node, leaf-b's two go to the pending gang
    page.fill("input[name=name]", "too-big")
    page.fill("input[name=pods]", "3")
    page.select_option("select[name=topology]", "hard:1")
    page.click("#whatif button[type=submit]")
    blocked = page.locator(".verdict.blocked")
    blocked.wait_for()
    text = blocked.inner_text()
    assert "default/too-big cannot start now" in text and "topology" in text
    assert page.locator(".g.land").count() == 0
    shoot(page, screenshots, "what-if-blocked")
    # pasted YAML that is not a job: the API's 422 shown in the page
    page.check("input[name=mode][value=yaml]")
    page.fill("textarea[name=yaml]", "apiVersion: v1\nkind: Queue\nmetadata: {name: q}\n")
    page.click("#whatif button[type=submit]")
    error = page.locator(".verdict.error")
    error.wait_for()
    assert "cannot be added as a job" in error.inner_text()


def test_what_if_preemption_is_drawn_on_the_victims_cells(page: Page, ui_server: LiveServer, tmp_path: Path) -> None:
    cluster = tmp_path / "busy.json"
    cluster.write_text(_busy_cluster_json())
    upload(page, ui_server, cluster)
    page.click("nav >> text=What-if")
    page.fill("input[name=pods]", "1")
    page.fill("input[name=gpus]", "8")
    page.select_option("select[name=queue]", "team")
    page.select_option("select[name=priority]", "high")
    page.click("#whatif button[type=submit]")
    verdict = page.locator(".verdict.starts")
    verdict.wait_for()
    assert "It preempts 1 pod(s)" in verdict.inner_text() and "team/low-0 on n0 (preempt)" in verdict.inner_text()
    assert page.locator('.node[data-node="n0"].victim-node .g.victim').count() == 8


def test_the_what_if_name_field_checks_names_as_kubernetes_does(page: Page, ui_server: LiveServer) -> None:
    """The browser compiles `pattern` in the `v` flag mode, where a bare `-` in a class is a
    syntax error and the whole attribute is ignored: the field checked nothing. Now a name
    Kubernetes refuses is refused before any request, and a good one still gets an answer."""
    upload(page, ui_server, EXAMPLES_DIR / "gpu-topology.yaml")
    page.click("nav >> text=What-if")
    name = page.locator("input[name=name]")
    for bad in ("Hello_Job", "-job", "job-", "a..b"):
        name.fill(bad)
        assert name.evaluate("input => !input.checkValidity()"), bad
    page.click("#whatif button[type=submit]")
    assert page.locator("#answer .verdict").count() == 0  # the form was not sent
    for good in ("hello-job", "a.b"):
        name.fill(good)
        assert name.evaluate("input => input.checkValidity()"), good
    name.fill("")
    name.press_sequentially("x" * 64)  # typed: 54 taken, so `<name>-worker-0` stays within Volcano's 63
    assert name.input_value() == "x" * 54 and name.evaluate("input => input.checkValidity()")
    namespace = page.locator("input[name=namespace]")
    namespace.fill("My.Team")
    assert namespace.evaluate("input => !input.checkValidity()")
    namespace.fill("default")
    page.fill("input[name=pods]", "1")
    page.fill("input[name=gpus]", "0.5")  # a share of one GPU: batchplace.io/gpu-milli, its limit set too
    page.click("#whatif button[type=submit]")
    verdict = page.locator(".verdict.starts")
    verdict.wait_for()
    assert f"default/{'x' * 54} starts now" in verdict.inner_text()


def _busy_cluster_json() -> str:
    """One 8-GPU node held by a low-priority preemptable pod of queue `team`."""
    import json

    node = {"name": "n0", "allocatable": {"cpu": 64000, "memory": 2**38, "gpu": 8000}}
    return json.dumps({
        "nodes": [node],
        "queues": [{"name": "team"}],
        "priority_classes": [{"name": "high", "value": 100}],
        "pod_groups": [{"namespace": "team", "name": "low", "queue": "team", "min_member": 1,
                        "tasks": [{"name": "main", "min_available": 1, "requests": {"cpu": 1000, "gpu": 8000}}]}],
        "pods": [{"namespace": "team", "name": "low-0", "phase": "running", "pod_group": "team/low", "task": "main",
                  "node": "n0", "gpu_indices": list(range(8)), "requests": {"cpu": 1000, "gpu": 8000}}],
    })


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"kind: [", "not valid YAML"),
        (b'{"nodes": [{"name": "n1", "allocatable": {"cpu": -1}}]}', "nodes"),
        (b"", "the file is empty"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
    ],
    ids=["broken YAML", "a negative CPU in JSON", "an empty file", "binary bytes"],
)
def test_a_malformed_upload_gets_its_sentence_in_the_page_never_a_500(
    page: Page, ui_server: LiveServer, tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / ("bad.json" if content.startswith(b"{") else "bad.yaml")
    path.write_bytes(content)
    page.goto(f"{ui_server.url}/ui/upload")
    page.set_input_files("form.upload input[type=file]", str(path))
    with page.expect_response(lambda response: response.url.endswith("/ui/upload") and response.request.method == "POST") as answer:
        page.click("form.upload button[type=submit]")
    assert answer.value.status == 422
    message = page.locator("#error").inner_text()
    assert expected in message and (path.name in message or "empty" in message)
    assert page.locator("form.upload").count() == 1


def test_an_upload_the_server_no_longer_holds_asks_for_it_again(page: Page, ui_server: LiveServer) -> None:
    response = page.goto(f"{ui_server.url}/ui/queues?s=0123456789abcdef")
    assert response is not None and response.status == 404
    assert "does not hold the upload" in page.locator("#error").inner_text()
    assert httpx.get(f"{ui_server.url}/ui/podgroups/default/nope?s=0123456789abcdef").status_code == 404


# ---- 1,000 nodes ----


def test_every_page_at_1000_nodes(page: Page, ui_server: LiveServer, big_snapshot_file: Path, screenshots: Path) -> None:
    key = upload(page, ui_server, big_snapshot_file)
    assert page.locator("#picture .g").count() == 8_000
    assert page.locator("#gpu-cells").inner_text() == "8000"
    assert page.locator("#picture .node").count() == 1_000
    assert page.locator('#picture .domain.tier-1').count() == 63  # leaves of 16 nodes
    fragmentation = page.locator("#fragmentation b").inner_text()
    assert re.fullmatch(r"\d+\.\d %", fragmentation)
    shoot(page, screenshots, "cluster-1000-nodes", full_page=False)

    page.goto(f"{ui_server.url}/ui/queues?s={key}")
    assert page.locator("tr.queue").count() == 5
    assert page.locator('tr.queue[data-queue="training"] .bar').count() == 3
    cap = page.locator('tr.queue[data-queue="training"] .bar[data-resource="gpu"] .mark.cap')
    assert cap.count() == 1 and cap.get_attribute("style") == "left:50.0%"  # capped at half the GPUs
    shoot(page, screenshots, "queues-1000-nodes")

    page.goto(f"{ui_server.url}/ui/podgroups?s={key}&state=pending")
    pending = page.locator("tr.pg.pending")
    assert pending.count() > 0
    assert re.match(r"^(gang|quota|topology|capacity|numa|fairness|dependency|queue|preemption)", pending.first.locator(".reason").inner_text())
    shoot(page, screenshots, "podgroups-1000-nodes", full_page=False)

    page.goto(f"{ui_server.url}/ui/what-if?s={key}")
    page.fill("input[name=pods]", "2")
    page.fill("input[name=gpus]", "1")
    page.select_option("select[name=queue]", "production")
    page.click("#whatif button[type=submit]")
    page.locator(".verdict.starts, .verdict.blocked").first.wait_for(timeout=60_000)
    answer = page.locator("#answer").inner_text()
    assert "default/what-if-job" in answer
    if "starts now" in answer:
        assert page.locator(".g.land").count() == 2


def _publish(shot: Path, name: str) -> None:
    if os.environ.get("BATCHPLACE_UPDATE_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, DOCS_IMG / f"ui-{name}.png")


def test_readme_screenshots(page: Page, ui_server: LiveServer, screenshots: Path) -> None:
    """One picture per page for the README (docs/img/ui-*.png), on seed snapshots."""
    key = upload(page, ui_server, EXAMPLES_DIR / "gpu-topology.yaml")
    page.set_viewport_size({"width": 1280, "height": 720})
    pictures = {"cluster": f"/ui/cluster?s={key}", "queues": f"/ui/queues?s={key}"}
    for name, path in pictures.items():
        page.goto(ui_server.url + path)
        _publish(shoot(page, screenshots, f"readme-{name}", full_page=False), name)
    key_20 = upload(page, ui_server, EXAMPLES_DIR / "gang-min-available-20.yaml")
    page.goto(f"{ui_server.url}/ui/podgroups?s={key_20}")
    _publish(shoot(page, screenshots, "readme-podgroups", full_page=False), "podgroups")
    page.goto(f"{ui_server.url}/ui/what-if?s={key}")
    page.fill("input[name=pods]", "1")
    page.click("#whatif button[type=submit]")
    page.locator(".verdict.starts").wait_for()
    _publish(shoot(page, screenshots, "readme-what-if", full_page=False), "what-if")
    assert page.locator(".g.land").count() == 8
