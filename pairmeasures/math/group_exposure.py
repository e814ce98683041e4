r"""Position weights of the group-exposure measures and their per-group sums over many ranked lists.

Rows are the considered documents of all lists, in rank order, list ``q`` owning rows
``offsets[q]:offsets[q+1]``; :math:`r` is a row's 1-based position within its list.

- :func:`log_exposure`: :math:`v_r = 1/\log_2(r + 1)` (Singh & Joachims 2018; FairRankTune's EXP, EXPU);
- :func:`rbp_exposure`: :math:`(1 - \gamma)\,\gamma^{r-1}` (rank-biased precision, Kirnap et al. 2021, Eq. 2;
  FairRankTune's ERBE, ERBP, ERBR);
- :func:`geometric_attention`: :math:`100\,(1 - p)^{r-1}\,p` (Sapiezynski et al. 2019; FairRankTune's AWRF):
  the percentage of attention a user gives rank :math:`r` who stops at each rank with probability :math:`p`.

:func:`per_group` sums any per-row value by (list, group); a measure's group value is the ratio of two such
sums (e.g. exposure over the number of documents of the group).
"""

from __future__ import annotations

import numpy as np

from ._lists import check_offsets, list_index, list_positions
from .group_combos import group_sums

__all__ = ["log_exposure", "rbp_exposure", "geometric_attention", "per_group", "positions"]


def positions(offsets) -> np.ndarray:
    """Every row's 1-based position within its list."""
    offsets = np.asarray(offsets, dtype=np.int64)
    return list_positions(offsets).astype(np.float64)


def log_exposure(ranks) -> np.ndarray:
    r""":math:`1/\log_2(r + 1)` for 1-based ranks :math:`r`."""
    return 1.0 / np.log2(np.asarray(ranks, dtype=np.float64) + 1.0)


def rbp_exposure(ranks, decay: float) -> np.ndarray:
    r""":math:`(1 - \gamma)\,\gamma^{r-1}` for 1-based ranks :math:`r` and patience :math:`\gamma \in (0, 1)`."""
    if not 0 < decay < 1:
        raise ValueError(f"decay must be in (0, 1); got {decay}")
    return (1.0 - decay) * decay ** (np.asarray(ranks, dtype=np.float64) - 1.0)


def geometric_attention(ranks, p: float) -> np.ndarray:
    r""":math:`100\,(1 - p)^{r-1}\,p` for 1-based ranks :math:`r` and first-rank share :math:`p \in (0, 1]`."""
    if not 0 < p <= 1:
        raise ValueError(f"p must be in (0, 1]; got {p}")
    return 100.0 * (1.0 - p) ** (np.asarray(ranks, dtype=np.float64) - 1.0) * p


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
