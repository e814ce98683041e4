"""A document a run ranks twice for one query, found cheaply.

A ranking holds each document once: listed twice, a document has two places (and, with two scores, two
positions), and every evaluator then keeps a different one (a dict of the rows keeps the last, a sort keeps both),
so every reader of runs refuses it (trec_eval does too). Rows are compared within their query only: a run holds
each query's rows together (mostly), so the check is one small set per query, about a second per ten million rows,
instead of one table of every (query, document) pair; where a query's rows are spread out, they are gathered
first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from .beir import DataFileError

__all__ = ["query_starts", "repeat_in_blocks", "repeated_pair", "check_ranked_once"]


def query_starts(query_ids: Sequence) -> Optional[list[int]]:
    """Where each query's rows start, then the number of rows, when each query's rows are adjacent; else None."""
    queries = np.asarray(query_ids, dtype=object)
    if queries.size == 0:
        return [0]
    changes = np.flatnonzero(queries[1:] != queries[:-1]) + 1
    firsts = [queries[0], *queries[changes].tolist()]
    return [0, *changes.tolist(), queries.size] if len(set(firsts)) == len(firsts) else None


def repeat_in_blocks(doc_ids: "Sequence | np.ndarray", bounds: Sequence[int]) -> Optional[tuple[int, int]]:
    """``(earlier, later)``: the positions in ``doc_ids`` of the first document listed twice within one block
    (``doc_ids[bounds[i]:bounds[i + 1]]``, the first such block), or None."""
    for start, end in zip(bounds[:-1], bounds[1:]):
        block = doc_ids[start:end]
        block = block.tolist() if isinstance(block, np.ndarray) else list(block)
        if len(set(block)) == len(block):
            continue
        seen: dict = {}
        for position, doc in enumerate(block, start):
            if doc in seen:
                return seen[doc], position
            seen[doc] = position
    return None


def repeated_pair(query_ids: Sequence, doc_ids: Sequence) -> Optional[tuple[int, int]]:
    """``(earlier, later)``: the rows of a (query, document) pair listed twice (where each query's rows are
    adjacent, the pair whose second row comes first), or None when each pair is listed once."""
    bounds = query_starts(query_ids)
    if bounds is not None:
        return repeat_in_blocks(doc_ids, bounds)
    import pandas as pd

    codes, _ = pd.factorize(np.asarray(query_ids, dtype=object))
    order = np.argsort(codes, kind="stable")
    found = repeat_in_blocks(np.asarray(doc_ids, dtype=object)[order],
                             np.concatenate([[0], np.cumsum(np.bincount(codes))]).tolist())
    return None if found is None else (int(order[found[0]]), int(order[found[1]]))


def check_ranked_once(file: Path, query_ids: Sequence[str], doc_ids: Sequence[str], scores: Sequence[float],
                      lines: Sequence[int]) -> None:
    """A :class:`DataFileError` at the second line of a document ranked twice for one query (``lines``: each row's
    line), naming the first line and both scores; nothing when each document is ranked once per query."""
    found = repeated_pair(query_ids, doc_ids)
    if found is None:
        return
    first, second = found
    how = (f"here and on line {lines[first]}, with score {scores[second]!r} both times" if scores[first] == scores[second]
           else f"with score {scores[second]!r} here and {scores[first]!r} on line {lines[first]}")
    fix = "drop the repeated line" if scores[first] == scores[second] else "keep one of the two lines"
    raise DataFileError(file, lines[second], f"query {query_ids[second]!r} ranks document {doc_ids[second]!r} twice, "
                                             f"{how}; a ranking lists each document once (trec_eval refuses such a "
                                             f"run too): {fix}")
