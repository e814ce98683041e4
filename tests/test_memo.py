"""In-process caches follow the content of the files they were built from; pm.clear_caches() empties them."""

from __future__ import annotations

import json
import os
import sys
import threading
import warnings

import ir_measures
import numpy as np
import pandas as pd
import pytest

import pairmeasures as pm
from pairmeasures.io.memo import _MEMOS, Memo, content_key
from pairmeasures.math import rnd
from pairmeasures.sideinfo.termcount import TermCounter
from pairmeasures.sideinfo.termlists import Lexicon

QRELS = pd.DataFrame({"query_id": "q1", "doc_id": list("abcd"), "relevance": 1})
RUN = pd.DataFrame({"query_id": "q1", "doc_id": list("abcd"), "score": [4.0, 3.0, 2.0, 1.0]})


def value(measure, run=RUN, qrels=QRELS) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        return ir_measures.calc_aggregate([measure], qrels, run)[measure]


def rewrite(path, text: str) -> None:
    """Write ``text`` and move the modification time on, as an edit a while later would."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    os.utime(path, ns=(before + 10**9, before + 10**9))


def test_an_edited_tsv_file_gives_the_new_values_in_the_same_process(tmp_path):
    labels = tmp_path / "groups.tsv"
    rewrite(labels, "corpus-id\tgroup\na\tp\nb\tq\nc\tq\nd\tq\n")
    measure = pm.rND(group=f"tsv:{labels}", protected="p") @ 4
    assert value(measure) == pytest.approx(rnd([True, False, False, False]))
    rewrite(labels, "corpus-id\tgroup\na\tq\nb\tq\nc\tq\nd\tp\n")  # same size, moved mtime
    assert value(measure) == pytest.approx(rnd([False, False, False, True]))
    assert value(measure) != pytest.approx(rnd([True, False, False, False]))


def test_an_edited_beir_folder_gives_the_new_labels(tmp_path):
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "text": d}) + "\n" for d in "abcd"))
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "q"}) + "\n")
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q1\t{d}\t1\n" for d in "abcd"))
    (tmp_path / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\nq1\ta\tp\nq1\tb\tq\nq1\tc\tq\nq1\td\tq\n")
    measure = pm.rND(group=f"beir:{tmp_path}", protected="p") @ 4
    first = value(measure)
    assert first == pytest.approx(rnd([True, False, False, False]))
    rewrite(tmp_path / "labels.tsv", "query-id\tcorpus-id\tgroup\nq1\ta\tq\nq1\tb\tp\nq1\tc\tq\nq1\td\tq\n")
    assert value(measure) == pytest.approx(rnd([False, True, False, False])) != first


def test_an_edited_term_list_gives_the_new_counts(tmp_path):
    terms = tmp_path / "terms.csv"
    rewrite(terms, "term,group\nshe,female\nhe,male\n")
    run = RUN.assign(text=["he he said", "she said", "they said", "him and her"])
    measure = pm.RaB(terms=str(terms), variant="tc") @ 4
    before = value(measure, run)
    assert before == pytest.approx((2 - 1) / 4)
    rewrite(terms, "term,group\nshe,female\nher,female\nhe,male\nhim,male\n")
    assert value(measure, run) == pytest.approx((3 - 2) / 4)


def test_an_edited_corpus_gives_a_new_collection_ideal(tmp_path):
    def write_corpus(texts):
        rewrite(tmp_path / "corpus.jsonl", "".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in texts.items()))

    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "who"}) + "\n")
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\ta\t1\nq1\tb\t1\n")
    write_corpus({"a": "he he she", "b": "she she she", "c": "he and she"})
    run = pd.DataFrame({"query_id": "q1", "doc_id": ["a", "b"], "score": [2.0, 1.0]})
    qrels = pd.DataFrame({"query_id": "q1", "doc_id": ["a", "b"], "relevance": 1})
    measure = pm.NFaiRR(text=f"corpus:{tmp_path}", background="collection") @ 1
    assert value(measure, run, qrels) == pytest.approx(2 / 3)  # omega(a) = 2/3; the ideal is c, neutral
    write_corpus({"a": "he he she", "b": "she she she", "c": "he and he"})
    assert value(measure, run, qrels) == pytest.approx(1.0)  # now no document is more neutral than a


def test_clear_caches_empties_every_cache(tmp_path):
    labels = tmp_path / "groups.tsv"
    labels.write_text("corpus-id\tgroup\na\tp\nb\tq\nc\tq\nd\tq\n")
    measure = pm.rND(group=f"tsv:{labels}", protected="p") @ 4
    expected = value(measure)
    value(pm.RaB @ 4, RUN.assign(text="she said"))
    assert sum(len(memo) for memo in _MEMOS) >= 2
    pm.clear_caches()
    assert all(len(memo) == 0 for memo in _MEMOS)
    assert value(measure) == expected
    assert "clear_caches" in pm.__all__ and pm.clear_caches.__doc__


def test_content_key_covers_files_and_every_file_of_a_folder(tmp_path):
    assert content_key(tmp_path / "absent") is None
    (tmp_path / "sub").mkdir()
    rewrite(tmp_path / "sub" / "x.tsv", "1")
    folder = content_key(tmp_path)
    rewrite(tmp_path / "sub" / "x.tsv", "2")
    assert content_key(tmp_path) != folder
    assert content_key(tmp_path / "sub" / "x.tsv")[0] == str((tmp_path / "sub" / "x.tsv").resolve())


def test_a_memo_rebuilds_a_slot_for_a_new_version_and_keeps_one_entry():
    memo = Memo("test")
    try:
        built = []
        assert memo.get("s", 1, lambda: built.append(1) or "one") == "one"
        assert memo.get("s", 1, lambda: built.append(2) or "again") == "one"
        assert memo.get("s", 2, lambda: built.append(3) or "two") == "two"
        assert built == [1, 3] and len(memo) == 1
    finally:
        _MEMOS.remove(memo)


def test_a_term_counter_shared_by_threads_counts_each_batch_as_alone():
    lexicon = Lexicon._parse(["she,female", "he,male", "her,female", "him,male"], "test", "words", "error")
    rng = np.random.default_rng(0)
    words = ["she", "he", "her", "him", "the", "a", "said"]
    batches = [[" ".join(rng.choice(words, size=rng.integers(1, 12))) + f" {b} {i}" for i in range(40)]
               for b in range(12)]
    alone = [TermCounter(lexicon).count(batch).group_counts() for batch in batches]
    shared = TermCounter(lexicon)
    shared.MEMO_LIMIT = 60  # the store starts afresh often, while other threads read it
    results: dict = {}
    errors: list = []

    def work(b: int) -> None:
        try:
            for _ in range(20):
                counts = shared.count(batches[b]).group_counts()
                if not np.array_equal(counts, alone[b]):
                    results[b] = counts
                    return
            results.setdefault(b, None)
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(b,)) for b in range(len(batches))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors
    assert [b for b, wrong in results.items() if wrong is not None] == []
