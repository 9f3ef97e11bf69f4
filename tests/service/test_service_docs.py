"""`/docs` is whole without internet: every script, stylesheet and icon the page names is
served by the app itself (the browser test `tests/ui/test_docs_offline.py` renders it with
the network cut)."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import ServiceSettings


def _client() -> TestClient:
    return TestClient(create_app(ServiceSettings()))


def test_the_docs_page_names_no_other_host() -> None:
    page = _client().get("/docs")
    assert page.status_code == 200
    assert re.findall(r"(?:https?:)?//[^\s'\"<>]+", page.text) == []


def test_every_asset_the_docs_page_names_is_served_by_the_app() -> None:
    client = _client()
    page = client.get("/docs").text
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert len(assets) == 3  # the script, the stylesheet, the icon
    for asset in assets:
        response = client.get(asset)
        assert response.status_code == 200, asset
        assert len(response.content) > 500, asset
    openapi_url = re.search(r"url: '([^']+)'", page)
    assert openapi_url is not None and client.get(openapi_url.group(1)).json()["paths"]


def test_redoc_is_not_served() -> None:
    """No Python package ships ReDoc; a page that would load it from a CDN is worse than none."""
    assert _client().get("/redoc").status_code == 404
