"""``pairmeasures audit`` driven as a user does: the command as a subprocess on real folders and files."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]

DOCS = {  # query -> (doc, label, text)
    "q1": [("a1", "pro", "Solar power is cheap and clean energy for everyone."),
           ("a2", "con", "Solar panels fail in cloudy winters and cost too much."),
           ("a3", "pro", "Sunlight is free, so solar energy saves money."),
           ("a4", "con", "Solar farms destroy habitats and need rare metals.")],
    "q2": [("b1", "pro", "School uniforms reduce bullying about clothes."),
           ("b2", "con", "Uniforms limit the self-expression of pupils."),
           ("b3", "pro", "Uniforms make mornings simpler for families."),
           ("b4", "con", "Uniforms are expensive for poor families.")],
    "q3": [("c1", "pro", "Homework builds discipline."), ("c2", "con", "Homework steals time for play."),
           ("c3", "pro", "Homework helps pupils revise lessons."), ("c4", "con", "Homework widens gaps between families.")],
}
QUERIES = {"q1": ("Solar energy is worth it", "energy"), "q2": ("Schools should require uniforms", "school"),
           "q3": ("Homework should be banned", "school")}


def audit(*args: str, cache: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pairmeasures", "audit", *args], capture_output=True, text=True,
                          timeout=600, env=env)
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def folder(tmp_path) -> Path:
    """A tiny BEIR folder with pro/con labels and a query field ``theme``."""
    root = tmp_path / "debates"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n"
                                               for docs in DOCS.values() for d, _, t in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t, "theme": theme}) + "\n"
                                                for q, (t, theme) in QUERIES.items()))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{1 if i % 2 == 0 else 0}\n" for q, docs in DOCS.items() for i, (d, _, _) in enumerate(docs)))
    (root / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, docs in DOCS.items() for d, g, _ in docs))
    return root


def write_run(path: Path, order: dict) -> Path:
    """A TREC run file: ``order`` maps each query to its ranked documents."""
    path.write_text("".join(f"{q} Q0 {d} {r} {10 - r} test\n" for q, docs in order.items() for r, d in enumerate(docs)))
    return path


@pytest.fixture
def runs(tmp_path) -> tuple[Path, Path]:
    """Two run files; q3's second system ranks one document only (rKL has one group there: excluded)."""
    clustered = write_run(tmp_path / "clustered.run", {"q1": ["a1", "a3", "a2", "a4"], "q2": ["b1", "b3", "b2", "b4"],
                                                       "q3": ["c1", "c3", "c2", "c4"]})
    mixed = write_run(tmp_path / "mixed.run", {"q1": ["a1", "a2", "a3", "a4"], "q2": ["b2", "b1", "b4", "b3"],
                                               "q3": ["c2"]})
    return clustered, mixed


def test_leaderboard_schema_per_query_and_excluded(folder, runs, tmp_path):
    out = tmp_path / "audit"
    clustered, mixed = runs
    done = audit("--dataset", str(folder), "--systems", f"run:{clustered}", f"run:{mixed}", "--names", "clustered",
                 "mixed", "--measures", "nDCG@10", "rKL@10", "--resamples", "200", "--out", str(out), cache=tmp_path / "c")
    assert "rKL@10 ↓" in done.stdout and "report.html" in done.stdout
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["dataset"] == "../debates" and set(board["systems"]) == {"clustered", "mixed"}  # relative to --out
    assert set(board["systems"]["mixed"]) == {"nDCG@10", "rKL@10"}
    assert board["measures"]["rKL@10"]["direction"] == "lower-fairer"
    assert board["measures"]["rKL@10"]["measured"] == {"clustered": 3, "mixed": 2}
    assert board["measures"]["rKL@10"]["excluded"] == {"clustered": 0, "mixed": 1}
    per_query = pd.read_csv(out / "per_query.csv", dtype={"qid": str})
    assert list(per_query.columns) == ["system", "qid", "measure", "value"]
    assert not per_query["value"].isna().any()
    assert not ((per_query.system == "mixed") & (per_query.qid == "q3") & (per_query.measure == "rKL@10")).any()
    means = per_query.groupby(["system", "measure"])["value"].mean()
    for system, values in board["systems"].items():
        for measure, value in values.items():
            assert value == pytest.approx(means[(system, measure)])
    summary = pd.read_csv(out / "summary.csv")
    row = summary[(summary.system == "mixed") & (summary.measure == "rKL@10")].iloc[0]
    assert row["n"] == 2 and row["excluded"] == 1 and row["low"] <= row["mean"] <= row["high"]
    assert row["direction"] == "lower-fairer" and 0 <= row["p_value"] <= 1
    assert board["baseline"] == "clustered" and pd.isna(summary[summary.system == "clustered"]["diff"]).all()
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["dataset"]["files_sha256"]) == {"corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "labels.tsv"}
    for name, path in (("clustered", clustered), ("mixed", mixed)):  # every input file by its sha256, run files too
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert manifest["systems"][name]["files_sha256"] == {str(path): digest}
        assert manifest["systems"][name]["identity"] == f"run:{digest}"
    assert manifest["measures"]["rKL@10"]["evaluated"] == "rKL@10"  # the string shown, with the library's defaults
    assert board["measures"]["rKL@10"]["evaluated"] == "rKL@10"
    # the systems measured different queries: the leaderboard compares them on the two both measured too
    assert "rKL@10 ↓ on 2 common queries" in (out / "leaderboard.md").read_text() and "on 2" in done.stdout
    common = summary[summary.measure == "rKL@10"].set_index("system")
    both = per_query[(per_query.measure == "rKL@10") & (per_query.qid != "q3")].groupby("system")["value"].mean()
    assert list(common["common_n"]) == [2, 2]
    assert common["common_mean"].to_dict() == pytest.approx(both.to_dict())
    assert "nDCG@10 ↑ on" not in (out / "leaderboard.md").read_text()  # every system has every query's nDCG@10
    assert manifest["cache"]["hits"] == 0 and manifest["cache"]["misses"] == 2
    assert set(manifest["cache"]["evaluations"].values()) == {"miss"}
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "http://" not in html and "https://" not in html
    assert all(p.stat().st_size > 2000 for p in out.glob("*.png")) and len(list(out.glob("*.png"))) >= 2


def test_queries_file_audits_those_queries_only(folder, runs, tmp_path):
    """--queries FILE (e.g. a training run's held-out split): the leaderboard, per-query values and counts cover
    the listed queries only, and equal the full audit's values on them."""
    clustered, mixed = runs
    (tmp_path / "held.txt").write_text("# held out\nq2\nq3  # two of three\n")
    args = ["--dataset", str(folder), "--systems", f"run:{clustered}", f"run:{mixed}", "--names", "clustered",
            "mixed", "--measures", "nDCG@10", "rKL@10", "--resamples", "200", "--no-tradeoff"]
    audit(*args, "--out", str(tmp_path / "all"), cache=tmp_path / "c")
    audit(*args, "--queries", str(tmp_path / "held.txt"), "--out", str(tmp_path / "held"), cache=tmp_path / "c")
    every = pd.read_csv(tmp_path / "all" / "per_query.csv", dtype={"qid": str})
    held = pd.read_csv(tmp_path / "held" / "per_query.csv", dtype={"qid": str})
    assert set(held["qid"]) == {"q2", "q3"}
    pd.testing.assert_frame_equal(held.reset_index(drop=True),
                                  every[every["qid"].isin(["q2", "q3"])].reset_index(drop=True))
    board = json.loads((tmp_path / "held" / "leaderboard.json").read_text())
    assert board["measures"]["rKL@10"]["measured"] == {"clustered": 2, "mixed": 1}
    assert board["systems"]["clustered"]["nDCG@10"] == pytest.approx(
        every[(every.system == "clustered") & (every.measure == "nDCG@10") & every.qid.isin(["q2", "q3"])]["value"].mean())


def test_cache_warm_rerun_and_what_invalidates(folder, runs, tmp_path):
    cache, clustered = tmp_path / "c", runs[0]
    args = ["--dataset", str(folder), "--systems", f"run:{clustered}", "--measures", "nDCG@10", "rKL@10",
            "--resamples", "200", "--force"]

    def hits():
        return json.loads((tmp_path / "out" / "manifest.json").read_text())["cache"]

    audit(*args, "--out", str(tmp_path / "out"), cache=cache)
    assert hits()["misses"] == 1
    before = (tmp_path / "out" / "per_query.csv").read_text()
    audit(*args, "--out", str(tmp_path / "out"), cache=cache)
    assert hits()["hits"] == 1 and hits()["misses"] == 0
    assert set(hits()["evaluations"].values()) == {"hit"} and (tmp_path / "out" / "per_query.csv").read_text() == before
    qrels = folder / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text().replace("q1\ta1\t1", "q1\ta1\t0"))  # evaluation changes, the run does not
    audit(*args, "--out", str(tmp_path / "out"), cache=cache)
    assert hits()["hits"] == 1 and hits()["evaluations"]["evaluate"] == "miss"
    assert (tmp_path / "out" / "per_query.csv").read_text() != before
    corpus = folder / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace("cheap", "affordable"))
    audit(*args, "--out", str(tmp_path / "out"), cache=cache)
    assert hits()["misses"] == 1


@pytest.mark.parametrize("problem, args, message", [
    ("bad spec", ["--systems", "bm25>>"], "empty stage"),
    ("unknown stage", ["--systems", "bm25>>frobnicate(1)"], "unknown stage"),
    ("unknown dataset", ["--dataset", "pair/nonexistent"], "known datasets"),
    ("misspelt dataset", ["--dataset", "pair/procn"], "did you mean 'pair/procon'?"),
    ("missing run file", ["--systems", "run:/nonexistent.run"], "does not exist"),
    ("bad baseline", ["--baseline", "nobody"], "--baseline"),
    ("bad by", ["--by", "colour"], "no query field 'colour'"),
    ("unknown query id", ["--queries", "QUERIES:q1\nq9\n"], "1 query ids are not queries of"),
    ("no query id", ["--queries", "QUERIES:# none\n"], "lists no query id"),
    ("no queries file", ["--queries", "/no/such/ids.txt"], "query id file '/no/such/ids.txt' does not exist"),
])
def test_errors_leave_no_folder(folder, runs, tmp_path, problem, args, message):
    out = tmp_path / "audit"
    base = {"--dataset": str(folder), "--systems": f"run:{runs[0]}"}
    for flag, value in zip(args[::2], args[1::2]):
        if value.startswith("QUERIES:"):
            (tmp_path / "ids.txt").write_text(value.removeprefix("QUERIES:"))
            value = str(tmp_path / "ids.txt")
        base[flag] = value
    done = audit(*[x for pair in base.items() for x in pair], *args[2:], "--measures", "nDCG@10", "--out", str(out),
                 cache=tmp_path / "c", check=False)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".audit")]


def test_unreadable_run_file_and_foreign_folder(folder, tmp_path):
    bad = tmp_path / "bad.run"
    bad.write_text("q1 Q0 a1 0 not-a-score test\n")
    out = tmp_path / "audit"
    done = audit("--dataset", str(folder), "--systems", f"run:{bad}", "--out", str(out), cache=tmp_path / "c", check=False)
    assert done.returncode == 2 and "bad.run" in done.stderr and not out.exists()
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    done = audit("--dataset", str(folder), "--systems", f"run:{bad}", "--out", str(out), "--force", cache=tmp_path / "c",
                 check=False)
    assert done.returncode == 2 and "is not an audit written by pairmeasures audit" in done.stderr and (out / "mine.txt").read_text() == "keep"


def test_by_baseline_formats(folder, runs, tmp_path):
    clustered, mixed = runs
    out = tmp_path / "audit"
    done = audit("--dataset", str(folder), "--systems", f"run:{clustered}", f"run:{mixed}", "--names", "c", "m",
                 "--baseline", "m", "--by", "theme", "--min-cell", "2", "--measures", "nDCG@10", "rKL@10",
                 "--resamples", "200", "--format", "json", "--out", str(out), cache=tmp_path / "c")
    rows = json.loads(done.stdout)
    assert [r["system"] for r in rows] == ["c", "m"] and "rKL@10 ↓" in rows[0]
    assert "SmallCellWarning" in done.stderr
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["baseline"] == "m" and board["by"]["field"] == "theme"
    cells = pd.read_csv(out / "by_theme.csv")
    school = cells[(cells.value == "school") & (cells.system == "c") & (cells.measure == "rKL@10")].iloc[0]
    assert school["n"] == 2
    summary = pd.read_csv(out / "summary.csv")
    assert summary[summary.system == "m"]["diff"].isna().all() and summary[summary.system == "c"]["diff"].notna().all()
    assert list(out.glob("by_theme_*.png"))
    done = audit("--dataset", str(folder), "--systems", f"run:{clustered}", "--measures", "nDCG@10", "--format", "csv",
                 "--out", str(tmp_path / "csv"), "--resamples", "200", cache=tmp_path / "c")
    assert done.stdout.splitlines()[0] == "system,nDCG@10 ↑"


def test_procon_pipelines_with_duo(procon_subset, tmp_path):
    """BM25, BM25 >> dense and >> DuoGreedy on four ProCon debates: the demo audit's systems."""
    out = tmp_path / "audit"
    done = audit("--dataset", str(procon_subset), "--systems", "bm25", "bm25>>dense>>duogreedy(0.0)",
                 "--resamples", "200", "--out", str(out), cache=tmp_path / "c")
    assert "Duo@10 ↓" in done.stdout
    board = json.loads((out / "leaderboard.json").read_text())
    assert set(board["systems"]["bm25"]) == {"nDCG@1", "nDCG@10", "R@100", "Duo@10", "rND@10", "rKL@10", "rRD@10",
                                              "EXP@10", "NDKL@10", "ARP@10"}
    assert board["systems"]["bm25>>dense>>duogreedy(0.0)"]["Duo@10"] < board["systems"]["bm25"]["Duo@10"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert "labelled documents" in manifest["side_columns"]["polarity"] and manifest["embedding_model"]["key"]


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory) -> Path:
    """One cache folder for the tests that embed the demo corpus, so it is embedded once per session."""
    return tmp_path_factory.mktemp("pmcache")


def test_demo_audit_default_systems_tradeoff_and_warm_rerun(shared_cache, tmp_path):
    """``pairmeasures audit --out DIR``: the embedded demo corpus, bm25, bm25>>dense, bm25>>dense>>duogreedy(0.5)."""
    out = tmp_path / "demo"
    done = audit("--out", str(out), cache=shared_cache)
    assert "[info]" not in done.stdout + done.stderr and "Loading weights" not in done.stderr
    board = json.loads((out / "leaderboard.json").read_text())
    assert list(board["systems"]) == ["bm25", "bm25>>dense", "bm25>>dense>>duogreedy(0.5)"]
    trade = board["tradeoff"]
    assert trade["relevance"] == "nDCG@10" and trade["bias"] == "Duo@10"
    system = trade["systems"]["bm25>>dense>>duogreedy(0.5)"]
    assert system["base"] == "bm25>>dense" and system["k"] == 10
    assert set(system["equal_cost"]) == {"0.01", "0.02", "0.05"}
    for point in system["equal_cost"].values():
        assert set(point) == {"DuoGreedy", "MMR"}
    curve = pd.read_csv(out / "tradeoff.csv")
    assert sorted(curve["Lambda"].unique()) == [0, .1, .25, .5, .75, .9, 1] and set(curve["method"]) == {"DuoGreedy", "MMR"}
    at = curve.set_index(["method", "Lambda"])
    # Lambda = 1 keeps the base order (both methods); DuoGreedy at 0.5 is the audited system itself
    assert at.loc[("DuoGreedy", 1.0), "relevance"] == pytest.approx(board["systems"]["bm25>>dense"]["nDCG@10"])
    assert at.loc[("MMR", 1.0), "bias"] == pytest.approx(at.loc[("DuoGreedy", 1.0), "bias"])
    assert at.loc[("DuoGreedy", 0.5), "bias"] == pytest.approx(board["systems"]["bm25>>dense>>duogreedy(0.5)"]["Duo@10"])
    assert at.loc[("DuoGreedy", 0.0), "bias"] < at.loc[("DuoGreedy", 1.0), "bias"]
    pngs = {p.name for p in out.glob("*.png")}
    assert {"tradeoff.png", "bias_by_cutoff.png", "relevance_vs_bias.png"} <= pngs  # one figure for every bias measure
    assert all((out / name).read_bytes().startswith(b"\x89PNG") for name in pngs)
    html = (out / "report.html").read_text()
    assert "DuoGreedy vs MMR" in html and html.count("data:image/png;base64,") == len(pngs)
    manifest = json.loads((out / "manifest.json").read_text())
    timings = manifest["timings_s"]
    assert 0 <= timings["embedding"] <= timings["total"] and timings["total"] > 0
    assert manifest["tradeoff"]["systems"]["bm25>>dense>>duogreedy(0.5)"]["base_run"] == "bm25>>dense"

    done = audit("--out", str(out), "--force", cache=shared_cache)  # warm: everything from the caches
    again = json.loads((out / "manifest.json").read_text())
    assert again["cache"]["misses"] == 0 and set(again["cache"]["evaluations"].values()) == {"hit"}
    assert again["timings_s"]["embedding"] == 0
    assert json.loads((out / "leaderboard.json").read_text()) == board


def test_module_attr_system_and_no_tradeoff(folder, runs, tmp_path):
    """A user's pt.Transformer named module:attr: run each time (not cached), evaluated like any system."""
    package = tmp_path / "mine"
    package.mkdir()
    (package / "mysystems.py").write_text(
        "import pandas as pd, pyterrier as pt\n"
        f"RUN = pd.read_csv({str(runs[1])!r}, sep=' ', names=['qid', 'Q0', 'docno', 'rank', 'score', 'tag'], dtype=str)\n"
        "RUN['score'] = RUN['score'].astype(float)\n"
        "def build():\n"
        "    return pt.Transformer.from_df(RUN[['qid', 'docno', 'score']], uniform=False)\n")
    out = tmp_path / "audit"
    env_path = f"{package}{os.pathsep}{ROOT}"
    done = subprocess.run([sys.executable, "-m", "pairmeasures", "audit", "--dataset", str(folder), "--systems",
                           f"run:{runs[1]}", "mysystems:build", "--names", "file", "mine", "--measures", "nDCG@10",
                           "rKL@10", "--resamples", "200", "--no-tradeoff", "--out", str(out)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PAIRMEASURES_CACHE_DIR": str(tmp_path / "c"), "PYTHONPATH": env_path})
    assert done.returncode == 0, done.stderr
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["systems"]["mine"] == pytest.approx(board["systems"]["file"]) and board["tradeoff"] is None
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["cache"]["systems"]["mine"]["hit"] is False
    assert manifest["cache"]["evaluations"]["evaluate"].startswith("not cached")
    assert not (out / "tradeoff.csv").exists()


def test_gendered_dataset_gets_delta_a_prf_next_to_the_measures(tmp_path):
    """Gold labels male and female: the leaderboard has IBBR's ΔA-PRF per system, signed, next to the interval of the
    signed value (docs/ibbr.md); leaderboard.json keeps the absolute value too."""
    root = tmp_path / "gendered"
    (root / "qrels").mkdir(parents=True)
    docs = {"q1": [("m1", "male", 1), ("f1", "female", 1), ("n1", "neutral", 0), ("n2", "neutral", 0)],
            "q2": [("m2", "male", 1), ("f2", "female", 1), ("n3", "neutral", 0), ("n4", "neutral", 0)]}
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": f"passage {d}"}) + "\n"
                                               for items in docs.values() for d, _, _ in items))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": f"query {q}"}) + "\n" for q in docs))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{r}\n" for q, items in docs.items() for d, _, r in items))
    (root / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, items in docs.items() for d, g, _ in items))
    # q1: m1 beats n1 and n2 (PRF_m 1), f1 beats n2 only (PRF_f 1/2); q2: both beat both. ΔA-PRF = 1 - 3/4.
    uneven = write_run(tmp_path / "uneven.run", {"q1": ["m1", "n1", "f1", "n2"], "q2": ["f2", "m2", "n3", "n4"]})
    even = write_run(tmp_path / "even.run", {"q1": ["f1", "m1", "n1", "n2"], "q2": ["m2", "f2", "n3", "n4"]})
    out = tmp_path / "audit"
    done = audit("--dataset", str(root), "--systems", f"run:{uneven}", f"run:{even}", "--names", "uneven", "even",
                 "--measures", "nDCG@10", "--resamples", "100", "--no-tradeoff", "--out", str(out), cache=tmp_path / "c")
    assert "ΔA-PRF" in done.stdout
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["delta_a_prf"]["uneven"]["absolute"] == pytest.approx(0.25)
    assert board["delta_a_prf"]["uneven"]["means"] == {"male": 1.0, "female": 0.75}
    assert board["delta_a_prf"]["even"]["absolute"] == 0.0 and board["delta_a_prf"]["even"]["counts"] == {"male": 2, "female": 2}
    # The signed value's bootstrap interval over queries (100 resamples of 2 queries), in the JSON and the table.
    low, high = board["delta_a_prf"]["uneven"]["interval"]
    assert 0.0 <= low <= 0.25 <= high <= 0.5
    table = (out / "leaderboard.md").read_text()  # the whole table: the interval too
    assert "ΔA-PRF 95% CI" in table and f"[{low:+.4f}, {high:+.4f}]" in table
    assert "| ΔA-PRF ↕ |" in table and "|ΔA-PRF|" not in table
    row = next(line for line in table.splitlines() if line.startswith("| uneven "))
    assert "| 0.2500 |" in row and f"[{low:+.4f}, {high:+.4f}]" in row  # the signed value beside its interval
    printed = next(line for line in done.stdout.splitlines() if line.startswith("uneven "))
    assert "ΔA-PRF ↕" in done.stdout and printed.endswith(" 0.2500")  # printed: the value, the interval in the file
    assert board["delta_a_prf"]["uneven"]["value"] == pytest.approx(0.25)


def test_every_stage_that_reads_polarity_gets_the_audits_polarity_model(folder, runs, tmp_path):
    """``least`` reorders by polarity: with nDCG@10 alone (no polarity measure) it still gets the axes fitted on the
    labelled documents, as duogreedy does, and orders exactly as it does when Duo@10 is measured too."""
    boards = {}
    for measures in (["nDCG@10"], ["nDCG@10", "Duo@10"]):
        out = tmp_path / f"audit-{len(measures)}"
        audit("--dataset", str(folder), "--systems", f"run:{runs[0]}>>least", "--names", "least", "--measures",
              *measures, "--resamples", "100", "--out", str(out), cache=tmp_path / "c")
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["side_columns"]["polarity"].startswith("per-query axis fitted on the labelled documents")
        assert manifest["embedding_model"] is not None
        boards[len(measures)] = pd.read_csv(out / "per_query.csv")
    nDCG = {n: b[b["measure"] == "nDCG@10"].reset_index(drop=True) for n, b in boards.items()}
    pd.testing.assert_frame_equal(nDCG[1], nDCG[2])


TOY_STAGE = '''
import pairmeasures as pm
from pairmeasures.pipelines.stages import StageType


def build(stage, context, position):
    import pyterrier as pt

    def reverse(frame):
        frame = frame.sort_values(["qid", "rank"], ascending=[True, False]).reset_index(drop=True)
        frame["score"] = frame["rank"].astype(float)
        return pt.model.add_ranks(frame.drop(columns=["rank"]))

    return pt.apply.generic(reverse)


REVERSE = StageType("reverse", "reverse", "each query's ranking upside down (a toy stage)", "bm25>>reverse", build,
                    needs={"text"})


@pm.hookimpl
def pairmeasures_stages():
    return [REVERSE]
'''


def test_a_plugin_stage_runs_through_the_audit(folder, runs, tmp_path):
    """A stage is one module (its StageType) plus one registration (here the plugin hook and entry point); the audit
    lists it in --help, parses it in specs and runs it like a built-in stage."""
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "toy_stage.py").write_text(TOY_STAGE)
    info = plugin / "toy_stage-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy_stage\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[pairmeasures]\ntoy = toy_stage\n")
    env = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(tmp_path / "c"), "PYTHONPATH": f"{plugin}{os.pathsep}{ROOT}"}
    shown = subprocess.run([sys.executable, "-m", "pairmeasures", "audit", "--help"], capture_output=True, text=True,
                           timeout=300, env=env)
    assert "each query's ranking upside down (a toy stage), e.g. bm25>>reverse" in shown.stdout
    order = {"q1": ["a1", "a3", "a2", "a4"], "q2": ["b1", "b3", "b2", "b4"], "q3": ["c1", "c3", "c2", "c4"]}
    reversed_file = write_run(tmp_path / "reversed.run", {q: docs[::-1] for q, docs in order.items()})
    out = tmp_path / "audit"
    done = subprocess.run([sys.executable, "-m", "pairmeasures", "audit", "--dataset", str(folder), "--systems",
                           f"run:{runs[0]}>>reverse", f"run:{reversed_file}", "--names", "toy", "file", "--measures",
                           "nDCG@10", "rKL@10", "--resamples", "100", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["systems"]["toy"] == pytest.approx(board["systems"]["file"])
    assert board["systems"]["toy"]["nDCG@10"] < 1.0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["systems"]["toy"]["canonical"] == f"run:{runs[0]}>>reverse"
    bad = subprocess.run([sys.executable, "-m", "pairmeasures", "audit", "--dataset", str(folder), "--systems",
                          "reverse", "--out", str(tmp_path / "bad")], capture_output=True, text=True, timeout=300,
                         env=env)
    assert bad.returncode == 2 and "'reverse' re-ranks, so it needs a first stage that retrieves" in bad.stderr


def test_a_damaged_cache_file_is_said_and_computed_again(folder, runs, tmp_path):
    """A truncated run pickle and a garbage evaluation pickle: one line each on stderr, the audit recomputes them
    and its leaderboard is the one of the first run."""
    args = ("--dataset", str(folder), "--systems", f"run:{runs[0]}", f"run:{runs[1]}", "--measures", "nDCG@10",
            "rKL@10", "--resamples", "100", "--no-tradeoff")
    audit(*args, "--out", str(tmp_path / "first"), cache=tmp_path / "c")
    damaged = sorted((tmp_path / "c" / "runs").glob("*.pkl"))[:1] + sorted((tmp_path / "c" / "evaluations").glob("evaluate-*.pkl"))
    assert len(damaged) == 2
    damaged[0].write_bytes(damaged[0].read_bytes()[:20])
    damaged[1].write_bytes(b"not a pickle at all")
    done = audit(*args, "--out", str(tmp_path / "second"), cache=tmp_path / "c")
    said = [line for line in done.stderr.splitlines() if "CacheWarning" in line]
    assert len(said) == 2 and all("could not be read" in line and "computed again" in line for line in said), done.stderr
    assert json.loads((tmp_path / "second" / "leaderboard.json").read_text())["systems"] == \
        json.loads((tmp_path / "first" / "leaderboard.json").read_text())["systems"]
    manifest = json.loads((tmp_path / "second" / "manifest.json").read_text())
    assert manifest["cache"]["evaluations"]["evaluate"] == "miss" and manifest["cache"]["hits"] == 1


def test_the_order_a_system_showed_is_the_order_measured(folder, tmp_path):
    """A run whose scores tie: the audit measures the order of the file (the system's), exactly as it measures the
    same order given with distinct scores, and counts the queries whose top k hold ties."""
    order = {"q1": ["a1", "a3", "a2", "a4"], "q2": ["b2", "b1", "b4", "b3"], "q3": ["c1", "c2", "c3", "c4"]}
    tied = tmp_path / "tied.run"
    tied.write_text("".join(f"{q} Q0 {d} {r} {1.0 if q != 'q3' else 4 - r} tied\n"
                            for q, docs in order.items() for r, d in enumerate(docs)))
    distinct = write_run(tmp_path / "distinct.run", order)
    out = tmp_path / "audit"
    audit("--dataset", str(folder), "--systems", f"run:{tied}", f"run:{distinct}", "--names", "tied", "distinct",
          "--measures", "Duo@4", "rKL@4", "NDKL@4", "--resamples", "100", "--no-tradeoff", "--out", str(out),
          cache=tmp_path / "c")
    values = pd.read_csv(out / "per_query.csv").pivot_table(index=["measure", "qid"], columns="system", values="value")
    pd.testing.assert_series_equal(values["tied"], values["distinct"], check_names=False)
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["ties"] == {"tied": {"k": 4, "queries": 3, "with_ties": 2},
                             "distinct": {"k": 4, "queries": 3, "with_ties": 0}}
    assert [m["evaluated"] for m in board["measures"].values()] == ["Duo@4", "rKL@4", "NDKL@4"]  # ties='system': the default
    assert "top 4 (or across the cut at 4): tied 2 of 3; distinct 0 of 3 queries" in (out / "report.html").read_text()
    # trec_eval's order (by document id, descending) measures another ranking for the tied queries
    trec = tmp_path / "trec"
    audit("--dataset", str(folder), "--systems", f"run:{tied}", "--measures", "rKL(ties='trec_eval')@4",
          "--resamples", "100", "--no-tradeoff", "--out", str(trec), cache=tmp_path / "c")
    by_id = pd.read_csv(trec / "per_query.csv").set_index("qid")["value"]
    assert by_id["q1"] != values.loc[("rKL@4", "q1"), "tied"]


def test_run_files_of_other_queries_are_an_error_and_some_foreign_queries_are_counted(folder, runs, tmp_path):
    """A run file of another dataset's query ids was accepted silently (a KeyError traceback when none matched,
    every query scored as an empty ranking when some did), while unknown document ids were an error."""
    clustered = runs[0]
    foreign = write_run(tmp_path / "foreign.run", {"x1": ["a1", "a2"], "x2": ["b1", "b2"]})
    args = ["--dataset", str(folder), "--measures", "nDCG@10", "rKL@10", "--resamples", "100", "--no-tradeoff"]
    done = audit(*args, "--systems", f"run:{foreign}", "--out", str(tmp_path / "out"), cache=tmp_path / "c", check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr and not (tmp_path / "out").exists()
    assert f"system 'run:{foreign}' ({foreign}): none of its 2 query ids is a query of {folder} (e.g. 'x1', 'x2'; the " \
           "dataset's: 'q1', 'q2', 'q3')" in done.stderr
    part = write_run(tmp_path / "part.run", {"q1": ["a1", "a3", "a2", "a4"], "x1": ["a1"], "x2": ["b1"]})
    done = audit(*args, "--systems", f"run:{clustered}", f"run:{part}", "--names", "full", "part", "--out",
                 str(tmp_path / "out"), cache=tmp_path / "c")
    said = [line for line in done.stderr.splitlines() if "InputWarning" in line]
    assert [line[line.index("pairmeasures audit"):] for line in said] == [
        f"pairmeasures audit: InputWarning: system 'part' (run:{part}, file {part}): 2 of its 3 query ids are not "
        f"queries of {folder} (e.g. 'x1', 'x2'); their results are left out",
        "pairmeasures audit: InputWarning: system 'part' has no results for 2 of the 3 queries audited (e.g. 'q2', "
        "'q3'); they count as empty rankings: 0 for relevance measures, excluded from bias measures"]
    board = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    assert board["measures"]["rKL@10"]["measured"] == {"full": 3, "part": 1}
    held = tmp_path / "held.txt"
    held.write_text("q3\n")
    done = audit(*args, "--systems", f"run:{part}", "--queries", str(held), "--out", str(tmp_path / "held"),
                 cache=tmp_path / "c", check=False)
    assert done.returncode == 2 and "it has no results for any of the 1 queries audited (e.g. 'q3')" in done.stderr


def test_an_empty_run_file_is_an_error_before_any_long_work(folder, runs, tmp_path):
    """It was a KeyError traceback after the whole audit had run (25 s on a real dataset)."""
    empty = tmp_path / "empty.run"
    empty.write_text("")
    done = audit("--dataset", str(folder), "--systems", f"run:{runs[0]}", f"run:{empty}", "--measures", "nDCG@10",
                 "--out", str(tmp_path / "out"), cache=tmp_path / "c", check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr and not (tmp_path / "out").exists()
    assert f"system 'run:{empty}': stage 'run:{empty}': {empty}: holds no results" in done.stderr
    assert "systems:" not in done.stderr and not (tmp_path / "c" / "runs").exists()  # nothing was run


def test_unknown_documents_name_the_system_and_its_file(folder, runs, tmp_path):
    """With two run: systems the error named neither file, and came after running them."""
    stray = write_run(tmp_path / "stray.run", {"q1": ["a1", "zz9", "a2"], "q2": ["b1"]})
    done = audit("--dataset", str(folder), "--systems", f"run:{runs[0]}", f"run:{stray}", "--names", "good", "stray",
                 "--measures", "nDCG@10", "--out", str(tmp_path / "out"), cache=tmp_path / "c", check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"pairmeasures audit: error: system 'stray' (run:{stray}, file {stray}): it ranks 1 documents that are not " \
           f"in {folder}, e.g. 'zz9': run files must rank this dataset's documents" in done.stderr
    assert not (tmp_path / "c" / "runs").exists()


def test_a_cache_folder_that_cannot_be_written_is_one_line_naming_it_and_the_variable(folder, runs, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    args = ("--dataset", str(folder), "--systems", f"run:{runs[0]}", "--measures", "nDCG@10", "--out", str(tmp_path / "out"))
    done = audit(*args, cache=blocker / "cache", check=False)
    assert done.returncode == 2 and not (tmp_path / "out").exists()
    assert done.stderr.strip() == (f"pairmeasures audit: error: cache folder '{blocker}/cache' is not writable (Not a "
                                   "directory): set PAIRMEASURES_CACHE_DIR to a writable folder")


def test_a_read_only_cache_folder_is_one_line_naming_it_and_the_variable(folder, runs, tmp_path):
    args = ("--dataset", str(folder), "--systems", f"run:{runs[0]}", "--measures", "nDCG@10", "--out", str(tmp_path / "out"))
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("this user writes into read-only folders (root): the test above, a folder under a file, "
                        "stands for it")
        done = audit(*args, cache=locked, check=False)
        assert done.returncode == 2 and done.stderr.strip() == (
            f"pairmeasures audit: error: cache folder '{locked}' is not writable (Permission denied): set "
            "PAIRMEASURES_CACHE_DIR to a writable folder")
    finally:
        locked.chmod(0o700)


def test_the_leaderboard_compares_systems_that_measured_different_queries_on_the_common_ones():
    """Equal counts need not be the same queries: a measured q1 and q2, b q2 and q3; both get their mean over the
    query both measured (q2) beside their own means. Where every system measured the same queries, no such column."""
    import warnings

    from pairmeasures.analysis import BootstrapWarning, summarize
    from pairmeasures.audit.evaluation import leaderboard_table

    frame = pd.DataFrame({"system": ["a", "a", "b", "b", "a", "a", "b", "b"],
                          "qid": ["q1", "q2", "q2", "q3", "q1", "q2", "q1", "q2"],
                          "measure": ["rKL@10"] * 4 + ["Duo@10"] * 4, "value": [0.1, 0.3, 0.5, 0.9, 0.2, 0.4, 0.6, 0.8]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BootstrapWarning)
        summary = summarize(frame, resamples=50)
    table = leaderboard_table(summary, {"rKL@10": None, "Duo@10": None},
                              {"rKL@10": "lower-fairer", "Duo@10": "lower-fairer"}).set_index("system")
    assert table["rKL@10 ↓"].to_dict() == pytest.approx({"a": 0.2, "b": 0.7})  # what eval gives for each run
    assert table["rKL@10 n"].to_dict() == {"a": 2, "b": 2}
    assert table["rKL@10 ↓ on 1 common query"].to_dict() == pytest.approx({"a": 0.3, "b": 0.5})
    assert not [c for c in table.columns if c.startswith("Duo@10") and "common" in c]


def test_systems_sharing_a_prefix_run_its_steps_once():
    """run_steps: bm25>>dense>>mmr(0.5) after bm25>>dense starts from what bm25>>dense's steps gave (one retrieval,
    one dense re-ranking for both), with the same result as running every step; a step that changes its input in
    place changes its own copy only."""
    import pandas as pd

    from pairmeasures.audit.runs import run_steps
    from pairmeasures.pipelines.specs import System

    calls: list = []

    class Step:
        def __init__(self, name):
            self.name = name

        def transform(self, frame):
            calls.append(self.name)
            frame["trail"] = frame["trail"] + self.name  # in place, on purpose
            return frame

    topics = pd.DataFrame({"qid": ["1"], "trail": [""]})
    short, long = System.parse("bm25>>dense"), System.parse("bm25>>dense>>mmr(0.5)")
    ranked: dict = {}
    first = run_steps(short, [Step("b"), Step("d")], topics.copy(), ranked)
    second = run_steps(long, [Step("b"), Step("d"), Step("m")], topics.copy(), ranked)
    alone = run_steps(long, [Step("b"), Step("d"), Step("m")], topics.copy())
    assert calls == ["b", "d", "m", "b", "d", "m"]
    assert list(first["trail"]) == ["bd"] and list(second["trail"]) == list(alone["trail"]) == ["bdm"]
    assert list(ranked[short.prefix(2)]["trail"]) == ["bd"]
