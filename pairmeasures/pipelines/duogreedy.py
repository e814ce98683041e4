"""PyTerrier transformers that reorder result frames by their ``polarity`` column: DuoGreedy and
the most and least biased orderings (the math lives in :mod:`pairmeasures.math.reorder`)."""

from __future__ import annotations

import warnings
from typing import Optional

import numpy as np
import pandas as pd
import pyterrier as pt

from ..math.duo import check_step
from ..math.reorder import check_lambda_k, duo_extreme_orders, duogreedy_lists

__all__ = ["DuoGreedy", "BiasedOrdering"]


def _prepare(inp: pd.DataFrame, name: str, depth: Optional[int] = None
             ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """Validated frame sorted by query and rank, its polarity matrix ``(rows, m)``, offsets, and the rows
    of queries without any polarity (all NaN, as ``PolarityScorer(errors="skip")`` leaves a query whose axes
    cannot be fitted), which keep their input order; a warning says how many. ``depth``: only each query's first
    ``depth`` rows are read (the re-ranker reorders those), so rows below may lack a polarity (as
    ``PolarityScorer(depth=...)`` leaves them); their polarity is set to 0, unread."""
    try:
        pt.validate.result_frame(inp, extra_columns=["polarity"])
    except pt.validate.InputValidationError as error:
        raise pt.validate.InputValidationError(
            f"{name} reorders by the 'polarity' column: put pm.PolarityScorer(...) before it in the pipeline "
            f"(e.g. bm25 >> pm.PolarityScorer(model) >> pm.{name}(...)). {error.args[0]}", error.modes) from error
    frame = inp.sort_values(["qid", "rank"] if "rank" in inp.columns else ["qid", "score"],
                            ascending=[True, "rank" in inp.columns], kind="stable").reset_index(drop=True)
    qids = frame["qid"].to_numpy()
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]]) if len(qids) else np.zeros(0, dtype=np.int64)
    offsets = np.r_[starts, len(qids)].astype(np.int64)
    lengths = np.diff(offsets)
    read = np.ones(len(frame), dtype=bool) if depth is None else \
        (np.arange(len(frame)) - np.repeat(offsets[:-1], lengths)) < depth
    column = frame["polarity"]
    if pd.api.types.is_numeric_dtype(column):  # one axis: no per-row conversion
        polarity = column.to_numpy(dtype=np.float64)[:, None]
    else:
        values = column.tolist()
        width = next((np.atleast_1d(np.asarray(v, dtype=np.float64)).size for v, r in zip(values, read) if r), 1)
        polarity = np.array([np.atleast_1d(np.asarray(v, dtype=np.float64)) if r else np.zeros(width)
                             for v, r in zip(values, read)]) if values else np.zeros((0, 1))
    if polarity.ndim != 2:
        raise ValueError(f"{name}: every document's polarity must have the same number of axes")
    if not read.all():
        polarity = np.where(read[:, None], polarity, 0.0)
    bad = ~np.isfinite(polarity).all(axis=1)
    unscored = np.zeros(len(frame), dtype=bool)
    if bad.any():
        whole = np.add.reduceat(bad, offsets[:-1]) == np.add.reduceat(read, offsets[:-1])  # every read row lacks it
        unscored = np.repeat(whole, lengths)
        partial = bad & ~unscored
        if partial.any():
            row = int(np.flatnonzero(partial)[0])
            raise ValueError(f"{name}: document {frame['docno'].iloc[row]!r} of query {frame['qid'].iloc[row]!r} has no "
                             "finite polarity (NaN) while other documents of the query have one; drop such rows or "
                             "score them")
        first = frame["qid"].iloc[int(np.flatnonzero(unscored)[0])]
        warnings.warn(f"{name}: {int(whole.sum())} queries have no polarity (e.g. {first!r}: PolarityScorer could not "
                      "fit its axis) and keep their input order", RuntimeWarning, stacklevel=3)
        polarity = np.where(unscored[:, None], 0.0, polarity)
    return frame, polarity, offsets, unscored


def reordered(frame: pd.DataFrame, order: np.ndarray, offsets: np.ndarray,
              keep: Optional[np.ndarray] = None) -> pd.DataFrame:
    """``frame`` rows in ``order`` (rows of whole queries marked in ``keep`` stay in input order), with
    ``score = n - position`` per query and ranks from 0: the output of every re-ranker here and of
    :class:`~pairmeasures.pipelines.mmr.TopKMMR`."""
    if keep is not None and keep.any():
        order = np.where(keep, np.arange(len(order)), order)
    out = frame.iloc[order].reset_index(drop=True)
    lengths = np.diff(offsets)
    position = np.arange(len(out)) - np.repeat(offsets[:-1], lengths)
    out["score"] = (np.repeat(lengths, lengths) - position).astype(np.float64)
    ranked = pt.model.add_ranks(out)
    return ranked[list(frame.columns) + [c for c in ranked.columns if c not in frame.columns]]


class DuoGreedy(pt.Transformer):
    """Reorders each query's top ``k`` to lower DUO while keeping relevance, traded by ``Lambda``.

    ``Lambda=1`` keeps the input order; ``Lambda=0`` gives the most diverse order: greedily
    (``mode="greedy"``) or exactly, with ``Duo(step=step)@k`` = 0 (``mode="exact"``, one polarity
    axis, ``Lambda`` 0 or 1 only: the maximal-utility construction of the DUO bounds over the depths
    ``step, 2 step, ...``). Documents below ``k`` keep their order and stay below. Every input column
    is kept; ``score`` becomes ``n - rank`` (``n`` documents of the query) and ``rank`` is recomputed.
    ``num_results`` keeps only each query's first ``num_results`` documents of the output (``None``:
    all); ``DuoGreedy(...) % n`` compiles into one DuoGreedy with ``num_results=n``.
    """

    def __init__(self, Lambda: float = 0.5, k: int = 10, *, mode: str = "greedy", step: int = 1,
                 num_results: Optional[int] = None):
        Lambda, k = check_lambda_k(Lambda, k)
        if mode not in ("greedy", "exact"):
            raise ValueError(f"mode must be 'greedy' or 'exact', got {mode!r}")
        if mode == "exact" and Lambda not in (0.0, 1.0):
            raise ValueError(f"mode='exact' is defined for Lambda=0 (DUO = 0) and Lambda=1 (input order) only, got "
                             f"Lambda={Lambda}; use mode='greedy' in between")
        if num_results is not None and (isinstance(num_results, bool) or not isinstance(num_results, (int, np.integer))
                                        or num_results < 1):
            raise ValueError(f"num_results must be a positive integer (documents kept per query) or None, got {num_results!r}")
        self.Lambda = Lambda
        self.k = k
        self.mode = mode
        self.step = check_step(step)
        self.num_results = None if num_results is None else int(num_results)

    def __repr__(self) -> str:
        extra = (f", step={self.step}" if self.step != 1 else "") + (
            f", num_results={self.num_results}" if self.num_results is not None else "")
        return f"DuoGreedy(Lambda={self.Lambda}, k={self.k}, mode={self.mode!r}{extra})"

    @property
    def polarity_depth(self) -> int:
        """How deep this re-ranker reads each query's ``polarity``: its ``k`` (an inserted scorer scores that deep)."""
        return self.k

    def fuse_rank_cutoff(self, k: int) -> "DuoGreedy":
        """This re-ranker keeping only the top ``k`` of each query (``pt.Transformer.compile`` fuses ``% k``)."""
        if self.num_results is not None and self.num_results <= k:
            return self
        return DuoGreedy(self.Lambda, self.k, mode=self.mode, step=self.step, num_results=k)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        out = self._reorder(inp)
        if self.num_results is None:
            return out
        return out[out["rank"] < self.num_results].reset_index(drop=True)

    def _reorder(self, inp: pd.DataFrame) -> pd.DataFrame:
        frame, polarity, offsets, unscored = _prepare(inp, "DuoGreedy", self.k)
        if len(frame) == 0:
            return reordered(frame, np.zeros(0, dtype=np.int64), offsets)
        if self.mode == "greedy" or self.Lambda == 1.0:
            return reordered(frame, duogreedy_lists(polarity, offsets, self.Lambda, self.k), offsets, unscored)
        if polarity.shape[1] != 1:
            raise ValueError(f"DuoGreedy(mode='exact') needs one polarity axis, got {polarity.shape[1]}; "
                             "use mode='greedy' for several")
        # Exact: the top k of each query in the DUO = 0 order, the rest after it in input order.
        lengths = np.diff(offsets)
        position = np.arange(len(frame)) - np.repeat(offsets[:-1], lengths)
        head = position < self.k
        head_offsets = np.r_[0, np.cumsum(np.minimum(lengths, self.k))]
        head_rows = np.flatnonzero(head)
        order = np.arange(len(frame))
        order[head] = head_rows[duo_extreme_orders(polarity[head, 0], head_offsets, self.step, which="max")]
        return reordered(frame, order, offsets, unscored)


class BiasedOrdering(pt.Transformer):
    """Reorders each query's documents into its least diverse (``which="most"``, DUO = 1) or most
    diverse (``which="least"``, DUO = 0) ordering, by one polarity axis.

    ``pole=+1`` / ``-1`` with ``which="most"`` gives the most biased ordering toward that pole: the
    least diverse ordering whose top document lies on that side of zero. Every input column is kept;
    ``score`` becomes ``n - rank``.
    """

    def __init__(self, which: str = "most", *, pole: Optional[int] = None):
        if which not in ("most", "least"):
            raise ValueError(f"which must be 'most' (most biased, DUO = 1) or 'least' (DUO = 0), got {which!r}")
        if pole not in (None, 1, -1) or (pole is not None and which != "most"):
            raise ValueError(f"pole must be None, +1 or -1, and only with which='most'; got {pole!r}")
        self.which = which
        self.pole = pole

    def __repr__(self) -> str:
        return f"BiasedOrdering({self.which!r}, pole={self.pole})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        frame, polarity, offsets, unscored = _prepare(inp, "BiasedOrdering")
        if len(frame) == 0:
            return reordered(frame, np.zeros(0, dtype=np.int64), offsets)
        if polarity.shape[1] != 1:
            raise ValueError(f"BiasedOrdering needs one polarity axis, got {polarity.shape[1]}")
        which = "min" if self.which == "most" else "max"
        return reordered(frame, duo_extreme_orders(polarity[:, 0], offsets, which=which, pole=self.pole), offsets,
                          unscored)
