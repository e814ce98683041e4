r"""Per-group sums over many ranked lists, and the ways FairRankTune combines per-group values into one.

A group-exposure measure (EXP, ERB, ARP, ...) first computes one value per group of a list, e.g. the
mean exposure of the group's documents, then combines the values of the groups the list has:

- ``MaxMinDiff``: :math:`\max_g x_g - \min_g x_g`
- ``MaxAbsDiff``: :math:`\max_g |x_g - \bar x|`
- ``MeanAbsDev``: :math:`\frac{1}{G} \sum_g |x_g - \bar x|`
- ``LTwo``: :math:`\lVert x \rVert_2`
- ``Variance``: :math:`\frac{1}{G} \sum_g (x_g - \bar x)^2`
- ``MinMaxRatio``: :math:`\min_g x_g / \max_g x_g` (1 = equal; the only combination where higher is fairer)
- ``MaxMinRatio``: :math:`\max_g x_g / \min_g x_g`

with :math:`\bar x` the mean over the :math:`G` groups present. These are FairRankTune's
``ComboUtil`` functions, vectorised over lists.

Rows are the considered documents of all lists, in rank order, list ``q`` owning rows ``offsets[q]:offsets[q+1]``
(:mod:`pairmeasures.math._lists`). :func:`per_group` sums any per-row value by (list, group); a measure's group
value is the ratio of two such sums (e.g. exposure over the number of documents of the group).
"""

from __future__ import annotations

import numpy as np

from ._lists import check_offsets, list_index, list_positions

__all__ = ["COMBOS", "combine_groups", "group_sums", "per_group", "positions"]

#: FairRankTune's names for the ways of combining per-group values, in its order of definition.
COMBOS = ("MinMaxRatio", "MaxMinRatio", "MaxMinDiff", "MaxAbsDiff", "MeanAbsDev", "LTwo", "Variance")


def group_sums(values: np.ndarray, row_list: np.ndarray, codes: np.ndarray, n_lists: int, n_groups: int) -> np.ndarray:
    """Sum of ``values`` (one per row) for each (list, group): shape ``(n_lists, n_groups)``.

    ``row_list`` and ``codes`` give each row's list index and group code (``0 <= code < n_groups``).
    """
    flat = np.bincount(row_list.astype(np.int64) * n_groups + codes, weights=np.asarray(values, dtype=np.float64),
                       minlength=n_lists * n_groups)
    return flat.reshape(n_lists, n_groups)


def positions(offsets) -> np.ndarray:
    """Every row's 1-based position within its list, as floats (for the position weights)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    return list_positions(offsets).astype(np.float64)


def per_group(values, offsets, codes, n_groups: int) -> np.ndarray:
    """Sum of ``values`` (one per row) for each (list, group): shape ``(lists, n_groups)``.

    ``codes`` gives each row's group, ``0 <= code < n_groups``.
    """
    values = np.asarray(values, dtype=np.float64)
    offsets = check_offsets(np.asarray(offsets, dtype=np.int64), values.shape[0])
    codes = np.asarray(codes, dtype=np.int64)
    if codes.shape != values.shape:
        raise ValueError(f"codes must give one group per row ({values.shape[0]}); got shape {codes.shape}")
    if codes.size and (codes.min() < 0 or codes.max() >= n_groups):
        raise ValueError(f"group codes must be in [0, {n_groups}); got {codes.min()}..{codes.max()}")
    return group_sums(values, list_index(offsets), codes, offsets.size - 1, n_groups)


def combine_groups(values: np.ndarray, present: np.ndarray, combo: str) -> tuple[np.ndarray, np.ndarray]:
    """Combine each row's values over its present groups; returns ``(value, defined)``, shape ``(lists,)``.

    ``values`` and ``present`` have shape ``(lists, groups)``; absent groups are ignored. ``defined``
    is False where a list has fewer than two present groups, a present value is not finite, or a
    ratio's denominator is 0; ``value`` is 0 there (the caller decides what such a list gets).
    """
    if combo not in COMBOS:
        raise ValueError(f"combo must be one of {COMBOS}, got {combo!r}")
    values = np.asarray(values, dtype=np.float64)
    present = np.asarray(present, dtype=bool)
    count = present.sum(axis=1)
    finite = np.where(present, np.isfinite(values), True).all(axis=1)
    x = np.where(present & np.isfinite(values), values, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = x.sum(axis=1) / np.maximum(count, 1)
        high = np.where(present, x, -np.inf).max(axis=1, initial=-np.inf)
        low = np.where(present, x, np.inf).min(axis=1, initial=np.inf)
        deviation = np.where(present, np.abs(x - mean[:, None]), 0.0)
        if combo == "MaxMinDiff":
            value = high - low
        elif combo == "MaxAbsDiff":
            value = deviation.max(axis=1, initial=0.0)
        elif combo == "MeanAbsDev":
            value = deviation.sum(axis=1) / np.maximum(count, 1)
        elif combo == "LTwo":
            value = np.sqrt((x * x).sum(axis=1))
        elif combo == "Variance":
            value = (deviation * deviation).sum(axis=1) / np.maximum(count, 1)
        elif combo == "MinMaxRatio":
            value = low / high
        else:
            value = high / low
    defined = (count >= 2) & finite & np.isfinite(value)
    return np.where(defined, value, 0.0), defined
