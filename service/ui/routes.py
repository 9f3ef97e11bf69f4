"""The dashboard's routes under `/ui`: Cluster, Queues, PodGroups (and one PodGroup), Devices, Balance, What-if,
Scale-up, the upload form, and login. Read-only: nothing here changes the cluster.

Each page resolves its snapshot through one dependency (`Resolved`, `resolve_page`): `?s=<key>` names an upload this process
holds; without it, the live snapshot when a controller runs in the process
(`app.state.live_snapshot`), else the upload form. The snapshot's `Analysis` (one
solve) runs in the service's bounded solver pool, and is kept: with the upload, or for
the live snapshot until the controller hands out a new one. A full pool answers a page
that says so (503, Retry-After), as the API answers 429.

Errors are pages, never tracebacks: a malformed upload is the upload form again (422)
with the loader's sentence — file, document, object, field; an upload this process no
longer holds, a PodGroup that does not exist, a live snapshot not synced yet: each has
its page and status.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Annotated, Any, TypeVar
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException
from starlette.responses import RedirectResponse, Response

from models.errors import SnapshotError
from models.snapshot import pod_group_key
from service.errors import NoSolverSlot
from service.ui.analysis import Analysis, analyze
from service.ui.auth import COOKIE_NAME, safe_next, session_ok, session_value, token_ok
from service.ui.balance_view import BalanceView, build_balance_view
from service.ui.cluster_view import ClusterView, build_cluster_view
from service.ui.devices_view import build_devices_view
from service.ui.pages import Source, render
from service.ui.podgroup_view import (
    SORT_KEYS,
    STATES,
    build_podgroup_detail,
    build_podgroup_rows,
    filter_rows,
    sort_rows,
)
from service.ui.queue_view import build_queue_rows
from service.ui.scale_up_view import TEMPLATES_EXAMPLE, ScaleUpView, build_scale_up_view
from service.ui.uploads import Upload, UploadStore, read_upload, upload_key

__all__ = ["router", "LoginRequired", "PageInstead", "login_redirect", "page_instead"]

log = logging.getLogger("batchplace.service.ui")

router = APIRouter(prefix="/ui", include_in_schema=False)

_VIEWS_KEPT = 4
SourceKey = Annotated[str | None, Query(alias="s", max_length=64, description="an upload's key")]


class LoginRequired(Exception):
    """A page asked for without the session cookie while the server has a token."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def login_redirect(request: Request, error: Exception) -> Response:
    assert isinstance(error, LoginRequired)
    return RedirectResponse(f"/ui/login?next={quote(error.path, safe='/')}", status_code=303)


class PageInstead(Exception):
    """The page asked for cannot be shown; `response` (a redirect, a waiting or busy page) is
    answered instead. Raised by dependencies, so every route reads its happy path only."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def page_instead(request: Request, error: Exception) -> Response:
    assert isinstance(error, PageInstead)
    return error.response


def _settings_token(request: Request) -> Any:
    return request.app.state.settings.token


def _check_login(request: Request) -> None:
    if not session_ok(_settings_token(request), request.cookies.get(COOKIE_NAME)):
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise LoginRequired(target)


def _common(request: Request) -> dict[str, Any]:
    token = _settings_token(request)
    return {"login_needed": token is not None, "logged_in": token is not None, "live": request.app.state.live_snapshot is not None}


def _uploads(request: Request) -> UploadStore:
    return request.app.state.ui_uploads  # type: ignore[no-any-return]


async def resolve_page(request: Request, s: SourceKey = None) -> tuple[Analysis, Source]:
    """The page's analysis and where it came from; `PageInstead` with the page to answer otherwise."""
    key = s
    _check_login(request)
    pool = request.app.state.pool
    if key:
        upload = _uploads(request).get(key)
        if upload is None:
            raise PageInstead(render("upload.html", status_code=404, page="upload", error=(
                f"This server does not hold the upload {key!r} (it keeps the last {_uploads(request).max_entries} "
                "uploads, in memory, until it restarts). Upload the file again."), **_common(request)))
        source = Source(kind="upload", label=upload.name, key=upload.key, warnings=upload.warnings)
        if upload.analysis is None:
            try:
                upload.analysis = await pool.run(lambda: analyze(upload.snapshot, now_s=time.time()))
            except NoSolverSlot as busy:
                raise PageInstead(_busy(request, busy)) from None
        return upload.analysis, source
    live_source = request.app.state.live_snapshot
    if live_source is None:
        raise PageInstead(RedirectResponse("/ui/upload", status_code=303))
    snapshot = live_source.current()
    if snapshot is None:
        raise PageInstead(render("waiting.html", status_code=503, headers={"Retry-After": "2"}, page="", **_common(request)))
    cached = request.app.state.ui_live
    if cached is not None and cached.snapshot is snapshot:
        return cached, Source(kind="live", label="live cluster")
    try:
        analysis = await pool.run(lambda: analyze(snapshot, now_s=time.time()))
    except NoSolverSlot as busy:
        raise PageInstead(_busy(request, busy)) from None
    request.app.state.ui_live = analysis
    return analysis, Source(kind="live", label="live cluster")


Resolved = Annotated[tuple[Analysis, Source], Depends(resolve_page)]


V = TypeVar("V")


async def _view(
    request: Request, analysis: Analysis, views: OrderedDict[int, tuple[Analysis, V]], build: Callable[[Analysis], V]
) -> V:
    """`build(analysis)` once, off the event loop: the last few views are kept next to their
    analysis (keyed by its identity, checked against it, so a recycled id never answers)."""
    cached = views.get(id(analysis))
    if cached is not None and cached[0] is analysis:
        return cached[1]
    view = await request.app.state.pool.run(lambda: build(analysis))
    views[id(analysis)] = (analysis, view)
    while len(views) > _VIEWS_KEPT:
        views.popitem(last=False)
    return view


async def _cluster_view(request: Request, analysis: Analysis) -> ClusterView:
    """The picture of `analysis`, built once."""
    return await _view(request, analysis, request.app.state.ui_views, build_cluster_view)


def _busy(request: Request, busy: NoSolverSlot) -> Response:
    return render("busy.html", status_code=503, headers={"Retry-After": str(busy.retry_after_s)},
                  retry_after_s=busy.retry_after_s, **_common(request))


@router.get("", summary="The dashboard")
@router.get("/", summary="The dashboard")
async def index(request: Request, s: SourceKey = None) -> Response:
    _check_login(request)
    if s is None and request.app.state.live_snapshot is None:
        return RedirectResponse("/ui/upload", status_code=303)
    return RedirectResponse("/ui/cluster" + (f"?s={s}" if s else ""), status_code=303)


@router.get("/cluster", summary="Cluster page")
async def cluster(request: Request, resolved: Resolved) -> Response:
    analysis, source = resolved
    try:
        view = await _cluster_view(request, analysis)
    except NoSolverSlot as busy:
        return _busy(request, busy)
    return render("cluster.html", page="cluster", source=source, view=view, analysis=analysis,
                  pods_json=_pods_json(view), **_common(request))


@router.get("/queues", summary="Queues page")
async def queues(request: Request, resolved: Resolved) -> Response:
    analysis, source = resolved
    return render("queues.html", page="queues", source=source, rows=build_queue_rows(analysis), analysis=analysis,
                  **_common(request))


@router.get("/podgroups", summary="PodGroups page")
async def podgroups(
    request: Request,
    resolved: Resolved,
    q: Annotated[str, Query(max_length=200)] = "",
    state: Annotated[str, Query(max_length=20)] = "",
    queue: Annotated[str, Query(max_length=253)] = "",
    sort: Annotated[str, Query(max_length=20)] = "state",
    order: Annotated[str, Query(max_length=4)] = "asc",
) -> Response:
    analysis, source = resolved
    all_rows = build_podgroup_rows(analysis)
    sort_key = sort if sort in SORT_KEYS else "state"
    rows = sort_rows(filter_rows(all_rows, text=q, state=state if state in STATES else "", queue=queue),
                     key=sort_key, descending=order == "desc")
    return render(
        "podgroups.html", page="podgroups", source=source, rows=rows, total=len(all_rows), states=STATES,
        queues=sorted(queue.name for queue in analysis.snapshot.queues), filters={"q": q, "state": state, "queue": queue},
        sort=sort_key, order="desc" if order == "desc" else "asc", sort_keys=SORT_KEYS, analysis=analysis,
        **_common(request),
    )


@router.get("/podgroups/{namespace}/{name}", summary="One PodGroup")
async def podgroup(request: Request, namespace: str, name: str, resolved: Resolved) -> Response:
    analysis, source = resolved
    key = pod_group_key(namespace, name)
    detail = build_podgroup_detail(analysis, key)
    if detail is None:
        return render("missing.html", status_code=404, page="podgroups", source=source,
                      message=f"There is no PodGroup {key} in this snapshot.", **_common(request))
    return render("podgroup.html", page="podgroups", source=source, detail=detail, analysis=analysis, **_common(request))


@router.get("/devices", summary="Devices page")
async def devices(request: Request, resolved: Resolved) -> Response:
    analysis, source = resolved
    return render("devices.html", page="devices", source=source, devices=build_devices_view(analysis), analysis=analysis,
                  **_common(request))


async def _balance_view(request: Request, analysis: Analysis) -> BalanceView:
    """The advice on `analysis`, planned once."""
    return await _view(request, analysis, request.app.state.ui_balance, build_balance_view)


@router.get("/balance", summary="Balance page")
async def balance(request: Request, resolved: Resolved) -> Response:
    analysis, source = resolved
    try:
        view = await _balance_view(request, analysis)
    except NoSolverSlot as busy:
        return _busy(request, busy)
    return render("balance.html", page="balance", source=source, balance=view, rows=view.rows, analysis=analysis,
                  **_common(request))


@router.get("/what-if", summary="What-if page")
async def what_if(request: Request, resolved: Resolved) -> Response:
    analysis, source = resolved
    try:
        view = await _cluster_view(request, analysis)
    except NoSolverSlot as busy:
        return _busy(request, busy)
    snapshot = analysis.snapshot
    return render(
        "what_if.html", page="what-if", source=source, view=view, analysis=analysis, pods_json=_pods_json(view),
        queues=sorted(queue.name for queue in snapshot.queues),
        priority_classes=sorted(snapshot.priority_classes, key=lambda pc: -pc.value),
        tiers=sorted({hypernode.tier for hypernode in snapshot.hypernodes}),
        **_common(request),
    )


@router.get("/scale-up", summary="Scale-up page")
async def scale_up(request: Request, resolved: Resolved) -> Response:
    analysis, source = resolved
    return render("scale_up.html", page="scale-up", source=source, analysis=analysis, view=None,
                  templates_text=TEMPLATES_EXAMPLE, **_common(request))


@router.post("/scale-up", summary="Scale-up page: the plan for the templates posted")
async def scale_up_plan(request: Request, resolved: Resolved) -> Response:
    analysis, source = resolved
    settings = request.app.state.settings
    try:
        form = await request.form(max_files=0, max_fields=2, max_part_size=settings.max_body_bytes)
    except (MultiPartException, ValueError, KeyError) as error:
        view = ScaleUpView(plan=None, error=f"the form could not be read: {error}")
        text = ""
    else:
        text = str(form.get("templates") or "")
        try:
            view = await request.app.state.pool.run(lambda: build_scale_up_view(analysis, text))
        except NoSolverSlot as busy:
            return _busy(request, busy)
    return render("scale_up.html", status_code=422 if view.error else 200, page="scale-up", source=source,
                  analysis=analysis, view=view, templates_text=text, **_common(request))


@router.get("/snapshot.json", summary="An upload's snapshot, as the API takes it")
async def snapshot_json(request: Request, s: SourceKey = None) -> Response:
    """What the What-if page posts to `/v1/what-if` as the base when it shows an upload."""
    _check_login(request)
    upload = _uploads(request).get(s or "")
    if upload is None:
        return Response(json.dumps({"detail": f"no upload {s!r} on this server"}), status_code=404, media_type="application/json")
    body = await request.app.state.pool.run(lambda: upload.snapshot.model_dump_json(exclude_defaults=True))
    return Response(body, media_type="application/json")


# ---- upload ----


@router.get("/upload", summary="Upload a snapshot")
async def upload_form(request: Request) -> Response:
    _check_login(request)
    return render("upload.html", page="upload", error=None, **_common(request))


@router.post("/upload", summary="Upload a snapshot")
async def upload(request: Request) -> Response:
    _check_login(request)
    settings = request.app.state.settings
    try:
        form = await request.form(max_files=1, max_fields=4, max_part_size=settings.max_body_bytes)
    except (MultiPartException, ValueError, KeyError) as error:
        return _upload_error(request, f"the form could not be read: {error}")
    picked = form.get("file")
    pasted = form.get("text")
    if isinstance(picked, UploadFile) and picked.filename:
        content, name = await picked.read(), picked.filename
    elif isinstance(pasted, str) and pasted.strip():
        content, name = pasted.encode("utf-8"), "pasted text"
    else:
        return _upload_error(request, "pick a YAML or JSON file, or paste one, then press Show")
    key = upload_key(content)
    known = _uploads(request).get(key)
    if known is None:
        try:
            snapshot, warnings = await request.app.state.pool.run(lambda: read_upload(content, name=name))
        except SnapshotError as error:
            return _upload_error(request, str(error))
        except (ValueError, RecursionError) as error:  # the loaders' own errors are SnapshotErrors; belt and braces
            log.warning("upload %s not read: %s", name, error.__class__.__name__)
            return _upload_error(request, f"{name}: cannot be read as a snapshot ({error.__class__.__name__})")
        except NoSolverSlot as busy:
            return _busy(request, busy)
        _uploads(request).put(Upload(key=key, name=name, size_bytes=len(content), snapshot=snapshot,
                                     warnings=tuple(warnings), uploaded_at_s=time.time()))
    return RedirectResponse(f"/ui/cluster?s={key}", status_code=303)


def _upload_error(request: Request, message: str) -> Response:
    return render("upload.html", status_code=422, page="upload", error=message, **_common(request))


# ---- login ----


@router.get("/login", summary="Log in with the API token")
async def login_form(request: Request, next: Annotated[str, Query(max_length=2000)] = "") -> Response:
    if _settings_token(request) is None:
        return RedirectResponse(safe_next(next), status_code=303)
    return render("login.html", page="login", next=safe_next(next), error=None, login_needed=True)


@router.post("/login", summary="Log in with the API token")
async def login(request: Request) -> Response:
    token = _settings_token(request)
    if token is None:
        return RedirectResponse("/ui/cluster", status_code=303)
    try:
        form = await request.form(max_files=0, max_fields=4)
    except (MultiPartException, ValueError, KeyError):
        form = None
    presented = form.get("token") if form is not None else None
    target = safe_next(str(form.get("next") or "")) if form is not None else "/ui/cluster"
    if not isinstance(presented, str) or not token_ok(token, presented):
        return render("login.html", status_code=401, page="login", next=target, error="That is not this server's token.",
                      login_needed=True)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(COOKIE_NAME, session_value(token), httponly=True, samesite="strict", path="/ui")
    return response


@router.post("/logout", summary="Log out")
async def logout(request: Request) -> Response:
    response = RedirectResponse("/ui/login", status_code=303)
    response.delete_cookie(COOKIE_NAME, path="/ui", httponly=True, samesite="strict")
    return response


def _pods_json(view: ClusterView) -> list[list[str]]:
    return [[pod.key, pod.group, pod.queue, pod.gpu, pod.state] for pod in view.pods]
