r"""How well polarity scores separate two gold perspectives (PAIR §5.1, Table 2).

Scores of documents from many queries are given flat, with each document's query index and
whether it belongs to the positive perspective. Both measures count documents, so they average
over documents, not queries:

- :func:`perspective_accuracy` is the reference code's measure (``metric_validation.py``): within
  each (query, perspective), the share of documents on the majority side of 0, i.e. the better
  sign chosen *per perspective*. An axis that puts every document on one side scores 1.
- :func:`consistent_accuracy` chooses the better sign *once per query* for both perspectives:
  a document counts when its sign matches its perspective; a degenerate axis cannot game it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["perspective_accuracy", "consistent_accuracy", "per_query_accuracy", "QueryAccuracy"]


class QueryAccuracy(NamedTuple):
    """Per query (sorted by id): both accuracies and the number of documents."""

    query: np.ndarray
    accuracy: np.ndarray
    consistent_accuracy: np.ndarray
    documents: np.ndarray


def _correct(scores, query, positive) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Query ids (sorted), and per query the documents counted correct by each measure, and all its documents."""
    scores = np.asarray(scores, dtype=np.float64)
    query = np.asarray(query)
    positive = np.asarray(positive, dtype=bool)
    if not (scores.ndim == query.ndim == positive.ndim == 1) or not (scores.size == query.size == positive.size):
        raise ValueError("scores, query and positive must be 1-D arrays of the same length")
    if not np.isfinite(scores).all():
        raise ValueError("scores must be finite")
    ids, codes = np.unique(query, return_inverse=True)
    n = ids.size
    cell = codes * 2 + positive
    above = np.bincount(cell, weights=scores > 0, minlength=2 * n).reshape(n, 2)
    below = np.bincount(cell, weights=scores < 0, minlength=2 * n).reshape(n, 2)
    expected = np.where(positive, 1.0, -1.0)
    agree = np.bincount(codes, weights=np.sign(scores) == expected, minlength=n)
    disagree = np.bincount(codes, weights=np.sign(scores) == -expected, minlength=n)
    return ids, np.maximum(above, below).sum(axis=1), np.maximum(agree, disagree), np.bincount(codes, minlength=n)


def perspective_accuracy(scores, query, positive) -> float:
    """Share of documents on the majority side within their (query, perspective); NaN without documents."""
    _, correct, _, documents = _correct(scores, query, positive)
    return float(correct.sum() / documents.sum()) if documents.sum() else float("nan")


def consistent_accuracy(scores, query, positive) -> float:
    """Share of documents whose sign matches their perspective, with one sign flip allowed per query; NaN
    without documents."""
    _, _, correct, documents = _correct(scores, query, positive)
    return float(correct.sum() / documents.sum()) if documents.sum() else float("nan")


def per_query_accuracy(scores, query, positive) -> QueryAccuracy:
    """Both accuracies of every query, over its own documents."""
    ids, perspective, consistent, documents = _correct(scores, query, positive)
    return QueryAccuracy(query=ids, accuracy=perspective / documents, consistent_accuracy=consistent / documents,
                         documents=documents)
