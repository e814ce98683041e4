r"""Pairwise ranking fairness (Beutel et al. 2019) as IBBR defines it (Li et al., *Debiasing Neural Retrieval
via In-batch Balancing Regularization*, Eq. 2) and its normed variant nPRF (Eq. 3).

For one query with retrieved passages :math:`p_1 \dots p_K`, scores :math:`R`, clicks :math:`Y` and group
membership, :math:`g_1^g = \{j : p_j \in g, Y_j = 1\}` are the clicked passages of group :math:`g` and
:math:`g_0 = \{k : Y_k = 0\}` every non-clicked passage (of any group):

.. math::  \mathrm{PRF}_g = \frac{1}{n_1^g n_0} \sum_{j \in g_1^g} \sum_{k \in g_0} \mathbb{1}[R_j \ge R_k],
           \qquad
           \mathrm{nPRF}_g = \Bigl(\frac{1}{n_1^g n_0} \sum_{j \in g_1^g} \sum_{k \in g_0}
           R_j^2\, \mathbb{1}[R_j \ge R_k]\Bigr)^{1/2}

Ties count as the clicked passage scoring at least as high (``>=``). A list with :math:`n_1^g = 0` or
:math:`n_0 = 0` has no pair: its value is NaN and the returned counts say which.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._lists import check_offsets, list_index

__all__ = ["PRFResult", "prf_lists"]


@dataclass(frozen=True)
class PRFResult:
    """Per list: ``values`` (NaN where there is no pair), ``n_group_clicked`` (:math:`n_1^g`),
    ``n_clicked`` (clicked passages of any group) and ``n_unclicked`` (:math:`n_0`)."""

    values: np.ndarray
    n_group_clicked: np.ndarray
    n_clicked: np.ndarray
    n_unclicked: np.ndarray


def prf_lists(scores, clicked, in_group, offsets, normed: bool = False) -> PRFResult:
    """PRF (Eq. 2) or, with ``normed``, nPRF (Eq. 3) of many lists at once, in O(n log n) for n rows.

    ``scores`` are the ranking scores :math:`R`, ``clicked`` and ``in_group`` booleans per row; rows of list
    ``q`` are ``offsets[q]:offsets[q+1]`` (their order does not matter: only scores compare).
    """
    scores = np.asarray(scores, dtype=np.float64)
    clicked = np.asarray(clicked, dtype=bool)
    in_group = np.asarray(in_group, dtype=bool)
    if scores.ndim != 1 or clicked.shape != scores.shape or in_group.shape != scores.shape:
        raise ValueError("scores, clicked and in_group must be 1-D arrays of the same length")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite")
    offsets = check_offsets(offsets, scores.size)
    row_list = list_index(offsets)
    # Dense score ranks make (list, score) one integer key; a sorted array of the unclicked rows' keys
    # answers "how many unclicked rows of my list score <= me" by two binary searches per clicked row.
    unique_scores, score_rank = np.unique(scores, return_inverse=True)
    width = np.int64(unique_scores.size + 1)
    keys = row_list.astype(np.int64) * width + score_rank.reshape(-1).astype(np.int64)
    unclicked_keys = np.sort(keys[~clicked])
    target = clicked & in_group
    at_or_below = (np.searchsorted(unclicked_keys, keys[target], side="right")
                   - np.searchsorted(unclicked_keys, row_list[target].astype(np.int64) * width, side="left"))
    weights = at_or_below.astype(np.float64)
    if normed:
        weights = weights * scores[target] ** 2
    n_lists = offsets.size - 1
    totals = np.bincount(row_list[target], weights=weights, minlength=n_lists)
    n_group_clicked = np.bincount(row_list[target], minlength=n_lists)
    n_clicked = np.bincount(row_list[clicked], minlength=n_lists)
    n_unclicked = np.bincount(row_list[~clicked], minlength=n_lists)
    pairs = n_group_clicked * n_unclicked
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.where(pairs > 0, totals / pairs, np.nan)
    if normed:
        values = np.sqrt(values)
    return PRFResult(values=values, n_group_clicked=n_group_clicked, n_clicked=n_clicked, n_unclicked=n_unclicked)
