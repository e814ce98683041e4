"""One corpus source (``pm.datasets.open_corpus``): a dataset id and a BEIR folder give the same records, documents
are served by id, each dataset says its default text field and term list, and nothing else in the package decides
whether a name is a dataset or a folder."""

from __future__ import annotations

import ast
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

import pairmeasures as pm
from pairmeasures.datasets.corpus import CorpusSourceError, MissingDocumentsError, open_corpus

PACKAGE = Path(pm.__file__).resolve().parent


def write_folder(root: Path, labels: dict) -> Path:
    """A BEIR folder of two queries and four documents, labelled ``labels`` (doc -> group)."""
    (root / "qrels").mkdir(parents=True)
    docs = {"d1": ("Title one", "first text"), "d2": ("", "second text"), "d3": ("T3", "third"), "d4": ("", "fourth")}
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": t, "text": x}) + "\n"
                                               for d, (t, x) in docs.items()))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "one", "topic": "a"}) + "\n" +
                                        json.dumps({"_id": "q2", "text": "two", "topic": "b"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq2\td3\t1\nq2\td4\t1\n")
    (root / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\n" + "".join(
        f"{'q1' if d in ('d1', 'd2') else 'q2'}\t{d}\t{g}\n" for d, g in labels.items()))
    return root


def test_a_folder_serves_documents_by_id_and_says_its_defaults(tmp_path):
    corpus = open_corpus(write_folder(tmp_path / "debates", {"d1": "pro", "d2": "con", "d3": "pro", "d4": "con"}))
    assert corpus.is_folder and corpus.default_text == "text" and corpus.term_list is None
    assert corpus.texts(["d3", "d1"]) == ["third", "first text"]
    assert corpus.texts(["d1", "d2"], "title+text") == ["Title one first text", "second text"]
    assert corpus.texts(["d2"], "title") == ["second text"]  # an empty title falls back to the text
    assert corpus.missing(["d1", "x", "y", "x"]) == ["x", "y"]
    with pytest.raises(MissingDocumentsError, match="document 'x' is not in .*1 of the 2"):
        corpus.texts(["d1", "x"])
    assert [r["doc_id"] for r in corpus.docs_iter()] == ["d1", "d2", "d3", "d4"] and corpus.docs_count() == 4
    assert corpus.query_records()["q2"]["topic"] == "b"
    assert list(corpus.qrels().columns) == ["query_id", "doc_id", "relevance"] and len(corpus.labels()) == 4
    assert set(corpus.files()) == {"corpus.jsonl", "queries.jsonl", "labels.tsv", os.path.join("qrels", "test.tsv")}


def test_gender_labels_make_the_gender_term_list_apply(tmp_path):
    corpus = open_corpus(write_folder(tmp_path / "g", {"d1": "male", "d2": "female", "d3": "neutral", "d4": "male"}))
    assert corpus.term_list == "gender"


def test_version_follows_the_documents_and_opening_reads_nothing(tmp_path, monkeypatch):
    folder = write_folder(tmp_path / "v", {"d1": "pro", "d2": "con", "d3": "pro", "d4": "con"})
    from pairmeasures.io.docstore import stores_folder
    from pairmeasures.io.memo import clear_caches

    monkeypatch.setenv("PAIRMEASURES_CACHE_DIR", str(tmp_path / "cache"))
    first = open_corpus(folder).version()
    assert open_corpus(str(folder)).version() == first and not stores_folder().exists()  # a version is read from file stats
    assert open_corpus(folder).texts(["d1"]) == ["first text"]
    (store,) = stores_folder().iterdir()
    built = store.stat().st_mtime_ns
    clear_caches()
    assert open_corpus(folder).texts(["d4"]) == ["fourth"] and store.stat().st_mtime_ns == built  # the store is reused
    with (folder / "corpus.jsonl").open("a") as handle:
        handle.write(json.dumps({"_id": "d5", "text": "fifth"}) + "\n")
    assert open_corpus(folder).version() != first
    assert open_corpus(folder).texts(["d5"]) == ["fifth"]  # the changed file is read again, into a new store
    assert [p.name for p in stores_folder().iterdir()] != [store.name] and len(list(stores_folder().iterdir())) == 1


def test_unknown_names_get_a_suggestion(tmp_path):
    with pytest.raises(CorpusSourceError, match="did you mean 'pair/procon'.*BEIR-layout folder"):
        open_corpus("pair/procn")
    with pytest.raises(CorpusSourceError, match="corpus.jsonl"):
        open_corpus(tmp_path).version()
    assert issubclass(CorpusSourceError, ValueError) and pm.RetrievalSourceError is CorpusSourceError


def test_a_dataset_id_and_its_mirror_folder_agree(data_mirror):
    by_id = open_corpus("irds:pair/procon")
    folder = open_corpus(data_mirror / "procon")
    assert by_id.name == by_id.source == "pair/procon" and not by_id.is_folder
    assert folder.source == str((data_mirror / "procon").resolve())
    assert by_id.query_records().keys() == folder.query_records().keys()
    pd.testing.assert_frame_equal(by_id.qrels(), folder.qrels())
    pd.testing.assert_frame_equal(by_id.labels(), folder.labels())
    ids = [r["doc_id"] for r in folder.docs_iter()][::97]
    assert by_id.texts(ids, "title+text") == folder.texts(ids, "title+text")
    assert by_id.docs_count() == folder.docs_count()
    assert open_corpus("pair/grep-biasir").default_text == "title+text"  # from the dataset's spec, not its name
    assert open_corpus("pair/grep-biasir").term_list == "gender" and by_id.term_list is None


def test_a_copied_grep_folder_keeps_its_labels_term_list(data_dir, tmp_path):
    folder = shutil.copytree(data_dir / "grep-biasir", tmp_path / "grep")
    assert open_corpus(folder).term_list == "gender"  # female/male labels


def test_msmarco_gender_documents_come_from_ir_datasets_by_id(msmarco_miniature):
    corpus = open_corpus("pair/msmarco-passage/dev/gender-qs2")
    assert corpus.documents_from == "msmarco-passage/dev" and corpus.term_list == "gender"
    passages = msmarco_miniature.passages
    assert corpus.texts(passages[:3]) == [f"miniature passage {p}" for p in passages[:3]]
    assert corpus.missing([passages[0], "no-such-passage"]) == ["no-such-passage"]
    assert set(corpus.qrels()["query_id"]) <= set(corpus.query_records())
    import ir_datasets

    version = corpus.version()  # from the collection's metadata: its 8.8M passages are never iterated for it
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(type(ir_datasets.load("msmarco-passage/dev").docs_handler()), "docs_iter",
                      lambda self: pytest.fail("iterated the collection to find its version"))
        assert open_corpus("pair/msmarco-passage/dev/gender-qs1").version() == version
    profile = pm.datasets.load_profile("pair/msmarco-passage/dev/gender-qs2")  # the audit reads it (test_msmarco.py)
    assert len(profile.queries) == 215 and profile.terms and profile.labels is None
    dl19 = open_corpus("pair/msmarco-passage/trec-dl-2019/gender")
    assert dl19.index_name == corpus.index_name == "msmarco-passage"  # one collection, one index for every query set


def test_only_the_corpus_module_tells_a_dataset_id_from_a_folder():
    """The one place: no other module of the package asks whether a dataset name is a folder."""
    allowed = {"datasets/corpus.py", "io/beir.py", "train/data.py", "generate/queries.py"}
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "is_dir":
                text = ast.unparse(node.func.value)
                if any(word in text for word in ("source", "dataset", "corpus")):
                    offenders.append(f"{relative}:{node.lineno}: {text}.is_dir()")
    assert not offenders, offenders


def test_a_dataset_ids_files_are_keyed_by_their_place_in_the_mirror_wherever_it_lies(data_mirror, tmp_path):
    """Manifests and the run cache key a dataset id's files relative to the mirror, as a folder's are relative to it:
    the same on every machine, and distinct for each file of each resource."""
    from pairmeasures.datasets.profile import load_profile

    here = open_corpus("pair/procon", data_mirror).files()
    assert set(here) == {"procon/corpus.jsonl", "procon/queries.jsonl", "procon/qrels/test.tsv", "procon/labels.tsv"}
    elsewhere = tmp_path / "mirror"
    elsewhere.mkdir()
    (elsewhere / "procon").symlink_to(data_mirror / "procon")
    assert open_corpus("pair/procon", elsewhere).files() == here  # another place, the same content: the same keys
    assert load_profile("pair/procon", elsewhere).run_key() == load_profile("pair/procon", data_mirror).run_key()
    assert here == {f"procon/{name}": sha for name, sha in open_corpus(data_mirror / "procon").files().items()}

    mirror = tmp_path / "wiki"  # two resources, a folder and a file, each with its own files: no key is shared
    (mirror / "wiki-balance-synthetic" / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        (mirror / "wiki-balance-synthetic" / name).write_text(name)
    (mirror / "wiki-balance-categories.tsv").write_text("categories")
    files = open_corpus("pair/wiki-balance/synthetic", mirror).files()
    assert set(files) == {"wiki-balance-synthetic/corpus.jsonl", "wiki-balance-synthetic/queries.jsonl",
                          "wiki-balance-synthetic/qrels/test.tsv", "wiki-balance-categories.tsv"}
    assert len(set(files.values())) == 4
