"""The workbench's HTTP routes (FastAPI): one page, small JSON actions, downloads.

Sessions: ``GET /`` opens a new session (a new browser tab gets its own) and redirects to
``/s/<id>/``; a ``secrets`` token in an HTTP-only, same-site cookie bound to that id must come with
every request of the session. With a ``token`` (required off loopback), every request needs it
(``?token=`` once, then a cookie). On loopback the ``Host`` header must be a loopback name, so a
web page elsewhere cannot reach the server by DNS rebinding. The page loads no asset from the
network (a content security policy forbids it).

Actions (``POST /s/<id>/api/<action>`` with a JSON body) change the state and answer with the
panel re-rendered; a re-measure runs in a worker thread and the page polls ``/status``.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from importlib import resources
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from jinja2 import Environment, PackageLoader, select_autoescape

from sdckit.app._figures import group_size_plot, loss_plot, risk_histogram_svg, risk_plot, without_plot
from sdckit.app._forms import (
    field_values,
    help_html,
    parse_step_fields,
    posted_values,
    step_fields,
    uses_yaml,
)
from sdckit.app._hierarchies import (
    grouping_hierarchy,
    hierarchy_csv,
    hierarchy_from_csv,
    interval_hierarchy,
    parse_breaks,
    parse_groups,
    quantile_breaks,
)
from sdckit.app._jobs import unexpected_error
from sdckit.app._keys import combinations_below, frequency_table, preview_recode, recode_rule
from sdckit.app._security import (
    IDLE_SECONDS,
    MAX_UPLOAD_BYTES,
    SESSIONS_PER_CLIENT,
    check_token,
    cross_site,
    too_large_message,
    upload_too_large,
)
from sdckit.app._session import (
    ROLE_LABELS,
    ROLES,
    STEP_TEMPLATES,
    check_roles,
    field_of_error,
    moved_off,
    parse_step,
    parse_step_options,
    step_text,
)
from sdckit.app._workspace import Workspace, _hierarchies, plan_steps, read_options, user_error
from sdckit.errors import ConfigError, SdcError
from sdckit.pipeline._config import STEP_KINDS
from sdckit.report._release_check import posterior_text, verdict

__all__ = ["create_app"]

MAX_SESSIONS = 32
MAX_JSON_BYTES = 4 * 1024 * 1024
"""An action's JSON body larger than this is refused (a page posts a few kilobytes)."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")
CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; "
       "connect-src 'self'; frame-ancestors 'none'; form-action 'self'")
STATIC = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}


def _env() -> Environment:
    env = Environment(loader=PackageLoader("sdckit.app", "templates"), autoescape=select_autoescape(["html", "j2"]))
    env.filters["step_text"] = step_text
    env.filters["help_html"] = help_html
    env.globals["json_loads"] = json.loads
    return env


def create_app(
    *, initial: str | None = None, read: dict[str, Any] | None = None, token: str | None = None,
    check_host: bool = True, max_upload: int = MAX_UPLOAD_BYTES,
) -> FastAPI:
    """The workbench as an ASGI app. ``initial``: a file (or ``adult``) each new session loads;
    ``token``: required on every request; ``check_host``: refuse a non-loopback ``Host`` header
    (off only when the server listens beyond loopback, with a token)."""
    if token is not None:
        check_token(token)  # a weak token is refused before the server starts
    sessions: dict[str, Workspace] = {}
    owners: dict[str, str] = {}  # session id -> the client address that opened it

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        for ws in sessions.values():  # the sessions' private folders (uploads, exports) go with the server
            ws.close()

    app = FastAPI(title="sdckit app", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    env = _env()

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Response:
        if check_host:
            host = request.headers.get("host", "").rsplit(":", 1)[0] if not request.headers.get("host", "").startswith("[") \
                else request.headers.get("host", "").split("]")[0] + "]"
            if host not in LOOPBACK_NAMES:
                return PlainTextResponse("sdckit app answers on loopback only (Host header not a loopback name).", 421)
        if token is not None:
            given = request.query_params.get("token") or request.cookies.get("sdckit_token") or ""
            if not secrets.compare_digest(given.encode(), token.encode()):
                return PlainTextResponse(
                    "this workbench needs its token: open the address `sdckit app` printed (…/?token=…).", 401)
        response: Response = await call_next(request)
        if token is not None and request.query_params.get("token"):
            response.set_cookie("sdckit_token", token, httponly=True, samesite="strict")
        response.headers["Content-Security-Policy"] = CSP
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Cache-Control"] = "no-store"
        return response

    def session(sid: str, request: Request) -> Workspace:
        ws = sessions.get(sid)
        cookie = request.cookies.get(f"sdckit_{sid}", "")
        if ws is None or not secrets.compare_digest(cookie.encode(), ws.secret.encode()):
            raise HTTPException(404, "no such session in this browser: open the workbench's address again.")
        ws.last_used = time.monotonic()
        return ws

    def panel(ws: Workspace) -> str:

        state = ws.state
        run = ws.run_of()
        previous = ws.history.previous
        before = ws.run_of(previous) if previous is not None else None
        plan_hier = _safe_hierarchies(ws.plan_options.get("hierarchies", ""))
        return env.get_template("panel.html.j2").render(
            ws=ws, state=state, run=run, before=before, glance=ws.glance(), job=ws.job,
            roles=ROLES, role_labels=ROLE_LABELS, kinds=STEP_KINDS, templates=STEP_TEMPLATES,
            step_fields=step_fields, field_values=field_values,
            role_of=state.role_of, steps=state.step_list(),
            plan=ws.plan if ws.plan_for == state else None,
            plan_steps=plan_steps(ws.plan, ws.plan_hierarchies or plan_hier, state.k)
            if ws.plan is not None and ws.plan_for == state else [],
            hierarchies=ws.hierarchies, numeric_columns=[c for c in state.coded],
            report_ready=ws.report_path is not None and ws.report_for == state,
            default_hierarchies=ws.plan_options.get("hierarchies", "adult" if state.input == "adult" else ""),
            default_suppression=ws.plan_options.get("suppression", str(state.budget)),
            undo_label=ws.history.undo_stack[-1][1] if ws.history.undo_stack else None,
            redo_label=ws.history.redo_stack[-1][1] if ws.history.redo_stack else None,
            draft=ws.draft, verdict=verdict, posterior_text=posterior_text, plots=_plots(run), keys=_keys_view(ws, run),
        )

    def answer(ws: Workspace) -> JSONResponse:
        # "running" read before the panel is rendered: a job that ends in between leaves the page polling (it
        # fetches the panel again), never a stale panel with polling stopped
        running = ws.job is not None and ws.job.running
        body = {"panel": panel(ws), "running": running}
        if not body["running"]:  # shown once; a running job's outcome is shown when it ends
            ws.error = ws.notice = None
        return JSONResponse(body)

    @app.get("/")
    def open_session(request: Request) -> Response:
        if cross_site(request.headers, request.headers.get("host", "")):
            return PlainTextResponse("sdckit app opens a session only when you open its address yourself; this request "
                                     "came from a page of another site.", 403)
        client = request.client.host if request.client is not None else ""
        mine = [ws for ws in sessions.values() if owners.get(ws.id) == client]
        if len(mine) >= SESSIONS_PER_CLIENT:  # a client's own least recently used session makes room for its new one
            oldest = min(mine, key=lambda w: w.last_used)
            sessions.pop(oldest.id).close()
            owners.pop(oldest.id, None)
        if len(sessions) >= MAX_SESSIONS:
            _make_room(sessions, owners, lambda ws: True)
        if len(sessions) >= MAX_SESSIONS or sum(1 for o in owners.values() if o == client) >= SESSIONS_PER_CLIENT:
            return PlainTextResponse(f"sdckit app: too many open sessions (at most {MAX_SESSIONS}, {SESSIONS_PER_CLIENT} per "
                                     "client), none idle; close a tab's work or restart `sdckit app`.", 503)
        ws = Workspace()
        sessions[ws.id] = ws
        owners[ws.id] = client
        if initial is not None:
            try:
                ws.load(initial, dict(read or {}))
                ws.start_measure(revert_on_failure=False)
            except SdcError as err:
                ws.error = user_error(err)
        response = RedirectResponse(f"/s/{ws.id}/", status_code=303)
        response.set_cookie(f"sdckit_{ws.id}", ws.secret, httponly=True, samesite="strict", path=f"/s/{ws.id}/")
        return response

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in STATIC:
            raise HTTPException(404)
        text = resources.files("sdckit.app").joinpath("static", name).read_text(encoding="utf-8")
        return Response(text, media_type=STATIC[name])

    @app.get("/s/{sid}/", response_class=HTMLResponse)
    def page(sid: str, request: Request) -> str:
        ws = session(sid, request)
        with ws.lock:
            html = env.get_template("page.html.j2").render(ws=ws, panel=panel(ws))
            ws.error = ws.notice = None
            return html

    @app.get("/s/{sid}/panel")
    def get_panel(sid: str, request: Request) -> JSONResponse:
        ws = session(sid, request)
        with ws.lock:
            return answer(ws)

    @app.get("/s/{sid}/status")
    def status(sid: str, request: Request) -> JSONResponse:
        ws = session(sid, request)
        job = ws.job
        if job is None:
            return JSONResponse({"running": False})
        return JSONResponse({"running": job.running, "label": job.label, "stage": job.stage, "ticks": job.ticks,
                             "seconds": round(job.elapsed, 1)})

    @app.post("/s/{sid}/api/{action}")
    async def act(sid: str, action: str, request: Request) -> Response:
        ws = session(sid, request)
        if action == "upload":
            refusal = upload_too_large(request.headers, max_upload)
            if refusal is not None:  # refused on its announced size, before a byte of it is read
                return PlainTextResponse(refusal, 413)
            chunks, size = [], 0
            async for chunk in request.stream():
                size += len(chunk)
                if size > max_upload:
                    return PlainTextResponse(too_large_message(None, max_upload), 413)
                chunks.append(chunk)
            form: dict[str, Any] = dict(request.query_params)
            form["_body"] = b"".join(chunks)
        else:
            if upload_too_large(request.headers, MAX_JSON_BYTES) is not None:
                return PlainTextResponse("the workbench: the action's body is too large.", 413)
            try:
                form = await request.json() if (await request.body()) else {}
            except ValueError:
                raise HTTPException(400, "the body is not JSON") from None
            if not isinstance(form, dict):
                raise HTTPException(400, "the body is not a JSON object")
        with ws.lock:
            ws.last_used = time.monotonic()
            ws.error = ws.notice = None
            try:
                _do(ws, action, form)
            except SdcError as err:
                ws.error = user_error(err)
            except HTTPException:
                raise
            except Exception as err:  # a bug: in words, and the session goes on
                ws.error = unexpected_error(action.replace("_", " "), err)
            return answer(ws)

    @app.get("/s/{sid}/plot/{which}.svg")
    def plot(sid: str, which: str, request: Request) -> Response:
        """The report's histogram of individual risk, of the input or of the release on screen."""

        ws = session(sid, request)
        run = ws.run_of()
        if run is None or which not in ("input", "release"):
            raise HTTPException(404, "no measured release on screen")
        svg = risk_histogram_svg(run.input_figures if which == "input" else run.release_figures)
        return Response(svg, media_type="image/svg+xml")

    @app.get("/s/{sid}/hierarchy/{column}.csv")
    def hierarchy_file(sid: str, column: str, request: Request) -> Response:
        ws = session(sid, request)
        h = ws.hierarchies.get(column)
        if h is None:
            raise HTTPException(404, f"no hierarchy of {column!r} in this session; build or load one first.")
        return Response(hierarchy_csv(h), media_type="text/csv",
                        headers={"Content-Disposition": f'attachment; filename="{column}.csv"'})

    @app.get("/s/{sid}/export/pipeline.yaml")
    def export_yaml(sid: str, request: Request) -> Response:
        ws = session(sid, request)
        return Response(ws.state.pipeline_yaml(), media_type="application/yaml",
                        headers={"Content-Disposition": 'attachment; filename="pipeline.yaml"'})

    @app.get("/s/{sid}/export/release")
    def export_release(sid: str, request: Request) -> Response:
        ws = session(sid, request)
        with ws.lock:
            try:
                path = ws.write_release()
            except SdcError as err:
                return PlainTextResponse(f"Error: {user_error(err)}", 409)
        return FileResponse(path, filename=path.name)

    @app.get("/s/{sid}/export/report.html")
    def export_report(sid: str, request: Request) -> Response:
        ws = session(sid, request)
        if ws.report_path is None or ws.report_for != ws.state:
            return PlainTextResponse("Error: build the report of the state on screen first (Export, Build the report).", 409)
        return FileResponse(ws.report_path, filename="report.html", media_type="text/html")

    @app.exception_handler(HTTPException)
    async def in_words(_: Request, exc: HTTPException) -> Response:
        return PlainTextResponse(str(exc.detail), exc.status_code)  # the page shows this line as it is

    app.state.sessions = sessions
    return app


def _keys_view(ws: Workspace, run: Any) -> dict[str, Any] | None:
    """The keys of the release on screen: a frequency table each, the combinations below k, the preview."""
    if run is None or run.result.release_measure is None:
        return None
    release, m = run.result.protected, run.result.release_measure
    keys = [c for c in m.quasi_identifiers if c in release.columns]
    chosen = [c for c in (ws.combo_columns or keys) if c in keys] or keys
    combos, n_combos, n_records = combinations_below(release, chosen, m.k)
    return {
        "columns": keys, "chosen": chosen, "k": m.k,
        "tables": {c: frequency_table(release, c) for c in keys},
        "combos": combos, "n_combos": n_combos, "n_records": n_records,
        "preview": ws.preview if ws.preview_for == ws.state else None,
    }


def _make_room(sessions: dict[str, Workspace], owners: dict[str, str], among: Any) -> None:
    """Close the least recently used session of ``among`` if it is idle (never one in use)."""
    now = time.monotonic()
    idle = [ws for ws in sessions.values() if among(ws) and now - ws.last_used >= IDLE_SECONDS
            and not (ws.job is not None and ws.job.running)]
    if idle:
        oldest = min(idle, key=lambda w: w.last_used)
        sessions.pop(oldest.id).close()
        owners.pop(oldest.id, None)


def _plots(run: Any) -> list[Any]:
    """Every plot of the state on screen, drawn from its own run (so never stale), each titled with its keys."""
    if run is None:
        return []
    out = [risk_plot(run.input_figures, "input as is"), risk_plot(run.release_figures, "release now"),
           group_size_plot(run.input_figures, "input as is"), group_size_plot(run.release_figures, "release now"),
           loss_plot(run.loss, run.release_figures.measure.quasi_identifiers)]
    if run.release_figures.measure.exposure_without:
        out.append(without_plot(run.release_figures))
    return out


def _safe_hierarchies(text: str) -> dict[str, str]:
    try:
        return _hierarchies(text)
    except SdcError:
        return {}


def _int(form: dict[str, Any], key: str, what: str) -> int:
    value = form.get(key)
    try:
        out = int(str(value))
    except ValueError:
        raise ConfigError(f"the workbench: {key}: expected a whole number ({what}), got {value!r}.") from None
    return out


def _float(form: dict[str, Any], key: str, what: str) -> float:
    value = form.get(key)
    try:
        return float(str(value))
    except ValueError:
        raise ConfigError(f"the workbench: {key}: expected a number ({what}), got {value!r}.") from None


def _do(ws: Workspace, action: str, form: dict[str, Any]) -> None:
    """Apply one action of the page to the session (errors are :class:`SdcError`, shown in the page)."""
    state = ws.state
    if action not in ("add_step", "edit_step"):
        ws.draft = {}  # a refused step's text goes with the next other change (its step may have moved)
    if action == "load":
        ws.load(str(form.get("source") or "adult"), read_options(form))
        ws.start_measure(revert_on_failure=False)
    elif action == "upload":
        path = ws.save_upload(str(form.get("name") or "upload.csv"), form["_body"])
        try:
            ws.load(str(path), read_options(form), name=path.name)
        except SdcError:
            path.unlink(missing_ok=True)
            raise
        ws.start_measure(revert_on_failure=False)
    elif action == "settings":
        roles = check_roles([c for c, _ in state.roles], {k[5:]: v for k, v in form.items() if k.startswith("role:")}) \
            if any(k.startswith("role:") for k in form) else state.roles
        new = replace(
            state, roles=roles,
            k=_int(form, "k", "the group size of k-anonymity") if "k" in form else state.k,
            budget=_float(form, "budget", "a share of users, 0..1") if "budget" in form else state.budget,
            reproducible=bool(form.get("reproducible", state.reproducible)),
            posterior_pass=bool(form.get("posterior_pass", state.posterior_pass)),
            seed=_int(form, "seed", "the seed of the random steps") if form.get("seed") not in (None, "") else state.seed,
            output=str(form.get("output") or state.output),
            report_output=str(form.get("report_output", state.report_output)).strip(),
            name=str(form.get("name") or state.name),
        )
        new.config(run_seed=ws.seed)  # validated now: a wrong k or budget is the pipeline's one line
        ws.history.change(new, "change roles and settings")
        ws.start_measure(revert_on_failure=True)
    elif action in ("add_step", "edit_step"):
        kind, text = str(form.get("kind", "")), str(form.get("options", ""))
        steps = list(state.steps)
        index = _int(form, "index", "a step's number") if action == "edit_step" else len(steps)
        yaml_mode = uses_yaml(form)
        # what was typed, shown again if the change is refused (the add form, or the edited step's form)
        ws.draft = {"index": index if action == "edit_step" else None, "kind": kind, "options": text,
                    "yaml": yaml_mode, "fields": posted_values(kind, form)}
        if action == "edit_step":
            _check_index(index, steps)
        try:
            step = parse_step(kind, text, index) if yaml_mode else parse_step_fields(kind, form, index)
        except ConfigError as err:  # shown at the top and beside the option it is about
            ws.draft["field"] = field_of_error(str(err))
            ws.draft["message"] = str(err)
            raise
        if action == "edit_step":
            steps[index] = step
        else:
            steps.append(step)
        new = replace(state, steps=tuple(steps))
        new.config(run_seed=ws.seed)
        ws.history.change(new, f"{'edit' if action == 'edit_step' else 'add'} {kind}")
        ws.draft = {}
        ws.start_measure(revert_on_failure=True)
    elif action in ("move_step", "remove_step", "toggle_step"):
        steps = list(state.steps)
        index = _int(form, "index", "a step's number")
        _check_index(index, steps)
        if action == "toggle_step":
            on = index in state.off
            off = tuple(sorted(set(state.off) ^ {index}))
            new = replace(state, off=off)
            label = f"switch {'on' if on else 'off'} {steps[index][0]}"
        elif action == "remove_step":
            kind = steps.pop(index)[0]
            label = f"remove {kind}"
            new = replace(state, steps=tuple(steps), off=moved_off(state.off, removed=index))
        else:
            to = _int(form, "to", "a step's new place") if "to" in form else index + (-1 if form.get("direction") == "up" else 1)
            if not 0 <= to < len(steps) or to == index:
                return
            moving = steps.pop(index)
            steps.insert(to, moving)
            off = state.off
            step_by = 1 if to > index else -1
            for a in range(index, to, step_by):  # the move as adjacent swaps
                off = moved_off(off, swapped=(a, a + step_by))
            new = replace(state, steps=tuple(steps), off=off)
            label = f"move {moving[0]}"
        ws.history.change(new, label)
        ws.start_measure(revert_on_failure=True)
    elif action == "undo":
        if ws.history.undo() is not None:
            ws.start_measure(revert_on_failure=False)
    elif action == "redo":
        if ws.history.redo() is not None:
            ws.start_measure(revert_on_failure=False)
    elif action == "measure":
        ws.start_measure(revert_on_failure=False)
    elif action == "cancel":
        ws.cancel()
    elif action == "plan":
        ws.start_plan(str(form.get("hierarchies", "")), str(form.get("suppression", "")),
                      use_built=form.get("use_built", True) not in (False, "false", "off", "0"))
    elif action == "combinations":
        keys = [c for c, r in state.roles if r in ("quasi_identifier", "numeric_key")]
        chosen = [c for c in keys if form.get(f"key:{c}") in (True, "on", "true")]
        ws.combo_columns = tuple(chosen) if chosen else None
    elif action == "preview_recode":
        run = ws.run_of()
        if run is None:
            raise ConfigError("the workbench: keys: the release is not measured yet; wait for the figures, then preview.")
        column, how, closed = str(form.get("column", "")), str(form.get("how", "breaks")), str(form.get("closed") or "left")
        rule = recode_rule(run.result.protected, column, how, str(form.get("rule", "")))
        m = run.result.release_measure
        assert m is not None
        ws.preview = preview_recode(run.result.protected, m.quasi_identifiers, m.k, column, rule, closed)
        ws.preview_for = state
    elif action == "apply_preview":
        if ws.preview is None or ws.preview_for != state:
            raise ConfigError("the workbench: keys: no preview of the state on screen; preview a recoding first.")
        options: dict[str, Any] = {"rules": {ws.preview.column: ws.preview.rule}}
        if ws.preview.closed != "left":
            options["closed"] = ws.preview.closed
        new = replace(state, steps=(*state.steps, parse_step_options("recode", options, len(state.steps))))
        new.config(run_seed=ws.seed)
        ws.history.change(new, f"recode {ws.preview.column}")
        ws.preview = None
        ws.start_measure(revert_on_failure=True)
    elif action in ("build_hierarchy", "load_hierarchy", "remove_hierarchy"):
        _hierarchy_action(ws, action, form)
    elif action == "apply_plan":
        if ws.plan is None or ws.plan_for != state:
            raise ConfigError("the workbench: no plan for the state on screen; ask the planner first.")

        used = ws.plan_hierarchies or _hierarchies(ws.plan_options.get("hierarchies", ""))
        added = [(kind, json.dumps(opts)) for kind, opts in plan_steps(ws.plan, used, state.k)]
        if not added:
            ws.notice = "The plan needs no step: the release is within budget as it is."
            return
        new = replace(state, steps=tuple(added), off=())  # the plan is of the input: its steps replace those on screen
        new.config(run_seed=ws.seed)
        ws.history.change(new, "apply the plan")
        ws.start_measure(revert_on_failure=True)
    elif action == "report":
        ws.start_report()
    else:
        raise HTTPException(404, f"no action {action!r}")


def _hierarchy_action(ws: Workspace, action: str, form: dict[str, Any]) -> None:
    """Build (by breaks, quantiles or groups), load (ARX's CSV) or remove a column's hierarchy."""
    column = str(form.get("column", ""))
    if ws.frame is None or column not in ws.frame.columns:
        raise ConfigError(f"the workbench: hierarchies: column {column!r} is not in the data; choose one of the list.")
    if action == "remove_hierarchy":
        ws.hierarchies.pop(column, None)
        return
    values = ws.frame[column].drop_nulls().to_list()
    if action == "load_hierarchy":
        ws.hierarchies[column] = hierarchy_from_csv(column, str(form.get("text", "")), values)
        ws.notice = f"Hierarchy of {column} loaded ({ws.hierarchies[column].n_levels} levels)."
        return
    how = str(form.get("how", "breaks"))
    if how == "breaks":
        h = interval_hierarchy(column, values, parse_breaks(column, str(form.get("breaks", ""))))
    elif how == "quantiles":
        if not ws.frame.schema[column].is_numeric():
            raise ConfigError(f"the workbench: hierarchies: column {column!r} holds text; quantiles need numbers "
                              "(group its categories instead).")
        h = interval_hierarchy(column, values, quantile_breaks(column, values, _int(form, "quantiles", "classes")))
    elif how == "groups":
        h = grouping_hierarchy(column, values, parse_groups(column, str(form.get("groups", ""))))
    else:
        raise ConfigError(f"the workbench: hierarchies: {how!r} is no way to build one; use breaks, quantiles or groups.")
    ws.hierarchies[column] = h
    ws.notice = f"Hierarchy of {column} built ({h.n_levels} levels, the last * = withheld)."


def _check_index(index: int, steps: list[Any]) -> None:
    if not 0 <= index < len(steps):
        raise ConfigError(f"the workbench: there is no step {index + 1} (there are {len(steps)}).")
