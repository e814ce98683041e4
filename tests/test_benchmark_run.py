"""``benchmark run``, ``benchmark submit`` and ``leaderboard verify`` as a user runs them (``python -m pairmeasures``,
real files): records written, a warm run that runs nothing, values equal to ``pairmeasures eval`` on the stored run,
a bad submission refused before anything is written, tampering found by verify, missing data skipped in one line.

The suite is a tiny TOML over the first four ProCon debates (a BEIR folder: ``procon_subset``), with ``bm25`` only:
cheap on two cores. The bias measure names its groups by a resource (``group='beir:DIR'``), so that ``eval`` reads
the same side information from the stored run file as the record was made with.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "labels.tsv")


def pairmeasures(*args: str, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pairmeasures", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "TQDM_DISABLE": "1", **(env or {})})


def measures_of(folder: Path) -> list[str]:
    return ["nDCG@10", "P@5", f"rKL(group='beir:{folder}')@10"]


def write_suite(path: Path, folder: Path, measures: list[str], depth: int = 20, extra: str = "") -> Path:
    pins = "\n".join(f'"{name}" = "{hashlib.sha256((folder / name).read_bytes()).hexdigest()}"' for name in FILES)
    listed = ", ".join(json.dumps(m) for m in measures)
    path.write_text(f'[suite]\nname = "tiny"\nversion = "1"\nbaseline = "bm25"\ndepth = {depth}\n\n'
                    f'[[task]]\nid = "lab/procon4"\nfolder = "{folder}"\nmeasures = [{listed}]\n[task.files]\n{pins}\n'
                    + extra, encoding="utf-8")
    return path


@pytest.fixture
def suite(tmp_path, procon_subset) -> Path:
    return write_suite(tmp_path / "tiny.toml", procon_subset, measures_of(procon_subset))


SPY = '''
import os
import pyterrier as pt


class Spy(pt.Transformer):
    """Passes its input on, and writes a line to $SPY_LOG each time it ranks."""

    def transform(self, frame):
        with open(os.environ["SPY_LOG"], "a") as log:
            log.write(f"ranked {frame.qid.nunique()} queries\\n")
        return frame
'''


def test_run_writes_records_then_a_warm_run_runs_nothing(tmp_path, suite, procon_subset):
    (tmp_path / "spy_stage.py").write_text(SPY)
    log, results = tmp_path / "spy.log", tmp_path / "results"
    env = {"SPY_LOG": str(log), "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    cold = pairmeasures("benchmark", "run", suite, "--systems", "bm25", "bm25>>spy_stage:Spy", "--results", results,
                        "--json", env=env)
    assert cold.returncode == 0, cold.stderr
    assert json.loads(cold.stdout) == {"records_written": 2, "records_skipped": 0, "tasks_skipped": []}
    assert "[1/1] task lab/procon4: running 2 systems" in cold.stderr and "[1/1] task lab/procon4: done" in cold.stderr
    assert log.read_text() == "ranked 4 queries\n"
    record = json.loads((results / "bm25" / "lab" / "procon4.json").read_text())
    assert {"system", "task", "suite", "measures", "n", "run_sha256", "request"} <= set(record)
    assert record["suite"] == {"name": "tiny", "version": "1"} and record["kind"] == "system"
    assert record["request"]["measures"] == record["pins"]["measures"] and record["request"]["depth"] == 20
    assert record["n"]["nDCG@10"] == 4 and 0 < record["measures"]["nDCG@10"] <= 1
    stored = gzip.decompress((results / "bm25" / "lab" / "procon4.run.gz").read_bytes())
    assert hashlib.sha256(stored).hexdigest() == record["run_sha256"]
    assert max(int(line.split()[3]) for line in stored.decode().splitlines()) == 20  # cut to the task's depth

    # warm: a fresh, empty cache folder stays empty (no index opened or built, nothing embedded); the spy never ranks
    cache = tmp_path / "warm-cache"
    warm = pairmeasures("benchmark", "run", suite, "--systems", "bm25", "bm25>>spy_stage:Spy", "--results", results,
                        "--json", env={**env, "PAIRMEASURES_CACHE_DIR": str(cache)})
    assert warm.returncode == 0, warm.stderr
    assert json.loads(warm.stdout) == {"records_written": 0, "records_skipped": 2, "tasks_skipped": []}
    assert log.read_text() == "ranked 4 queries\n"
    assert not cache.exists() or not any(p.is_file() for p in cache.rglob("*"))
    assert "2 records finished before: skipped" in warm.stderr and "running" not in warm.stderr


def test_values_equal_eval_on_the_stored_run(tmp_path, suite, procon_subset):
    results = tmp_path / "results"
    ran = pairmeasures("benchmark", "run", suite, "--systems", "bm25", "--results", results)
    assert ran.returncode == 0, ran.stderr
    record = json.loads((results / "bm25" / "lab" / "procon4.json").read_text())
    run_file = tmp_path / "bm25.run"
    run_file.write_bytes(gzip.decompress((results / "bm25" / "lab" / "procon4.run.gz").read_bytes()))
    measures = measures_of(procon_subset)
    evaluated = pairmeasures("eval", procon_subset / "qrels" / "test.tsv", run_file, *measures, "-q", "-p", "-1",
                             "-o", "jsonl")
    assert evaluated.returncode == 0, evaluated.stderr
    rows = [json.loads(line) for line in evaluated.stdout.splitlines()]
    ids = record["per_query"]["query_ids"]
    for measure in measures:
        canonical = next(m for m in record["measures"] if m.split("(")[0].split("@")[0] == measure.split("(")[0].split("@")[0])
        mean = next(r["value"] for r in rows if r["query_id"] == "all" and r["measure"] == canonical)
        assert record["measures"][canonical] == pytest.approx(mean, rel=1e-12, abs=1e-15)
        by_query = {r["query_id"]: r["value"] for r in rows if r["measure"] == canonical and r["query_id"] != "all"}
        stored = dict(zip(ids, record["per_query"]["values"][canonical]))
        assert {q: v for q, v in stored.items() if v is not None} == pytest.approx(by_query, rel=1e-14)


def test_a_bad_submission_names_file_and_line_and_writes_nothing(tmp_path, suite, procon_subset):
    queries = [json.loads(line)["_id"] for line in (procon_subset / "queries.jsonl").read_text().splitlines()]
    documents = [json.loads(line)["_id"] for line in (procon_subset / "corpus.jsonl").read_text().splitlines()]
    good = tmp_path / "good.run"
    good.write_text("".join(f"{q} Q0 {d} {r} {10.0 - r} lab\n" for q in queries for r, d in enumerate(documents[:5], 1)))
    results = tmp_path / "results"
    bad = tmp_path / "bad.run"
    lines = good.read_text().splitlines(keepends=True)
    bad.write_text("".join(lines[:6]) + f"nosuchquery Q0 {documents[0]} 1 3.0 lab\n" + "".join(lines[6:]))
    refused = pairmeasures("benchmark", "submit", suite, "--name", "lab-x", "--results", results,
                           "--run", f"lab/procon4={bad}")
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert f"{bad}:7: query 'nosuchquery' is not a query of task lab/procon4" in refused.stderr
    assert not results.exists()

    twice = tmp_path / "twice.run"
    twice.write_text("".join(lines) + lines[2])
    refused = pairmeasures("benchmark", "submit", suite, "--name", "lab-x", "--results", results,
                           "--run", f"lab/procon4={twice}")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"{twice}:{len(lines) + 1}:" in refused.stderr
    assert not results.exists()

    accepted = pairmeasures("benchmark", "submit", suite, "--name", "lab-x", "--results", results,
                            "--run", f"lab/procon4={good}", "--json")
    assert accepted.returncode == 0, accepted.stderr
    assert json.loads(accepted.stdout) == {"records_written": 1, "records_skipped": 0, "tasks_skipped": []}
    record = json.loads((results / "lab-x" / "lab" / "procon4.json").read_text())
    assert record["kind"] == "submission" and record["spec"] is None
    again = pairmeasures("benchmark", "submit", suite, "--name", "lab-x", "--results", results,
                         "--run", f"lab/procon4={good}", "--json")
    assert json.loads(again.stdout)["records_skipped"] == 1
    other = tmp_path / "other.run"
    other.write_text(good.read_text().replace(" lab\n", " lab2\n").replace(" 9.0 ", " 9.5 "))
    conflict = pairmeasures("benchmark", "submit", suite, "--name", "lab-x", "--results", results,
                            "--run", f"lab/procon4={other}")
    assert conflict.returncode == 2 and "--replace" in conflict.stderr and "procon4.json" in conflict.stderr
    replaced = pairmeasures("benchmark", "submit", suite, "--name", "lab-x", "--results", results,
                            "--run", f"lab/procon4={other}", "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert len(list((results / "lab-x" / "lab").glob("procon4.replaced-*.json"))) == 1  # the earlier one kept


def test_verify_finds_a_tampered_record(tmp_path, suite):
    results = tmp_path / "results"
    assert pairmeasures("benchmark", "run", suite, "--systems", "bm25", "--results", results).returncode == 0
    clean = pairmeasures("leaderboard", "verify", results)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "1 records recomputed: 1 the same, 0 drifted; 0 not verified" in clean.stdout
    path = results / "bm25" / "lab" / "procon4.json"
    record = json.loads(path.read_text())
    values = record["per_query"]["values"]["nDCG@10"]
    values[0] = values[0] / 2 + 0.25  # still a valid record: the mean follows its values
    record["measures"]["nDCG@10"] = sum(values) / len(values)
    path.write_text(json.dumps(record))
    tampered = pairmeasures("leaderboard", "verify", results)
    assert tampered.returncode == 1
    drift = [line for line in tampered.stdout.splitlines() if line.startswith("drift: ")]
    first = record["per_query"]["query_ids"][0]
    assert any(f"nDCG@10 query {first}: stored" in line for line in drift)
    assert any("nDCG@10 mean: stored" in line for line in drift) and len(drift) == 2


def test_missing_data_is_skipped_in_one_line(tmp_path, procon_subset):
    empty_home = tmp_path / "ir_datasets"
    empty_home.mkdir()
    suite = write_suite(tmp_path / "two.toml", procon_subset, ["nDCG@10"],
                        extra='\n[[task]]\nid = "lab/gone"\nfolder = "/nonexistent/gone"\nmeasures = ["nDCG@10"]\n'
                              '[task.files]\n"corpus.jsonl" = "' + "0" * 64 + '"\n')
    ran = pairmeasures("benchmark", "run", suite, "--systems", "bm25", "--results", tmp_path / "r", "--tasks",
                       "lab/gone", "--json")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"records_written": 0, "records_skipped": 0, "tasks_skipped": ["lab/gone"]}
    assert [line for line in ran.stderr.splitlines() if "lab/gone" in line] == \
        ["pairmeasures benchmark run: skipped task lab/gone: its data is not here: the folder /nonexistent/gone does "
         "not exist"]
    # MS MARCO offline: ir_datasets' files are not in an empty home, nothing is downloaded, no traceback
    msmarco = pairmeasures("benchmark", "run", "pair-bias-v1", "--systems", "bm25", "--results", tmp_path / "m",
                           "--tasks", "pair/msmarco-passage/dev/gender-qs2", "--json",
                           env={"IR_DATASETS_HOME": str(empty_home)})
    assert msmarco.returncode == 0, msmarco.stderr
    assert json.loads(msmarco.stdout)["tasks_skipped"] == ["pair/msmarco-passage/dev/gender-qs2"]
    assert "Traceback" not in msmarco.stderr and msmarco.stderr.count("\n") == 1
    assert "msmarco-passage/collection.tsv" in msmarco.stderr and "docs/msmarco.md" in msmarco.stderr
    assert not any(empty_home.iterdir())


def test_a_record_of_another_request_is_refused_unless_replace(tmp_path, suite, procon_subset):
    results = tmp_path / "results"
    assert pairmeasures("benchmark", "run", suite, "--systems", "bm25", "--results", results).returncode == 0
    deeper = write_suite(tmp_path / "tiny.toml", procon_subset, measures_of(procon_subset), depth=30)
    refused = pairmeasures("benchmark", "run", deeper, "--systems", "bm25", "--results", results)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "depth" in refused.stderr and str(results / "bm25" / "lab" / "procon4.json") in refused.stderr
    replaced = pairmeasures("benchmark", "run", deeper, "--systems", "bm25", "--results", results, "--json")
    assert replaced.returncode == 2
    replaced = pairmeasures("benchmark", "run", deeper, "--systems", "bm25", "--results", results, "--json",
                            "--replace")
    assert json.loads(replaced.stdout)["records_written"] == 1, replaced.stderr
    kept = list((results / "bm25" / "lab").glob("procon4.replaced-*"))
    assert sorted(p.name.split(".", 2)[-1] for p in kept) == ["json", "run.gz"]


def test_a_changed_run_file_is_another_request(tmp_path, suite, procon_subset):
    queries = [json.loads(line)["_id"] for line in (procon_subset / "queries.jsonl").read_text().splitlines()]
    documents = [json.loads(line)["_id"] for line in (procon_subset / "corpus.jsonl").read_text().splitlines()]
    run_file, results = tmp_path / "mine.trec", tmp_path / "results"
    run_file.write_text("".join(f"{q} Q0 {d} {r} {10.0 - r} mine\n" for q in queries for r, d in enumerate(documents[:3], 1)))
    spec = f"run:{run_file}"
    first = pairmeasures("benchmark", "run", suite, "--systems", spec, "--results", results, "--json")
    assert json.loads(first.stdout)["records_written"] == 1, first.stderr
    again = pairmeasures("benchmark", "run", suite, "--systems", spec, "--results", results, "--json")
    assert json.loads(again.stdout) == {"records_written": 0, "records_skipped": 1, "tasks_skipped": []}
    run_file.write_text(run_file.read_text().replace(" 9.0 ", " 9.25 "))  # the same spec, another run
    changed = pairmeasures("benchmark", "run", suite, "--systems", spec, "--results", results, "--json")
    assert changed.returncode == 2 and "identity" in changed.stderr and "--replace" in changed.stderr


def test_verify_allows_measures_of_model_polarity_the_noise_of_float32_embeddings():
    """A value computed from polarity (the task's embedding model) may move by float32 noise when recomputed from a
    cold cache (5.4e-7 seen on ProCon's Duo@10); every other value must come back to 1e-9, and a changed value is
    drift in both."""
    from pairmeasures.benchmark.verification import MODEL_TOLERANCE, TOLERANCE, _differs, tolerance

    assert tolerance("Duo@10") == MODEL_TOLERANCE == 1e-5 and tolerance("Duo(axes='mean')@5") == MODEL_TOLERANCE
    assert tolerance("nDCG@10") == tolerance("rKL@10") == tolerance("NFaiRR@10") == TOLERANCE == 1e-9
    assert tolerance("Duo(polarity='tsv:scores.tsv')@10") == TOLERANCE  # read from a file, not computed
    assert not _differs(0.4321, 0.4321 + 5.4e-7, tolerance("Duo@10")) and _differs(0.4321, 0.4331, tolerance("Duo@10"))
    assert _differs(0.4321, 0.4321 + 5.4e-7, tolerance("nDCG@10"))


def test_a_runs_folder_is_checked_whole_before_anything_is_written(tmp_path, procon_subset):
    """``--runs FOLDER`` (``<task id>.run``, the id's ``/`` as folders) over a two-task suite: one file ranking a
    document the corpus does not hold refuses the whole submission, naming that file and line, and nothing is
    written; once mended, both records are written."""
    suite = write_suite(tmp_path / "two.toml", procon_subset, ["nDCG@10"])
    pins = suite.read_text().split("[task.files]\n", 1)[1]
    suite.write_text(suite.read_text() + f'\n[[task]]\nid = "lab/procon4b"\nfolder = "{procon_subset}"\n'
                     f'measures = ["nDCG@10"]\n[task.files]\n{pins}')
    queries = [json.loads(line)["_id"] for line in (procon_subset / "queries.jsonl").read_text().splitlines()]
    documents = [json.loads(line)["_id"] for line in (procon_subset / "corpus.jsonl").read_text().splitlines()]
    runs = tmp_path / "runs" / "lab"
    runs.mkdir(parents=True)
    good = "".join(f"{q} Q0 {d} {r} {10.0 - r} lab\n" for q in queries for r, d in enumerate(documents[:5], 1))
    (runs / "procon4.run").write_text(good)
    lines = good.splitlines(keepends=True)
    (runs / "procon4b.trec").write_text("".join(lines[:3]) + f"{queries[0]} Q0 not-a-document 9 0.5 lab\n"
                                        + "".join(lines[3:]))
    results = tmp_path / "results"
    refused = pairmeasures("benchmark", "submit", suite, "--name", "lab-x", "--results", results, "--runs",
                           tmp_path / "runs")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert f"{runs / 'procon4b.trec'}:4: document 'not-a-document' is not a document of task lab/procon4b" \
        in refused.stderr
    assert not results.exists()
    (runs / "procon4b.trec").write_text(good)
    accepted = pairmeasures("benchmark", "submit", suite, "--name", "lab-x", "--results", results, "--runs",
                            tmp_path / "runs", "--json")
    assert accepted.returncode == 0, accepted.stderr
    assert json.loads(accepted.stdout)["records_written"] == 2
    assert sorted(p.name for p in (results / "lab-x" / "lab").glob("*.json")) == ["procon4.json", "procon4b.json"]


def test_run_on_ray_writes_the_records_the_local_engine_writes(tmp_path, procon_subset):
    """``benchmark run --engine ray``: a system that embeds (``bm25>>dense``) goes through a private local Ray on
    127.0.0.1, in a session of its own; its record holds the local engine's values, and nothing of the run is left
    running (its processes, Ray's, its folder)."""
    import shutil
    import time

    pytest.importorskip("ray")
    from ray_survivors import describe, kill, of_the_run, private_tmpdir, ray_folders

    suite = write_suite(tmp_path / "tiny.toml", procon_subset, ["nDCG@10", "P@5"])
    local = pairmeasures("benchmark", "run", suite, "--systems", "bm25>>dense", "--results", tmp_path / "local",
                         env={"PAIRMEASURES_CACHE_DIR": str(tmp_path / "cache-local")})
    assert local.returncode == 0, local.stderr
    temporary, since = private_tmpdir(), time.time()
    environment = {**os.environ, "TQDM_DISABLE": "1", "PAIRMEASURES_CACHE_DIR": str(tmp_path / "cache-ray"),
                   "HF_HUB_OFFLINE": "1", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "TMPDIR": temporary}
    environment.pop("RAY_ADDRESS", None)
    process = subprocess.Popen([sys.executable, "-m", "pairmeasures", "benchmark", "run", str(suite), "--systems",
                                "bm25>>dense", "--results", str(tmp_path / "ray"), "--engine", "ray", "--workers", "1",
                                "--json"], env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=900)
    finally:
        left = of_the_run(process.pid, temporary, since)
        described = [describe(p) for p in left]
        kill(left)
        folders = ray_folders(temporary)
        shutil.rmtree(temporary, ignore_errors=True)
    assert process.returncode == 0, err[-3000:]
    assert not described and not folders, (described, folders)
    assert json.loads(out)["records_written"] == 1
    [local_record] = (tmp_path / "local").rglob("procon4.json")
    [ray_record] = (tmp_path / "ray").rglob("procon4.json")
    first, second = json.loads(local_record.read_text()), json.loads(ray_record.read_text())
    assert second["measures"] == pytest.approx(first["measures"], rel=1e-6) and second["n"] == first["n"]
    assert second["run_sha256"] == first["run_sha256"] or second["measures"] == pytest.approx(first["measures"])
