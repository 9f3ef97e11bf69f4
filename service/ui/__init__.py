"""The dashboard: read-only pages under `/ui` over the same snapshot the API and the controller use.

    Cluster    the HyperNode tree, each node a row of GPU cells by state and queue color
    Queues     per queue (as a tree) weight, guarantee, deserved, allocated, capability, pending
    PodGroups  a table to filter and sort, the reason each pending one waits; one PodGroup's page
    What-if    a job described or pasted → `POST /v1/what-if` → drawn on the cluster picture

Served by `batchplace serve` and, on its `--port`, by `batchplace controller` (where the
pages show the live snapshot); without a controller the pages show an uploaded one.
Server-rendered HTML (Jinja2) with one small script and one stylesheet shipped as
package data: no build step, nothing fetched at run time (README, "Dashboard").

Modules: `analysis` (the one solve a page reads), `cluster_view`, `queue_view`,
`podgroup_view` (pure view models), `units` (numbers as people read them), `uploads`,
`auth`, `pages` (templates), `routes` (HTTP). `install_ui(app)` wires it into `service.app.create_app`.
"""

from __future__ import annotations

from collections import OrderedDict

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from service.ui.pages import STATIC_DIR
from service.ui.routes import LoginRequired, PageInstead, login_redirect, page_instead, router
from service.ui.uploads import UploadStore

__all__ = ["install_ui", "router"]


def install_ui(app: FastAPI) -> None:
    """Mount `/ui` (pages) and `/ui/static` (CSS, script) on `app`."""
    app.state.ui_uploads = UploadStore()
    app.state.ui_live = None
    app.state.ui_views = OrderedDict()
    app.state.ui_balance = OrderedDict()
    app.mount("/ui/static", StaticFiles(directory=STATIC_DIR), name="ui-static")
    app.include_router(router)
    app.add_exception_handler(LoginRequired, login_redirect)
    app.add_exception_handler(PageInstead, page_instead)
