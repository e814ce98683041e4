"""Long labelled documents as polarity training examples: each document cut into chunks of a few sentences,
every chunk labelled with its document's perspective (issue 14, "Long documents").

A fine-tuned polarity model sees short claims and perspectives; long natural arguments mix claims, evidence
and hedging. Chunks of long documents whose stance is known (e.g. Wiki-Balance Synthetic's p1/p2 documents)
add that kind of text to training. Sentences are split by a small rule (below) rather than a tokenizer
package: the data are edited prose, and the rule needs no model download.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

__all__ = ["split_sentences", "chunk_sentences", "LongDocumentChunks", "long_document_chunks"]

#: A sentence ends at ., ! or ? (optionally followed by a closing quote or bracket) before whitespace and an
#: upper-case letter, a digit or an opening quote or bracket; a line break always ends one. Abbreviations such as
#: "Dr." before a name end a sentence too: a chunk boundary in the wrong place costs little here.
_BOUNDARY = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+(?=[A-Z0-9\"“‘(\[])|\s*\n+\s*")


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (non-empty, stripped), split at sentence-final punctuation and line breaks."""
    return [part.strip() for part in _BOUNDARY.split(text) if part and part.strip()]


def chunk_sentences(sentences: list[str], size: int) -> list[str]:
    """Consecutive, non-overlapping groups of ``size`` sentences joined by a space (the last may be shorter)."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"the chunk size must be a positive number of sentences, got {size!r}")
    return [" ".join(sentences[start:start + size]) for start in range(0, len(sentences), size)]


@dataclass(frozen=True)
class LongDocumentChunks:
    """Training examples in columns: the claim (query id), the chunk text and its document's perspective."""

    query_ids: list[str]
    texts: list[str]
    labels: list[str]
    source: dict

    def __len__(self) -> int:
        return len(self.texts)


def long_document_chunks(folder: str | os.PathLike, *, sentences: int = 3, text: str = "text") -> LongDocumentChunks:
    """Chunks of ``sentences`` sentences of every labelled document of the BEIR-layout ``folder``.

    Only queries with documents of two perspectives are kept: a chunk teaches the axis only against chunks
    of the other side of the same claim. A chunk carries its document's label for that query (``labels.tsv``).
    """
    from ..sideinfo.beir import read_beir

    data = read_beir(folder)
    if data.labels is None:
        raise FileNotFoundError(f"{str(data.path)!r} has no labels.tsv (query-id, corpus-id, group): long documents "
                                "for training need the perspective of each document")
    frame = data.fit_frame(text)
    frame["label"] = frame["label"].astype(str)
    sides = frame.groupby("qid")["label"].nunique()
    frame = frame[frame["qid"].isin(sides.index[sides == 2])]
    query_ids, texts, labels = [], [], []
    for qid, document, label in zip(frame["qid"], frame["text"], frame["label"]):
        for chunk in chunk_sentences(split_sentences(document), sentences):
            query_ids.append(str(qid))
            texts.append(chunk)
            labels.append(label)
    source = {"folder": str(data.path), "text": text, "sentences_per_chunk": sentences,
              "queries": int(frame["qid"].nunique()), "documents": int(len(frame)), "chunks": len(texts),
              "queries_with_one_perspective_left_out": int((sides != 2).sum())}
    return LongDocumentChunks(query_ids, texts, labels, source)
