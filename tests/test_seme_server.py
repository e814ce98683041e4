"""The SEME study web app: the participant's flow, every bad input, the database, and the export."""

from __future__ import annotations

import csv
import json
import re
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("flask")

from pairmeasures.apps.seme import serve  # noqa: E402
from pairmeasures.apps.seme.export import COLUMNS, read_responses  # noqa: E402
from pairmeasures.apps.seme.serve import create_app, load_material  # noqa: E402

CONDITIONS = ["most_positive", "most_negative", "least", "system"]
MU_DUO = {"most_positive": 0.6, "most_negative": -0.6, "least": 0.0, "system": 0.2}


def material(n_queries: int = 2, n_documents: int = 3) -> dict:
    """Study material in the format of ``pairmeasures seme material`` (contracts: material format)."""
    def ordering(query: int, condition: str) -> dict:
        documents = [{"doc_id": f"q{query}-d{d}", "title": f"Result {d} of query {query}",
                      "snippet": f"Snippet {d}.", "text": f"First paragraph {d}.\nSecond paragraph.",
                      "polarity": 0.5 - d / 4, "label": None} for d in range(n_documents)]
        if condition == "most_negative":
            documents.reverse()
        return {"mu_duo": MU_DUO[condition], "duo": abs(MU_DUO[condition]), "documents": documents}

    return {"format": "pairmeasures-seme-material", "version": 1, "created": "2026-11-23T00:00:00+00:00",
            "dataset": "test", "system": "bm25>>dense", "k": n_documents, "conditions": CONDITIONS, "manifest": {},
            "queries": [{"query_id": f"q{q}", "query": f"Should question {q} be answered yes?",
                         "perspectives": {"positive": {"label": "yes", "statement": "It should."},
                                          "negative": {"label": "no", "statement": "It should not."}},
                         "orderings": {c: ordering(q, c) for c in CONDITIONS}} for q in range(n_queries)]}


@pytest.fixture
def study(tmp_path):
    path = tmp_path / "material.json"
    path.write_text(json.dumps(material()), encoding="utf-8")
    return path, tmp_path / "study.db"


@pytest.fixture
def app(study):
    return create_app(*study, seed=3)


def form_fields(html: str) -> dict:
    return {"csrf_token": re.search(r'name="csrf_token" value="([^"]*)"', html).group(1),
            "submission": re.search(r'name="submission" value="([^"]*)"', html).group(1)}


class Participant:
    """A participant's browser, through Flask's test client."""

    def __init__(self, app):
        self.client = app.test_client()
        self.last: dict = {}

    def get(self, path: str):
        response = self.client.get(path)
        if response.status_code == 200 and 'name="submission"' in response.text:
            self.last = form_fields(response.text)
        return response

    def post(self, path: str, **data):
        return self.client.post(path, data={**self.last, **data})

    def step(self, path: str, **data):
        """GET the page, then submit its form; asserts the answer is a 303 to the next step."""
        assert self.get(path).status_code == 200, path
        response = self.post(path if path != "/" else "/consent", **data)
        assert response.status_code == 303, (path, response.status_code, response.text)
        return response.location

    def complete(self, prior: int = 1, posterior: int = -2, clicks=(1, 3), summary: str = "Both sides argue.") -> str:
        assert self.step("/", consent="yes") == "/prior"
        assert self.step("/prior", opinion=str(prior)) == "/results"
        self.get("/results")
        for rank in clicks:
            assert self.get(f"/document/{rank}").status_code == 200
        assert self.step("/results") == "/summary"
        assert self.step("/summary", summary=summary) == "/posterior"
        assert self.step("/posterior", opinion=str(posterior)) == "/done"
        done = self.get("/done")
        assert done.status_code == 200 and 'id="complete"' in done.text
        return re.search(r'id="participant">([0-9a-f]+)<', done.text).group(1)


def rows(db: Path, sql: str, *args) -> list:
    with sqlite3.connect(db) as connection:
        return connection.execute(sql, args).fetchall()


# -- the flow ------------------------------------------------------------------------------------------------

def test_a_participant_completes_the_study_and_every_answer_is_stored(app, study):
    participant = Participant(app)
    code = participant.complete(prior=2, posterior=-1, clicks=(2, 1, 2), summary="Line one.\r\nLine two.")
    (row,) = rows(study[1], "SELECT participant, prior, posterior, summary, step, started, finished FROM participants")
    assert row[:5] == (code, 2, -1, "Line one.\nLine two.", "done")
    assert row[5].endswith("+00:00") and row[6].endswith("+00:00") and row[5] <= row[6]
    assert [r[0] for r in rows(study[1], "SELECT rank FROM clicks ORDER BY click")] == [2, 1, 2]
    assert len(rows(study[1], "SELECT * FROM submissions")) == 5
    # The finished participant stays on the last page; no page of the study takes them back.
    for path in ("/", "/prior", "/results", "/summary", "/posterior", "/document/1"):
        response = participant.get(path)
        assert response.status_code == 303 and response.location == "/done", path


def test_every_page_carries_the_contract_selectors_and_security_headers(app):
    participant = Participant(app)
    page = participant.get("/")
    assert 'id="consent"' in page.text and 'name="consent"' in page.text and 'id="start"' in page.text
    assert participant.post("/consent", consent="yes").location == "/prior"
    prior = participant.get("/prior")
    assert 'id="question"' in prior.text and 'id="next"' in prior.text
    assert sorted(int(v) for v in re.findall(r'name="opinion" value="(-?\d)"', prior.text)) == list(range(-3, 4))
    participant.post("/prior", opinion="0")
    results = participant.get("/results").text
    links = re.findall(r'<a class="result-link" data-doc="([^"]+)" data-rank="(\d+)" href="/document/(\d+)">', results)
    assert [int(rank) for _, rank, href in links] == [1, 2, 3] and all(r == h for _, r, h in links)
    assert results.count('<p class="snippet">') == 3 and '<ol id="results">' in results
    assert 'id="back"' in participant.get("/document/1").text
    for response in (page, prior, participant.get("/static/seme.css"), participant.get("/static/seme.js")):
        assert response.headers["Cache-Control"] == "no-store"
        csp = response.headers["Content-Security-Policy"]
        assert "default-src 'none'" in csp and "http" not in csp
        assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert "http" not in page.text.replace('lang="en"', "")  # no external assets


def test_assignment_is_balanced_reproducible_and_records_mu_duo(study, tmp_path):
    def assign(db, n):
        app = create_app(study[0], db, seed=7)
        for _ in range(n):
            Participant(app).step("/", consent="yes")
        return rows(db, "SELECT query_id, condition, mu_duo FROM participants ORDER BY number")

    first = assign(tmp_path / "a.db", 16)
    assert first == assign(tmp_path / "b.db", 16)
    assert Counter((q, c) for q, c, _ in first) == {(f"q{q}", c): 2 for q in range(2) for c in CONDITIONS}
    assert all(mu == MU_DUO[c] for _, c, mu in first)
    other_seed = create_app(study[0], tmp_path / "d.db", seed=8)
    for _ in range(8):
        Participant(other_seed).step("/", consent="yes")
    assert rows(tmp_path / "d.db", "SELECT query_id, condition FROM participants ORDER BY number") != \
        [(q, c) for q, c, _ in first[:8]]
    ids = [r[0] for r in rows(tmp_path / "a.db", "SELECT participant FROM participants")]
    assert len(set(ids)) == 16 and all(re.fullmatch(r"[0-9a-f]{16}", i) for i in ids)


def test_conditions_can_be_restricted(study):
    app = create_app(*study, conditions=["most_positive", "most_negative"])
    for _ in range(4):
        Participant(app).step("/", consent="yes")
    assert {c for (c,) in rows(study[1], "SELECT condition FROM participants")} == {"most_positive", "most_negative"}
    with pytest.raises(ValueError, match="'neutral'.*has conditions"):
        create_app(*study, conditions=["neutral"])


# -- bad input -----------------------------------------------------------------------------------------------

def started(app) -> Participant:
    participant = Participant(app)
    participant.step("/", consent="yes")
    participant.get("/prior")
    return participant


@pytest.mark.parametrize("opinion", ["4", "-4", "1.5", "", "abc", "+2", "02", " 1", "1e0", "-0", "\u00b2", "\u0663", "3\n"])
def test_an_opinion_off_the_likert_scale_is_rejected(app, study, opinion):
    participant = started(app)
    response = participant.post("/prior", opinion=opinion)
    assert response.status_code == 400 and "from -3 to 3" in response.text
    assert rows(study[1], "SELECT prior, step FROM participants") == [(None, "prior")]
    assert participant.post("/prior", opinion="3").status_code == 303  # the participant can still answer


def test_a_missing_opinion_is_rejected(app, study):
    participant = started(app)
    assert participant.client.post("/prior", data=participant.last).status_code == 400
    assert rows(study[1], "SELECT step FROM participants") == [("prior",)]


def to_summary(app) -> Participant:
    participant = started(app)
    participant.post("/prior", opinion="1")
    participant.get("/results")
    participant.post("/results")
    participant.get("/summary")
    return participant


@pytest.mark.parametrize("text, problem", [("x" * 2001, "at most 2000 characters"), ("   \n ", "write a short summary"),
                                           ("bell\x07", "control characters")])
def test_an_oversized_blank_or_binary_summary_is_rejected(app, study, text, problem):
    participant = to_summary(app)
    response = participant.post("/summary", summary=text)
    assert response.status_code == 400 and problem in response.text
    assert rows(study[1], "SELECT summary, step FROM participants") == [(None, "summary")]


def test_an_oversized_request_is_refused_before_it_is_read(app, study):
    participant = to_summary(app)
    assert participant.post("/summary", summary="y" * 100_000).status_code == 413
    assert rows(study[1], "SELECT summary FROM participants") == [(None,)]


def test_script_in_the_summary_is_stored_verbatim_and_rendered_inert(app, study):
    participant = to_summary(app)
    attack = '<script>alert("x")</script><img src=x onerror=alert(1)>"\'&'
    response = participant.post("/summary", summary="x" * 1990 + attack)  # too long: the page shows it back
    assert response.status_code == 400
    assert "<script>" not in response.text and "&lt;script&gt;" in response.text
    assert "<img src=x" not in response.text
    assert participant.post("/summary", summary=attack).status_code == 303
    assert rows(study[1], "SELECT summary FROM participants") == [(attack,)]


def test_material_is_escaped_too(study, tmp_path):
    hostile = material()
    hostile["queries"][0]["query"] = "<script>alert(1)</script>?"
    for q in hostile["queries"]:
        for ordering in q["orderings"].values():
            ordering["documents"][0]["title"] = '<b onmouseover="x()">bold</b>'
            ordering["documents"][0]["doc_id"] = 'd"><script>'
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(hostile), encoding="utf-8")
    app = create_app(path, tmp_path / "hostile.db")
    participant = Participant(app)
    participant.step("/", consent="yes")
    for page in (participant.get("/prior"), participant.post("/prior", opinion="0") and participant.get("/results"),
                 participant.get("/document/1")):
        assert "<script>" not in page.text and "<b onmouseover" not in page.text


def test_a_replayed_submission_is_answered_as_before_and_stored_once(app, study):
    participant = started(app)
    form = dict(participant.last, opinion="2")
    first = participant.client.post("/prior", data=form)
    again = participant.client.post("/prior", data=form)
    changed = participant.client.post("/prior", data=dict(form, opinion="-3"))  # same submission id, other value
    assert first.status_code == again.status_code == changed.status_code == 303
    assert first.location == again.location == changed.location == "/results"
    assert rows(study[1], "SELECT prior, step FROM participants") == [(2, "results")]
    assert rows(study[1], "SELECT COUNT(*) FROM submissions WHERE step = 'prior'") == [(1,)]


def test_a_replayed_consent_does_not_create_a_second_participant(app, study):
    participant = Participant(app)
    participant.get("/")
    form = dict(participant.last, consent="yes")
    assert participant.client.post("/consent", data=form).location == "/prior"
    assert participant.client.post("/consent", data=form).location == "/prior"
    assert rows(study[1], "SELECT COUNT(*) FROM participants") == [(1,)]
    participant.get("/prior")  # a new consent form from a started session is out of order
    fresh = dict(form, submission="A" * 22)
    assert participant.client.post("/consent", data=fresh).status_code == 409
    assert rows(study[1], "SELECT COUNT(*) FROM participants") == [(1,)]
    # Another browser replaying this consent form (with its own CSRF token) does not get the participant.
    intruder = Participant(app)
    intruder.get("/")
    response = intruder.client.post("/consent", data=dict(form, csrf_token=intruder.last["csrf_token"]))
    assert response.status_code == 409 and intruder.get("/prior").location == "/"


def test_consent_is_required(app, study):
    participant = Participant(app)
    participant.get("/")
    response = participant.post("/consent")
    assert response.status_code == 400 and "consent" in response.text
    assert participant.post("/consent", consent="on").status_code == 400
    assert rows(study[1], "SELECT COUNT(*) FROM participants") == [(0,)]
    assert participant.get("/prior").location == "/"  # no page of the study without consent


@pytest.mark.parametrize("token, status", [(None, 400), ("", 400), ("forged-token", 403)])
def test_a_missing_or_wrong_csrf_token_is_rejected(app, study, token, status):
    participant = started(app)
    data = {k: v for k, v in participant.last.items() if k != "csrf_token"}
    if token is not None:
        data["csrf_token"] = token
    response = participant.client.post("/prior", data=dict(data, opinion="1"))
    assert response.status_code == status and "CSRF" in response.text
    assert rows(study[1], "SELECT prior FROM participants") == [(None,)]


def test_another_sessions_csrf_token_is_rejected(app, study):
    victim, attacker = started(app), started(app)
    response = victim.client.post("/prior", data=dict(attacker.last, opinion="3"))
    assert response.status_code == 403
    assert rows(study[1], "SELECT prior FROM participants") == [(None,), (None,)]


def test_a_malformed_submission_id_is_rejected(app):
    participant = started(app)
    for submission in ("", "short", "x" * 65, "a b c d e f g h i j k l"):
        assert participant.post("/prior", opinion="1", submission=submission).status_code == 400


def test_an_unknown_participant_is_rejected(app, study):
    participant = Participant(app)
    participant.get("/")
    with participant.client.session_transaction() as session:
        session["participant"] = "0123456789abcdef"
    response = participant.post("/prior", opinion="1")
    assert response.status_code == 400 and "unknown participant" in response.text
    assert participant.get("/results").location == "/"
    assert rows(study[1], "SELECT COUNT(*) FROM participants") == [(0,)]


def test_a_session_signed_with_another_key_is_ignored(study, tmp_path):
    forged = create_app(study[0], tmp_path / "other.db", secret_key="attacker")
    participant = Participant(forged)
    participant.step("/", consent="yes")
    real = create_app(*study)
    participant.client.application = real  # the same cookie jar against the real study
    assert participant.client.get("/prior").location == "/"


def test_out_of_order_pages_redirect_and_out_of_order_posts_are_refused(app, study):
    participant = started(app)
    assert participant.get("/summary").location == "/prior"
    assert participant.get("/document/1").location == "/prior"
    summary = participant.post("/summary", summary="Skipping ahead.")
    posterior = participant.post("/posterior", opinion="1")
    results = participant.post("/results")
    assert summary.status_code == posterior.status_code == results.status_code == 409
    assert rows(study[1], "SELECT step, summary, posterior FROM participants") == [("prior", None, None)]
    assert rows(study[1], "SELECT COUNT(*) FROM clicks") == [(0,)]
    participant.post("/prior", opinion="1")
    participant.get("/results")
    assert participant.get("/document/4").status_code == 404
    assert participant.get("/document/0").status_code == 404
    assert rows(study[1], "SELECT COUNT(*) FROM clicks") == [(0,)]


# -- material ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("corrupt, message", [
    (lambda m: m.update(format="other"), "format: expected 'pairmeasures-seme-material'"),
    (lambda m: m.update(version=2), "version: this pairmeasures reads version 1"),
    (lambda m: m.update(queries=[]), "queries: the material has no queries"),
    (lambda m: m["queries"][1].pop("query"), r"queries\[1\]\.query: expected str, got nothing \(missing or null\)"),
    (lambda m: m["queries"][0]["perspectives"]["negative"].pop("statement"),
     r"queries\[0\]\.perspectives\.negative\.statement"),
    (lambda m: m["queries"][0]["orderings"].pop("least"), r"queries\[0\]\.orderings\.least: expected dict"),
    (lambda m: m["queries"][1]["orderings"]["system"].update(mu_duo="0.3"),
     r"queries\[1\]\.orderings\.system\.mu_duo: expected int or float, got str"),
    (lambda m: m["queries"][0]["orderings"]["most_positive"]["documents"][2].update(title=None),
     r"queries\[0\]\.orderings\.most_positive\.documents\[2\]\.title"),
    (lambda m: m["queries"][1].update(query_id="q0"), r"queries\[1\]\.query_id: 'q0' appears twice"),
])
def test_bad_material_is_one_clear_error_naming_the_field(tmp_path, corrupt, message):
    broken = material()
    corrupt(broken)
    path = tmp_path / "material.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_material(path)


def test_a_database_of_another_material_is_refused(study, tmp_path):
    create_app(*study)
    other = material(n_queries=3)
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other), encoding="utf-8")
    with pytest.raises(ValueError, match="different study material"):
        create_app(path, study[1])


def test_the_secret_key_is_generated_once_per_database(study):
    first, second = create_app(*study), create_app(*study)
    assert first.secret_key == second.secret_key and len(first.secret_key) == 64
    assert create_app(*study, secret_key="given").secret_key == "given"


# -- concurrency and export ----------------------------------------------------------------------------------

def test_concurrent_participants_lose_nothing(app, study):
    codes: list = []
    errors: list = []

    def participate(i):
        try:
            codes.append(Participant(app).complete(prior=i % 7 - 3, posterior=(i * 3) % 7 - 3, clicks=(i % 3 + 1,)))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=participate, args=(i,)) for i in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    stored = {r[0]: r[1:] for r in rows(study[1], "SELECT participant, prior, posterior, step FROM participants")}
    assert sorted(stored) == sorted(codes) and len(codes) == 24
    assert all(step == "done" for *_, step in stored.values())
    assert rows(study[1], "SELECT COUNT(*), COUNT(DISTINCT submission) FROM submissions") == [(24 * 5, 24 * 5)]
    assert rows(study[1], "SELECT COUNT(*) FROM clicks") == [(24,)]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pairmeasures", "seme", *args], capture_output=True, text=True,
                          timeout=120)


def test_export_round_trip(app, study, tmp_path):
    finished = Participant(app).complete(prior=-3, posterior=3, clicks=(3, 1), summary='Commas, "quotes"\nand lines.')
    unfinished = started(app)
    unfinished.post("/prior", opinion="2")
    out = tmp_path / "responses.csv"
    result = cli("export", "--db", str(study[1]), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "2 participants (1 completed)" in result.stdout
    with out.open(newline="", encoding="utf-8") as stream:
        table = list(csv.DictReader(stream))
    assert tuple(table[0]) == COLUMNS
    done, going = table
    assert done["participant"] == finished and done["completed"] == "true"
    assert (done["prior"], done["posterior"], done["clicks"], done["clicked_ranks"]) == ("-3", "3", "2", "3;1")
    assert done["summary"] == 'Commas, "quotes"\nand lines.'
    assert float(done["mu_duo"]) == MU_DUO[done["condition"]] and done["query_id"] in {"q0", "q1"}
    assert done["started"] < done["finished"]
    assert (going["prior"], going["posterior"], going["finished"], going["completed"]) == ("2", "", "", "false")
    assert (going["clicks"], going["clicked_ranks"]) == ("0", "")
    assert read_responses(study[1])[0]["prior"] == -3

    before = out.read_bytes()
    refused = cli("export", "--db", str(study[1]), "--out", str(out))
    assert refused.returncode == 2 and "--force" in refused.stderr and out.read_bytes() == before
    assert cli("export", "--db", str(study[1]), "--out", str(out), "--force").returncode == 0


def test_export_of_a_missing_or_foreign_database_is_one_clear_error(tmp_path):
    missing = cli("export", "--db", str(tmp_path / "none.db"), "--out", str(tmp_path / "r.csv"))
    assert missing.returncode == 2 and "no such study database" in missing.stderr
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE t (x)")
    result = cli("export", "--db", str(foreign), "--out", str(tmp_path / "r.csv"))
    assert result.returncode == 2 and "not a study database" in result.stderr
    text = tmp_path / "text.db"
    text.write_text("not sqlite")
    result = cli("export", "--db", str(text), "--out", str(tmp_path / "r.csv"))
    assert result.returncode == 2 and "not a readable SQLite" in result.stderr
    assert not (tmp_path / "r.csv").exists()


# -- a real server ---------------------------------------------------------------------------------------------

#: A participant over real HTTP, run in a child process (the tests' own process opens no network sockets).
HTTP_PARTICIPANT = textwrap.dedent(r"""
    import http.client, re, sys, urllib.parse
    port = int(sys.argv[1])
    cookie = ""
    def request(method, path, fields=None):
        global cookie
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        headers = {"Cookie": cookie} if cookie else {}
        body = None
        if fields is not None:
            body = urllib.parse.urlencode(fields)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        text = response.read().decode()
        if response.getheader("Set-Cookie"):
            cookie = response.getheader("Set-Cookie").split(";")[0]
        return response.status, response.getheader("Location"), text
    def fields(text):
        return {name: re.search(f'name="{name}" value="([^"]*)"', text).group(1) for name in ("csrf_token", "submission")}
    steps = [("/", "/consent", {"consent": "yes"}), ("/prior", "/prior", {"opinion": "-2"}),
             ("/results", "/results", {}), ("/summary", "/summary", {"summary": "Over HTTP."}),
             ("/posterior", "/posterior", {"opinion": "1"})]
    for page, action, answer in steps:
        status, _, text = request("GET", page)
        assert status == 200, (page, status)
        if page == "/results":
            assert request("GET", "/document/2")[0] == 200
        status, location, _ = request("POST", action, {**fields(text), **answer})
        assert status == 303, (action, status)
    status, _, text = request("GET", "/done")
    print(re.search(r'id="participant">([0-9a-f]+)<', text).group(1))
""")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_participant_completes_the_study_through_a_real_waitress_server(study, tmp_path):
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "pairmeasures", "seme", "serve", str(study[0]), "--db",
                               str(study[1]), "--port", str(port), "--seed", "1", "--threads", "4"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = server.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in banner, banner + server.stderr.read()
        script = tmp_path / "participant.py"
        script.write_text(HTTP_PARTICIPANT, encoding="utf-8")
        deadline = time.monotonic() + 30
        while True:  # waitress may print the banner a moment before it accepts connections
            result = subprocess.run([sys.executable, str(script), str(port)], capture_output=True, text=True,
                                    timeout=60)
            if result.returncode == 0 or time.monotonic() > deadline or "Connection refused" not in result.stderr:
                break
            time.sleep(0.2)
        assert result.returncode == 0, result.stderr
        code = result.stdout.strip()
        # Committed before it was acknowledged: visible to another connection while the server still runs.
        assert rows(study[1], "SELECT participant, prior, posterior, step FROM participants") == [(code, -2, 1, "done")]
        assert rows(study[1], "SELECT rank FROM clicks") == [(2,)]
        # Eight participants at once: every one stored, once.
        crowd = [subprocess.Popen([sys.executable, str(script), str(port)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(8)]
        outcomes = [participant.communicate(timeout=120) for participant in crowd]
        assert all(p.returncode == 0 for p in crowd), [err for _, err in outcomes]
        codes = {code, *(out.strip() for out, _ in outcomes)}
        assert len(codes) == 9
        assert {r[0] for r in rows(study[1], "SELECT participant FROM participants WHERE step = 'done'")} == codes
        assert rows(study[1], "SELECT COUNT(*), COUNT(DISTINCT participant) FROM clicks") == [(9, 9)]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_serve_refuses_a_taken_port_and_a_file_that_is_no_database(study, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli("serve", str(study[0]), "--db", str(study[1]), "--port", str(port))
    assert result.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr
    text = tmp_path / "notes.db"
    text.write_text("my notes, not a database\n" * 100)
    result = cli("serve", str(study[0]), "--db", str(text))
    assert result.returncode == 2 and "notes.db: not a study database" in result.stderr
    assert text.read_text() == "my notes, not a database\n" * 100


def test_own_templates_replace_the_built_in_ones(study, tmp_path):
    folder = tmp_path / "pages"
    folder.mkdir()
    builtin = Path(serve.__file__).parent / "templates" / "consent.html"
    (folder / "consent.html").write_text(builtin.read_text().replace("A short study on web search",
                                                                     "Study 42 of the Ethics Board"))
    app = create_app(*study, templates=folder)
    participant = Participant(app)
    assert "Study 42 of the Ethics Board" in participant.get("/").text
    assert participant.post("/consent", consent="yes").location == "/prior"
    assert 'id="question"' in participant.get("/prior").text  # the other pages are the built-in ones
    with pytest.raises(FileNotFoundError, match="no such folder"):
        create_app(*study, templates=tmp_path / "missing")


def test_serve_names_the_bad_field_of_the_material_in_one_line(tmp_path):
    broken = material()
    del broken["queries"][1]["orderings"]["least"]["documents"][0]["snippet"]
    path = tmp_path / "material.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    result = cli("serve", str(path), "--db", str(tmp_path / "study.db"))
    assert result.returncode == 2
    assert result.stderr.strip() == (f"pairmeasures seme serve: error: {path}: queries[1].orderings.least.documents[0]"
                                     ".snippet: expected str, got nothing (missing or null)")
    assert not (tmp_path / "study.db").exists()  # nothing created for a study that cannot run
