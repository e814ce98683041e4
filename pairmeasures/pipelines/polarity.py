"""A PyTerrier transformer that adds a ``polarity`` column to result frames, to every row or to each query's top
rows only (``depth``: what the measures or a re-ranker read)."""

from __future__ import annotations

import warnings
from typing import Optional

import numpy as np
import pandas as pd
import pyterrier as pt

from ..sideinfo.polarity import PolarityModel

__all__ = ["PolarityScorer", "top_rows"]


def top_rows(frame: pd.DataFrame, depth: Optional[int]) -> np.ndarray:
    """Which rows of ``frame`` can be among their query's first ``depth`` documents (a boolean mask; all for
    ``None``), cut generously so that every order a measure or re-ranker may use is covered: a row is kept when its
    score is at least the ``depth``-th highest score of its query (so every document tied with the ``depth``-th is
    kept, whatever breaks the tie: the system's ``rank``, as ``ties='system'`` does, or the document id, as
    trec_eval does), or when its ``rank`` is below ``depth``. A frame without ``score`` is cut by ``rank`` alone,
    one with neither keeps every row."""
    rows = len(frame)
    if depth is None or rows == 0:
        return np.ones(rows, dtype=bool)
    keep = np.zeros(rows, dtype=bool)
    if "rank" in frame.columns:
        ranks = pd.to_numeric(frame["rank"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        keep |= ~(ranks >= depth)  # a missing rank keeps its row
    if "score" in frame.columns:
        codes = pd.factorize(frame["qid"])[0]
        scores = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        order = np.lexsort((-scores, codes))  # by query, then score descending (NaN last)
        counts = np.bincount(codes, minlength=int(codes.max()) + 1)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        threshold = np.full(counts.size, -np.inf)
        deep = counts > depth
        threshold[deep] = scores[order[starts[deep] + depth - 1]]
        keep |= ~(scores < threshold[codes])  # a NaN score keeps its row: the measures report it
    elif "rank" not in frame.columns:
        keep[:] = True
    return keep


class PolarityScorer(pt.Transformer):
    """Adds ``polarity`` (a float, or a list of floats for several axes) to each retrieved document.

    Document text comes from the ``text_field`` column; when the frame lacks it and a
    ``dataset`` is given, it is fetched with ``pt.text.get_text``. Axes are fitted per query by
    the :class:`~pairmeasures.sideinfo.polarity.PolarityModel` (on its fit set, or on the
    retrieved documents themselves) and embeddings are cached, so scoring several pipelines over
    one corpus embeds each document once. ``errors="skip"`` leaves NaN for queries whose axes
    cannot be fitted (reported in one warning) instead of raising.

    ``depth``: score only the rows that can be among each query's first ``depth`` documents (:func:`top_rows`: every
    row tied with the ``depth``-th by score is scored too) and leave NaN below, so that only what a measure ``@depth``
    or a re-ranker of the top ``depth`` reads is embedded. A model whose axes are fitted on the scored documents
    themselves (``fit=None``) scores every row whatever ``depth`` says: its axes depend on all of a query's
    candidates. ``rows`` and ``scored`` count the rows seen and scored (text embedded) so far.
    """

    def __init__(self, model: PolarityModel, *, text_field: str = "text", dataset=None, errors: str = "raise",
                 depth: Optional[int] = None):
        if errors not in ("raise", "skip"):
            raise ValueError(f"errors must be 'raise' or 'skip', got {errors!r}")
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1):
            raise ValueError(f"depth must be a positive integer (the top rows per query to score) or None, got {depth!r}")
        self.model = model
        self.text_field = text_field
        self.dataset = dataset
        self.errors = errors
        self.depth = None if depth is None else int(depth)
        self.rows = self.scored = 0

    def __repr__(self) -> str:
        depth = "" if self.depth is None else f", depth={self.depth}"
        return f"PolarityScorer({self.model.embedder.model_name!r}, components={self.model.components}{depth})"

    @property
    def effective_depth(self) -> Optional[int]:
        """The depth scored: ``depth``, or ``None`` (every row) for a model fitted on the candidates."""
        return None if self.model.fit is None else self.depth

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        if self.text_field not in inp.columns and self.dataset is not None:
            inp = pt.text.get_text(self.dataset, self.text_field)(inp)
        pt.validate.result_frame(inp, extra_columns=[self.text_field])
        if len(inp) == 0:
            return inp.assign(polarity=pd.Series(dtype=float if self.model.components == 1 else object))
        keep = top_rows(inp, self.effective_depth)
        rows = np.flatnonzero(keep)
        before = set(self.model.skipped)
        column = inp[self.text_field]
        texts = column.tolist() if rows.size == len(inp) else column.iloc[rows].tolist()
        wrong = next((row for row, text in enumerate(texts) if not isinstance(text, str)), None)
        if wrong is not None:
            value, wrong = texts[wrong], int(rows[wrong])
            what = "missing" if pd.api.types.is_scalar(value) and pd.isna(value) else f"a {type(value).__name__}"
            raise ValueError(f"PolarityScorer: the {self.text_field!r} of document {inp['docno'].iloc[wrong]!r} of "
                             f"query {inp['qid'].iloc[wrong]!r} is {what}, not a string; fill or decode it (or drop "
                             "the row) before scoring")
        scores = self.model.score(inp["qid"].to_numpy()[rows], texts, errors=self.errors)
        self.rows += len(inp)
        self.scored += rows.size
        if rows.size < len(inp):
            full = np.full((len(inp),) + scores.shape[1:], np.nan)
            full[rows] = scores
            scores = full
        skipped = [q for q in self.model.skipped if q not in before]
        if skipped:
            warnings.warn(f"PolarityScorer: {len(skipped)} queries got no polarity (NaN): "
                          f"{self.model.skipped[skipped[0]]}", RuntimeWarning, stacklevel=2)
        values: Optional[object] = scores if scores.ndim == 1 else list(np.asarray(scores))
        return inp.assign(polarity=values)
