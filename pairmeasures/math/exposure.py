r"""Position weights of the group-exposure measures (EXP, EXPU, EXPRU, ERBE, ERBP, ERBR).

Rows are the considered documents of all lists, in rank order, list ``q`` owning rows
``offsets[q]:offsets[q+1]``; :math:`r` is a row's 1-based position within its list.

- :func:`log_exposure`: :math:`v_r = 1/\log_2(r + 1)` (Singh & Joachims 2018; FairRankTune's EXP, EXPU);
- :func:`rbp_exposure`: :math:`(1 - \gamma)\,\gamma^{r-1}` (rank-biased precision, Kirnap et al. 2021, Eq. 2;
  FairRankTune's ERBE, ERBP, ERBR).

A measure's group value is the ratio of two per-group sums (:func:`pairmeasures.math.group_combos.per_group`),
e.g. exposure over the number of documents of the group.

Until pairmeasures 0.2 this module held TExFAIR, TED and AWRF, now :mod:`pairmeasures.math.texfair` and
:mod:`pairmeasures.math.awrf` (their names still import from here, with a :class:`DeprecationWarning`, until 0.3;
``pairmeasures.math.<name>`` is unchanged).
"""

from __future__ import annotations

import numpy as np

from .._moved import moved_names

__all__ = ["log_exposure", "rbp_exposure"]


def log_exposure(ranks) -> np.ndarray:
    r""":math:`1/\log_2(r + 1)` for 1-based ranks :math:`r`."""
    return 1.0 / np.log2(np.asarray(ranks, dtype=np.float64) + 1.0)


def rbp_exposure(ranks, decay: float) -> np.ndarray:
    r""":math:`(1 - \gamma)\,\gamma^{r-1}` for 1-based ranks :math:`r` and patience :math:`\gamma \in (0, 1)`."""
    if not 0 < decay < 1:
        raise ValueError(f"decay must be in (0, 1); got {decay}")
    return (1.0 - decay) * decay ** (np.asarray(ranks, dtype=np.float64) - 1.0)


#: The names this module held until 0.2 (TExFAIR, TED, AWRF) and where they live now; removed in 0.3.
_MOVED = {
    **{name: "pairmeasures.math.texfair" for name in ("TermFairnessResult", "term_exposure", "rbdf", "ted", "max_ted",
                                                      "texfair", "texfair_lists")},
    **{name: "pairmeasures.math.awrf" for name in ("DISTANCES", "WEIGHTS", "awrf", "awrf_lists", "position_weights",
                                                   "distribution_distance")},
}

__getattr__, _ = moved_names(__name__, _MOVED, removed_in="0.3")
