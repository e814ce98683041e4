"""``pairmeasures audit --engine ray``: the audit's embedding through the Ray pool and ``ce(...)`` over query
partitions with PyTerrier's ``.parallel(N, backend="ray")``, on a private local Ray on 127.0.0.1.

The same audit of the embedded demo corpus runs locally and on Ray, each in a fresh cache: every per-query value and
leaderboard figure must agree, the Ray run must have embedded through the pool and re-ranked on query partitions
(its manifest says so), a warm rerun must not start Ray, and nothing the run started may outlive it: no process of
its session, nor one of any session that has its TMPDIR or names it (Ray's), nor Ray's session folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from ray_survivors import describe, kill, of_the_run, private_tmpdir, ray_folders
from test_neural_stages import save_tiny_cross_encoder

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("ray")
pytest.importorskip("pyterrier_alpha")


def audit(cache: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    """``pairmeasures audit`` in a session of its own with a TMPDIR of its own (where its local Ray's session folder
    goes); when it has returned, no process of the run may be left (:func:`ray_survivors.of_the_run`), nor Ray's
    folder."""
    temporary = private_tmpdir()
    environment = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1",
                   "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "PYTHONPATH": str(ROOT), "TMPDIR": temporary}
    environment.pop("RAY_ADDRESS", None)
    since = time.time()
    process = subprocess.Popen([sys.executable, "-m", "pairmeasures", "audit", "--out", str(out), *args],
                               env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()  # (closes its pipes)
        raise
    finally:
        left = of_the_run(process.pid, temporary, since)
        described = [describe(p) for p in left]
        kill(left)
        folders = ray_folders(temporary)
        shutil.rmtree(temporary, ignore_errors=True)
    assert not described, f"processes outlived the audit: {described}"
    assert not folders, f"the audit's local Ray left its folder: {folders}"
    assert process.returncode == 0, stderr[-4000:]
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.fixture(scope="module")
def audits(tmp_path_factory):
    """The same audit, locally and with --engine ray, each in its own fresh cache."""
    folder = tmp_path_factory.mktemp("audit-ray")
    model = save_tiny_cross_encoder(folder / "tiny-ce")
    queries = folder / "queries.txt"
    from pairmeasures.demo import debates_dir

    ids = [json.loads(line)["_id"] for line in (Path(debates_dir()) / "queries.jsonl").read_text().splitlines()]
    queries.write_text("\n".join(ids[:8]) + "\n")
    common = ["--systems", "bm25", "bm25>>dense", f"bm25>>ce({model})", "dense", "--num-results", "20", "--resamples",
              "200", "--no-tradeoff", "--queries", str(queries)]
    local = audit(folder / "cache-local", folder / "local", *common)
    ray = audit(folder / "cache-ray", folder / "ray", *common, "--engine", "ray", "--workers", "2")
    return {"folder": folder, "common": common, "local": local, "ray": ray}


def test_an_audit_on_ray_gives_the_local_audit_s_numbers(audits):
    folder = audits["folder"]
    local = pd.read_csv(folder / "local" / "per_query.csv", dtype={"qid": str})
    ray = pd.read_csv(folder / "ray" / "per_query.csv", dtype={"qid": str})
    merged = local.merge(ray, on=["system", "qid", "measure"], suffixes=("_local", "_ray"), how="outer")
    assert len(merged) == len(local) == len(ray) > 0
    assert set(merged["measure"]) >= {"nDCG@10", "Duo@10"}
    assert (merged["value_local"] - merged["value_ray"]).abs().max() <= 1e-6
    boards = [json.loads((folder / name / "leaderboard.json").read_text())["systems"] for name in ("local", "ray")]
    assert list(boards[0]) == list(boards[1]) and len(boards[0]) == 4
    for system, means in boards[0].items():
        assert means.keys() == boards[1][system].keys()
        assert all(abs(means[m] - boards[1][system][m]) <= 1e-6 for m in means if means[m] is not None)


def test_the_ray_audit_embedded_through_the_pool_and_reranked_on_query_partitions(audits):
    folder = audits["folder"]
    manifest = json.loads((folder / "ray" / "manifest.json").read_text())
    engine = manifest["engine"]
    assert engine["engine"] == "ray" and engine["started"] is True and engine["workers"] == 2
    # the corpus of the dense index (612 passages), the dense re-ranker's candidates, the polarity of measured rows
    assert engine["texts_embedded"] > 612
    assert engine["stage_runs_over_query_partitions"] >= 1  # ce(...)
    local = json.loads((folder / "local" / "manifest.json").read_text())
    assert local["engine"] == {"engine": "local"}
    # what the pool embedded is what the local audit embedded itself
    assert engine["texts_embedded"] == sum(v["computed"] for v in local["embedded"].values())
    # and the manifest books it as the local one does: the same texts embedded, the time on the embedding clock
    assert sum(v["computed"] for v in manifest["embedded"].values()) == engine["texts_embedded"]
    assert manifest["timings_s"]["embedding"] > 0.5 * manifest["timings_s"]["total"]  # Ray's start and the pool
    assert not list((folder / "cache-ray" / "shards").rglob("run-*")), "the audit's own shard folder was left"


def test_a_warm_audit_on_ray_starts_no_ray(audits):
    folder = audits["folder"]
    audit(folder / "cache-ray", folder / "ray", *audits["common"], "--engine", "ray", "--force")
    engine = json.loads((folder / "ray" / "manifest.json").read_text())["engine"]
    assert engine["started"] is False and engine["texts_embedded"] == 0


def test_ray_options_without_the_ray_engine_are_one_line_errors(tmp_path):
    environment = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pairmeasures", "audit", "--out", str(tmp_path / "out"),
                           "--address", "auto"], env=environment, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "--address applies to --engine ray" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()
