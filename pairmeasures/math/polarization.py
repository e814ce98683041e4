r"""How well polarity scores separate two gold perspectives (PAIR §5.1, Table 2).

Scores of documents from many queries are given flat, with each document's query index and
whether it belongs to the positive perspective. Both measures count documents, so they average
over documents, not queries:

- :func:`perspective_accuracy` is the reference code's measure (``metric_validation.py``): within
  each (query, perspective), the share of documents on the majority side of 0, i.e. the better
  sign chosen *per perspective*. An axis that puts every document on one side scores 1.
- :func:`consistent_accuracy` chooses the better sign *once per query* for both perspectives:
  a document counts when its sign matches its perspective; a degenerate axis cannot game it.

Both choose their signs on the documents they score, so each is at least 0.5 on every query, whatever
the axis: labels that are noise score above 0.5 (about 0.59 on 19 documents). :func:`held_out_correct`
makes the same choices on *other* documents (the folds an axis was fitted on) and scores held-out
documents with them; its chance level is then 0.5.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["perspective_accuracy", "consistent_accuracy", "per_query_accuracy", "QueryAccuracy", "held_out_correct"]


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


def held_out_correct(fit_scores, fit_unit, fit_positive, scores, unit, positive) -> tuple[np.ndarray, np.ndarray]:
    r"""Whether each held-out document is placed correctly by each measure's rule, the rule's signs chosen on the
    fit documents of its *unit* (a query with one fold held out, whose axis was fitted on the other folds).

    Within unit :math:`u`, with :math:`F_u` its fit documents (scores :math:`s_j`, perspectives :math:`y_j`,
    :math:`e_j = +1` for the positive perspective, else :math:`-1`) and a held-out document :math:`i` of
    perspective :math:`y_i` with score :math:`s_i`:

    - per perspective (the reference measure, :func:`perspective_accuracy`): :math:`i` is correct when
      :math:`\operatorname{sign} s_i = \sigma_{u,y_i}`, the side holding more of the fit documents of
      perspective :math:`y_i` (:math:`\sigma = e` on a tie);
    - once per query (:func:`consistent_accuracy`): :math:`i` is correct when :math:`\operatorname{sign} s_i =
      \tau_u e_i`, with :math:`\tau_u = +1` when at least as many fit documents agree with their perspective
      (:math:`\operatorname{sign} s_j = e_j`) as disagree (:math:`\operatorname{sign} s_j = -e_j`), else :math:`-1`.

    A score of exactly 0 is on neither side. ``fit_*``: the fit documents' scores on their unit's axis, unit ids
    and whether each is of the positive perspective; ``scores``, ``unit``, ``positive``: the same of the held-out
    documents, every unit of which must have fit documents. Returns two boolean arrays over the held-out
    documents: correct per perspective, correct with one sign per unit.
    """
    fit_scores, scores = (np.asarray(x, dtype=np.float64) for x in (fit_scores, scores))
    fit_unit, unit = np.asarray(fit_unit), np.asarray(unit)
    fit_positive, positive = np.asarray(fit_positive, dtype=bool), np.asarray(positive, dtype=bool)
    for name, arrays in (("fit", (fit_scores, fit_unit, fit_positive)), ("held-out", (scores, unit, positive))):
        if any(a.ndim != 1 for a in arrays) or len({a.size for a in arrays}) != 1:
            raise ValueError(f"the {name} scores, units and perspectives must be 1-D arrays of the same length")
        if not np.isfinite(arrays[0]).all():
            raise ValueError(f"the {name} scores must be finite")
    ids, codes = np.unique(np.concatenate([fit_unit, unit]), return_inverse=True)
    fit_code, code = codes[:fit_unit.size], codes[fit_unit.size:]
    n = ids.size
    lacking = np.setdiff1d(np.unique(code), fit_code)
    if lacking.size:
        raise ValueError(f"held-out unit {ids[lacking[0]].item()!r} has no fit documents to choose its signs on")
    cell = fit_code * 2 + fit_positive
    above = np.bincount(cell, weights=fit_scores > 0, minlength=2 * n)
    below = np.bincount(cell, weights=fit_scores < 0, minlength=2 * n)
    side = np.where(above > below, 1.0, np.where(below > above, -1.0, np.tile([-1.0, 1.0], n)))
    fit_expected = np.where(fit_positive, 1.0, -1.0)
    agree = np.bincount(fit_code, weights=np.sign(fit_scores) == fit_expected, minlength=n)
    disagree = np.bincount(fit_code, weights=np.sign(fit_scores) == -fit_expected, minlength=n)
    flip = np.where(agree >= disagree, 1.0, -1.0)
    sign = np.sign(scores)
    return sign == side[code * 2 + positive], sign == flip[code] * np.where(positive, 1.0, -1.0)
