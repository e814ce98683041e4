"""The ``beir:``, ``corpus:`` and ``pca:DIR`` resources and ``FitSet.from_beir`` read a BEIR folder through its on-disk
document store (``pairmeasures.io.beirfolder.StoredFolder``), not by holding the corpus in memory.

On every real BEIR folder of the data mirror they give what ``read_beir``'s whole-corpus reading gave (built here as
the resources were built before: labels, texts and fit sets from ``read_beir``), value for value; bad folders fail
as before, naming the file and line; and resolving them costs memory that does not grow with the corpus, where
``read_beir`` costs more than the corpus file's size (measured in fresh interpreters).
"""

from __future__ import annotations

import json
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
from pairmeasures.io.beir import TEXT_FIELDS, DataFileError, read_beir
from pairmeasures.sideinfo.polarity import FitSet, PolarityModel, PolaritySource, pca_scheme
from pairmeasures.sideinfo.text import TextSource

FOLDERS = ["procon", "perspectrum", "grep-biasir", "wiki-balance-sample"]
#: grep-biasir's groups name no positive pole (female/male/neutral/both): its fit sets name one.
POSITIVE = {"grep-biasir": "female"}
CHECKOUT = str(Path(__file__).resolve().parents[1])


def old_labels(folder: Path) -> dict:
    labels = read_beir(folder).labels
    return dict(zip(zip(labels["query_id"], labels["doc_id"]), labels["group"]))


def old_texts(folder: Path, field: str) -> dict:
    data = read_beir(folder)
    return {d: data.document_text(d, field) for d in data.corpus}


def old_fit(folder: Path, text: str, positive=None) -> FitSet:
    return FitSet.from_frame(read_beir(folder).fit_frame(text), positive=positive)


def pairs_of(folder: Path, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Every labelled and judged (query, document) pair, a pair of ids no file has, and known documents under other
    queries, shuffled."""
    data = read_beir(folder)
    frames = [data.qrels[["query_id", "doc_id"]], data.labels[["query_id", "doc_id"]],
              pd.DataFrame({"query_id": ["no-such-query", data.qrels["query_id"].iloc[0]],
                            "doc_id": [data.qrels["doc_id"].iloc[0], "no-such-document"]}),
              data.labels[["doc_id"]].assign(query_id=data.labels["query_id"].iloc[::-1].to_numpy())]
    table = pd.concat(frames, ignore_index=True).sample(frac=1.0, random_state=seed)
    return table["query_id"].to_numpy(dtype=object), table["doc_id"].to_numpy(dtype=object)


@pytest.mark.parametrize("name", FOLDERS)
def test_beir_labels_are_read_beirs_and_so_are_the_measures(data_dir, name):
    folder = data_dir / name
    queries, documents = pairs_of(folder)
    expected = old_labels(folder)
    found = pm.sideinfo.resolve(f"beir:{folder}").lookup(queries, documents, {})
    assert list(found) == [expected.get(pair) for pair in zip(queries, documents)]
    assert sum(value is not None for value in found) >= len(expected)

    data = read_beir(folder)
    run = data.labels[["query_id", "doc_id"]].assign(score=np.random.default_rng(1).random(len(data.labels)))
    groups = sorted(set(data.labels["group"]))
    by_resource = [pm.rKL(group=f"beir:{folder}") @ 10, pm.rND(group=f"beir:{folder}", protected=groups[0]) @ 10]
    by_column = [pm.rKL @ 10, pm.rND(protected=groups[0]) @ 10]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        new = ir_measures.calc_aggregate(by_resource, data.qrels, run)
        old = ir_measures.calc_aggregate(by_column, data.qrels, run.assign(group=[expected[p] for p in zip(
            run["query_id"], run["doc_id"])]))
    assert [new[m] for m in by_resource] == [old[m] for m in by_column]
    assert all(np.isfinite(new[m]) for m in by_resource)


@pytest.mark.parametrize("name", FOLDERS)
@pytest.mark.parametrize("field", TEXT_FIELDS)
def test_corpus_texts_are_read_beirs_by_id_and_as_a_collection(data_dir, name, field):
    folder = data_dir / name
    expected = old_texts(folder, field)
    source = pm.sideinfo.resolve(f"corpus:{folder}?fields={field}")
    ids = list(expected)[::-1] + ["no-such-document", list(expected)[0]]
    assert list(source.lookup(np.array(["q"] * len(ids), dtype=object), np.array(ids, dtype=object), {})) == \
        [expected.get(d) for d in ids]
    assert list(source.iter_texts()) == list(expected.values())  # every text, in the file's order


def test_a_term_measure_over_the_collection_is_read_beirs(data_dir):
    folder = data_dir / "grep-biasir"
    data = read_beir(folder)
    texts = old_texts(folder, "text")
    run = data.qrels[["query_id", "doc_id"]].assign(score=np.random.default_rng(2).random(len(data.qrels)))
    new = pm.NFaiRR(text=f"corpus:{folder}", background="collection") @ 10
    old_source = TextSource("old", texts=texts)
    measures = [new, pm.TExFAIR(text=f"corpus:{folder}") @ 10, pm.RaB(text=f"corpus:{folder}") @ 10]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values = ir_measures.calc_aggregate(measures, data.qrels, run)
        column = run.assign(text=[texts[d] for d in run["doc_id"]])
        plain = ir_measures.calc_aggregate([pm.TExFAIR @ 10, pm.RaB @ 10], data.qrels, column)
    assert [values[m] for m in measures[1:]] == [plain[pm.TExFAIR @ 10], plain[pm.RaB @ 10]]
    assert list(pm.sideinfo.resolve(f"corpus:{folder}").iter_texts()) == list(old_source.iter_texts())
    assert 0 < values[new] <= 1


@pytest.mark.parametrize("name", FOLDERS)
@pytest.mark.parametrize("text", TEXT_FIELDS)
def test_fit_sets_from_a_folder_are_read_beirs(data_dir, name, text):
    folder = data_dir / name
    positive = POSITIVE.get(name)
    expected = old_fit(folder, text, positive)
    assert FitSet.from_beir(folder, positive=positive, text=text) == expected
    option = f"&positive={positive}" if positive else ""
    source = pca_scheme(f"{folder}?text={text}{option}")
    assert source.model.fit == expected
    texts = old_texts(folder, text)
    ids = ["no-such-document", *texts]
    assert list(source.documents.lookup(np.array(["q"] * len(ids)), np.array(ids, dtype=object), {})) == \
        [texts.get(d) for d in ids]


@pytest.mark.parametrize("name", ["procon", "perspectrum"])  # (wiki-balance-sample: one labelled document a query)
def test_polarity_from_a_folder_is_read_beirs_value_for_value(data_dir, embedder, name):
    """The real model, a few queries: the scores of every ranked document and Duo@10 equal those of the resource
    built from read_beir (fit set and documents)."""
    folder = data_dir / name
    data = read_beir(folder)
    keep = sorted(set(data.labels["query_id"]))[:4]
    qrels = data.qrels[data.qrels["query_id"].isin(keep)]
    labelled = data.labels[data.labels["query_id"].isin(keep)]
    run = pd.concat([qrels[["query_id", "doc_id"]], labelled[["query_id", "doc_id"]]]).drop_duplicates()
    run = run.assign(score=np.random.default_rng(3).random(len(run)))
    old = PolaritySource(PolarityModel(fit=old_fit(folder, "text"), embedder=embedder),
                         TextSource(str(folder), texts=old_texts(folder, "text")))
    queries, documents = run["query_id"].to_numpy(dtype=object), run["doc_id"].to_numpy(dtype=object)
    expected = old.lookup(queries, documents, {})
    new = pm.sideinfo.resolve(f"pca:{folder}")
    assert np.array_equal(new.lookup(queries, documents, {}), expected, equal_nan=True)
    assert np.isfinite(expected).sum() >= len(run) // 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_resource = ir_measures.calc_aggregate([pm.Duo(rel=1, polarity=f"pca:{folder}") @ 10], qrels, run)
        by_column = ir_measures.calc_aggregate([pm.Duo(rel=1) @ 10], qrels, run.assign(polarity=expected))
    assert list(by_resource.values()) == list(by_column.values())


def beir_folder(root: Path, corpus: str, labels: str = "query-id\tcorpus-id\tgroup\nq1\td1\tp\n") -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(corpus)
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "a question"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    (root / "labels.tsv").write_text(labels)
    return root


@pytest.mark.parametrize("scheme", ["beir", "corpus", "pca"])
def test_bad_folders_are_errors_naming_the_file_and_line_as_before(tmp_path, scheme):
    good = json.dumps({"_id": "d1", "text": "one"}) + "\n"
    cases = {
        "a broken line": (good + '{"_id": "d2", "text": \n', "", r"corpus\.jsonl:2: not a JSON object"),
        "a repeated id": (good + good, "", r"corpus\.jsonl:2: id 'd1' already appears on line 1"),
        "an unknown document": (good, "query-id\tcorpus-id\tgroup\nq1\td1\tp\nq1\td9\tq\n",
                                r"labels\.tsv:3: document 'd9' is not in the corpus"),
    }
    for number, (corpus, labels, message) in enumerate(cases.values()):  # corpus: checks the labels too
        folder = beir_folder(tmp_path / str(number), corpus, *([labels] if labels else []))
        with pytest.raises(DataFileError, match=message):
            pm.sideinfo.resolve(f"{scheme}:{folder}")
        with pytest.raises(DataFileError, match=message):
            read_beir(folder)  # the same error as before
    missing = tmp_path / "missing"
    (missing / "qrels").mkdir(parents=True)
    (missing / "corpus.jsonl").write_text(good)
    with pytest.raises(pm.sideinfo.SideInfoError, match=rf"{scheme}:{missing}: '{missing}' is not a BEIR-layout folder: "
                                                        r"it has no queries\.jsonl \(nor queries\.jsonl\.gz\)"):
        pm.sideinfo.resolve(f"{scheme}:{missing}")
    with pytest.raises(pm.sideinfo.SideInfoError, match=rf"{scheme}:{tmp_path / 'none'}: .* does not exist"):
        pm.sideinfo.resolve(f"{scheme}:{tmp_path / 'none'}")


#: Reads a folder in a fresh interpreter as ``kind`` says, first a small one (whatever is imported or built once), then
#: the big one; prints the peak RSS the big one added, in MiB (the peak after minus the RSS before it: VmHWM, not
#: ru_maxrss, which on Linux starts at the RSS of the parent that forked the interpreter).
MEASURE = """
import json, sys
import numpy as np
import pairmeasures as pm
from pairmeasures.io.beir import read_beir
from pairmeasures.sideinfo.polarity import FitSet
def status(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":")) / 1024
def read(kind, folder, ids):
    if kind == "read_beir":
        return read_beir(folder)
    if kind == "fit":
        return FitSet.from_beir(folder)
    source = pm.sideinfo.resolve(f"{kind}:{folder}")
    if kind == "corpus":
        assert all(source.lookup(ids, ids, {}))
    elif kind == "beir":
        assert source.lookup(np.array(["q1"]), np.array(["d1"]), {})[0] == "pro"
    else:
        assert all(source.documents.lookup(ids, ids, {}))
    return source
kind, small, big = sys.argv[1:]
kept = read(kind, small, np.array(["d1", "d2"], dtype=object))
before = status("VmRSS")
kept = read(kind, big, np.array([f"d{i}" for i in range(0, 200_000, 997)], dtype=object))
print(json.dumps(status("VmHWM") - before))
"""


def write_folder(folder: Path, documents: int) -> float:
    """A BEIR folder of ``documents`` documents of 110 common words, one query, three labels; its corpus's MiB."""
    words = "the of and to in a is that for it as was with be by on not he this are or his from at".split()
    rng = np.random.default_rng(0)
    (folder / "qrels").mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w") as out:
        for number in range(documents):
            out.write(json.dumps({"_id": f"d{number}", "title": "",
                                  "text": " ".join(rng.choice(words, size=110))}) + "\n")
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "a question"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t1\n")
    (folder / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\nq1\td1\tpro\nq1\td2\tcon\nq1\td3\tcon\n")
    return (folder / "corpus.jsonl").stat().st_size / 2**20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_resources_of_a_folder_cost_memory_that_does_not_grow_with_its_corpus(tmp_path):
    """A 200,000-document corpus (83 MiB): read_beir adds more than the file's size (some 190 MiB); each resource
    (the first one building the store, the others opening it; then a few hundred texts fetched) and a fit set add
    under a tenth of it (some 3 MiB)."""
    small, big = tmp_path / "small", tmp_path / "big"
    write_folder(small, 5)
    size = write_folder(big, 200_000)

    def added(kind: str) -> float:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [CHECKOUT, os.environ.get("PYTHONPATH")])),
               "PAIRMEASURES_CACHE_DIR": str(tmp_path / "cache")}  # the first builds the store, the others open it
        done = subprocess.run([sys.executable, "-c", MEASURE, kind, str(small), str(big)], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return float(done.stdout.strip().splitlines()[-1])

    assert added("read_beir") > size  # the baseline: the whole corpus in memory (so the test can fail)
    found = {kind: added(kind) for kind in ("beir", "corpus", "pca", "fit")}
    assert all(value < size / 10 for value in found.values()), f"MiB added: {found}, corpus {size:.0f} MiB"
