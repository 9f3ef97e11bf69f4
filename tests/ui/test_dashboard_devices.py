"""The Devices page's view, without a browser: each node's DRA devices by driver, held by
an allocated claim, allocated by this cycle's placement, or free; network-attached pools
in rows of their own; pools whose newest generation is incomplete named apart. Then the
page itself in a real browser (headless Chromium), on the DRA example uploaded."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import yaml

from batchplace.demo import EXAMPLES_DIR
from models.dra import DeviceResult
from models.loaders import load_snapshot_files, load_snapshot_yaml_text
from models.placement import ClaimAllocation
from models.snapshot import PodGroupKey, PodKey
from service.ui.analysis import Analysis, analyze
from service.ui.devices_view import build_devices_view
from service.ui.podgroup_view import build_podgroup_detail
from tests.models._dra_yaml import GPU_CLASS, documents, gpu_slice
from tests.service.service_helpers import LiveServer
from tests.ui.test_dashboard_pages import Page, shoot, upload


def _example() -> Analysis:
    return analyze(load_snapshot_files([EXAMPLES_DIR / "dra-gpus.yaml"]).snapshot, now_s=0.0)


def test_each_node_lists_its_devices_by_driver_and_the_allocated_claim_holds_its_two() -> None:
    view = build_devices_view(_example())
    assert [row.name for row in view.rows] == ["a100-mig-0", "h100-nvl-0", "hgx-0", "hgx-1"]
    (mig_node,) = view.rows[0].drivers
    assert mig_node.driver == "gpu.nvidia.com" and len(mig_node.cells) == 8 + 7 + 2  # whole GPUs and gpu-0's MIG devices
    (nvl,) = view.rows[1].drivers
    held = [(cell.name, cell.claim) for cell in nvl.cells if cell.state == "held"]
    assert held == [("gpu-0", "ml/serve-llm-gpus"), ("gpu-1", "ml/serve-llm-gpus")]
    assert "held by ml/serve-llm-gpus" in nvl.cells[0].title and "NVIDIA H100 NVL" in nvl.cells[0].title
    assert view.total == 17 + 3 * 8 and view.count("held") == 2
    # this cycle: each training claim takes its HGX node's 8 GPUs, the notebook's one MIG device
    assert view.count("new") == 8 + 8 + 1
    assert {cell.claim for row in view.rows[2:] for cell in row.drivers[0].cells} == {
        "ml/llm-train-worker-0 gpus (template eight-gpus-one-nvlink)",
        "ml/llm-train-worker-1 gpus (template eight-gpus-one-nvlink)",
    }
    (allocated,) = [claim for claim in view.claims if claim.state == "allocated"]
    assert (allocated.claim, allocated.node, allocated.pods) == ("ml/serve-llm-gpus", "h100-nvl-0", ("ml/serve-llm-0",))
    assert allocated.devices == "gpus: gpu-0, gpu-1"


def test_a_mig_device_says_its_profile_and_the_counter_set_it_draws_from() -> None:
    (mig_node,) = build_devices_view(_example()).rows[0].drivers
    cell = next(cell for cell in mig_node.cells if cell.name == "gpu-0-mig-9-4-4")
    assert cell.state == "free" and "3g.40gb" in cell.title and "draws gpu-0-counters" in cell.title


def test_devices_this_cycle_allocates_read_as_new_with_their_claim_and_admin_access_takes_none() -> None:
    analysis = _example()
    allocation = ClaimAllocation(
        claim=None, pod="ml/llm-train-worker-0", pod_claim="gpus", template="eight-gpus-one-nvlink", node="hgx-0",
        devices=(
            DeviceResult(request="gpus", driver="gpu.nvidia.com", pool="hgx-0", device="gpu-3"),
            DeviceResult(request="mon", driver="gpu.nvidia.com", pool="hgx-0", device="gpu-4", admin_access=True),
        ),
        reserved_for=("ml/llm-train-worker-0",),
    )
    placement = analysis.decision.placement.model_copy(update={"claims": (allocation,)})
    view = build_devices_view(replace(analysis, decision=analysis.decision.model_copy(update={"placement": placement})))
    (hgx,) = view.rows[2].drivers
    states = {cell.name: (cell.state, cell.claim) for cell in hgx.cells}
    label = "ml/llm-train-worker-0 gpus (template eight-gpus-one-nvlink)"
    assert states["gpu-3"] == ("new", label) and states["gpu-4"] == ("free", None)
    assert hgx.free == 7 and view.count("new") == 1
    assert view.claims[-1].state == "this cycle" and view.claims[-1].devices == "gpus: gpu-3; mon: gpu-4 (admin)"


NETWORK_POOL = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: fabric-nics}
spec:
  driver: nic.example.com
  allNodes: true
  pool: {name: fabric, generation: 1, resourceSliceCount: 1}
  devices:
  - name: nic-0
  - name: nic-1
"""

NODE = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 64Gi}}
"""


def test_a_network_attached_pool_is_a_row_after_the_nodes_and_an_incomplete_pool_is_named() -> None:
    text = documents(NODE, GPU_CLASS, gpu_slice("n1"), NETWORK_POOL, gpu_slice("n2", count=2))
    view = build_devices_view(analyze(load_snapshot_yaml_text(text, source="dra.yaml").snapshot, now_s=0.0))
    assert [(row.name, row.network_attached) for row in view.rows] == [("n1", False), ("pool fabric", True)]
    assert [cell.name for cell in view.rows[1].drivers[0].cells] == ["nic-0", "nic-1"]
    assert view.incomplete_pools == ("gpu.nvidia.com/n2",)


def test_a_snapshot_without_dra_has_no_rows() -> None:
    view = build_devices_view(analyze(load_snapshot_files([EXAMPLES_DIR / "hello-volcano-job.yaml"]).snapshot, now_s=0.0))
    assert view.rows == () and view.claims == () and view.total == 0


# ---- in a real browser ----


def test_devices_page_shows_each_nodes_devices_and_the_claim_holding_them(page: Page, ui_server: LiveServer, screenshots: Path) -> None:
    key = upload(page, ui_server, EXAMPLES_DIR / "dra-gpus.yaml")
    page.click("nav >> text=Devices")
    assert page.locator("#devices-nodes tbody tr").count() == 4  # one driver on each of the 4 nodes
    nvl = page.locator('#devices-nodes tr[data-node="h100-nvl-0"]')
    held = nvl.locator(".dv.held")
    assert held.count() == 2 and held.first.get_attribute("data-claim") == "ml/serve-llm-gpus"
    assert "held by ml/serve-llm-gpus" in (held.first.get_attribute("title") or "")
    assert nvl.locator("td.num").inner_text() == "6/8"
    assert page.locator('#devices-claims tr[data-claim="ml/serve-llm-gpus"]').inner_text().split("\t")[:3] == [
        "ml/serve-llm-gpus", "allocated", "h100-nvl-0",
    ]
    assert "41 DRA devices" in page.locator("#devices-summary").inner_text()
    shoot(page, screenshots, "devices-dra-gpus")
    page.goto(f"{ui_server.url}/ui/podgroups/ml/llm-train?s={key}")
    claims = page.locator("table.pods td.claims").all_inner_texts()
    assert len(claims) == 2 and all(text.endswith("gpus: gpu-0, gpu-1, gpu-2, gpu-3, gpu-4, gpu-5, gpu-6, gpu-7") for text in claims)


def test_devices_page_of_a_snapshot_without_dra_says_so(page: Page, ui_server: LiveServer) -> None:
    upload(page, ui_server, EXAMPLES_DIR / "hello-volcano-job.yaml")
    page.click("nav >> text=Devices")
    assert "no DRA devices" in page.locator("#devices-summary").inner_text()
    assert page.locator("#devices-nodes").count() == 0


def test_what_if_page_lists_the_devices_a_pasted_pods_claim_would_get(page: Page, ui_server: LiveServer, tmp_path: Path) -> None:
    """The DRA example without its notebook pod; the pod and its MIG claim template pasted."""
    documents = [document for document in yaml.safe_load_all((EXAMPLES_DIR / "dra-gpus.yaml").read_text()) if document]
    added = [document for document in documents if document["metadata"]["name"] in ("one-mig-slice", "notebook-infer")]
    cluster = tmp_path / "dra-base.yaml"
    cluster.write_text(yaml.safe_dump_all([document for document in documents if document not in added]))
    upload(page, ui_server, cluster)
    page.click("nav >> text=What-if")
    page.check("input[name=mode][value=yaml]")
    page.fill("textarea[name=yaml]", yaml.safe_dump_all(added))
    page.click("#whatif button[type=submit]")
    verdict = page.locator(".verdict.starts")
    verdict.wait_for()
    assert "starts now: 1 of 1 pods placed (min 1) on a100-mig-0." in verdict.inner_text()
    (claim,) = verdict.locator("ul.claims li").all_inner_texts()
    assert claim.startswith("ml/notebook-infer mig on a100-mig-0: mig gpu-0-mig-19-")


def test_a_podgroups_page_lists_each_pods_claim_and_its_devices() -> None:
    analysis = _example()
    detail = build_podgroup_detail(analysis, PodGroupKey("ml/llm-train"))
    assert detail is not None
    for index, pod in enumerate(detail.pods):
        assert pod.claims == (
            f"ml/llm-train-worker-{index} gpus (template eight-gpus-one-nvlink): "
            "gpus: gpu-0, gpu-1, gpu-2, gpu-3, gpu-4, gpu-5, gpu-6, gpu-7"
        )
    (notebook,) = build_podgroup_detail(analysis, analysis.snapshot.pod_by_key[PodKey("ml/notebook-infer")].pod_group).pods
    assert notebook.claims.startswith("ml/notebook-infer mig (template one-mig-slice): mig: gpu-0-mig-19-")
