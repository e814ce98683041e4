"""Long labelled documents as polarity training examples (pairmeasures.train.long_documents)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pairmeasures.train.long_documents import WHOLE_DOCUMENTS, chunk_sentences, long_document_chunks, split_sentences


def write_folder(root: Path, documents: list[tuple[str, str, str, str]], labels: bool = True) -> Path:
    """A BEIR folder from (query id, doc id, label, text) rows; each query's text is 'claim <id>'."""
    root.mkdir()
    (root / "qrels").mkdir()
    queries = dict.fromkeys(q for q, _, _, _ in documents)
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": f"claim {q}"}) + "\n" for q in queries))
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n"
                                               for _, d, _, t in documents))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n"
                                                                                      for q, d, _, _ in documents))
    if labels:
        (root / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\n" + "".join(f"{q}\t{d}\t{g}\n"
                                                                                 for q, d, g, _ in documents))
    return root


def test_sentences_split_at_final_punctuation_and_line_breaks():
    text = 'Taxes fund "schools." Roads matter too! Do they? (Yes.) 3 studies agree.\n\nA new paragraph e.g. here'
    assert split_sentences(text) == ['Taxes fund "schools."', "Roads matter too!", "Do they?", "(Yes.)",
                                     "3 studies agree.", "A new paragraph e.g. here"]
    assert split_sentences("  ") == []


def test_chunks_group_consecutive_sentences():
    assert chunk_sentences(["a.", "b.", "c.", "d."], 3) == ["a. b. c.", "d."]
    assert chunk_sentences(["a.", "b."], WHOLE_DOCUMENTS) == ["a. b."]
    for size in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="positive number of sentences"):
            chunk_sentences(["a."], size)


def test_chunks_carry_their_documents_stance_and_a_prefixed_claim(tmp_path):
    folder = write_folder(tmp_path / "long", [
        ("1", "a", "p1", "One. Two. Three. Four."),
        ("1", "b", "p2", "Five. Six."),
        ("2", "c", "p1", "Only one side here."),
    ])
    chunks = long_document_chunks(folder, sentences=2)
    assert chunks.query_ids == ["long/1", "long/1", "long/1"]
    assert chunks.texts == ["One. Two.", "Three. Four.", "Five. Six."]
    assert chunks.stances == [1, 1, 0]
    assert chunks.source["queries_left_out"] == 1 and chunks.source["positive"] == "p1"
    assert chunks.dataset().to_dict() == {"query_id": chunks.query_ids, "text": chunks.texts, "stance": [1, 1, 0]}
    assert long_document_chunks(folder, sentences=2, positive="p2").stances == [0, 0, 1]


def test_a_folder_without_labels_is_refused(tmp_path):
    folder = write_folder(tmp_path / "unlabelled", [("1", "a", "p1", "One.")], labels=False)
    with pytest.raises(FileNotFoundError, match="labels.tsv"):
        long_document_chunks(folder)


def test_wiki_balance_chunks(data_dir):
    chunks = long_document_chunks(data_dir / "wiki-balance-sample", sentences=3)
    assert chunks.source["queries"] == 44 and chunks.source["documents"] == 89
    assert len(chunks) > 400 and all(q.startswith("wiki-balance-sample/") for q in chunks.query_ids)
    assert set(chunks.stances) == {0, 1}
