"""One measure string, one number: a real BM25 run evaluated without extra parameters gives the same per-query values
and means in ``pairmeasures eval``, ``pt.Experiment``, ``ir_measures`` and ``pairmeasures audit`` (issue 24).

The run is PISA's BM25 over a small BEIR folder built here, as a real retriever ranks it: documents of other
debates that have no label for the query (skipped and counted), a debate whose ranked labelled arguments are all of
one side (left out and counted), and two arguments of equal text, so of equal score, that the system ranks in an
order trec_eval's rule (document id, descending) would reverse.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest

import pairmeasures as pm

ROOT = Path(__file__).resolve().parents[1]

TIED = "Uniforms are about rules and uniforms are about school."  # two arguments of this text tie in BM25

DEBATES = {  # query -> (text, [(document, group, polarity, text)])
    "uniforms": ("school uniforms rules", [
        ("u1", "pro", 0.9, "School uniforms reduce bullying over clothes at school."),
        ("u2", "con", -0.8, "Uniforms limit the self expression of pupils and their rules feel arbitrary."),
        ("u3", "pro", 0.6, "Uniforms make school mornings simpler for families."),
        ("u4", "con", -0.9, "School uniforms cost poor families too much."),
        ("u5", "con", -0.7, TIED),
        ("u6", "pro", 0.8, TIED),
    ]),
    "homework": ("homework school pupils", [
        ("h1", "pro", 0.7, "Homework builds discipline in pupils."),
        ("h2", "con", -0.6, "Homework steals time for play after school."),
        ("h3", "pro", 0.5, "Homework helps pupils revise school lessons."),
        ("h4", "con", -0.9, "Homework widens gaps between rich and poor pupils."),
    ]),
    "solar": ("solar energy cost", [
        ("s1", "pro", 0.8, "Solar energy is cheap and clean."),
        ("s2", "pro", 0.4, "Solar panels lower the energy cost of a school."),
        ("s3", "pro", 0.9, "Solar energy saves money over time."),
    ]),
}
MEASURES = ["nDCG@10", "rKL(group='beir:{folder}')@10", "Duo(polarity='tsv:{polarity}')@10"]


@pytest.fixture
def debates(tmp_path) -> tuple[Path, Path]:
    """A BEIR folder (corpus, queries, qrels, gold labels per query) and a polarity file for the labelled pairs."""
    folder = tmp_path / "debates"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n"
                                                 for _, docs in DEBATES.values() for d, _, _, t in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n"
                                                  for q, (t, _) in DEBATES.items()))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{1 + i % 2}\n" for q, (_, docs) in DEBATES.items() for i, (d, _, _, _) in enumerate(docs)))
    (folder / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, (_, docs) in DEBATES.items() for d, g, _, _ in docs))
    polarity = tmp_path / "polarity.tsv"
    polarity.write_text("query-id\tcorpus-id\tpolarity\n" + "".join(
        f"{q}\t{d}\t{p}\n" for q, (_, docs) in DEBATES.items() for d, _, p, _ in docs))
    return folder, polarity


def command(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "pairmeasures", *args], capture_output=True, text=True, timeout=600,
                          env=env)
    assert done.returncode == 0, done.stderr
    return done


def test_eval_pt_experiment_ir_measures_and_the_audit_give_one_number(debates, tmp_path):
    import pyterrier as pt

    folder, polarity = debates
    texts = [m.format(folder=folder, polarity=polarity) for m in MEASURES]
    measures = [ir_measures.parse_measure(m) for m in texts]
    rkl, duo = measures[1], measures[2]
    topics = pd.DataFrame({"qid": list(DEBATES), "query": [t for t, _ in DEBATES.values()]})
    qrels = pd.read_csv(folder / "qrels" / "test.tsv", sep="\t", dtype=str).rename(
        columns={"query-id": "qid", "corpus-id": "docno", "score": "label"}).astype({"label": int})

    # the retriever, its run saved as a TREC file with its ranks
    bm25 = pm.bm25(folder, index_dir=tmp_path / "indexes")
    run = bm25.transform(topics)
    ranked_file = tmp_path / "bm25.run"
    pt.io.write_results(run, str(ranked_file), format="trec")
    tied = run[(run.qid == "uniforms") & run.docno.isin(["u5", "u6"])]
    assert tied.score.nunique() == 1 and tied["rank"].max() < 10  # equal scores in the top 10
    first = tied.sort_values("rank").docno.iloc[0]

    # pt.Experiment: per query and means, nothing but the measure strings
    with pytest.warns(pm.DegenerateQueryWarning) as said:
        per_query = pt.Experiment([bm25], topics, qrels, eval_metrics=measures, names=["bm25"], perquery=True)
        means = pt.Experiment([bm25], topics, qrels, eval_metrics=measures, names=["bm25"]).set_index("name")
    messages = " ".join(str(w.message) for w in said)
    assert "considered documents have no group" in messages and "were skipped" in messages  # other debates' arguments
    assert "1 of 3 queries had nothing to measure and were left out" in messages  # solar: all pro
    assert not per_query["value"].isna().any()
    experiment = {(row.qid, row.measure): row.value for row in per_query.itertuples()}
    assert ("solar", str(rkl)) not in experiment and ("solar", str(duo)) in experiment

    # ir_measures on the same frame
    frame = run.rename(columns={"qid": "query_id", "docno": "doc_id"})
    ir_qrels = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        warnings.simplefilter("ignore", pm.MissingSideInfoWarning)
        direct = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, ir_qrels, frame)}
        aggregate = ir_measures.calc_aggregate(measures, ir_qrels, frame)
    assert direct.keys() == experiment.keys()

    # pairmeasures eval on the TREC file, per query (-q) with the means under 'all'
    done = command("eval", str(folder / "qrels" / "test.tsv"), str(ranked_file), *texts, "-q", "--format", "json")
    assert "left out" in done.stderr and "were skipped" in done.stderr
    rows = json.loads(done.stdout)
    evaluated = {(r["query_id"], r["measure"]): r["value"] for r in rows if r["query_id"] != "all"}
    eval_means = {r["measure"]: r["value"] for r in rows if r["query_id"] == "all"}
    assert evaluated.keys() == experiment.keys()

    # the audit: the retriever as the audit runs it, and the same run file
    out = tmp_path / "audit"
    command("audit", "--dataset", str(folder), "--systems", "bm25", f"run:{ranked_file}", "--names", "bm25", "file",
            "--measures", *texts, "--resamples", "200", "--out", str(out), "--no-tradeoff")
    audited = pd.read_csv(out / "per_query.csv", dtype={"qid": str})
    board = json.loads((out / "leaderboard.json").read_text())
    for system in ("bm25", "file"):
        rows = audited[audited.system == system]
        values = {(row.qid, row.measure): row.value for row in rows.itertuples()}
        assert values.keys() == experiment.keys(), system
        for key, value in experiment.items():
            assert values[key] == pytest.approx(value, rel=1e-9, abs=1e-12), (system, key)
    for key, value in experiment.items():
        assert direct[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
        assert evaluated[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key

    # the means: the leaderboard's number is the one eval, pt.Experiment and calc_aggregate give
    for measure in measures:
        name = str(measure)
        assert board["measures"][name]["evaluated"] == name  # the audit evaluates the string it shows
        mean = means.loc["bm25", name]
        assert eval_means[name] == pytest.approx(mean, rel=1e-12)
        assert aggregate[measure] == pytest.approx(mean, rel=1e-12)
        for system in ("bm25", "file"):
            assert board["systems"][system][name] == pytest.approx(mean, rel=1e-12), (system, name)
    assert board["measures"][str(rkl)]["measured"] == {"bm25": 2, "file": 2}

    # the order the system showed decides the tied arguments' places, everywhere
    trec = rkl(ties="trec_eval")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        warnings.simplefilter("ignore", pm.MissingSideInfoWarning)
        reordered = {m.query_id: m.value for m in ir_measures.iter_calc([trec, duo(ties="trec_eval")], ir_qrels, frame)
                     if m.measure == trec}
    assert first == "u5"  # PISA ranked u5 first; trec_eval's rule would put u6 (the greater id) first
    assert not math.isclose(reordered["uniforms"], experiment[("uniforms", str(rkl))])
    assert np.isfinite(list(eval_means.values())).all()
