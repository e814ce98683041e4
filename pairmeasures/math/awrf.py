r"""AWRF, attention-weighted rank fairness (Sapiezynski et al., *Quantifying the Impact of User Attention on
Fair Group Representation in Ranked Lists*, WWW 2019 companion), in two forms.

The terms form, as Eq. 4-6 of the TExFAIR paper (Abolghasemi et al.), takes any alignment vectors
:math:`a_{d_r} \in [0, 1]^{|G|}`, position weights :math:`v_r`, a target :math:`\hat E` and a distance
:math:`\Delta`: :math:`\Delta(E / \lVert E \rVert_1, \hat E)` with :math:`E = \sum_r v_r a_{d_r}`. TED without
RBDF (:mod:`pairmeasures.math.texfair`) is AWRF with :math:`a^G_{d} = \sum_{t \in V_G} \mathrm{tf}(t, d)/|d|`, log
weights and the L1 distance. AWRF of a list with zero total exposure is 0, flagged degenerate.

The groups form (FairRankTune's ``AWRF``) gives rank :math:`r` the attention :func:`geometric_attention`
:math:`100\,(1 - p)^{r-1}\,p`, the percentage of attention a user gives rank :math:`r` who stops at each rank
with probability :math:`p`; its per-group sums and combinations are those of the group-exposure measures
(:mod:`pairmeasures.math.group_combos`).
"""

from __future__ import annotations

from typing import Union

import numpy as np

from ._lists import list_positions, one_or_many_lists, segment_sum
from .fairr import check_targets, position_discount
from .texfair import TermFairnessResult

__all__ = ["DISTANCES", "WEIGHTS", "awrf", "awrf_lists", "position_weights", "distribution_distance",
           "geometric_attention"]

DISTANCES = ("l1", "jsd")
WEIGHTS = ("log", "uniform", "geometric")


def position_weights(ranks, weights: str = "log", patience: float = 0.5) -> np.ndarray:
    """Attention per 1-based rank: ``log`` :math:`1/\\log_2(r+1)`, ``uniform`` 1, ``geometric`` :math:`p^{r-1}`."""
    ranks = np.asarray(ranks, dtype=np.float64)
    if weights == "log":
        return position_discount(ranks)
    if weights == "uniform":
        return np.ones_like(ranks)
    if weights == "geometric":
        if not 0 < patience <= 1:
            raise ValueError(f"patience must be in (0, 1]; got {patience}")
        return patience ** (ranks - 1)
    raise ValueError(f"weights must be one of {WEIGHTS}; got {weights!r}")


def distribution_distance(distribution: np.ndarray, target: np.ndarray, distance: str = "l1") -> np.ndarray:
    """Row-wise distance between distributions: ``l1`` (sum of absolute differences, in [0, 2]) or
    ``jsd`` (Jensen-Shannon divergence in bits, in [0, 1])."""
    if distance == "l1":
        return np.abs(distribution - target).sum(axis=-1)
    if distance == "jsd":
        middle = (distribution + target) / 2.0

        def kl(p, q):
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(p > 0, p * np.log2(p / q), 0.0).sum(axis=-1)

        return np.maximum(0.0, 0.5 * kl(distribution, middle) + 0.5 * kl(np.broadcast_to(target, distribution.shape), middle))
    raise ValueError(f"distance must be one of {DISTANCES}; got {distance!r}")


def awrf_lists(alignment, targets, offsets, weights: Union[str, np.ndarray] = "log", distance: str = "l1",
               patience: float = 0.5) -> TermFairnessResult:
    """AWRF (Eq. 4-6) of many lists: ``alignment`` ``(n_docs, n_groups)`` in rank order.

    ``weights`` names a position weighting (:data:`WEIGHTS`) or gives one attention value per row.
    """
    alignment, offsets, _ = one_or_many_lists(alignment, offsets)
    if alignment.ndim != 2 or np.any(alignment < 0):
        raise ValueError("alignment must be an (n_docs, n_groups) matrix of non-negative associations")
    targets = check_targets(targets, alignment.shape[1])
    if isinstance(weights, str):
        attention = position_weights(list_positions(offsets), weights, patience)
    else:
        attention = np.asarray(weights, dtype=np.float64)
        if attention.shape != alignment.shape[:1] or np.any(attention < 0):
            raise ValueError("explicit weights need one non-negative value per ranked document")
    exposure = segment_sum(alignment * attention[:, None], offsets)
    total = exposure.sum(axis=1)
    degenerate = ~(total > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        distribution = np.where(degenerate[:, None], targets, exposure / total[:, None])
    return TermFairnessResult(value=distribution_distance(distribution, targets, distance), degenerate=degenerate)


def awrf(alignment, targets, weights: Union[str, np.ndarray] = "log", distance: str = "l1",
         patience: float = 0.5) -> float:
    """AWRF of one ranking; ``weights`` may also be an explicit array of per-position attention."""
    alignment = np.asarray(alignment, dtype=np.float64)
    return float(awrf_lists(alignment, targets, np.array([0, alignment.shape[0]]), weights, distance, patience).value[0])


def geometric_attention(ranks, p: float) -> np.ndarray:
    r""":math:`100\,(1 - p)^{r-1}\,p` for 1-based ranks :math:`r` and first-rank share :math:`p \in (0, 1]`."""
    if not 0 < p <= 1:
        raise ValueError(f"p must be in (0, 1]; got {p}")
    return 100.0 * (1.0 - p) ** (np.asarray(ranks, dtype=np.float64) - 1.0) * p
