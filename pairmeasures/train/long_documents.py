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
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import datasets

__all__ = ["split_sentences", "chunk_sentences", "LongDocumentChunks", "long_document_chunks", "WHOLE_DOCUMENTS"]

#: ``sentences=WHOLE_DOCUMENTS`` keeps each document whole (one chunk).
WHOLE_DOCUMENTS = 10**9

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
    """Training examples in columns (:data:`pairmeasures.train.polarity.EXAMPLE_COLUMNS`): the claim's query id,
    prefixed with its folder's name so it cannot be mistaken for a claim of the training folder, the chunk, and its
    document's stance (1: the positive perspective)."""

    query_ids: list[str]
    texts: list[str]
    stances: list[int]
    source: dict

    def __len__(self) -> int:
        return len(self.texts)

    def dataset(self) -> "datasets.Dataset":
        """The ``extra_examples`` of :func:`pairmeasures.train.polarity.train_polarity`."""
        from datasets import Dataset

        return Dataset.from_dict({"query_id": self.query_ids, "text": self.texts, "stance": self.stances})


def long_document_chunks(folder: str | os.PathLike, *, sentences: int = 3, text: str = "text",
                         positive: Optional[str] = None) -> LongDocumentChunks:
    """Chunks of ``sentences`` sentences of every labelled document of the BEIR-layout ``folder``.

    Only queries with documents of exactly two perspectives, one of them ``positive`` (default: the first of
    :data:`pairmeasures.sideinfo.polarity.POSITIVE_LABELS` present), are kept: a chunk teaches the axis only
    against chunks of the other side of the same claim. A chunk's stance is its document's label for that query.
    """
    from ..io.beir import read_beir
    from ..sideinfo.polarity import default_positive

    chunk_sentences([], sentences)  # checks the size before reading anything
    data = read_beir(folder)
    if data.labels is None:
        raise FileNotFoundError(f"{str(data.path)!r} has no labels.tsv (query-id, corpus-id, group): long documents "
                                "for training need the perspective of each document")
    frame = data.fit_frame(text)
    frame["label"] = frame["label"].astype(str)
    if positive is None:
        positive = default_positive(sorted(frame["label"].unique())) or ""
    sides = frame.groupby("qid")["label"].agg(lambda column: frame_sides(column, positive))
    frame = frame[frame["qid"].isin(sides.index[sides])]
    query_ids, texts, stances = [], [], []
    for qid, document, label in zip(frame["qid"], frame["text"], frame["label"]):
        for chunk in chunk_sentences(split_sentences(document), sentences):
            query_ids.append(f"{data.path.name}/{qid}")
            texts.append(chunk)
            stances.append(int(label == positive))
    source = {"folder": str(data.path), "text": text, "positive": positive, "sentences_per_chunk": sentences,
              "queries": int(frame["qid"].nunique()), "documents": int(len(frame)), "chunks": len(texts),
              "queries_left_out": int((~sides).sum())}
    return LongDocumentChunks(query_ids, texts, stances, source)


def frame_sides(labels, positive: str) -> bool:
    """Whether one query's document ``labels`` are exactly two perspectives, one of them ``positive``."""
    names = set(labels)
    return len(names) == 2 and positive in names
