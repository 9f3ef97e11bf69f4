"""`/docs`: Swagger UI from files the app serves itself, so the page works without internet.

FastAPI's default `/docs` page loads Swagger UI's script and stylesheet from a public CDN;
on a cluster without egress (and for anyone offline) it stays blank. Here the Swagger UI
distribution ships as a Python package (`swagger_ui_bundle`, installed as
`swagger-ui-bundle-v2`), mounted under `/docs/static`, and the page points at those files
only — as the dashboard ships its own under `/ui/static`. Swagger UI 5 is needed: FastAPI
writes OpenAPI 3.1, which Swagger UI 4 refuses to render ("supported versions: 3.0.n").

ReDoc is off: no Python package ships it, and one documentation page is enough.
Not promised: "Try it out" on `/v1/*` with `--token-file` set needs the token entered in
Swagger UI's Authorize dialog, as for any other client.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

__all__ = ["DOCS_PATH", "DOCS_STATIC_PATH", "install_docs"]

DOCS_PATH = "/docs"
DOCS_STATIC_PATH = "/docs/static"


def install_docs(app: FastAPI) -> None:
    """Serve `/docs` and its assets on `app` (created with `docs_url=None, redoc_url=None`)."""
    app.mount(DOCS_STATIC_PATH, StaticFiles(directory=swagger_ui_path), name="docs-static")
    openapi_url = app.openapi_url or "/openapi.json"
    title = f"{app.title} API"

    @app.get(DOCS_PATH, include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=title,
            swagger_js_url=f"{DOCS_STATIC_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_STATIC_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_STATIC_PATH}/favicon-32x32.png",
            swagger_ui_parameters={"validatorUrl": None},  # no badge fetched from swagger.io
        )
