"""A BEIR folder's documents in an on-disk store (``pairmeasures.io.docstore``): read once per version of
``corpus.jsonl``, checked line by line as ``read_beir`` checks them, served by id from any thread or process,
and hashed in the same pass for manifests."""

from __future__ import annotations

import gzip
import json
import pickle
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pairmeasures.datasets.corpus import open_corpus
from pairmeasures.io.beir import DataFileError, read_beir
from pairmeasures.io.docstore import stores_folder
from pairmeasures.io.memo import clear_caches, sha256_file


def folder_of(root: Path, lines: list, gz: bool = False) -> Path:
    (root / "qrels").mkdir(parents=True)
    body = "".join(line + "\n" for line in lines).encode()
    if gz:
        (root / "corpus.jsonl.gz").write_bytes(gzip.compress(body))
    else:
        (root / "corpus.jsonl").write_bytes(body)
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "one"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return root


def doc(doc_id: str, text: str, **fields) -> str:
    return json.dumps({"_id": doc_id, "text": text, **fields})


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PAIRMEASURES_CACHE_DIR", str(tmp_path / "cache"))
    clear_caches()


@pytest.mark.parametrize("gz", [False, True])
def test_records_are_those_read_beir_reads_and_the_hash_is_the_files(tmp_path, gz):
    folder = folder_of(tmp_path / "c", [doc("d1", "first", title="T", categories=["a", "b"]), "",
                                        doc("d2", "sécond", title=None, metadata={"n": 2}), doc(3, "third")], gz)
    corpus, expected = open_corpus(folder), read_beir(folder).corpus
    assert corpus.documents(["d2", "3", "d1", "nope"]) == {d: expected[d] for d in ("d2", "3", "d1")}
    assert [r["doc_id"] for r in corpus.docs_iter()] == ["d1", "d2", "3"] and corpus.docs_count() == 3
    assert corpus.texts(["d1", "3"], "title+text") == ["T first", "third"]
    name = "corpus.jsonl.gz" if gz else "corpus.jsonl"
    assert corpus.files()[name] == sha256_file(folder / name)


@pytest.mark.parametrize("lines, line, problem", [
    ([doc("d1", "a"), doc("d2", "b"), doc("d1", "c")], 3, "id 'd1' already appears on line 1"),
    ([doc("d1", "a"), '{"_id": "d2", "text": "cut'], 2, "not a JSON object"),
    ([doc("d1", "a"), json.dumps({"_id": "d2"})], 2, "record has no 'text' field"),
    ([doc("d1", "a"), json.dumps({"_id": "", "text": "x"})], 2, "empty '_id'"),
    ([doc("d1", "a"), doc("d2", "b", title=3)], 2, "record 'd2': title must be text"),
    ([doc("d1", "a"), "[1, 2]"], 2, "expected a JSON object, got list"),
])
def test_a_malformed_corpus_names_the_file_and_line_and_leaves_no_store(tmp_path, lines, line, problem):
    corpus = open_corpus(folder_of(tmp_path / "bad", lines))
    with pytest.raises(DataFileError, match=f"corpus.jsonl:{line}: .*{problem}"):
        corpus.texts(["d1"])
    assert not any(p.suffix == ".sqlite" for p in stores_folder().iterdir())


def test_qrels_naming_a_document_the_corpus_lacks_name_the_line(tmp_path):
    folder = folder_of(tmp_path / "q", [doc("d1", "a")])
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td9\t0\n")
    with pytest.raises(DataFileError, match=r"test.tsv:3: document 'd9' is not in the corpus"):
        open_corpus(folder).qrels()


def test_a_corrupt_gzip_names_the_line(tmp_path):
    folder = folder_of(tmp_path / "z", [doc(f"d{i}", "text " * 50) for i in range(1, 200)], gz=True)
    data = (folder / "corpus.jsonl.gz").read_bytes()
    (folder / "corpus.jsonl.gz").write_bytes(data[:len(data) // 2])
    with pytest.raises(DataFileError, match="corpus.jsonl.gz:.*corrupt or cut short"):
        open_corpus(folder).texts(["d1"])


def test_served_from_threads_after_pickling_and_in_another_process_without_reading_again(tmp_path):
    folder = folder_of(tmp_path / "t", [doc(f"d{i}", f"text {i}") for i in range(1, 501)])
    corpus = open_corpus(folder)
    assert corpus.texts(["d7"]) == ["text 7"]
    (store,) = stores_folder().glob("*.sqlite")
    built = store.stat().st_mtime_ns
    copy = pickle.loads(pickle.dumps(corpus))
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: copy.texts([f"d{i}", f"d{501 - i}"]), range(1, 501)))
    assert got == [[f"text {i}", f"text {501 - i}"] for i in range(1, 501)]
    streamed = [(r["doc_id"], corpus.texts([r["doc_id"]])[0]) for r in corpus.docs_iter()]  # lookups while streaming
    assert streamed == [(f"d{i}", f"text {i}") for i in range(1, 501)]
    code = ("import sys; from pairmeasures.datasets.corpus import open_corpus; "
            "print(open_corpus(sys.argv[1]).texts(['d500'])[0])")
    done = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "text 500" and store.stat().st_mtime_ns == built
    assert corpus.missing(["d1", "x", "d2", "x"]) == ["x"]
