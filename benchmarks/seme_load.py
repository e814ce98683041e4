"""SEME study server under load: concurrent simulated participants complete the whole study over HTTP.

Starts `pairmeasures seme serve` (waitress) on a free localhost port with a synthetic material (5 queries x 4
conditions x 10 documents; or `--material FILE`), then 50 simulated participants at once each walk every step
(consent, prior opinion, results with 0-2 document clicks, summary, posterior opinion, done) the way a browser
does: a cookie jar per participant, the form's hidden `csrf_token` and `submission` sent back, redirects
followed. Every fifth participant also sends its prior form twice with the same submission id (a double click),
which the server must recognise and never store twice. Afterwards every participant's answers are checked in
the SQLite file and in `pairmeasures seme export`'s CSV: none lost, none duplicated, prior, posterior, clicks and
summary as sent. Records throughput and latency percentiles per step (a step's time includes following the
redirect to the next page, as a participant waits for it). HTTP client: the standard library (urllib with
http.cookiejar), so the benchmark needs nothing beyond the seme extra.

Usage:
  python benchmarks/seme_load.py                     # 50 participants, writes benchmarks/results/seme_load.json
  python benchmarks/seme_load.py --url URL --db FILE --material FILE --participants 24 --out FILE.json
                                                     # drive a server already running (tests seed with this)

Simulated opinions: prior uniform on -3..3; posterior = clip(round(0.7 prior + 3 mu + N(0, 0.5))), where mu is
the mu+_DUO of the ordering the participant was shown (found in the material by the documents on the page), so
`pairmeasures seme analyze` has a known positive effect to find.
"""

from __future__ import annotations

import argparse
import csv
import http.cookiejar
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path

import numpy as np

PARTICIPANTS, MAX_PARTICIPANTS = 50, 1_000
CONDITIONS = ("most_positive", "most_negative", "least", "system")
STEPS = ("consent", "prior", "results", "document", "summary", "posterior")
#: The forms a participant submits (the store keeps one submission row for each).
SUBMITTED = ("consent", "prior", "results", "summary", "posterior")


def synthetic_material(queries: int = 5, k: int = 10, seed: int = 0) -> dict:
    """A material in the contract's format (docs/seme.md): ``queries`` topics, four orderings of ``k`` documents
    each, paragraphs of realistic length; each condition's mu+_DUO spread over [-0.8, 0.8]."""
    rng = np.random.default_rng(seed)
    words = "policy evidence public cost benefit study risk community health economy safety rights".split()

    def paragraph(n: int) -> str:
        return " ".join(rng.choice(words, n)).capitalize() + "."

    topics = []
    for q in range(queries):
        pool = [{"doc_id": f"q{q}-d{d}", "title": f"Document {d} on topic {q}: " + paragraph(5),
                 "snippet": paragraph(30), "text": " ".join(paragraph(40) for _ in range(6)),
                 "polarity": float(rng.uniform(-1, 1)), "label": None} for d in range(2 * k)]
        orderings = {}
        for condition, mu in zip(CONDITIONS, (0.8, -0.8, 0.0, float(rng.uniform(-0.4, 0.4)))):
            chosen = rng.choice(len(pool), k, replace=False)
            orderings[condition] = {"mu_duo": mu, "duo": abs(mu), "documents": [pool[i] for i in chosen]}
        topics.append({"query_id": f"q{q}", "query": f"Should topic {q} be adopted?",
                       "perspectives": {"positive": {"label": "pro", "statement": f"Topic {q} should be adopted."},
                                        "negative": {"label": "con", "statement": f"Topic {q} should not be adopted."}},
                       "orderings": orderings})
    return {"format": "pairmeasures-seme-material", "version": 1,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "dataset": "synthetic",
            "system": "synthetic", "k": k, "conditions": list(CONDITIONS), "manifest": {"benchmark": "seme_load"},
            "queries": topics}


def mu_by_documents(material: dict) -> dict[tuple[str, ...], float]:
    """mu+_DUO of every ordering in the material, keyed by its documents in rank order."""
    return {tuple(document["doc_id"] for document in ordering["documents"]): float(ordering["mu_duo"])
            for query in material["queries"] for ordering in query["orderings"].values()}


class Page(HTMLParser):
    """What a participant reads off a page: the first form (action, fields), result links, the participant code."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.action: str | None = None
        self.fields: dict[str, str] = {}
        self.checkboxes: dict[str, str] = {}
        self.results: list[dict[str, str]] = []
        self.participant = ""
        self._form = "before"  # the first form: "before", "in", "after"
        self._in_participant = False
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        if tag == "form" and self._form == "before":
            self._form, self.action = "in", attributes.get("action", "")
        elif tag == "input" and self._form == "in":
            kind = attributes.get("type", "text")
            if kind == "hidden":
                self.fields[attributes.get("name", "")] = attributes.get("value", "")
            elif kind == "checkbox":
                self.checkboxes[attributes.get("name", "")] = attributes.get("value", "on")
        elif tag == "a" and "result-link" in attributes.get("class", "").split():
            self.results.append(attributes)
        if attributes.get("id") == "participant":
            self._in_participant = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self._form == "in":
            self._form = "after"
        self._in_participant = False

    def handle_data(self, data: str) -> None:
        if self._in_participant:
            self.participant += data.strip()


class StepFailed(Exception):
    """A request of a simulated participant got an answer a browser would not expect."""


@dataclass
class Participant:
    """One simulated participant: its own cookie jar; what it sent; how long each step took."""

    index: int
    base: str
    deadline: float
    mu_of: dict[tuple[str, ...], float]
    replay: bool
    timings: list[tuple[str, float]] = field(default_factory=list)
    sent: dict = field(default_factory=dict)
    error: str | None = None
    replays: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        self.rng = np.random.default_rng(1_000 + self.index)

    def request(self, step: str, path: str, data: dict[str, str] | None = None) -> tuple[str, Page]:
        """GET ``path`` (or POST ``data`` to it), following redirects; the final path and the parsed page."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise StepFailed(f"time limit reached before {step}")
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        start = time.perf_counter()
        try:
            with self.opener.open(urllib.parse.urljoin(self.base, path), body, timeout=min(remaining, 60)) as reply:
                html, final = reply.read().decode("utf-8"), urllib.parse.urlsplit(reply.geturl()).path
        except urllib.error.HTTPError as error:
            raise StepFailed(f"{step}: {'POST' if data is not None else 'GET'} {path} answered {error.code}") from error
        self.timings.append((step, time.perf_counter() - start))
        return final, Page(html)

    def submit(self, step: str, at: str, page: Page, values: dict[str, str]) -> tuple[str, Page]:
        """Send the page's form back with its hidden fields and ``values``."""
        return self.request(step, page.action or at, {**page.fields, **values})

    def resend(self, form: Page, at: str, values: dict[str, str], landed: str) -> None:
        """A double click: ``form`` sent again with the same submission id must be answered as the first time
        (a redirect to ``landed``), and stored once; a different answer is recorded in ``replays``."""
        body = urllib.parse.urlencode({**form.fields, **values}).encode()
        try:
            with self.opener.open(urllib.parse.urljoin(self.base, form.action or at), body, timeout=60) as reply:
                now = urllib.parse.urlsplit(reply.geturl()).path
                if now != landed:
                    self.replays.append(f"{at} sent again landed on {now}, the first time on {landed}")
        except urllib.error.HTTPError as error:
            self.replays.append(f"{at} sent again answered {error.code}")

    def run(self) -> None:
        try:
            self.walk()
        except (StepFailed, OSError) as error:
            self.error = f"participant {self.index}: {error}"

    def walk(self) -> None:
        at, page = self.request("open", "/")
        form, consent = page, dict(page.checkboxes)
        at, page = self.submit("consent", "/", form, consent)
        expect(at, "/prior", "consent")
        if self.replay:
            self.resend(form, "/consent", consent, "/prior")
        prior = int(self.rng.integers(-3, 4))
        form = page
        at, page = self.submit("prior", "/prior", form, {"opinion": str(prior)})
        expect(at, "/results", "prior")
        if self.replay:
            self.resend(form, "/prior", {"opinion": str(prior)}, "/results")
        shown = tuple(link.get("data-doc", "") for link in page.results)
        if not shown:
            raise StepFailed("the results page lists no result-link")
        links = page.results
        clicks = [] if self.rng.random() < 0.2 else sorted(
            self.rng.choice(min(3, len(links)), min(3, len(links), int(self.rng.integers(1, 3))), replace=False))
        for position in clicks:
            self.request("document", links[position]["href"])
            at, page = self.request("back", "/results")
        at, page = self.submit("results", "/results", page, {})
        expect(at, "/summary", "results")
        summary = f"Participant {self.index} read {len(clicks)} documents & wrote <this> summary."
        at, page = self.submit("summary", "/summary", page, {"summary": summary})
        expect(at, "/posterior", "summary")
        mu = self.mu_of.get(shown)  # None: the page shows no ordering of the material
        posterior = int(np.clip(round(0.7 * prior + 3 * (mu or 0.0) + self.rng.normal(0, 0.5)), -3, 3))
        at, page = self.submit("posterior", "/posterior", page, {"opinion": str(posterior)})
        expect(at, "/done", "posterior")
        if not page.participant:
            raise StepFailed("the done page shows no #participant code")
        self.sent = {"participant": page.participant, "prior": prior, "posterior": posterior, "summary": summary,
                     "clicked_ranks": [int(links[position]["data-rank"]) for position in clicks], "mu_duo_seen": mu}


def expect(at: str, path: str, step: str) -> None:
    if at != path:
        raise StepFailed(f"after {step} the participant landed on {at}, not {path}")


def simulate(base: str, participants: int, material: dict | None, deadline: float, *, first: int = 0,
             at_once: bool = True) -> tuple[list[Participant], float]:
    """``participants`` simulated participants (numbered from ``first``) against ``base``, all at once or one after
    another; they and the wall time."""
    mu_of = mu_by_documents(material) if material else {}
    crowd = [Participant(i, base, deadline, mu_of, replay=i % 5 == 0) for i in range(first, first + participants)]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=participants if at_once else 1) as pool:
        list(pool.map(Participant.run, crowd))
    return crowd, time.perf_counter() - start


def check_stored(db: Path, export_csv: Path, crowd: list[Participant], fresh: bool) -> list[str]:
    """Problems with what the server stored: every finished participant once in SQLite and in the export, with the
    answers it sent; no submission stored twice; with a ``fresh`` database, no participant but these."""
    problems = []
    finished = {p.sent["participant"]: p.sent for p in crowd if p.sent}
    with open(export_csv, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if fresh and len(rows) != len(crowd):
        problems.append(f"the export has {len(rows)} participants, {len(crowd)} took part")
    exported = [row["participant"] for row in rows]
    for code in {code for code in exported if exported.count(code) > 1}:
        problems.append(f"participant {code} exported {exported.count(code)} times")
    by_code = {row["participant"]: row for row in rows}
    for code, sent in finished.items():
        row = by_code.get(code)
        if row is None:
            problems.append(f"participant {code} finished but is missing from the export")
            continue
        expected = {"prior": str(sent["prior"]), "posterior": str(sent["posterior"]), "summary": sent["summary"],
                    "clicks": str(len(sent["clicked_ranks"])), "completed": "true",
                    "clicked_ranks": ";".join(str(rank) for rank in sent["clicked_ranks"])}
        for column, value in expected.items():
            if row.get(column, "").strip().lower() != value.lower():
                problems.append(f"participant {code}: export {column}={row.get(column)!r}, sent {value!r}")
        if sent["mu_duo_seen"] is None:
            problems.append(f"participant {code} was shown documents in an order the material does not have")
        elif abs(float(row["mu_duo"]) - sent["mu_duo_seen"]) > 1e-9:
            problems.append(f"participant {code} was shown an ordering with mu+_DUO {sent['mu_duo_seen']}, the export "
                            f"records {row['mu_duo']} ({row['condition']})")
    problems += check_sqlite(db, finished)
    return problems


def check_sqlite(db: Path, finished: dict[str, dict]) -> list[str]:
    """Every finished participant once in the SQLite file (read-only) with the answers it sent, one stored submission
    per step it answered (a replayed one not stored again), one click row per document it opened."""
    problems = []
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = connection.execute("SELECT participant, prior, posterior, summary, step FROM participants").fetchall()
        submissions = dict(connection.execute("SELECT participant, COUNT(*) FROM submissions GROUP BY participant"))
        clicks = dict(connection.execute("SELECT participant, COUNT(*) FROM clicks GROUP BY participant"))
    except sqlite3.DatabaseError as error:
        return [f"{db}: not the study database expected ({error})"]
    finally:
        connection.close()
    stored = [row[0] for row in rows]
    by_code = {row[0]: row[1:] for row in rows}
    for code, sent in finished.items():
        if stored.count(code) != 1:
            problems.append(f"participant {code} is stored {stored.count(code)} times in participants")
            continue
        expected = (sent["prior"], sent["posterior"], sent["summary"], "done")
        if tuple(by_code[code]) != expected:
            problems.append(f"participant {code}: SQLite holds {by_code[code]}, sent {expected}")
        if submissions.get(code) != len(SUBMITTED):
            problems.append(f"participant {code}: {submissions.get(code)} submissions stored, "
                            f"expected {len(SUBMITTED)} ({', '.join(SUBMITTED)})")
        if clicks.get(code, 0) != len(sent["clicked_ranks"]):
            problems.append(f"participant {code}: {clicks.get(code, 0)} clicks stored, opened "
                            f"{len(sent['clicked_ranks'])} documents")
    return problems


def percentiles(crowd: list[Participant]) -> dict:
    """Latency percentiles (ms) and counts per step (a form's POST with the redirect it answers followed)."""
    out = {}
    for step in ("open", *STEPS, "back"):
        times = np.array([seconds for p in crowd for name, seconds in p.timings if name == step]) * 1e3
        if len(times):
            out[step] = {"count": int(len(times)), "p50_ms": round(float(np.percentile(times, 50)), 1),
                         "p90_ms": round(float(np.percentile(times, 90)), 1),
                         "p99_ms": round(float(np.percentile(times, 99)), 1), "max_ms": round(float(times.max()), 1)}
    return out


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) a process has used so far, from /proc (None where there is no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(material: Path, db: Path, port: int, log: Path) -> subprocess.Popen:
    """``pairmeasures seme serve`` as a user starts it; returns once it accepts connections (30 s at most)."""
    server = subprocess.Popen([sys.executable, "-m", "pairmeasures", "seme", "serve", str(material), "--db", str(db),
                               "--port", str(port)], stdout=log.open("w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with {server.returncode}:\n{log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit(f"the server did not accept connections within 30 s:\n{log.read_text()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--participants", type=int, default=PARTICIPANTS)
    parser.add_argument("--alone", type=int, default=5,
                        help="participants run one after another first, for unloaded latencies (default 5)")
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds for all participants (default 300)")
    parser.add_argument("--url", help="a server already running (default: start one on a free port)")
    parser.add_argument("--db", type=Path, help="its SQLite file (with --url: checked afterwards)")
    parser.add_argument("--material", type=Path, help="material file (default: a synthetic one)")
    parser.add_argument("--out", type=Path, help="results JSON (default: benchmarks/results/seme_load.json)")
    args = parser.parse_args()
    if not 1 <= args.participants <= MAX_PARTICIPANTS or not 0 <= args.alone <= MAX_PARTICIPANTS:
        parser.error(f"--participants must be 1..{MAX_PARTICIPANTS} and --alone 0..{MAX_PARTICIPANTS}")
    if args.url and not args.db:
        parser.error("--url needs --db, the server's SQLite file, to check what it stored")

    with tempfile.TemporaryDirectory(prefix="seme-load-") as scratch:
        folder = Path(scratch)
        material_path = args.material or folder / "material.json"
        if args.material is None:
            material_path.write_text(json.dumps(synthetic_material()), encoding="utf-8")
        material = json.loads(material_path.read_text(encoding="utf-8"))
        db, server = args.db or folder / "responses.sqlite", None
        base = args.url
        if base is None:
            port = free_port()
            server = start_server(material_path, db, port, folder / "server.log")
            base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + args.time_limit
            alone, _ = simulate(base, args.alone, material, deadline, first=args.participants, at_once=False)
            server_cpu = cpu_seconds(server.pid) if server is not None else None
            client_cpu = time.process_time()
            crowd, wall = simulate(base, args.participants, material, deadline)
            client_cpu = time.process_time() - client_cpu
            if server_cpu is not None and server is not None:
                server_cpu = (cpu_seconds(server.pid) or server_cpu) - server_cpu
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=30)
        export_csv = folder / "responses.csv"
        exported = subprocess.run([sys.executable, "-m", "pairmeasures", "seme", "export", "--db", str(db),
                                   "--out", str(export_csv)], capture_output=True, text=True, timeout=120)
        everyone = crowd + alone
        errors = [p.error for p in everyone if p.error]
        if exported.returncode != 0:
            errors.append(f"seme export failed ({exported.returncode}): {exported.stderr.strip()}")
            problems = []
        else:
            problems = check_stored(db, export_csv, everyone, fresh=server is not None)
        replays = 2 * sum(p.replay for p in everyone)
        bad_replays = [f"participant {p.index}: {problem}" for p in everyone for problem in p.replays]
        finished = sum(1 for p in crowd if p.sent)
        actions = sum(len(p.timings) for p in crowd)
        results = {
            "participants": args.participants, "finished": finished, "errors": errors[:20],
            "lost_duplicated_or_wrong": problems[:20], "replays": replays,
            "replays_not_answered_as_before": bad_replays[:20],
            "wall_s": round(wall, 2), "participants_per_s": round(finished / wall, 2),
            "actions": actions, "actions_per_s": round(actions / wall, 1), "steps": percentiles(crowd),
            "alone": args.alone, "alone_finished": sum(1 for p in alone if p.sent), "steps_alone": percentiles(alone),
            "cpu_s": {"server": None if server_cpu is None else round(server_cpu, 2), "client": round(client_cpu, 2),
                      "cores": os.cpu_count()},
            "client": "urllib + http.cookiejar, one thread per participant, no think time",
            "server": "pairmeasures seme serve (its default waitress threads), same machine" if server is not None else base,
        }
        print(json.dumps({key: value for key, value in results.items() if key not in ("steps", "steps_alone")}, indent=1))
        for step, numbers in results["steps"].items():
            quiet = results["steps_alone"].get(step, {}).get("p50_ms", float("nan"))
            print(f"{step:10} {numbers['count']:5} times  p50 {numbers['p50_ms']:7.1f} ms  "
                  f"p90 {numbers['p90_ms']:7.1f} ms  p99 {numbers['p99_ms']:7.1f} ms  max {numbers['max_ms']:7.1f} ms"
                  f"   (one participant alone: p50 {quiet:6.1f} ms)")
        if args.out:
            args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        else:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from _common import save

            print("wrote", save("seme_load", results))
        ok = finished == args.participants and results["alone_finished"] == args.alone and not errors and not problems and not bad_replays
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
