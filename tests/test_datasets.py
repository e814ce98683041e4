"""The bias benchmarks as ir_datasets datasets: the counts of shared/data/README.md, PyTerrier,
mirrors, damaged files, downloads (through a stand-in network), the MS MARCO query sets over a
miniature collection, and the command line.

The session's PAIRMEASURES_DATA is a mirror of the real data (conftest.py, fixture ``data_mirror``); its
``wiki-balance-synthetic`` is the Wiki-Balance sample. Tests that need it are skipped without the real data.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
from conftest import build_mirror

import pairmeasures as pm
from pairmeasures.datasets import DATASET_IDS, DatasetError, DatasetUnavailableError, WikiBalanceQueryInfo

# Counts of shared/data/README.md: queries, documents, judgements, gold groups.
COUNTS = {
    "pair/wiki-balance/synthetic": (281, 348, 348, {"p1": 167, "p2": 181}),
    "pair/perspectrum": (907, 8370, 11805, {"support": 6112, "undermine": 5693}),
    "pair/procon": (50, 953, 953, {"pro": 473, "con": 480}),
    "pair/grep-biasir": (117, 702, 702, {"female": 232, "male": 232, "neutral": 233, "both": 5}),
}
LABELLED = list(COUNTS)


def ir_datasets_here():
    """ir_datasets, checked to work in the tests' private home (conftest.py), never the user's."""
    import ir_datasets

    assert Path(ir_datasets.util.home_path()) == Path(os.environ["IR_DATASETS_HOME"])
    return ir_datasets


def everything(dataset) -> dict:
    return {"queries": list(dataset.queries_iter()), "docs": list(dataset.docs_iter()), "qrels": list(dataset.qrels_iter()),
            "labels": list(dataset.labels_iter()), "query_info": list(dataset.query_info_iter())}


@pytest.mark.usefixtures("data_mirror")
@pytest.mark.parametrize("dataset_id", LABELLED)
def test_counts_are_those_of_the_data_readme(dataset_id):
    dataset = ir_datasets_here().load(dataset_id)
    records = everything(dataset)
    queries, docs, qrels, groups = COUNTS[dataset_id]
    assert (len(records["queries"]), len(records["docs"]), len(records["qrels"])) == (queries, docs, qrels)
    assert Counter(label.group for label in records["labels"]) == groups
    assert dataset.docs_count() == docs
    assert all(type(doc) is dataset.docs_cls() for doc in records["docs"])


@pytest.mark.usefixtures("data_mirror")
@pytest.mark.parametrize("dataset_id", LABELLED)
def test_every_judgement_and_label_refers_to_an_existing_document_and_query(dataset_id):
    records = everything(ir_datasets_here().load(dataset_id))
    query_ids = {query.query_id for query in records["queries"]}
    doc_ids = {doc.doc_id for doc in records["docs"]}
    for pair in records["qrels"] + records["labels"]:
        assert pair.query_id in query_ids and pair.doc_id in doc_ids, pair
    assert {(label.query_id, label.doc_id) for label in records["labels"]} == {(q.query_id, q.doc_id) for q in records["qrels"]}
    assert [info.query_id for info in records["query_info"]] == [query.query_id for query in records["queries"]]


@pytest.mark.usefixtures("data_mirror")
def test_wiki_balance_sample_perspectives_topics_and_domains():
    records = everything(ir_datasets_here().load("pair/wiki-balance/synthetic"))
    sides = defaultdict(set)
    for doc in records["docs"]:
        assert doc.doc_id.startswith(f"{doc.query_id}_{doc.perspective}_d") and doc.query_id.startswith(f"{doc.topic_id}_")
        sides[doc.query_id].add(doc.perspective)
    assert Counter(frozenset(s) for s in sides.values()) == {frozenset({"p1", "p2"}): 44, frozenset({"p1"}): 109,
                                                            frozenset({"p2"}): 128}
    assert sorted(Counter(Counter(q.query_id for q in records["qrels"]).values()).items()) == [(1, 215), (2, 65), (3, 1)]
    info = {i.query_id: i for i in records["query_info"]}
    assert len({i.topic_id for i in info.values()}) == 178
    assert info["1181612_7"] == WikiBalanceQueryInfo("1181612_7", "1181612", "JBL", ("Entertainment",))
    assert sorted(q for q, i in info.items() if not i.domains) == ["65735_1", "65735_7"]  # topic absent from the table


@pytest.mark.usefixtures("data_mirror")
def test_perspectrum_procon_and_grep_biasir_details():
    irds = ir_datasets_here()
    claims = list(irds.load("pair/perspectrum").query_info_iter())
    assert Counter(c.split for c in claims) == {"train": 541, "dev": 139, "test": 227}
    assert sum(not c.topics for c in claims) == 121
    assert Counter(d.source for d in irds.load("pair/perspectrum").docs_iter()) == {
        "paraphrase": 4452, "idebate": 2113, "debatewise": 1198, "procon": 607}
    per_debate = Counter(doc.query_id for doc in irds.load("pair/procon").docs_iter())
    assert (min(per_debate.values()), max(per_debate.values())) == (5, 46)
    grep = irds.load("pair/grep-biasir")
    assert Counter(q.relevance for q in grep.qrels_iter()) == {1: 351, 0: 351}
    assert Counter(i.expected_stereotype for i in grep.query_info_iter()) == {
        "No Annotation Agreement": 88, "Towards Female": 20, "Towards Male": 9}
    assert Counter(i.category for i in grep.query_info_iter())["Sex & Relationship"] == 23


@pytest.mark.usefixtures("data_mirror")
@pytest.mark.parametrize("dataset_id", LABELLED)
def test_pyterrier_reaches_every_dataset(dataset_id):
    import pyterrier as pt

    dataset = pt.get_dataset(f"irds:{dataset_id}")
    queries, docs, qrels, _ = COUNTS[dataset_id]
    topics, judgements = dataset.get_topics(), dataset.get_qrels()
    assert list(topics.columns) == ["qid", "query"] and len(topics) == queries
    assert list(judgements.columns) == ["qid", "docno", "label"] and len(judgements) == qrels
    corpus = list(dataset.get_corpus_iter(verbose=False))
    assert len(corpus) == docs and {"docno", "text"} <= set(corpus[0])
    assert set(judgements.docno) <= {doc["docno"] for doc in corpus}  # document text: tests/test_pyterrier.py


@pytest.mark.usefixtures("data_mirror")
def test_relevance_and_bias_end_to_end_on_procon(tmp_path):
    import ir_measures
    import pandas as pd
    import pyterrier as pt
    from pyterrier_pisa import PisaIndex

    from pairmeasures.math import duo as duo_of
    from pairmeasures.math import rkl as rkl_of

    dataset = pt.get_dataset("irds:pair/procon")
    labels = pd.DataFrame(dataset.irds_ref().labels_iter())
    polarity = tmp_path / "polarity.tsv"  # gold sides as polarity scores: pro +1, con -1
    labels.assign(polarity=labels.group.map({"pro": 1, "con": -1})).rename(
        columns={"query_id": "query-id", "doc_id": "corpus-id"}).drop(columns="group").to_csv(polarity, sep="\t", index=False)
    index = PisaIndex(str(tmp_path / "procon.pisa"), text_field="text")
    index.index(dataset.get_corpus_iter(verbose=False))
    # The most biased order of each debate's arguments: every pro argument before the con ones.
    pro_first = labels.rename(columns={"query_id": "qid", "doc_id": "docno"}).assign(
        score=lambda frame: (frame.group == "pro") + 1.0)
    measures = [ir_measures.nDCG @ 10, pm.rKL(group=f"tsv:{dataset.irds_ref().labels_path()}", rel=1),
                pm.Duo(polarity=f"tsv:{polarity}", rel=1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        table = pt.Experiment([index.bm25(num_results=100), pt.Transformer.from_df(pro_first)], dataset.get_topics(),
                              dataset.get_qrels(), eval_metrics=measures, names=["BM25", "pro first"]).set_index("name")
    ndcg, rkl, duo = (table[str(m)] for m in measures)
    orders = [sorted(group, key=lambda side: side != "pro") for _, group in labels.groupby("query_id").group]
    assert rkl["pro first"] == pytest.approx(np.mean([rkl_of([side == "pro" for side in o]) for o in orders]))
    assert duo["pro first"] == pytest.approx(np.mean([duo_of(np.where(np.array(o) == "pro", 1.0, -1.0)) for o in orders]))
    assert ndcg["pro first"] == 1.0 and min(rkl["pro first"], duo["pro first"]) > 0.9
    assert 0.5 < ndcg["BM25"] < 1.0 and 0.0 < rkl["BM25"] < 0.5 and 0.0 < duo["BM25"] < 0.5


def test_msmarco_gender_query_sets_over_a_miniature_collection(msmarco_miniature):
    """ir_datasets' own msmarco-passage files, written small into the private home (conftest.py)."""
    import ir_measures
    import pandas as pd
    import pyterrier as pt

    runs, passages, best, judgements, outsider = (msmarco_miniature.runs, msmarco_miniature.passages,
                                                  msmarco_miniature.best, msmarco_miniature.judgements,
                                                  msmarco_miniature.outsider)
    qs1, qs2 = (pt.get_dataset(f"irds:pair/msmarco-passage/dev/gender-qs{n}") for n in (1, 2))
    topics, qrels = qs2.get_topics(), qs2.get_qrels()
    assert len(topics) == 215 and len(qs1.get_topics()) == 1765 and set(topics.qid) <= set(qs1.get_topics().qid)
    assert outsider not in set(qs1.get_topics().qid)
    assert len(qrels) == len(best) and set(qrels.qid) == set(topics.qid)
    pd.testing.assert_frame_equal(qs1.get_qrels(), qrels)  # QS1 holds every QS2 query; the outsider is dropped
    assert len(list(qs2.get_corpus_iter(verbose=False))) == len(passages)
    assert qs2.irds_ref().docs_store().get(passages[-1]).text == f"miniature passage {passages[-1]}"

    measures = [ir_measures.RR @ 10, ir_measures.nDCG @ 10]
    table = pt.Experiment([runs["BM25"], runs["bert_L2"]], topics, qrels, names=["BM25", "bert_L2"],
                          eval_metrics=measures).set_index("name")
    assert table.loc["bert_L2", "RR@10"] == 1.0
    # The same numbers as evaluating the run file against the qrels file directly, without the dataset.
    direct = ir_measures.calc_aggregate(measures, list(ir_measures.read_trec_qrels(judgements))[:-1],
                                        runs["BM25"].rename(columns={"qid": "query_id", "docno": "doc_id"}))
    assert table.loc["BM25", "RR@10"] == pytest.approx(direct[ir_measures.RR @ 10])
    assert table.loc["BM25", "nDCG@10"] == pytest.approx(direct[ir_measures.nDCG @ 10])
    assert 0.0 < table.loc["BM25", "RR@10"] < 1.0


def writable_copy(tmp_path: Path, data_dir: Path, *folders: str) -> Path:
    """A mirror holding copies of the shared ``folders`` (and the categories table)."""
    mirror = tmp_path / "mirror"
    for folder in folders:
        shutil.copytree(data_dir / folder, mirror / ("wiki-balance-synthetic" if folder == "wiki-balance-sample" else folder))
    shutil.copy(data_dir / "wiki-balance-categories.tsv", mirror)
    return mirror


def append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def cut_line_five(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:4]) + lines[4][: len(lines[4]) // 2], encoding="utf-8")


def keep_100_documents(path: Path) -> None:
    path.write_text("".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:100]), encoding="utf-8")


def first_line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if text in line)


DAMAGE = {
    "truncated JSON line": ("corpus.jsonl", cut_line_five, r"procon/corpus\.jsonl:5: not a JSON object .*truncated"),
    "duplicate document": ("corpus.jsonl", lambda p: append(p, p.read_text().splitlines()[0]),
                           r"procon/corpus\.jsonl:954: id 'videogames_pro_0' already appears on line 1"),
    "judgement of a missing document": ("qrels/test.tsv", lambda p: append(p, "golf\tnowhere\t1"),
                                        r"procon/qrels/test\.tsv:955: document 'nowhere' is not in the corpus"),
    "judgement of a missing query": ("qrels/test.tsv", lambda p: append(p, "nodebate\tgolf_pro_0\t1"),
                                     r"procon/qrels/test\.tsv:955: query 'nodebate' is not among the queries"),
    "duplicate judgement": ("qrels/test.tsv", lambda p: append(p, p.read_text().splitlines()[1]),
                            r"procon/qrels/test\.tsv:955: .*already paired on line 2"),
    "score that is no number": ("qrels/test.tsv", lambda p: append(p, "golf\tvideogames_pro_0\thigh"),
                                r"procon/qrels/test\.tsv:955: score 'high' is not an integer"),
    "qrels without header": ("qrels/test.tsv", lambda p: p.write_text("\n".join(p.read_text().splitlines()[1:]) + "\n"),
                             r"procon/qrels/test\.tsv:1: expected the header 'query-id\\tcorpus-id\\tscore'"),
    "label of a missing document": ("labels.tsv", lambda p: append(p, "golf\tnowhere\tpro"),
                                    r"procon/labels\.tsv:955: document 'nowhere' is not in the corpus"),
    "row with a missing field": ("labels.tsv", lambda p: append(p, "golf\tgolf_pro_0"),
                                 r"procon/labels\.tsv:955: expected 3 tab-separated fields"),
    "bytes that are not UTF-8": ("labels.tsv", lambda p: p.write_bytes(p.read_bytes().replace(b"videogames_pro_1", b"\xff", 1)),
                                 r"procon/labels\.tsv:3: not UTF-8 text"),
    "qrels with a header only": ("qrels/test.tsv", lambda p: p.write_text(p.read_text().splitlines()[0] + "\n"),
                                 r"procon/qrels/test\.tsv: has a header but no judgements"),
    "labels with a header only": ("labels.tsv", lambda p: p.write_text(p.read_text().splitlines()[0] + "\n"),
                                  r"procon/labels\.tsv: has a header but no labels"),
    "missing file": ("labels.tsv", Path.unlink, r"procon \(data argument\) is incomplete: it needs labels\.tsv"),
}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_a_damaged_mirror_file_is_named_with_its_line(damage, tmp_path, data_dir, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    name, spoil, message = DAMAGE[damage]
    mirror = writable_copy(tmp_path, data_dir, "procon")
    spoil(mirror / "procon" / name)
    dataset = pm.datasets.load("pair/procon", data=mirror)
    with pytest.raises(DatasetError, match=message) as error:
        list(dataset.qrels_iter())
    assert str(mirror) in str(error.value)
    shutil.rmtree(mirror / "procon")
    shutil.copytree(data_dir / "procon", mirror / "procon")
    assert len(list(dataset.qrels_iter())) == 953  # repaired: read again, no stale copy


def test_a_partial_corpus_fails_at_the_first_judgement_of_a_lost_document(tmp_path, data_dir, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    mirror = writable_copy(tmp_path, data_dir, "procon")
    keep_100_documents(mirror / "procon" / "corpus.jsonl")
    lost = json.loads((data_dir / "procon" / "corpus.jsonl").read_text().splitlines()[100])["_id"]
    line = first_line_of(mirror / "procon" / "qrels" / "test.tsv", f"\t{lost}\t")
    with pytest.raises(DatasetError, match=rf"qrels/test\.tsv:{line}: document '{lost}' is not in the corpus") as error:
        list(pm.datasets.load("pair/procon", data=mirror).docs_iter())
    assert "fix or replace that file in the mirror" in str(error.value)


def test_a_cut_gzip_file_and_a_repeated_query_are_named(tmp_path, data_dir, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    mirror = writable_copy(tmp_path, data_dir, "wiki-balance-sample", "msmarco-gender")
    corpus = mirror / "wiki-balance-synthetic" / "corpus.jsonl"
    packed = gzip.compress(corpus.read_bytes())
    corpus.unlink()
    corpus.with_name("corpus.jsonl.gz").write_bytes(packed[: len(packed) // 2])
    with pytest.raises(DatasetError, match=r"wiki-balance-synthetic/corpus\.jsonl\.gz:\d+: compressed data is corrupt"):
        list(pm.datasets.load("pair/wiki-balance/synthetic", data=mirror).docs_iter())
    queries = mirror / "msmarco-gender" / "qs2_queries.tsv"
    append(queries, queries.read_text().splitlines()[1])
    with pytest.raises(DatasetError, match=r"qs2_queries\.tsv:217: query '361240' already appears on line 2"):
        list(pm.datasets.load("pair/msmarco-passage/dev/gender-qs2", data=mirror).queries_iter())


def test_a_wiki_balance_synthetic_id_must_carry_its_perspective(tmp_path, data_dir, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    mirror = writable_copy(tmp_path, data_dir, "wiki-balance-sample")
    append(mirror / "wiki-balance-synthetic" / "corpus.jsonl", json.dumps({"_id": "765_0_p3_d1", "title": "", "text": "x"}))
    with pytest.raises(DatasetError, match=r"corpus\.jsonl:349: document id '765_0_p3_d1' does not follow"):
        list(pm.datasets.load("pair/wiki-balance/synthetic", data=mirror).docs_iter())


def test_wiki_balance_natural_from_a_mirror(tmp_path, data_dir, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    folder = tmp_path / "mirror" / "wiki-balance-natural"
    (folder / "qrels").mkdir(parents=True)
    (tmp_path / "mirror" / "wiki-balance-categories.tsv").symlink_to(data_dir / "wiki-balance-categories.tsv")
    docs = [("765_0_1", "Abortion"), ("765_0_2", "Abortion"), ("12686_3_1", "Gun politics"), ("65735_1_1", "Military draft")]
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": t, "text": f"passage {d}"}) + "\n"
                                                 for d, t in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": f"query {q}"}) + "\n"
                                                  for q in ("765_0", "12686_3", "65735_1")))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{d.rsplit('_', 1)[0]}\t{d}\t4\n" for d, _ in docs))
    dataset = pm.datasets.load("pair/wiki-balance/natural", data=tmp_path / "mirror")
    info = {i.query_id: i for i in dataset.query_info_iter()}
    assert info["765_0"] == WikiBalanceQueryInfo("765_0", "765", "Abortion", (
        "Politics and economics", "Science, biology, and health", "Sex, sexuality, and gender identity"))
    assert info["12686_3"].domains == ("Politics and economics",)
    assert info["65735_1"] == WikiBalanceQueryInfo("65735_1", "65735", "Military draft", ())
    with pytest.raises(DatasetError, match="no gold labels here: add labels.tsv"):
        list(dataset.labels_iter())
    (folder / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\n765_0\t765_0_1\tpro\n765_0\t765_0_2\tcon\n")
    assert [label.group for label in dataset.labels_iter()] == ["pro", "con"]


def test_loading_again_parses_nothing(tmp_path, data_dir, monkeypatch):
    from pairmeasures.datasets import procon

    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    mirror = writable_copy(tmp_path, data_dir, "procon")
    read = []
    parse = procon.read_records
    monkeypatch.setattr(procon, "read_records", lambda path, *args, **kwargs: read.append(path) or parse(path, *args, **kwargs))
    dataset = pm.datasets.load("pair/procon", data=mirror)
    docs = list(dataset.docs_iter())
    assert len(read) == 2  # corpus and queries
    list(dataset.queries_iter())
    list(pm.datasets.load("pair/procon", data=mirror).labels_iter())  # another dataset object, the same files
    assert len(read) == 2
    pm.clear_caches()  # as a new process: the pickled records are read instead
    assert list(dataset.docs_iter()) == docs and len(read) == 2
    os.utime(mirror / "procon" / "corpus.jsonl", ns=(10**9, 10**9))  # a changed file is read again
    assert list(dataset.docs_iter()) == docs and len(read) == 4


# --- downloads: the public sources, rebuilt from the shared data and served by a stand-in network ---

def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def tsv(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def as_csv(header: list[str], rows) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


def perspectrum_sources(folder: Path) -> dict[str, bytes]:
    """The four PERSPECTRUM v1.0 files, plus what the conversion must leave out: a pool entry attached to no
    claim, a perspective that is empty once invisible characters are removed, a claim without perspectives."""
    queries, corpus = jsonl(folder / "queries.jsonl"), jsonl(folder / "corpus.jsonl")
    clusters = defaultdict(list)
    for cluster in jsonl(folder / "clusters.jsonl"):
        clusters[cluster["query_id"]].append(cluster)
    pool = [{"pId": int(d["_id"]), "text": d["text"], "source": d["source"]} for d in corpus]
    pool += [{"pId": 990001, "text": "Attached to no claim", "source": "idebate"},
             {"pId": 990002, "text": " \u200b ", "source": "idebate"}]
    claims = [{"cId": int(q["_id"]), "text": q["text"], "source": q["source"], "topics": q["topics"], "perspectives": [
        {"pids": [int(p) for p in c["corpus_ids"]], "stance_label_3": c["group"].upper(),
         "stance_label_5": c["stance_label_5"].upper(), "voter_counts": c["voter_counts"], "evidence": []}
        for c in sorted(clusters[q["_id"]], key=lambda c: int(c["_id"].rsplit("_", 1)[1]))]} for q in queries]
    claims[0]["perspectives"][0]["pids"].append(990002)
    claims.append({"cId": 990003, "text": "A claim nobody argued", "source": "idebate", "topics": [], "perspectives": []})
    topics = [{"claim_id": int(r["query-id"]), "topics": json.loads(r["topics"])} for r in tsv(folder / "perspectrum-topics.tsv")]
    return {"perspectrum_with_answers_v1.0.json": json.dumps(claims).encode(),
            "perspective_pool_v1.0.json": json.dumps(pool).encode(),
            "dataset_split_v1.0.json": json.dumps({q["_id"]: q["split"] for q in queries}).encode(),
            "topic.json": json.dumps(topics + [{"claim_id": 990004, "topics": ["law"]}]).encode()}


def procon_sources(folder: Path) -> dict[str, bytes]:
    """procon.json: descriptions in fragments with stray spaces, and the empty arguments the conversion drops."""
    arguments = defaultdict(dict)
    for doc in jsonl(folder / "corpus.jsonl"):
        words = doc["text"].split(" ")
        fragments = [" " + " ".join(words[: len(words) // 2]) + " ", " " + " ".join(words[len(words) // 2:])]
        arguments[doc["query_id"], doc["group"]][doc["position"]] = {
            "perspective_title": doc["title"], "argument": {"description": fragments, "reference": []}, "counter_argument": []}
    empty = {"perspective_title": "All in the headline", "argument": {"description": [], "reference": []}}
    debates = [{"url": q["url"], "claim_title": q["text"], "topic": "", **{
        key: [arguments[q["_id"], side].get(i, empty) for i in range(max(arguments[q["_id"], side]) + 1)]
        for side, key in (("pro", "perspectives_for"), ("con", "perspectives_against"))}} for q in jsonl(folder / "queries.jsonl")]
    return {"procon.json": json.dumps(debates).encode()}


def grep_biasir_sources(folder: Path) -> dict[str, bytes]:
    queries = jsonl(folder / "queries.jsonl")
    relevance = {(r["query-id"], r["corpus-id"]): r["score"] for r in tsv(folder / "qrels" / "test.tsv")}
    stereotype = {q["_id"]: q["expected_stereotype"] for q in queries}
    stereotype[next(q for q, s in stereotype.items() if s == "Towards Female")] = "Towards female"  # a source variant
    text = {q["_id"]: q["text"] for q in queries}
    files = {"queries.csv": as_csv(["q_id", "category", "query"], ((q["_id"], q["category"], q["text"]) for q in queries))}
    rows = defaultdict(list)
    for d in jsonl(folder / "corpus.jsonl"):
        rows[d["category"]].append((d["query_id"], d["_id"], relevance[d["query_id"], d["_id"]], text[d["query_id"]],
                                    d["title"], d["text"], d["content_gender"], stereotype[d["query_id"]]))
    for category, category_rows in rows.items():
        files[f"queries-documents_{category}.csv"] = as_csv(
            ["q_id", "d_id", "relevant", "query", "doc_title", "document", "content_gender", "exp_stereotype"], category_rows)
    return files


def msmarco_gender_sources(folder: Path) -> dict[str, bytes]:
    """The annotated query list (QS1 = label n; unquoted commas in texts) and the fairness-sensitive list."""
    others = ["986563,who was known as the heretic king,m", "976587,where is alexander ,kentucky ?,m"]
    annotated = [f"{r['qid']},{r['text']},n" for r in tsv(folder / "qs1_queries.tsv")]
    annotated[1:1] = others
    return {"queries_gender_annotated.csv": ("\n".join(annotated) + "\n").encode(),
            "msmarco_passage.dev.fair.tsv": "".join(f"{r['qid']}\t{r['text']}\n" for r in tsv(folder / "qs2_queries.tsv")).encode(),
            "trecdeep19_passage.fair.FULL_ANNOTATION.tsv": (folder / "trecdeep19_passage.fair.FULL_ANNOTATION.tsv").read_bytes()}


def categories_sources(path: Path) -> dict[str, bytes]:
    rows = [(r["topic"], r["topic-id"], r["topic"], repr(json.loads(r["domains"]))) for r in tsv(path)]
    rows[0] = rows[0][:3] + (repr(json.loads(tsv(path)[0]["domains"]) * 2),)  # a domain listed twice
    return {"categories.csv": as_csv(["", "id", "key", "categories"], rows)}


def wiki_balance_sources(folder: Path) -> dict[str, bytes]:
    """The Hugging Face release: gzip JSON Lines with ids, titles and texts only, qrels in test.tsv."""
    def packed(records, fields):
        return gzip.compress("".join(json.dumps({f: r[f] for f in fields}) + "\n" for r in records).encode())
    return {"corpus.jsonl.gz": packed(jsonl(folder / "corpus.jsonl"), ("_id", "title", "text")),
            "queries.jsonl.gz": packed(jsonl(folder / "queries.jsonl"), ("_id", "text")),
            "test.tsv": (folder / "qrels" / "test.tsv").read_bytes()}


def stand_in_network(monkeypatch, files: dict[str, bytes]) -> list[str]:
    """Serve ``files`` (url -> bytes) to ir_datasets' downloader; any other URL is unreachable."""
    from ir_datasets.util.download import RequestsDownload

    requested = []

    @contextlib.contextmanager
    def stream(self):
        requested.append(self.url)
        if self.url not in files:
            raise ConnectionError(f"no network to reach {self.url}")
        yield io.BytesIO(files[self.url])

    monkeypatch.setattr(RequestsDownload, "stream", stream)
    return requested


def served(resource, files: dict[str, bytes]) -> dict[str, bytes]:
    return {remote.url: files[remote.name] for remote in resource.remote}


@pytest.mark.stand_in_network
def test_downloads_convert_the_public_sources_to_the_mirror_layout(tmp_path, data_dir, data_mirror, monkeypatch):
    from pairmeasures.datasets import _catalogue as catalogue
    from pairmeasures.datasets import grep_biasir, msmarco_gender, perspectrum, procon, wiki_balance
    from pairmeasures.datasets._loaders import load_tables

    ir_datasets_here()
    files = {**served(perspectrum.PERSPECTRUM, perspectrum_sources(data_dir / "perspectrum")),
             **served(procon.PROCON, procon_sources(data_dir / "procon")),
             **served(grep_biasir.GREP_BIASIR, grep_biasir_sources(data_dir / "grep-biasir")),
             **served(msmarco_gender.MSMARCO_GENDER, msmarco_gender_sources(data_dir / "msmarco-gender")),
             **served(wiki_balance.WIKI_BALANCE_CATEGORIES, categories_sources(data_dir / "wiki-balance-categories.tsv")),
             **served(wiki_balance.WIKI_BALANCE_SYNTHETIC, wiki_balance_sources(data_dir / "wiki-balance-sample"))}
    requested = stand_in_network(monkeypatch, files)
    monkeypatch.delenv("PAIRMEASURES_DATA")
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    for spec in catalogue.SPECS:
        if spec.id == "pair/wiki-balance/natural":
            continue
        downloaded, reference = load_tables(spec), load_tables(spec, data=data_mirror)
        for field in ("queries", "docs", "qrels", "labels", "query_info"):
            assert sorted(getattr(downloaded, field) or ()) == sorted(getattr(reference, field) or ()), (spec.id, field)
    assert sorted(requested) == sorted(files)  # each source fetched once, though two datasets share some
    cache = tmp_path / "home" / "pair"
    for name in ("clusters.jsonl", "perspectrum-topics.tsv"):
        assert (cache / "perspectrum" / name).read_text() == (data_dir / "perspectrum" / name).read_text()
    assert (cache / "wiki-balance-categories.tsv").read_text() == (data_dir / "wiki-balance-categories.tsv").read_text()
    left = sorted(path.name for path in (cache / ".sources").iterdir())  # only the checksums of the first downloads
    assert left == sorted({f"{resource.name}.sha256" for spec in catalogue.SPECS for resource in spec.resources
                           if resource.name != "wiki-balance-natural"})  # two resources share msmarco-gender/


@pytest.mark.stand_in_network
def test_without_mirror_or_network_the_error_says_what_to_put_where(tmp_path, data_dir, monkeypatch):
    from pairmeasures.datasets import procon

    ir_datasets_here()
    requested = stand_in_network(monkeypatch, {})
    monkeypatch.delenv("PAIRMEASURES_DATA")
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    dataset = pm.datasets.load("pair/procon")
    with pytest.raises(DatasetUnavailableError) as error:
        list(dataset.docs_iter())
    (url,) = [remote.url for remote in procon.PROCON.remote]
    source = tmp_path / "home" / "pair" / ".sources" / "procon" / "procon.json"
    message = str(error.value)
    assert "pair/procon is not available here" in message and "ConnectionError: no network" in message
    assert "put corpus.jsonl, queries.jsonl, qrels/test.tsv, labels.tsv into DIR/procon/, then set PAIRMEASURES_DATA=DIR" in message
    assert f"{url}\n    -> {source}" in message
    assert requested == [url] and not (tmp_path / "home" / "pair" / "procon").exists()
    # Doing what it says: the source file put in place is converted, with no network.
    source.write_bytes(procon_sources(data_dir / "procon")["procon.json"])
    assert len(list(dataset.docs_iter())) == 953 and requested == [url]


@pytest.mark.stand_in_network
def test_a_source_in_another_format_is_named_and_nothing_half_converted_stays(tmp_path, monkeypatch):
    from pairmeasures.datasets import perspectrum, procon

    ir_datasets_here()
    monkeypatch.delenv("PAIRMEASURES_DATA", raising=False)
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    (url,) = [remote.url for remote in procon.PROCON.remote]
    stand_in_network(monkeypatch, {url: json.dumps([{"url": "https://golf.procon.org", "claim_title": "Golf"}]).encode()})
    with pytest.raises(DatasetError, match=r"procon\.json: debate https://golf\.procon\.org has no 'perspectives_for' field"):
        list(pm.datasets.load("pair/procon").docs_iter())
    cache = tmp_path / "home" / "pair"
    assert sorted(p.name for p in cache.iterdir()) == [".sources"]  # the download is kept to look at; no procon/
    claims = [{"cId": 1, "text": "A claim", "perspectives": [{"pids": [1], "stance_label_3": "SUPPORT"}]}]
    files = {"perspectrum_with_answers_v1.0.json": claims, "perspective_pool_v1.0.json": [{"pId": 1}],  # no text
             "dataset_split_v1.0.json": {"1": "train"}, "topic.json": []}
    stand_in_network(monkeypatch, {remote.url: json.dumps(files[remote.name]).encode()
                                   for remote in perspectrum.PERSPECTRUM.remote})
    with pytest.raises(DatasetError, match=r"the files of CogComp/perspectrum on GitHub in .*perspectrum are not in the expected"):
        list(pm.datasets.load("pair/perspectrum").docs_iter())


def sha256_of(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def procon_downloads(monkeypatch, tmp_path, remote=None, converted=None):
    """pair/procon read from nowhere but the download cache in ``tmp_path``, its resource's source file or
    pinned checksums replaced when given; the dataset to load."""
    import dataclasses

    from pairmeasures.datasets import _catalogue as catalogue
    from pairmeasures.datasets import procon

    ir_datasets_here()
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    resource = procon.PROCON
    resource = dataclasses.replace(resource, remote=(remote or resource.remote[0],),
                                   converted_sha256=resource.converted_sha256 if converted is None else converted)
    spec = dataclasses.replace(catalogue.SPEC_BY_ID["pair/procon"], resources=(resource,))
    monkeypatch.setitem(catalogue.SPEC_BY_ID, "pair/procon", spec)
    (tmp_path / "empty").mkdir(exist_ok=True)
    return lambda: pm.datasets.load("pair/procon", data=tmp_path / "empty")


def cache_entries(tmp_path) -> list[str]:
    cache = tmp_path / "home" / "pair"
    entries = (str(path.relative_to(cache)) for path in cache.rglob("*")) if cache.exists() else ()
    return sorted(entry for entry in entries if not entry.startswith(".parsed"))  # records parsed from a mirror


@pytest.mark.stand_in_network
def test_a_download_unlike_its_pinned_checksum_is_rejected_and_not_kept(tmp_path, data_dir, monkeypatch):
    import dataclasses

    from pairmeasures.datasets import procon

    source = procon_sources(data_dir / "procon")["procon.json"]
    (url,) = [remote.url for remote in procon.PROCON.remote]
    stand_in_network(monkeypatch, {url: source})
    wrong = dataclasses.replace(procon.PROCON.remote[0], sha256=sha256_of(b"another version"))
    dataset = procon_downloads(monkeypatch, tmp_path, remote=wrong)()
    with pytest.raises(DatasetUnavailableError, match=r"pair/procon: .*procon\.json .* has SHA-256 [0-9a-f]{64}, not the "
                                                      r"[0-9a-f]{64} pinned by pairmeasures") as error:
        list(dataset.docs_iter())
    assert url in str(error.value)
    assert cache_entries(tmp_path) == [".sources"]  # nothing of the download, no checksum recorded
    right = dataclasses.replace(wrong, sha256=sha256_of(source))
    assert len(list(procon_downloads(monkeypatch, tmp_path, remote=right)().docs_iter())) == 953


@pytest.mark.stand_in_network
def test_a_later_download_must_match_the_checksum_of_the_first(tmp_path, data_dir, monkeypatch):
    from pairmeasures.datasets import procon

    source = procon_sources(data_dir / "procon")["procon.json"]
    (url,) = [remote.url for remote in procon.PROCON.remote]
    stand_in_network(monkeypatch, {url: source})
    dataset = procon_downloads(monkeypatch, tmp_path, converted=())()
    assert len(list(dataset.docs_iter())) == 953
    record = tmp_path / "home" / "pair" / ".sources" / "procon.sha256"
    assert record.read_text() == f"{sha256_of(source)}  procon.json\n"

    shutil.rmtree(tmp_path / "home" / "pair" / "procon")  # the cache deleted; the source has changed since
    changed = json.loads(source)[1:]
    stand_in_network(monkeypatch, {url: json.dumps(changed).encode()})
    dataset = procon_downloads(monkeypatch, tmp_path, converted=())()
    first = r"not the [0-9a-f]{64} recorded at its first download in .*procon\.sha256"
    with pytest.raises(DatasetUnavailableError, match=first + r".*delete .*procon\.sha256 to accept it") as error:
        list(dataset.docs_iter())
    assert url in str(error.value) and cache_entries(tmp_path) == [".sources", ".sources/procon.sha256"]
    record.unlink()  # as the message says: the new version accepted
    assert len(list(dataset.docs_iter())) == 953 - len(json.loads(source)[0]["perspectives_for"]) - len(
        json.loads(source)[0]["perspectives_against"])
    record.write_text("not a checksum\n")
    shutil.rmtree(tmp_path / "home" / "pair" / "procon")
    with pytest.raises(DatasetError, match=r"procon\.sha256:1: expected '<sha256>  <file name>'"):
        list(procon_downloads(monkeypatch, tmp_path, converted=())().docs_iter())


@pytest.mark.stand_in_network
def test_a_conversion_unlike_the_pinned_files_is_rejected_naming_the_file(tmp_path, data_dir, monkeypatch):
    from pairmeasures.datasets import procon

    debates = json.loads(procon_sources(data_dir / "procon")["procon.json"])
    debates[0]["perspectives_for"][0]["perspective_title"] = "A title edited upstream"
    (url,) = [remote.url for remote in procon.PROCON.remote]
    stand_in_network(monkeypatch, {url: json.dumps(debates).encode()})
    dataset = procon_downloads(monkeypatch, tmp_path)()
    with pytest.raises(DatasetError, match=r"pair/procon: converting .*procon gave procon/corpus\.jsonl with SHA-256 "
                                           r"[0-9a-f]{64}, not the pinned 650f1d69"):
        list(dataset.docs_iter())
    assert "procon" not in cache_entries(tmp_path) and not any(".staging" in entry for entry in cache_entries(tmp_path))


def python(code: str) -> subprocess.CompletedProcess:
    """``code`` run by a fresh interpreter importing this checkout's pairmeasures (the session's mirror and
    private ir_datasets home in its environment)."""
    environment = {**os.environ, "PYTHONPATH": str(Path(pm.__file__).resolve().parents[1])}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=environment)


PROCON_QUERIES = "print(len(list(ir_datasets.load('pair/procon').queries_iter())))"
THROUGH_PYTERRIER = "import pyterrier as pt; print(len(pt.get_dataset('irds:pair/procon').get_topics()))"
SPEC_ONLY = "spec = importlib.util.find_spec('ir_datasets'); assert 'ir_datasets' not in sys.modules"
IMPORT_ORDERS = {
    "pairmeasures, then ir_datasets": f"import pairmeasures; assert 'ir_datasets' not in sys.modules; import ir_datasets; "
                                      f"{PROCON_QUERIES}",
    "ir_datasets, then pairmeasures": f"import ir_datasets, pairmeasures; {PROCON_QUERIES}",
    "ir_datasets registry used first": "import ir_datasets; assert 'pair/procon' not in ir_datasets.registry; "
                                       f"import pairmeasures; {PROCON_QUERIES}",
    "find_spec before the import": f"import pairmeasures; {SPEC_ONLY}; {SPEC_ONLY}; import ir_datasets; {PROCON_QUERIES}",
    "find_spec before pairmeasures": f"{SPEC_ONLY}; import pairmeasures, ir_datasets; {PROCON_QUERIES}",
    "importlib.import_module": "import pairmeasures; ir_datasets = importlib.import_module('ir_datasets'); "
                               f"{PROCON_QUERIES}",
    "a submodule first": f"import pairmeasures; from ir_datasets.util import home_path; import ir_datasets; {PROCON_QUERIES}",
    "pyterrier, then pairmeasures": f"import pyterrier, pairmeasures; {THROUGH_PYTERRIER}",
    "pairmeasures, then pyterrier": f"import pairmeasures; {SPEC_ONLY}; {THROUGH_PYTERRIER}",
}


@pytest.mark.usefixtures("data_mirror")
@pytest.mark.parametrize("order", IMPORT_ORDERS, ids=list(IMPORT_ORDERS))
def test_the_datasets_are_registered_in_every_import_order(order):
    result = python(f"import importlib, importlib.util, sys; {IMPORT_ORDERS[order]}")
    assert result.returncode == 0 and result.stdout.strip() == "50", result.stderr
    assert "could not register" not in result.stderr


def test_finding_the_spec_of_ir_datasets_gives_the_real_spec_and_no_import():
    result = python("import importlib.util, sys; real = importlib.util.find_spec('ir_datasets'); import pairmeasures; "
                    "spec = importlib.util.find_spec('ir_datasets'); assert 'ir_datasets' not in sys.modules; "
                    "assert (spec.name, spec.origin, type(spec.loader)) == (real.name, real.origin, type(real.loader)); "
                    "assert importlib.util.find_spec('pairmeasures_no_such_module') is None; print('ok')")
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_import_pairmeasures_imports_no_dataset_family_module():
    families = "grep_biasir", "msmarco_gender", "perspectrum", "procon", "wiki_balance", "_catalogue"
    result = python("import sys, pairmeasures; print(sorted(m for m in sys.modules if m.startswith('pairmeasures.datasets.')"
                    f" and m.rsplit('.', 1)[1] in {families!r}))")
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stderr


def test_import_pairmeasures_loads_no_heavy_library():
    """Nor the embedder, its cache and SQLite: the ``pca:`` scheme imports them when a measure first names one."""
    heavy = ("pandas", "pyterrier", "ir_datasets", "torch", "sentence_transformers", "scipy", "sqlite3",
             "pairmeasures.compute.embed", "pairmeasures.sideinfo.polarity")
    result = python(f"import sys, pairmeasures; print(sorted(m for m in {heavy!r} if m in sys.modules))")
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stdout + result.stderr


def test_without_pairmeasures_the_datasets_are_unknown():
    without = python("import ir_datasets; ir_datasets.load('pair/procon')")
    assert without.returncode == 1 and "KeyError: 'pair/procon'" in without.stderr


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pairmeasures", *args], capture_output=True, text=True, timeout=300)


def test_datasets_command_lists_where_each_dataset_resolves_from(tmp_path, data_mirror, msmarco_miniature):
    result = cli("datasets", "--format", "json")
    assert result.returncode == 0, result.stderr
    rows = {row["dataset"]: row for row in json.loads(result.stdout)}
    assert list(rows) == list(DATASET_IDS)
    assert rows["pair/procon"] == {"dataset": "pair/procon", "resolves from": f"PAIRMEASURES_DATA: {data_mirror}/procon",
                                   "available": "yes"}
    assert rows["pair/wiki-balance/natural"]["available"] == "after download"
    assert rows["pair/wiki-balance/natural"]["resolves from"].startswith("download: SALT-NLP/wiki-balance-natural")
    assert rows["pair/msmarco-passage/dev/gender-qs2"]["available"] == \
        "yes; documents and qrels: ir_datasets msmarco-passage, here"  # the miniature's (tests/test_failures.py: none)
    assert rows["pair/msmarco-passage/trec-dl-2019/gender"]["available"] == (  # the miniature has no TREC DL qrels
        "after download; documents and qrels: ir_datasets msmarco-passage, downloaded on first use: the qrels "
        "(2019qrels-pass.txt, 187 kB)")

    (tmp_path / "procon").mkdir()  # an incomplete folder given with --data
    table = cli("datasets", "--data", str(tmp_path))
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0] == "| dataset | resolves from | available |"
    procon = next(line for line in lines if line.startswith("| pair/procon "))
    assert "no: " in procon and "it needs corpus.jsonl, queries.jsonl, qrels/test.tsv, labels.tsv" in procon
    assert next(line for line in lines if line.startswith("| pair/perspectrum ")).endswith("| after download |")


def test_a_data_folder_that_is_not_there_is_an_error(tmp_path):
    """``pairmeasures datasets --data /nonexistent`` listed every dataset as "after download" and exited 0."""
    for where, what in ((tmp_path / "nonexistent", "does not exist"), (tmp_path / "file.txt", "is a file, not a folder")):
        if what.startswith("is a file"):
            where.write_text("not a mirror")
        result = cli("datasets", "--data", str(where))
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.strip() == (f"pairmeasures datasets: error: the data folder '{where}' {what}: name a mirror "
                                         "folder laid out like shared/data (one subfolder per dataset; see "
                                         "docs/datasets.md)")
    result = subprocess.run([sys.executable, "-m", "pairmeasures", "datasets"], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "PAIRMEASURES_DATA": str(tmp_path / "nonexistent")})
    assert result.returncode == 2 and "$PAIRMEASURES_DATA" in result.stderr and "or unset PAIRMEASURES_DATA" in result.stderr


@pytest.mark.usefixtures("data_mirror")
def test_loading_a_dataset_prints_no_warning():
    """Every pm.datasets.load(...) printed "could not register its datasets with ir_datasets: cannot import name
    'register' from partially initialized module" although registration worked: load() imported the private module
    that imports ir_datasets, whose import hook then imported that half-imported module again."""
    for code in ("import pairmeasures as pm; print(len(list(pm.datasets.load('pair/procon').queries_iter())))",
                 "import os, pairmeasures as pm; print(len(list(pm.datasets.load('pair/procon', "
                 "data=os.environ['PAIRMEASURES_DATA']).queries_iter())))",
                 "import pairmeasures as pm; pm.datasets.register(); import ir_datasets; "
                 "print(len(list(ir_datasets.load('pair/procon').queries_iter())))"):
        result = python(f"import warnings; warnings.simplefilter('error'); {code}")
        assert result.returncode == 0 and result.stdout.strip() == "50", result.stderr
        assert result.stderr == "", result.stderr


def test_status_of_a_mirror_passed_as_argument(tmp_path, data_dir):
    mirror = build_mirror(tmp_path, data_dir)
    rows = {row["dataset"]: row for row in pm.datasets.status(mirror)}
    for dataset_id in LABELLED:
        assert rows[dataset_id]["available"] == "yes"
        assert rows[dataset_id]["resolves from"].startswith(f"data argument: {mirror}/")
