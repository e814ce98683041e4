"""The embedded debates corpus (pairmeasures.demo.debates_dir) and the script that makes it."""

from __future__ import annotations

import importlib.util
import warnings

from conftest import ROOT

import pairmeasures as pm
from pairmeasures.demo import debates_dir
from pairmeasures.io.beir import read_beir
from pairmeasures.sideinfo.polarity import FitSet


def test_the_debates_folder_passes_the_strict_reader_with_both_stances_per_claim():
    folder = read_beir(debates_dir())
    assert len(folder.queries) == 40 and len(folder.corpus) == 612 and len(folder.qrels) == 635
    assert folder.labels is not None and set(folder.labels["group"]) == {"support", "undermine"}
    per_claim = folder.labels.groupby(["query_id", "group"]).size().unstack()
    assert (per_claim.min(axis=1) >= 4).all()
    topics = {q["topic"] for q in folder.queries.values()}
    assert len(topics) == 8 and all(isinstance(t, str) and t for t in topics)
    assert (debates_dir() / "README.md").read_text(encoding="utf-8").count("CC BY-SA 4.0") >= 1


def test_bm25_retrieves_the_claims_perspectives_from_the_debates_folder(tmp_path):
    import ir_measures
    import pyterrier as pt

    folder = read_beir(debates_dir())
    topics = pt.new.queries([q["text"] for q in folder.queries.values()], qid=list(folder.queries))
    qrels = folder.qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
    run = pm.bm25(debates_dir(), num_results=20, index_dir=tmp_path)(topics)
    assert set(run["qid"]) == set(folder.queries) and run.groupby("qid").size().max() == 20
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        table = pt.Experiment([run], topics, qrels, eval_metrics=[ir_measures.nDCG @ 10], names=["BM25"])
    assert 0.3 < float(table["nDCG@10"].iloc[0]) < 1.0


def test_fit_set_from_the_debates_folder_has_labelled_documents_for_every_claim():
    fit = FitSet.from_beir(debates_dir())
    assert fit.positive == "support" and fit.labels is not None
    assert set(fit.texts) == set(read_beir(debates_dir()).queries)
    assert sum(len(t) for t in fit.texts.values()) == 635
    assert all({"support", "undermine"} <= set(labels) for labels in fit.labels.values())


def test_the_script_reproduces_the_shipped_files_byte_for_byte(data_dir, tmp_path):
    spec = importlib.util.spec_from_file_location("make_demo_corpus", ROOT / "tools" / "make_demo_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main([str(data_dir / "perspectrum"), str(tmp_path)])
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    shipped = sorted(p.relative_to(debates_dir()) for p in debates_dir().rglob("*") if p.is_file())
    assert made == shipped
    for name in made:
        assert (tmp_path / name).read_bytes() == (debates_dir() / name).read_bytes(), name
