"""The dashboard on the live controller, and behind a token — in a real browser.

Live: a real control plane (etcd + kube-apiserver, `controller.testing.ControlPlane`,
the controller tests' fixture), the seed example `gang-min-available-20.yaml` created in
it, a `Controller` running in this process and its HTTP side
(`batchplace.controller_command.build_http_app`, what `batchplace controller --port`
serves) on 127.0.0.1. The pages must show the live cluster, without any upload.

Token: `batchplace serve --token-file` semantics through `ServiceSettings(token=…)`.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from pydantic import SecretStr

from batchplace.controller_command import build_http_app
from controller.kube import KubeClient
from controller.loop import Controller, ControllerConfig
from controller.testing.control_plane import ControlPlane
from controller.testing.seed import EXAMPLES_DIR, create_all, seed_objects
from service.app import create_app
from service.settings import ServiceSettings
from tests.service.service_helpers import LiveServer

Page = Any
TOKEN = "ui-test-token-5d2e"


@pytest.fixture(scope="module")
def live_dashboard() -> Iterator[tuple[LiveServer, str]]:
    """(the controller's HTTP side, the namespace the seed example lives in)."""
    with ControlPlane() as plane:
        configuration = k8s.Configuration()
        k8s_config.load_kube_config(config_file=str(plane.admin_kubeconfig), client_configuration=configuration)
        namespace = f"ui-{uuid.uuid4().hex[:6]}"
        k8s.CoreV1Api(k8s.ApiClient(configuration)).create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=namespace)))
        admin = KubeClient.from_kubeconfig(plane.admin_kubeconfig)
        create_all(admin, seed_objects(EXAMPLES_DIR / "gang-min-available-20.yaml", namespace=namespace))
        controller = Controller(KubeClient.from_kubeconfig(plane.admin_kubeconfig), ControllerConfig(period_s=0.3, engine="greedy"))
        stop = threading.Event()
        controller.start(stop)
        try:
            assert controller.caches.wait_synced(30), "the controller's caches did not sync"
            with LiveServer(build_http_app(controller), startup_timeout_s=60) as server:
                yield server, namespace
        finally:
            stop.set()
            controller.join(5)


def test_the_pages_show_the_live_cluster_and_what_if_answers_on_it(
    page: Page, live_dashboard: tuple[LiveServer, str], screenshots: Path
) -> None:
    server, namespace = live_dashboard
    page.goto(f"{server.url}/ui")
    page.wait_for_url(re.compile(r"/ui/cluster$"))
    assert page.locator(".badge.live").inner_text() == "live cluster"
    assert page.locator("#picture .node").count() == 3  # the example's three CPU nodes
    page.click("nav >> text=PodGroups")
    row = page.locator(f'tr.pg[data-pg="{namespace}/gang-job"]')
    assert row.locator(".state").inner_text() == "pending"
    assert "gang: 3 of min 20 pods fit (needs 80 cpu, 12 cpu free)" in row.locator(".reason").inner_text()
    shoot_path = screenshots / "live-podgroups.png"
    page.screenshot(path=str(shoot_path), full_page=True)
    page.click("nav >> text=What-if")
    page.fill("input[name=pods]", "1")
    page.fill("input[name=gpus]", "0")
    page.fill("input[name=cpu]", "1")
    page.click("#whatif button[type=submit]")
    verdict = page.locator(".verdict.starts")
    verdict.wait_for()
    assert "default/what-if-job starts now: 1 of 1 pods placed" in verdict.inner_text()
    assert page.locator(".node.land-node").count() == 1
    page.screenshot(path=str(screenshots / "live-what-if.png"), full_page=True)


@pytest.fixture(scope="module")
def token_server() -> Iterator[LiveServer]:
    with LiveServer(create_app(ServiceSettings(token=SecretStr(TOKEN)))) as server:
        yield server


def test_with_a_token_the_pages_ask_for_it_and_the_what_if_call_carries_it(page: Page, token_server: LiveServer) -> None:
    page.goto(f"{token_server.url}/ui/upload")
    page.wait_for_url(re.compile(r"/ui/login\?next=/ui/upload$"))
    page.fill("#login input[name=token]", "wrong")
    page.click("#login button[type=submit]")
    assert "not this server's token" in page.locator("#error").inner_text()
    page.fill("#login input[name=token]", TOKEN)
    page.click("#login button[type=submit]")
    page.wait_for_url(re.compile(r"/ui/upload$"))
    cookie = next(c for c in page.context.cookies() if c["name"] == "batchplace_ui")
    assert TOKEN not in cookie["value"] and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    page.set_input_files("form.upload input[type=file]", str(EXAMPLES_DIR / "gpu-topology.yaml"))
    page.click("form.upload button[type=submit]")
    page.wait_for_url(re.compile(r"/ui/cluster\?s="))
    assert page.locator("#picture .g").count() == 64
    page.click("nav >> text=What-if")
    page.fill("input[name=pods]", "1")
    page.click("#whatif button[type=submit]")
    page.locator(".verdict.starts").wait_for()
    # a tab without the token in its storage is asked for it on the page
    page.evaluate("sessionStorage.clear()")
    page.click("#whatif button[type=submit]")
    page.locator(".verdict.error").wait_for()
    assert "wants its token" in page.locator("#answer").inner_text()
    assert page.locator("#whatif .token").is_visible()
    page.fill("#whatif input[name=token]", TOKEN)
    page.click("#whatif button[type=submit]")
    page.locator(".verdict.starts").wait_for()
    page.click("text=log out")
    page.goto(f"{token_server.url}/ui/cluster")
    page.wait_for_url(re.compile(r"/ui/login"))
