r"""Position weights of the group-exposure measures (EXP, EXPU, EXPRU, ERBE, ERBP, ERBR).

Rows are the considered documents of all lists, in rank order, list ``q`` owning rows
``offsets[q]:offsets[q+1]``; :math:`r` is a row's 1-based position within its list.

- :func:`log_exposure`: :math:`v_r = 1/\log_2(r + 1)` (Singh & Joachims 2018; FairRankTune's EXP, EXPU);
- :func:`rbp_exposure`: :math:`(1 - \gamma)\,\gamma^{r-1}` (rank-biased precision, Kirnap et al. 2021, Eq. 2;
  FairRankTune's ERBE, ERBP, ERBR).

A measure's group value is the ratio of two per-group sums (:func:`pairmeasures.math.group_combos.per_group`),
e.g. exposure over the number of documents of the group.
"""

from __future__ import annotations

import numpy as np

__all__ = ["log_exposure", "rbp_exposure"]


def log_exposure(ranks) -> np.ndarray:
    r""":math:`1/\log_2(r + 1)` for 1-based ranks :math:`r`."""
    return 1.0 / np.log2(np.asarray(ranks, dtype=np.float64) + 1.0)


def rbp_exposure(ranks, decay: float) -> np.ndarray:
    r""":math:`(1 - \gamma)\,\gamma^{r-1}` for 1-based ranks :math:`r` and patience :math:`\gamma \in (0, 1)`."""
    if not 0 < decay < 1:
        raise ValueError(f"decay must be in (0, 1); got {decay}")
    return (1.0 - decay) * decay ** (np.asarray(ranks, dtype=np.float64) - 1.0)
