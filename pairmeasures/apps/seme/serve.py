"""``pairmeasures seme serve``: the local study web app (Flask, served by waitress); responses go to SQLite.

A participant consents, states a prior opinion on the debate question (Likert -3..3, + = toward the material's
``positive`` perspective), reads the result list of their assigned (query, condition) cell (clicks are logged),
writes a summary, and states a posterior opinion. Every input is validated server-side; every page is rendered
by autoescaping Jinja2 templates under a Content-Security-Policy without external sources; every form carries a
per-session CSRF token and a fresh submission id (see :mod:`.store`).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import ipaddress
import json
import re
import secrets
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from .store import SUBMISSION_ID, StepOrderError, Store, UnknownParticipantError, material_digest

HELP = "serve the study to participants on a local web app; responses go to SQLite"
DESCRIPTION = (
    "Serve the study material (from 'pairmeasures seme material') to participants: consent, prior opinion, the "
    "assigned result list with click logging, a summary, posterior opinion. Each participant is assigned a "
    "(query, condition) cell, balanced and shuffled by --seed. Responses are committed to the SQLite --db "
    "before they are acknowledged; export them with 'pairmeasures seme export'. Listens on 127.0.0.1 unless "
    "--host says otherwise.")
#: The extra this command needs, and the modules it imports whatever its options (checked before any work).
EXTRA = "seme"
NEEDS = ("flask", "waitress")

MATERIAL_FORMAT = "pairmeasures-seme-material"
MATERIAL_VERSION = 1
CONDITIONS = ("most_positive", "most_negative", "least", "system")
LIKERT = range(-3, 4)
#: A Likert answer as the form sends it: exactly one of "-3" ... "3" (no "+1", "01", "-0", spaces or other digits).
LIKERT_ANSWER = re.compile(r"0|-?[1-3]")
SUMMARY_MAX_CHARS = 2000
#: Largest request body accepted (bytes); a larger one is answered 413 before it is read.
MAX_REQUEST_BYTES = 64 * 1024
STEP_PATHS = {"prior": "/prior", "results": "/results", "summary": "/summary", "posterior": "/posterior",
              "done": "/done"}
#: The page after each opinion page.
AFTER_OPINION = {"prior": "results", "posterior": "done"}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("material", metavar="MATERIAL", help="study material JSON from 'pairmeasures seme material'")
    parser.add_argument("--db", required=True, metavar="FILE",
                        help="SQLite file for the responses (created if missing; reused to continue a study)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the balanced random assignment (default 0)")
    parser.add_argument("--threads", type=int, default=8, help="waitress worker threads (default 8)")
    parser.add_argument("--conditions", nargs="+", default=None, metavar="CONDITION",
                        help="assign only these of the material's conditions (default: all of them)")
    parser.add_argument("--templates", default=None, metavar="DIR",
                        help="a folder of page templates that replace the built-in ones of the same name (e.g. "
                             "your own consent.html and done.html)")


def run(args: argparse.Namespace) -> int:
    import waitress

    if args.threads < 1:
        raise ValueError(f"--threads {args.threads}: expected at least 1")
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port {args.port}: expected a port number from 0 to 65535")
    app = create_app(args.material, args.db, seed=args.seed, conditions=args.conditions, templates=args.templates)
    material = app.config["SEME_MATERIAL"]
    try:
        loopback = ipaddress.ip_address(args.host).is_loopback
    except ValueError:
        loopback = args.host == "localhost"
    cells = len(app.config["SEME_STORE"].cells)
    print(f"Serving {len(material['queries'])} queries x {cells // len(material['queries'])} conditions "
          f"({cells} cells) at http://{args.host}:{args.port}/ ; responses in {args.db} (Ctrl+C stops)",
          flush=True)
    if not loopback:
        print(f"warning: listening on {args.host}, reachable from other machines: plain HTTP, no TLS",
              file=sys.stderr, flush=True)
    try:
        waitress.serve(app, host=args.host, port=args.port, threads=args.threads, ident="pairmeasures-seme")
    except OSError as exc:  # the port is taken, or the address is not this machine's
        raise RuntimeError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}; choose another "
                           f"--port or --host") from None
    return 0


# -- material ------------------------------------------------------------------------------------------------

def _expect(value: Any, kind: type | tuple, where: str, path: Path) -> Any:
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        found = "nothing (missing or null)" if value is None else type(value).__name__
        raise ValueError(f"{path}: {where}: expected {names}, got {found}")
    return value


def load_material(path: str | Path) -> tuple[dict, bytes]:
    """Read and check study material (the format of ``pairmeasures seme material``); a missing or mistyped
    field is an error naming it (``queries[2].orderings.least.documents[0].title``). Returns the material
    and the file's bytes."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such study material file (make one with 'pairmeasures seme material')")
    data = path.read_bytes()
    try:
        material = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not JSON study material: {exc}") from None
    _expect(material, dict, "the top level", path)
    if material.get("format") != MATERIAL_FORMAT:
        raise ValueError(f"{path}: format: expected {MATERIAL_FORMAT!r}, got {material.get('format')!r}")
    if material.get("version") != MATERIAL_VERSION:
        raise ValueError(f"{path}: version: this pairmeasures reads version {MATERIAL_VERSION}, "
                         f"got {material.get('version')!r}")
    conditions = _expect(material.get("conditions"), list, "conditions", path)
    if not conditions or any(not isinstance(c, str) or not c for c in conditions):
        raise ValueError(f"{path}: conditions: expected a non-empty list of condition names")
    queries = _expect(material.get("queries"), list, "queries", path)
    if not queries:
        raise ValueError(f"{path}: queries: the material has no queries")
    seen: set = set()
    for q, query in enumerate(queries):
        at = f"queries[{q}]"
        _expect(query, dict, at, path)
        query_id = _expect(query.get("query_id"), str, f"{at}.query_id", path)
        if query_id in seen:
            raise ValueError(f"{path}: {at}.query_id: {query_id!r} appears twice")
        seen.add(query_id)
        _expect(query.get("query"), str, f"{at}.query", path)
        perspectives = _expect(query.get("perspectives"), dict, f"{at}.perspectives", path)
        for pole in ("positive", "negative"):
            side = _expect(perspectives.get(pole), dict, f"{at}.perspectives.{pole}", path)
            for field in ("label", "statement"):
                _expect(side.get(field), str, f"{at}.perspectives.{pole}.{field}", path)
        orderings = _expect(query.get("orderings"), dict, f"{at}.orderings", path)
        for condition in conditions:
            where = f"{at}.orderings.{condition}"
            ordering = _expect(orderings.get(condition), dict, where, path)
            _expect(ordering.get("mu_duo"), (int, float), f"{where}.mu_duo", path)
            documents = _expect(ordering.get("documents"), list, f"{where}.documents", path)
            if not documents:
                raise ValueError(f"{path}: {where}.documents: no documents to show")
            for d, document in enumerate(documents):
                _expect(document, dict, f"{where}.documents[{d}]", path)
                for field in ("doc_id", "title", "snippet", "text"):
                    _expect(document.get(field), str, f"{where}.documents[{d}].{field}", path)
    return material, data


# -- the app -------------------------------------------------------------------------------------------------

def create_app(material_path: str | Path, db_path: str | Path, *, seed: int = 0,
               conditions: Optional[Sequence[str]] = None, secret_key: Optional[str] = None,
               templates: Optional[str | Path] = None):
    """The study web app (a :class:`flask.Flask`) serving ``material_path`` and storing responses in
    ``db_path``. ``conditions``: a subset of the material's to assign (default all); ``secret_key`` signs the
    session cookie (default: a random key generated once per database and kept in it, so sessions survive a
    restart); ``templates``: a folder whose templates replace the built-in ones of the same name."""
    from flask import Flask, abort, redirect, render_template, request, session
    from jinja2 import ChoiceLoader, FileSystemLoader

    material, data = load_material(material_path)
    chosen = list(material["conditions"]) if conditions is None else list(conditions)
    unknown = [c for c in chosen if c not in material["conditions"]]
    if unknown or not chosen:
        raise ValueError(f"conditions {unknown or chosen}: the material {material_path} has conditions "
                         f"{material['conditions']}")
    queries = {query["query_id"]: query for query in material["queries"]}
    cells = [(query["query_id"], condition, float(query["orderings"][condition]["mu_duo"]))
             for query in material["queries"] for condition in chosen]
    if templates is not None and not Path(templates).is_dir():
        raise FileNotFoundError(f"--templates {templates}: no such folder")
    store = Store(db_path, cells=cells, seed=seed, material_digest=material_digest(data))

    package = Path(__file__).resolve().parent
    app = Flask(__name__, template_folder=str(package / "templates"), static_folder=str(package / "static"),
                static_url_path="/static")
    if templates is not None:
        app.jinja_loader = ChoiceLoader([FileSystemLoader(str(templates)), FileSystemLoader(str(package / "templates"))])
    app.config.update(
        SECRET_KEY=secret_key or store.meta("secret_key"), SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax", SESSION_COOKIE_NAME="seme_session", MAX_CONTENT_LENGTH=MAX_REQUEST_BYTES,
        SEME_MATERIAL=material, SEME_STORE=store)

    def csrf_token() -> str:
        if "csrf" not in session:
            session["csrf"] = secrets.token_urlsafe(32)
        return session["csrf"]

    def page(template: str, status: int = 200, **context):
        return render_template(template, csrf_token=csrf_token(), submission=secrets.token_urlsafe(16),
                               **context), status

    def current():
        """The session's participant, or None when the session has none (or names one the database lacks)."""
        participant = store.participant(session.get("participant"))
        if participant is None and "participant" in session:
            session.pop("participant")
        return participant

    def on_step(step: str):
        """The participant when they are on ``step``; else a redirect to where they are."""
        participant = current()
        if participant is None:
            return None, redirect("/", code=303)
        if participant.step != step:
            return None, redirect(STEP_PATHS[participant.step], code=303)
        return participant, None

    def ordering(participant) -> dict:
        return queries[participant.query_id]["orderings"][participant.condition]

    @app.before_request
    def check_post():
        """Every POST: the session's CSRF token (missing 400, wrong 403) and a well-formed submission id."""
        if request.method != "POST":
            return None
        sent = request.form.get("csrf_token")
        if not sent or "csrf" not in session:
            abort(400, "the form's CSRF token is missing (reload the page and submit again)")
        if not hmac.compare_digest(sent, session["csrf"]):
            abort(403, "the form's CSRF token does not match this session (reload the page and submit again)")
        if not SUBMISSION_ID.match(request.form.get("submission", "")):
            abort(400, "the form's submission id is missing or malformed")
        return None

    @app.after_request
    def secure(response):
        response.headers.update(SECURITY_HEADERS)
        return response

    @app.errorhandler(400)
    @app.errorhandler(403)
    @app.errorhandler(404)
    @app.errorhandler(405)
    @app.errorhandler(409)
    @app.errorhandler(413)
    def error(exc):
        participant = store.participant(session.get("participant"))
        where = STEP_PATHS[participant.step] if participant else "/"
        return page("error.html", exc.code, code=exc.code, name=exc.name, message=exc.description, where=where)

    def require(participant):
        if participant is None:
            abort(400, "unknown participant: this session has no participant in the study (start from the "
                       "consent page)")
        return participant

    def submit(step: str, answer: str, **values):
        participant = require(store.participant(session.get("participant")))
        try:
            location = store.submit(participant.participant, step, request.form["submission"], answer, **values)
        except UnknownParticipantError:
            abort(400, "unknown participant")
        except StepOrderError as exc:
            abort(409, f"this page was already answered ({exc}); continue where you are")
        return redirect(location, code=303)

    def likert(step: str, participant):
        raw = request.form.get("opinion", "")
        if LIKERT_ANSWER.fullmatch(raw):
            return submit(step, STEP_PATHS[AFTER_OPINION[step]], **{step: int(raw)})
        return page("opinion.html", 400, query=queries[participant.query_id], likert=LIKERT, step=step,
                    problem="Choose one of the seven options (from -3 to 3).")

    @app.get("/")
    def consent_page():
        participant = current()
        if participant is not None:
            return redirect(STEP_PATHS[participant.step], code=303)
        return page("consent.html")

    @app.post("/consent")
    def consent():
        if store.participant(session.get("participant")) is not None:
            known = store.answer(request.form["submission"])
            if known is None or known[0] != session["participant"]:
                abort(409, "you have already started the study")
        if request.form.get("consent") != "yes":
            return page("consent.html", 400, problem="Please tick the box to consent before you start.")
        try:
            participant, location = store.add_participant(request.form["submission"], STEP_PATHS["prior"],
                                                          hashlib.sha256(session["csrf"].encode()).hexdigest())
        except StepOrderError as exc:
            abort(409, str(exc))
        session["participant"] = participant
        return redirect(location, code=303)

    @app.get("/prior")
    def prior_page():
        participant, elsewhere = on_step("prior")
        return elsewhere or page("opinion.html", query=queries[participant.query_id], likert=LIKERT, step="prior")

    @app.post("/prior")
    def prior():
        participant = require(current())
        return likert("prior", participant)

    @app.get("/results")
    def results_page():
        participant, elsewhere = on_step("results")
        return elsewhere or page("results.html", query=queries[participant.query_id],
                                 documents=ordering(participant)["documents"])

    @app.post("/results")
    def results():
        return submit("results", STEP_PATHS["summary"])

    @app.get("/document/<int:rank>")
    def document(rank: int):
        participant, elsewhere = on_step("results")
        if elsewhere:
            return elsewhere
        documents = ordering(participant)["documents"]
        if not 1 <= rank <= len(documents):
            abort(404, f"no result at rank {rank}")
        store.log_click(participant.participant, rank, documents[rank - 1]["doc_id"])
        return page("document.html", document=documents[rank - 1], rank=rank)

    @app.get("/summary")
    def summary_page():
        participant, elsewhere = on_step("summary")
        return elsewhere or page("summary.html", query=queries[participant.query_id], limit=SUMMARY_MAX_CHARS)

    @app.post("/summary")
    def summary():
        participant = require(current())
        text = request.form.get("summary", "").replace("\r\n", "\n").strip()
        problem = None
        if not text:
            problem = "Please write a short summary of what you read."
        elif len(text) > SUMMARY_MAX_CHARS:
            problem = f"Please keep the summary to at most {SUMMARY_MAX_CHARS} characters (it has {len(text)})."
        elif any(ord(c) < 32 and c not in "\n\t" for c in text):
            problem = "The summary contains control characters; please type it again."
        if problem:
            return page("summary.html", 400, query=queries[participant.query_id], limit=SUMMARY_MAX_CHARS,
                        problem=problem, text=text[:SUMMARY_MAX_CHARS])
        return submit("summary", STEP_PATHS["posterior"], summary=text)

    @app.get("/posterior")
    def posterior_page():
        participant, elsewhere = on_step("posterior")
        return elsewhere or page("opinion.html", query=queries[participant.query_id], likert=LIKERT,
                                 step="posterior")

    @app.post("/posterior")
    def posterior():
        participant = require(current())
        return likert("posterior", participant)

    @app.get("/done")
    def done_page():
        participant, elsewhere = on_step("done")
        return elsewhere or page("done.html", participant=participant.participant)

    return app
