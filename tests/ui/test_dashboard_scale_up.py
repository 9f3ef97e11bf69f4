"""The dashboard's Scale-up page: templates pasted into its form give the plan for the page's
snapshot (nodes to buy, the gangs they start, those no node helps), and bad templates the
sentence naming the template and field, with status 422."""

from __future__ import annotations

import warnings
from pathlib import Path

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient` is deprecated")

from fastapi.testclient import TestClient  # noqa: E402

from service.app import create_app  # noqa: E402
from service.settings import ServiceSettings  # noqa: E402
from service.ui.analysis import analyze  # noqa: E402
from service.ui.scale_up_view import build_scale_up_view  # noqa: E402
from tests.builders import make_gang, make_node, make_snapshot  # noqa: E402
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scale-up"
P5 = "[{name: p5, allocatable: {cpu: 192000, gpu: 8000}, price_per_hour: 10, max_count: 4}]"


def test_the_view_plans_for_the_page_s_decision() -> None:
    snapshot = make_snapshot(
        nodes=[make_node("n1", gpus=8)],
        groups=[make_gang("busy", gpus=8, running_on=["n1"], preemptable=False), make_gang("job", replicas=2, gpus=8)],
    )
    view = build_scale_up_view(analyze(snapshot, now_s=0.0), P5)
    assert view.error is None and view.plan is not None
    assert view.plan.started == ("default/job",)
    assert [(row.template, len(row.nodes)) for row in view.plan.bought] == [("p5", 2)]


def test_bad_templates_are_one_sentence_naming_the_field() -> None:
    analysis = analyze(make_snapshot(nodes=[make_node("n1")]), now_s=0.0)
    assert build_scale_up_view(analysis, P5.replace("max_count: 4", "max_count: -4")).error == (
        "templates: templates[0].max_count: Input should be greater than or equal to 0"
    )
    assert (build_scale_up_view(analysis, "[unclosed").error or "").startswith("templates: not valid YAML")


def test_the_page_shows_the_plan_of_an_uploaded_snapshot() -> None:
    with TestClient(create_app(ServiceSettings()), raise_server_exceptions=False) as client:
        uploaded = client.post("/ui/upload", data={"text": (EXAMPLE / "cluster.yaml").read_text()}, follow_redirects=False)
        assert uploaded.status_code == 303
        query = uploaded.headers["location"].split("?", 1)[1]
        form = client.get(f"/ui/scale-up?{query}")
        assert form.status_code == 200 and 'name="templates"' in form.text
        page = client.post(f"/ui/scale-up?{query}", data={"templates": (EXAMPLE / "templates.yaml").read_text()})
        assert page.status_code == 200, page.text
        assert "p5-48xlarge-domain-1" in page.text
        assert '<tr data-group="research/llm-pretrain"><td>research/llm-pretrain</td><td class="ok">starts</td>' in page.text
        assert "quota: queue capped capability 8 gpu, 0 in use, job needs 16" in page.text
        bad = client.post(f"/ui/scale-up?{query}", data={"templates": "[{name: p5}]"})
        assert bad.status_code == 422
        assert "templates: templates[0].allocatable: Field required" in bad.text
