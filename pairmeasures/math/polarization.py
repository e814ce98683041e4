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

import numpy as np

__all__ = ["perspective_accuracy", "consistent_accuracy"]


def _inputs(scores, query, positive):
    scores = np.asarray(scores, dtype=np.float64)
    query = np.asarray(query)
    positive = np.asarray(positive, dtype=bool)
    if not (scores.ndim == query.ndim == positive.ndim == 1) or not (scores.size == query.size == positive.size):
        raise ValueError("scores, query and positive must be 1-D arrays of the same length")
    if not np.isfinite(scores).all():
        raise ValueError("scores must be finite")
    _, query = np.unique(query, return_inverse=True)
    return scores, query, positive


def perspective_accuracy(scores, query, positive) -> float:
    """Share of documents on the majority side within their (query, perspective)."""
    scores, query, positive = _inputs(scores, query, positive)
    if scores.size == 0:
        return float("nan")
    cell = query * 2 + positive
    above = np.bincount(cell, weights=scores > 0, minlength=2 * (query.max() + 1))
    below = np.bincount(cell, weights=scores < 0, minlength=2 * (query.max() + 1))
    return float(np.maximum(above, below).sum() / scores.size)


def consistent_accuracy(scores, query, positive) -> float:
    """Share of documents whose sign matches their perspective, with one sign flip allowed per query."""
    scores, query, positive = _inputs(scores, query, positive)
    if scores.size == 0:
        return float("nan")
    expected = np.where(positive, 1.0, -1.0)
    agree = np.bincount(query, weights=np.sign(scores) == expected)
    disagree = np.bincount(query, weights=np.sign(scores) == -expected)
    return float(np.maximum(agree, disagree).sum() / scores.size)
