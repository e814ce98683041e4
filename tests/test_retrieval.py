"""Retrieval stages (pairmeasures.pipelines.retrieval): BM25 through PISA over cached indexes."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest

import pairmeasures as pm


def index_folders(root):
    return sorted(p.name for p in root.iterdir())


def mtimes(folder):
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*")}


def ndcg10(system, topics, qrels) -> float:
    import ir_measures
    import pyterrier as pt

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        table = pt.Experiment([system], topics, qrels, eval_metrics=[ir_measures.nDCG @ 10], names=["BM25"])
    return float(table["nDCG@10"].iloc[0])


@pytest.mark.usefixtures("data_mirror")
def test_bm25_over_procon_builds_its_index_once(tmp_path):
    import pyterrier as pt

    dataset = pt.get_dataset("irds:pair/procon")
    topics, qrels = dataset.get_topics(), dataset.get_qrels()
    first = pm.bm25("pair/procon", num_results=100, index_dir=tmp_path)
    (folder,) = tmp_path.iterdir()
    assert folder.name.startswith("pair-procon-text-") and folder.suffix == ".pisa"
    before = mtimes(folder)
    assert 0.5 < ndcg10(first, topics, qrels) < 1.0
    again = pm.bm25("irds:pair/procon", num_results=100, index_dir=tmp_path)
    assert mtimes(folder) == before and index_folders(tmp_path) == [folder.name]  # reused: nothing built
    assert ndcg10(again, topics, qrels) == ndcg10(first, topics, qrels)


def test_bm25_over_a_beir_folder_is_rebuilt_when_the_corpus_changes(procon_subset, tmp_path, monkeypatch):
    import pyterrier as pt

    from pairmeasures.io.memo import clear_caches
    from pairmeasures.sideinfo.polarity import read_beir

    folder = shutil.copytree(procon_subset, tmp_path / "procon4")
    monkeypatch.setenv("PAIRMEASURES_CACHE_DIR", str(tmp_path / "cache"))  # the default index folder
    data = read_beir(folder)
    topics = pt.new.queries([q["text"] for q in data.queries.values()], qid=list(data.queries))
    qrels = data.qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
    retriever = pm.bm25(folder, num_results=50)
    root = tmp_path / "cache" / "indexes"
    (built,) = index_folders(root)
    assert 0.3 < ndcg10(retriever, topics, qrels) <= 1.0
    assert index_folders(root) == [built]
    (store,) = (tmp_path / "cache" / "corpora").glob("*.sqlite")  # the index was built from the document store
    store.unlink()
    clear_caches()
    pm.bm25(folder, num_results=50)  # a new process's view: the index is found from the file's version, unread
    assert index_folders(root) == [built] and not store.exists()

    # One more document, matching the first query best: a new index, the old one removed (it carries the marker
    # of an index pairmeasures built); a user's folder named like an older version of it, without one, stays.
    mine = root / built.replace(built.rsplit("-", 1)[1], "0123456789abcdef.pisa")
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    query = next(iter(data.queries.values()))
    with (folder / "corpus.jsonl").open("a") as handle:
        handle.write(json.dumps({"_id": "added", "title": "", "text": query["text"] * 3}) + "\n")
    changed = pm.bm25(folder, num_results=50)
    (rebuilt,) = [name for name in index_folders(root) if name != mine.name]
    assert rebuilt != built and not (root / built).exists() and (mine / "notes.txt").read_text() == "mine"
    top = changed(topics.iloc[:1])
    assert top.sort_values("rank")["docno"].iloc[0] == "added"


def test_title_and_text_are_indexed_on_request(procon_subset, tmp_path):
    import pyterrier as pt

    retrievers = {text: pm.bm25(procon_subset, text=text, num_results=5, index_dir=tmp_path)
                  for text in ("text", "title", "title+text")}
    assert len(index_folders(tmp_path)) == 3  # an index per choice of fields
    query = pt.new.queries(["education"])
    assert not retrievers["text"](query).equals(retrievers["title+text"](query))


def test_sources_that_cannot_be_indexed_are_named(tmp_path):
    with pytest.raises(pm.RetrievalSourceError, match="pair/procon"):
        pm.bm25("pair/no-such-dataset", index_dir=tmp_path)
    with pytest.raises(pm.RetrievalSourceError, match="corpus.jsonl"):
        pm.bm25(tmp_path, index_dir=tmp_path / "indexes")
    with pytest.raises(ValueError, match="text must be one of"):
        pm.bm25("pair/procon", text="body", index_dir=tmp_path)
