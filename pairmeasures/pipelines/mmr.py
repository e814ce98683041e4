"""Maximal Marginal Relevance on each query's top ``k``: ``pyterrier_dr.MMR``'s rule, vectorised across queries,
with the documents below ``k`` kept in input order (as :class:`~pairmeasures.pipelines.duogreedy.DuoGreedy` does)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd
import pyterrier as pt

from .duogreedy import reordered

__all__ = ["TopKMMR"]


class TopKMMR(pt.Transformer):
    """Reorders each query's top ``k`` documents by MMR (Carbonell and Goldstein, 1998) on the ``doc_vec`` column.

    Step by step, the next document is the unpicked one maximising
    ``Lambda * score - (1 - Lambda) * max(cos(doc_vec, picked doc_vec))`` (the max is 0 before the first pick),
    as ``pyterrier_dr.MMR`` with its defaults does, but only over the top ``k`` (by input rank), and with
    ``Lambda=1`` keeping the input order. Documents below ``k`` keep their order and stay below. ``doc_vec``
    is read from the input, or, with ``encoder`` (e.g. ``pm.bi_encoder().doc_encoder()``), computed for the top
    ``k`` only, and is dropped from the output; ``score`` becomes ``n - rank`` (``n``
    documents of the query) and ``rank`` is recomputed; every other column is kept.
    """

    def __init__(self, Lambda: float = 0.5, k: int = 10, *, encoder: Optional[pt.Transformer] = None):
        if isinstance(Lambda, bool) or not isinstance(Lambda, (int, float, np.integer, np.floating)) or not 0 <= Lambda <= 1:
            raise ValueError(f"Lambda must be a number in [0, 1] (1 keeps the input order, 0 diversifies most), got {Lambda!r}")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be a positive integer (how many top documents to reorder), got {k!r}")
        self.Lambda = float(Lambda)
        self.k = int(k)
        self.encoder = encoder

    def __repr__(self) -> str:
        return f"TopKMMR(Lambda={self.Lambda}, k={self.k}, encoder={self.encoder!r})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        try:
            pt.validate.result_frame(inp, extra_columns=[] if self.encoder is not None else ["doc_vec"])
        except pt.validate.InputValidationError as error:
            raise pt.validate.InputValidationError(
                "TopKMMR compares document vectors: give it encoder=pm.bi_encoder().doc_encoder() or put that "
                f"encoder before it. {error.args[0]}", error.modes) from error
        by_rank = "rank" in inp.columns
        frame = inp.sort_values(["qid", "rank" if by_rank else "score"], ascending=[True, by_rank],
                                kind="stable").reset_index(drop=True)
        qids = frame["qid"].to_numpy()
        starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]]) if len(qids) else np.zeros(0, dtype=np.int64)
        offsets = np.r_[starts, len(qids)].astype(np.int64)
        lengths = np.diff(offsets)
        order = np.arange(len(frame))
        if self.Lambda < 1.0 and len(frame):
            heads = np.minimum(lengths, self.k)
            width = int(heads.max())
            valid = np.arange(width)[None, :] < heads[:, None]
            rows = np.where(valid, starts[:, None] + np.arange(width)[None, :], starts[:, None])  # padding: masked
            head = frame.iloc[rows[valid]]
            if self.encoder is not None:
                head = self.encoder(head.drop(columns="doc_vec", errors="ignore"))
            # the unit vectors of the top k rows only (the padding repeats each query's first row, a top row too)
            vectors = np.stack(head["doc_vec"].to_numpy()).astype(np.float64)
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), np.finfo(float).tiny)
            place = np.zeros(len(frame), dtype=np.int64)
            place[rows[valid]] = np.arange(len(vectors))
            picked = _mmr(frame["score"].to_numpy(dtype=np.float64)[rows], vectors[place[rows]], valid, self.Lambda)
            order[rows[valid]] = np.take_along_axis(rows, picked, axis=1)[valid]
        frame = frame.drop(columns="doc_vec", errors="ignore")
        if len(frame) == 0:
            return pt.model.add_ranks(frame.assign(score=pd.Series(dtype=float)))
        return reordered(frame, order, offsets)


def _mmr(scores: np.ndarray, vectors: np.ndarray, valid: np.ndarray, Lambda: float) -> np.ndarray:
    """Positions ``(queries, width)`` of the MMR order of each padded row of ``scores`` (``valid`` marks real
    documents; padding comes last): at each step ``argmax Lambda * s - (1 - Lambda) * max_sim_to_picked``."""
    queries, width = scores.shape
    similarity = vectors @ vectors.transpose(0, 2, 1)  # (queries, width, width) cosine similarities
    redundancy = np.zeros((queries, width))
    available = valid.copy()
    picked = np.zeros((queries, width), dtype=np.int64)
    everyone = np.arange(queries)
    for step in range(width):
        gain = np.where(available, Lambda * scores - (1 - Lambda) * redundancy, -np.inf)
        best = gain.argmax(axis=1)
        has = available.any(axis=1)
        best = np.where(has, best, step)  # padding keeps its place
        picked[:, step] = best
        available[everyone, best] = False
        redundancy = np.maximum(redundancy, similarity[everyone, best])
    return picked
