"""Embed only what is measured: polarity to the depth the measures, curves and re-rankers read, NaN below, and every
measure value the same as with polarity on every row (issue 25, part 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest

import pairmeasures as pm
from pairmeasures.audit.curves import cutoff_curves
from pairmeasures.audit.runs import polarity_depth
from pairmeasures.compute.embed import Embedder, embedded_counts, embedding_purpose
from pairmeasures.pipelines.duogreedy import DuoGreedy
from pairmeasures.pipelines.polarity import PolarityScorer, top_rows
from pairmeasures.sideinfo.polarity import FitSet, PolarityModel

ROOT = Path(__file__).resolve().parents[1]


def tied_run(seed: int = 0, queries: int = 12, length: int = 40) -> pd.DataFrame:
    """A run with many score ties (also across every cut-off), ranks that break them against document-id order, and
    one polarity value per row."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(queries):
        scores = np.sort(rng.integers(0, 8, length))[::-1].astype(float)  # few distinct scores: ties everywhere
        docs = [f"d{q}-{i:02d}" for i in rng.permutation(length)]
        for rank, (doc, score) in enumerate(zip(docs, scores)):
            rows.append((f"q{q}", doc, score, rank, float(rng.normal())))
    return pd.DataFrame(rows, columns=["qid", "docno", "score", "rank", "polarity"])


def test_top_rows_keeps_every_row_tied_with_the_last_one_and_every_rank_above_the_depth():
    frame = pd.DataFrame({"qid": ["a"] * 6 + ["b"] * 2, "docno": list("uvwxyzst"),
                          "score": [9, 7, 7, 7, 3, 1, 5, 4], "rank": [0, 1, 2, 3, 4, 5, 0, 1]})
    assert top_rows(frame, 2).tolist() == [True, True, True, True, False, False, True, True]
    assert top_rows(frame, 1).tolist() == [True, False, False, False, False, False, True, False]
    assert top_rows(frame, None).all() and top_rows(frame, 100).all()
    shuffled = frame.sample(frac=1.0, random_state=3)  # row order does not matter
    assert top_rows(shuffled, 2).tolist() == top_rows(frame, 2)[shuffled.index.to_numpy()].tolist()
    swapped = frame.assign(rank=[5, 1, 2, 3, 4, 0, 0, 1])  # a rank that disagrees with the scores keeps its row too
    assert top_rows(swapped, 2).tolist() == [True, True, True, True, False, True, True, True]
    assert top_rows(frame.drop(columns="score"), 2).tolist() == [True, True, False, False, False, False, True, True]
    assert top_rows(frame.drop(columns=["score", "rank"]), 2).all()


@pytest.mark.parametrize("ties", ["system", "trec_eval"])
def test_no_measure_reads_a_nan_below_the_depth(ties):
    """Duo@k and its cut-off curve 1..depth, with polarity only on the rows top_rows keeps, equal the values with
    polarity on every row, under both tie policies; with a NaN read as a value they would be NaN or differ."""
    run = tied_run().rename(columns={"qid": "query_id", "docno": "doc_id"})
    qrels = pd.DataFrame({"query_id": run["query_id"], "doc_id": run["doc_id"], "relevance": 1})
    depth = 10
    cut = run.assign(polarity=np.where(top_rows(run.rename(columns={"query_id": "qid"}), depth), run["polarity"],
                                       np.nan))
    assert cut["polarity"].isna().sum() > len(run) / 2
    for k in (3, 5, 10):
        for missing in ("skip", "error"):
            measure = pm.Duo(ties=ties, missing=missing) @ k
            full = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
            part = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, cut)}
            assert full == part and len(full) == 12
    measure = pm.Duo(ties=ties, missing="skip")  # no cut-off: it reads every row, so the audit scores every row
    assert polarity_depth([measure]).depth is None
    family = f"Duo(ties='{ties}')"
    assert cutoff_curves({"s": run}, qrels, [family], ks=range(1, depth + 1)).equals(
        cutoff_curves({"s": cut}, qrels, [family], ks=range(1, depth + 1)))


def test_polarity_depth_is_the_deepest_reader_and_says_why():
    duo, rkl = pm.Duo(ties="system") @ 10, pm.rKL @ 20
    assert polarity_depth([duo, rkl, ir_measures.nDCG @ 100]) == (10, "Duo@10 reads the top 10")  # ties='system' is the default
    assert polarity_depth([pm.Duo @ 5, duo]).depth == 10
    assert polarity_depth([duo], curves=50).depth == 50
    assert polarity_depth([rkl], curves=50).depth == 0  # no measure reads polarity: the curves do not either
    found = polarity_depth([duo], curves=None, tradeoff=[(20, duo), (5, pm.Duo @ 3)])
    assert found.depth == 20 and "trade-off (k=20" in found.why
    assert polarity_depth([duo], tradeoff=[(5, pm.Duo)]).depth is None
    assert polarity_depth([pm.Duo(polarity="tsv:somewhere.tsv") @ 10]).depth == 0  # a resource, not the run's column


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> PolarityModel:
    fit = FitSet.from_frame(pd.DataFrame({
        "qid": ["q0"] * 4 + ["q1"] * 4,
        "text": ["Solar power is cheap.", "Solar panels cost too much.", "Sunlight is free energy.",
                 "Solar farms destroy habitats.", "Uniforms reduce bullying.", "Uniforms limit expression.",
                 "Uniforms make mornings simple.", "Uniforms are expensive."],
        "label": ["pro", "con"] * 4}))
    return PolarityModel(fit, embedder=Embedder(cache=tmp_path_factory.mktemp("cache") / "e.sqlite"))


def texts_for(run: pd.DataFrame) -> pd.DataFrame:
    return run.assign(text=[f"document {d} about {'solar energy' if q == 'q0' else 'school uniforms'} number {i}"
                            for i, (q, d) in enumerate(zip(run["qid"], run["docno"]))])


def test_the_scorer_embeds_the_top_rows_only_and_scores_them_as_the_full_scorer_does(model):
    run = texts_for(tied_run(1, queries=2, length=30).drop(columns="polarity"))
    keep = top_rows(run, 5)
    with embedding_purpose("test depth"):
        cut = PolarityScorer(model, errors="skip", depth=5)(run)
    counted = embedded_counts()["test depth"]
    assert counted["texts"] == len(set(run["text"][keep])) + 8  # the top rows and the fit documents, nothing more
    full = PolarityScorer(model, errors="skip")(run)
    assert np.isnan(cut["polarity"][~keep]).all() and np.isfinite(cut["polarity"][keep]).all()
    assert np.array_equal(cut["polarity"][keep], full["polarity"][keep])
    scorer = PolarityScorer(model, errors="skip", depth=5)
    scorer(run)
    assert (scorer.rows, scorer.scored) == (len(run), int(keep.sum()))
    candidates = PolarityScorer(PolarityModel(embedder=model.embedder), depth=5)  # axes fitted on every candidate
    assert candidates.effective_depth is None and np.isfinite(candidates(run)["polarity"]).all()
    with pytest.raises(ValueError, match="depth must be a positive integer"):
        PolarityScorer(model, depth=0)


def test_duogreedy_reads_its_top_k_only(model):
    run = texts_for(tied_run(2, queries=2, length=30).drop(columns="polarity"))
    full = PolarityScorer(model, errors="skip")(run)
    cut = PolarityScorer(model, errors="skip", depth=10)(run)
    for mode, Lambda in (("greedy", 0.3), ("exact", 0.0)):
        expected = DuoGreedy(Lambda, 10, mode=mode)(full)
        found = DuoGreedy(Lambda, 10, mode=mode)(cut)
        assert expected["docno"].tolist() == found["docno"].tolist()
    with pytest.raises(ValueError, match="no finite polarity"):  # below its depth a NaN is still an error
        DuoGreedy(0.3, 20)(cut)


def test_a_spec_scores_polarity_to_the_depth_of_its_reranker(model, tmp_path):
    from pairmeasures.demo import debates_dir
    from pairmeasures.pipelines.specs import System, SystemContext

    context = SystemContext(debates_dir(), polarity_model=model, index_dir=tmp_path)
    found = System.parse("bm25>>duogreedy(0.5, k=3)").build(context).search("school uniforms are required")
    scorer = context.polarity_scorer(3)
    assert scorer.depth == 3 and 3 <= scorer.scored < scorer.rows == len(found)
    full = (System.parse("bm25").build(context) >> context.document_text() >> PolarityScorer(model, errors="skip")
            >> DuoGreedy(0.5, 3)).search("school uniforms are required")
    assert found["docno"].tolist() == full["docno"].tolist()


@pytest.mark.timeout(1200)
def test_procon_audit_of_top_1000_runs_embeds_the_measured_rows_and_measures_what_embedding_all_would(data_dir,
                                                                                                   tmp_path):
    """On real ProCon, bm25 at depth 1000 (every document it matches): the audit gives polarity to the top 50 (the
    cut-off curves' depth) and its ties only, and every per-query value equals that of the same audit with
    polarity on every row (forced by adding ``Duo`` without a cut-off, which reads every row)."""
    env = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    common = ["--dataset", "pair/procon", "--data", str(data_dir), "--systems", "bm25", "bm25>>duogreedy(0.0)",
              "--num-results", "1000", "--resamples", "100", "--no-tradeoff", "--format", "csv"]
    measures = ["nDCG@10", "Duo@10", "Duo@3", "rKL@10"]
    outputs = {}
    for name, extra in (("depth", []), ("all", ["Duo"])):
        out = tmp_path / name
        done = subprocess.run([sys.executable, "-m", "pairmeasures", "audit", *common, "--measures", *measures, *extra,
                               "--out", str(out)], capture_output=True, text=True, timeout=1200, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        outputs[name] = (pd.read_csv(out / "per_query.csv", dtype={"qid": str}),
                         json.loads((out / "manifest.json").read_text())["embedded"])
    (depth_values, depth_embedded), (all_values, all_embedded) = outputs["depth"], outputs["all"]
    polarity = depth_embedded["polarity"]
    assert polarity["depth"] == 50 and "the cut-off curves read the top 50" in polarity["why"]
    assert all_embedded["polarity"]["depth"] is None and all_embedded["polarity"]["rows_scored"] == polarity["rows"]
    queries = depth_values["qid"].nunique()
    assert polarity["rows"] > 3 * polarity["rows_scored"]  # top-1000-style runs: most rows are never read
    assert polarity["rows_scored"] <= 2 * queries * 60  # the top 50 of each system, and the rows tied with the 50th
    assert depth_embedded["polarity"]["texts"] < all_embedded["polarity"]["texts"]
    kept = all_values[all_values["measure"] != "Duo"].reset_index(drop=True)
    assert set(kept["measure"]) == set(measures)
    pd.testing.assert_frame_equal(depth_values.reset_index(drop=True), kept, check_exact=True)


#: Runs the audit command in-process, then writes which heavy modules it imported to argv[1].
IMPORTS = """
import json, sys
from pairmeasures.apps.cli import main
code = main(sys.argv[2:])
heavy = ("torch", "transformers", "sentence_transformers", "pyterrier_dr", "sklearn")
open(sys.argv[1], "w").write(json.dumps(sorted(m for m in heavy if m in sys.modules)))
sys.exit(code)
"""


@pytest.mark.timeout(1200)
def test_an_audit_whose_vectors_are_all_cached_imports_no_torch(tmp_path):
    """The demo audit (bm25, bm25>>dense, bm25>>dense>>duogreedy(0.5), the DuoGreedy-vs-MMR trade-off) once cold,
    then again with its runs and evaluations gone but every vector in the embedding cache: the second builds every
    system, re-ranks densely, scores polarity and fits the axes without importing torch, transformers or
    pyterrier-dr, embeds nothing, and measures the same."""
    cache = tmp_path / "cache"
    env = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    boards, imported, embedded = [], [], []
    for number in range(2):
        out, flags = tmp_path / f"out{number}", tmp_path / f"imports{number}.json"
        done = subprocess.run([sys.executable, "-c", IMPORTS, str(flags), "audit", "--out", str(out), "--resamples",
                               "100"], capture_output=True, text=True, timeout=1200, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        boards.append(json.loads((out / "leaderboard.json").read_text()))
        imported.append(json.loads(flags.read_text()))
        embedded.append(json.loads((out / "manifest.json").read_text())["embedded"])
        for folder in ("runs", "evaluations"):  # the vectors stay; everything else is computed again
            for path in sorted((cache / folder).rglob("*"), reverse=True):
                path.unlink() if path.is_file() else path.rmdir()
    assert "torch" in imported[0] and imported[1] == []
    assert sum(part["computed"] for part in embedded[0].values()) > 0
    assert {purpose: part["computed"] for purpose, part in embedded[1].items()} == \
        {purpose: 0 for purpose in embedded[1]} and embedded[1]["polarity"]["rows_scored"] > 0
    assert boards[0] == boards[1]
