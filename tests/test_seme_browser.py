"""The SEME study in a real browser: headless Debian chromium (Playwright) against the study app served by waitress.

A simulated participant consents, gives a prior opinion, opens two results and comes back, writes a summary,
gives a posterior opinion and gets a participant code; the answers must then be in the SQLite file and come back
through ``pairmeasures seme export`` and ``pairmeasures seme analyze`` (run as subprocesses). The regression needs
more trials than one participant: the analysis test seeds a server with simulated participants over HTTP
(``benchmarks/seme_load.py --url``, in a subprocess: this process may not open connections) and checks the
effect they were given is found; a single participant's export gets the analyzer's 'too few trials' error.

Screenshots, one per step, are written only on request (not by every run), here of the demo corpus's material::

    pairmeasures seme material --out /tmp/material.json
    PAIRMEASURES_SEME_MATERIAL=/tmp/material.json PAIRMEASURES_SEME_SCREENSHOTS=benchmarks/results/seme \
        python -m pytest tests/test_seme_browser.py -k chromium
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
SCREENSHOTS = os.environ.get("PAIRMEASURES_SEME_SCREENSHOTS")
CONDITIONS = ("most_positive", "most_negative", "least", "system")
TIMEOUT_MS = 15_000


def document(query: int, number: int, polarity: float) -> dict:
    stance = "for" if polarity > 0 else "against"
    return {"doc_id": f"q{query}-d{number}", "title": f"Arguments {stance} school uniforms ({query}.{number})",
            "snippet": f"A short excerpt of article {number}, which argues {stance} the proposal.",
            "text": f"The full text of article {number}. It argues {stance} school uniforms, citing cost, "
                    f"identity and discipline. Marker q{query}-d{number}.",
            "polarity": polarity, "label": "pro" if polarity > 0 else "con"}


def tiny_material() -> dict:
    """Two queries, four documents, the four conditions in distinct orders (contract format, docs/seme.md)."""
    polarities = (0.9, 0.4, -0.3, -0.8)
    orders = {"most_positive": (0, 1, 2, 3), "most_negative": (3, 2, 1, 0), "least": (0, 3, 1, 2),
              "system": (1, 0, 3, 2)}
    mus = {"most_positive": 0.6, "most_negative": -0.6, "least": 0.0, "system": 0.2}
    queries = []
    for q in range(2):
        docs = [document(q, d, polarity) for d, polarity in enumerate(polarities)]
        queries.append({
            "query_id": f"q{q}", "query": f"Should schools require uniforms? ({q})",
            "perspectives": {"positive": {"label": "pro", "statement": "Schools should require uniforms."},
                             "negative": {"label": "con", "statement": "Schools should not require uniforms."}},
            "orderings": {c: {"mu_duo": mus[c], "duo": abs(mus[c]), "documents": [docs[i] for i in orders[c]]}
                          for c in CONDITIONS}})
    return {"format": "pairmeasures-seme-material", "version": 1, "created": "2026-11-23T00:00:00+00:00",
            "dataset": "test-fixture", "system": "bm25>>dense", "k": 4, "conditions": list(CONDITIONS),
            "manifest": {"note": "hand-written test fixture"}, "queries": queries}


@pytest.fixture(scope="module")
def material(tmp_path_factory) -> tuple[Path, dict]:
    """The tiny material, or the file PAIRMEASURES_SEME_MATERIAL names (for screenshots of real material)."""
    if os.environ.get("PAIRMEASURES_SEME_MATERIAL"):
        path = Path(os.environ["PAIRMEASURES_SEME_MATERIAL"])
        return path, json.loads(path.read_text(encoding="utf-8"))
    content = tiny_material()
    path = tmp_path_factory.mktemp("seme-material") / "material.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    return path, content


class Server:
    """The study app on waitress in a thread, on a free localhost port (bound before the thread starts)."""

    def __init__(self, material: Path, db: Path) -> None:
        from waitress import create_server

        from pairmeasures.apps.seme.serve import create_app

        self.db = db
        self.wsgi = create_server(create_app(material, db, seed=0, secret_key="browser-test"), host="127.0.0.1",
                                  port=0, threads=8)
        self.url = f"http://127.0.0.1:{self.wsgi.effective_port}"
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.wsgi.run()
        except OSError:  # the loop's select() on sockets close() has just closed from the test's thread
            if not self.closing.is_set():
                raise

    def close(self) -> None:
        self.closing.set()
        self.wsgi.close()
        self.wsgi.task_dispatcher.shutdown()
        self.thread.join(timeout=10)


@pytest.fixture
def server(material, tmp_path):
    running = Server(material[0], tmp_path / "responses.sqlite")
    yield running
    running.close()


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("needs Debian's headless browser: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                              args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()


def shoot(page, name: str) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"), full_page=True)


def pathname(page) -> str:
    return page.evaluate("location.pathname")


def pm(*args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    """``python -m pairmeasures ARGS`` in a new process."""
    return subprocess.run([sys.executable, "-m", "pairmeasures", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def export(db: Path, out: Path) -> list[dict]:
    done = pm("seme", "export", "--db", str(db), "--out", str(out))
    assert done.returncode == 0, done.stderr
    with open(out, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def stored(db: Path, code: str) -> tuple[list[tuple], list[tuple]]:
    """The participant's row (prior, posterior, summary, step) and clicks (rank, doc_id), read from SQLite
    read-only, as the server committed them."""
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = connection.execute("SELECT prior, posterior, summary, step FROM participants WHERE participant = ?",
                                 (code,)).fetchall()
        clicks = connection.execute("SELECT rank, doc_id FROM clicks WHERE participant = ? ORDER BY click",
                                    (code,)).fetchall()
        return row, clicks
    finally:
        connection.close()


def test_a_participant_completes_the_study_in_chromium(server, material, browser, tmp_path):
    material_path, content = material
    context = browser.new_context(viewport={"width": 1000, "height": 800})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("request", lambda request: problems.append(f"request to another origin: {request.url}")
            if not request.url.startswith(server.url + "/") else None)
    page.on("response", lambda response: problems.append(f"{response.status} for {response.url}")
            if response.status >= 400 and not response.url.endswith("/favicon.ico") else None)
    page.on("console", lambda message: problems.append(f"console: {message.text}")
            if message.type == "error" and "favicon.ico" not in (message.location or {}).get("url", "") else None)
    summary = ('Most results argued for one side; the "other" side got two & they were short. '
               '<script>document.title="pwned"</script>')
    try:
        page.goto(server.url + "/")
        shoot(page, "1-consent")
        assert not page.is_checked("#consent")
        page.check("#consent")
        page.click("#start")
        page.wait_for_url("**/prior")
        question = page.inner_text("#question")
        assert question.strip()
        assert sorted(int(v) for v in page.eval_on_selector_all('input[name="opinion"]', "es => es.map(e => e.value)")) \
            == list(range(-3, 4))
        page.check('input[name="opinion"][value="2"]')
        shoot(page, "2-prior")
        page.click("#next")
        page.wait_for_url("**/results")
        links = page.locator("#results a.result-link")
        assert links.count() == content["k"]
        shown = tuple(links.nth(i).get_attribute("data-doc") for i in range(links.count()))
        assert [links.nth(i).get_attribute("data-rank") for i in range(links.count())] \
            == [str(rank) for rank in range(1, content["k"] + 1)]
        assert page.locator("#results .snippet").count() == content["k"]
        seen = [(query, condition) for query in content["queries"] for condition, ordering in query["orderings"].items()
                if tuple(d["doc_id"] for d in ordering["documents"]) == shown]
        assert len(seen) == 1, f"the results page shows {shown}, no ordering of the material"
        query, condition = seen[0]
        assert query["query"] in page.content() or query["query"] in question
        first = query["orderings"][condition]["documents"][0]
        assert links.nth(0).inner_text().strip() == first["title"]
        shoot(page, "3-results")
        for rank in (1, 3):
            page.click(f'#results a.result-link[data-rank="{rank}"]')
            page.wait_for_url(f"**/document/{rank}")
            text = query["orderings"][condition]["documents"][rank - 1]["text"]
            assert " ".join(text.split()[:12]) in " ".join(page.inner_text("body").split())
            if rank == 1:
                shoot(page, "4-document")
            page.click("#back")
            page.wait_for_url("**/results")
        page.click("#next")
        page.wait_for_url("**/summary")
        page.fill("#summary", summary)
        shoot(page, "5-summary")
        page.click("#next")
        page.wait_for_url("**/posterior")
        page.check('input[name="opinion"][value="-1"]')
        shoot(page, "6-posterior")
        page.click("#next")
        page.wait_for_url("**/done")
        assert page.locator("#complete").is_visible()
        code = page.inner_text("#participant").strip()
        assert code
        shoot(page, "7-done")
        assert page.title() != "pwned"
        page.goto(server.url + "/prior")  # a finished participant cannot go back and answer again
        assert pathname(page) == "/done"
    finally:
        context.close()
    assert not problems, problems

    assert stored(server.db, code) == ([(2, -1, summary, "done")], [(1, shown[0]), (3, shown[2])])
    rows = export(server.db, tmp_path / "responses.csv")
    assert [row["participant"] for row in rows] == [code]
    row = rows[0]
    assert (row["query_id"], row["condition"]) == (query["query_id"], condition)
    assert float(row["mu_duo"]) == pytest.approx(query["orderings"][condition]["mu_duo"])
    assert (int(row["prior"]), int(row["posterior"])) == (2, -1)
    assert (int(row["clicks"]), row["clicked_ranks"]) == (2, "1;3")
    assert row["summary"] == summary
    assert row["completed"].lower() == "true"
    assert row["started"] and row["finished"] and row["started"] <= row["finished"]

    # one trial is too few for the regression: a clear error saying how many it has and needs, no traceback
    analyzed = pm("seme", "analyze", str(tmp_path / "responses.csv"), "--json")
    assert analyzed.returncode != 0 and not analyzed.stdout
    assert "1 complete trial" in analyzed.stderr and "at least" in analyzed.stderr, analyzed.stderr
    assert "Traceback" not in analyzed.stderr


def test_pages_out_of_order_a_second_tab_and_the_back_button_lead_to_the_current_step(server, browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(server.url + "/summary")  # no participant yet: back to consent
        assert pathname(page) == "/"
        page.check("#consent")
        page.click("#start")
        page.wait_for_url("**/prior")
        for skipped in ("/results", "/summary", "/posterior", "/done", "/document/1"):
            page.goto(server.url + skipped)
            assert pathname(page) == "/prior", skipped
        stale = context.new_page()  # the same participant's prior page in a second tab
        stale.set_default_timeout(TIMEOUT_MS)
        stale.goto(server.url + "/prior")
        page.check('input[name="opinion"][value="0"]')
        page.click("#next")
        page.wait_for_url("**/results")
        stale.check('input[name="opinion"][value="3"]')  # answering the page again from the other tab is refused
        stale.click("#next")
        assert stale.get_attribute("#error", "data-code") == "409"
        stale.click("#continue")
        assert pathname(stale) == "/results"
        page.go_back()  # the back button cannot reopen the answered page either
        assert pathname(page) == "/results"
        page.goto(server.url + "/posterior")
        assert pathname(page) == "/results"
    finally:
        context.close()
    connection = sqlite3.connect(f"file:{server.db}?mode=ro", uri=True)
    try:
        assert connection.execute("SELECT prior, step FROM participants").fetchall() == [(0, "results")]
    finally:
        connection.close()


def test_seeded_participants_are_read_back_by_export_and_analyze(server, material, tmp_path):
    participants = 30
    seeded = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "seme_load.py"), "--url", server.url,
                             "--db", str(server.db), "--material", str(material[0]), "--participants",
                             str(participants), "--alone", "0", "--time-limit", "120", "--out", str(tmp_path / "load.json")],
                            capture_output=True, text=True, timeout=240, cwd=tmp_path)
    report = json.loads((tmp_path / "load.json").read_text()) if (tmp_path / "load.json").exists() else {}
    assert seeded.returncode == 0, (seeded.stdout[-3000:], seeded.stderr[-3000:])
    assert report["finished"] == participants and not report["lost_duplicated_or_wrong"] and not report["errors"]

    rows = export(server.db, tmp_path / "responses.csv")
    assert len(rows) == participants == len({row["participant"] for row in rows})
    assert {row["condition"] for row in rows} <= set(CONDITIONS) and len({row["condition"] for row in rows}) > 1
    analyzed = pm("seme", "analyze", str(tmp_path / "responses.csv"), "--json")
    assert analyzed.returncode == 0, analyzed.stderr
    result = json.loads(analyzed.stdout)
    assert result["all"]["n"] == participants
    assert 0 < result["clicked"]["n"] < participants
    # the simulated participants move 3 Likert points per unit of mu+_DUO (seme_load.py): the effect is found
    assert result["all"]["beta2"] > 1 and result["all"]["p_value"] < 0.01
