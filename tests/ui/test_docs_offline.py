"""`/docs` in headless Chromium with every host but the server cut off: Swagger UI renders the
API's operations from the files the app serves (FastAPI's default page, from a CDN, stays blank)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from tests.service.service_helpers import LiveServer

Page = Any  # playwright.sync_api.Page, imported lazily by the fixture


def test_docs_renders_the_operation_list_with_the_network_cut(page: Page, ui_server: LiveServer) -> None:
    own_host = urlsplit(ui_server.url).netloc
    elsewhere: list[str] = []

    def only_the_server(route: Any) -> None:
        if urlsplit(route.request.url).netloc == own_host:
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort("internetdisconnected")

    page.route("**/*", only_the_server)
    page.goto(f"{ui_server.url}/docs")
    page.wait_for_selector(".opblock-summary-path", timeout=20_000)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert "/v1/placements" in [path.strip() for path in paths]
    assert "/v1/what-if" in [path.strip() for path in paths]
    assert page.locator(".errors-wrapper").count() == 0
    assert elsewhere == []
