r"""Document neutrality, FaiRR, IFaiRR and NFaiRR (Rekabsaz et al., *Societal Biases in Retrieved
Contents*, SIGIR 2021; restated as Eq. 1-3 of the TExFAIR paper).

With :math:`M^G(d)` occurrences of group :math:`G`'s representative terms in document :math:`d`,
targets :math:`J_G` (summing to 1) and a threshold :math:`\tau`, the neutrality of a document is
(Eq. 1)

.. math::  \omega(d) = 1 \text{ if } \sum_G M^G(d) \le \tau, \text{ else }
           1 - \sum_G \left| \frac{M^G(d)}{\sum_x M^x(d)} - J_G \right|

and a ranking's fairness sums it with the position discount :math:`1/\log_2(r + 1)` (Eq. 2):
:math:`\mathrm{FaiRR}@k = \sum_{r \le k} \omega(d_r) / \log_2(r + 1)`. IFaiRR is the best FaiRR any
ordering of a background set :math:`S` reaches (its neutralities sorted in decreasing order), and
:math:`\mathrm{NFaiRR} = \mathrm{FaiRR} / \mathrm{IFaiRR}` (Eq. 3).

Choices, the same as the authors' code (``CPJKU/FairnessRetrievalResults``) unless stated:
the discount is base 2; ω is not clamped (it is negative for non-uniform targets or 3+ groups when
a document leans to one side, which IFaiRR then ranks last); a list shorter than k sums what it
has. Where the reference divides by IFaiRR = 0 (inf or NaN), the value here is
:data:`DEGENERATE_NFAIRR` and the list is flagged degenerate; the reference also caps positions
at 1000, which is not done here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ._lists import check_offsets, list_index, list_positions, segment_sum

__all__ = [
    "DEGENERATE_NFAIRR",
    "NFaiRRResult",
    "position_discount",
    "check_targets",
    "neutrality",
    "fairr",
    "fairr_lists",
    "ifairr",
    "nfairr",
    "nfairr_lists",
    "ranker_agnostic_fairr",
]

#: NFaiRR of a list whose background set has no positive ideal FaiRR (no document with ω > 0).
DEGENERATE_NFAIRR = 0.0


def position_discount(ranks) -> np.ndarray:
    """The position bias :math:`1/\\log_2(r + 1)` of 1-based ranks."""
    return 1.0 / np.log2(np.asarray(ranks, dtype=np.float64) + 1.0)


def check_targets(targets, n_groups: int) -> np.ndarray:
    """``targets`` as floats after checking them: one non-negative share per group, summing to 1 (the
    :math:`J_G` of Eq. 1; TED's and AWRF's target shares too)."""
    targets = np.asarray(targets, dtype=np.float64)
    if targets.ndim != 1 or targets.size != n_groups:
        raise ValueError(f"targets must give one share per group ({n_groups}); got shape {targets.shape}")
    if not np.all(np.isfinite(targets)) or np.any(targets < 0) or abs(targets.sum() - 1.0) > 1e-9:
        raise ValueError(f"targets must be non-negative shares summing to 1; got {targets.tolist()}")
    return targets


def neutrality(counts, targets, tau: float = 1.0) -> np.ndarray:
    """ω of each document (Eq. 1) from an ``(n_docs, n_groups)`` matrix of group term counts."""
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 2:
        raise ValueError(f"counts must be an (n_docs, n_groups) matrix; got shape {counts.shape}")
    if np.any(counts < 0) or not np.all(np.isfinite(counts)):
        raise ValueError("group term counts must be finite and non-negative")
    targets = check_targets(targets, counts.shape[1])
    total = counts.sum(axis=1)
    gendered = total > tau
    shares = counts[gendered] / total[gendered, None]
    omega = np.ones(counts.shape[0])
    omega[gendered] = 1.0 - np.abs(shares - targets).sum(axis=1)
    return omega


def _prefix_sums(values: np.ndarray, offsets: np.ndarray, k: Optional[int]) -> np.ndarray:
    """Per list, Σ_{r ≤ k} values_r / log2(r + 1) (every row when k is None)."""
    ranks = list_positions(offsets)
    weighted = values * position_discount(ranks)
    if k is not None:
        weighted = np.where(ranks <= k, weighted, 0.0)
    return segment_sum(weighted, offsets)


def _single(values) -> tuple[np.ndarray, np.ndarray]:
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"expected a 1-D array in rank order; got shape {values.shape}")
    return values, np.array([0, values.size])


def _check_k(k: Optional[int]) -> Optional[int]:
    if k is not None and (int(k) != k or k < 1):
        raise ValueError(f"the cutoff k must be a positive integer or None; got {k!r}")
    return None if k is None else int(k)


def fairr(omega, k: Optional[int] = None) -> float:
    """FaiRR@k of one ranking (Eq. 2): ``omega`` in rank order; k = None sums the whole list."""
    values, offsets = _single(omega)
    return float(_prefix_sums(values, offsets, _check_k(k))[0])


def fairr_lists(omega, offsets, k: Optional[int] = None) -> np.ndarray:
    """FaiRR@k (Eq. 2) of many rankings at once: ``omega`` back to back in rank order."""
    omega = np.asarray(omega, dtype=np.float64)
    return _prefix_sums(omega, check_offsets(offsets, omega.shape[0]), _check_k(k))


def _sorted_desc(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    order = np.lexsort((-values, list_index(offsets)))
    return values[order]


def ifairr(omega_background, k: Optional[int] = None) -> float:
    """IFaiRR@k of a background set: the FaiRR@k of its best ordering (ω in decreasing order)."""
    values, offsets = _single(omega_background)
    return float(_prefix_sums(_sorted_desc(values, offsets), offsets, _check_k(k))[0])


def nfairr(omega, omega_background, k: Optional[int] = None) -> float:
    """NFaiRR@k (Eq. 3) of one ranking against its background set; see :func:`nfairr_lists`."""
    ranking, offsets = _single(omega)
    background, background_offsets = _single(omega_background)
    return float(nfairr_lists(ranking, offsets, background, background_offsets, k).value[0])


@dataclass(frozen=True)
class NFaiRRResult:
    """Per-list NFaiRR with its parts; ``degenerate`` marks lists whose IFaiRR is not positive."""

    value: np.ndarray
    fairr: np.ndarray
    ifairr: np.ndarray
    degenerate: np.ndarray


def nfairr_lists(omega, offsets, omega_background, background_offsets, k: Optional[int] = None) -> NFaiRRResult:
    """FaiRR@k, IFaiRR@k and NFaiRR@k of many lists at once.

    ``omega`` holds the rankings back to back in rank order (list ``q`` owns rows
    ``offsets[q]:offsets[q + 1]``); ``omega_background`` holds each list's background set, in any
    order, delimited by ``background_offsets``. A list whose IFaiRR is not positive gets
    :data:`DEGENERATE_NFAIRR` and ``degenerate=True`` (the reference returns inf or NaN).
    """
    k = _check_k(k)
    omega = np.asarray(omega, dtype=np.float64)
    background = np.asarray(omega_background, dtype=np.float64)
    offsets = check_offsets(offsets, omega.shape[0])
    background_offsets = check_offsets(background_offsets, background.shape[0])
    if background_offsets.size != offsets.size:
        raise ValueError(f"{offsets.size - 1} rankings but {background_offsets.size - 1} background sets")
    achieved = _prefix_sums(omega, offsets, k)
    ideal = _prefix_sums(_sorted_desc(background, background_offsets), background_offsets, k)
    degenerate = ~(ideal > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(degenerate, DEGENERATE_NFAIRR, achieved / ideal)
    return NFaiRRResult(value=value, fairr=achieved, ifairr=ideal, degenerate=degenerate)


def ranker_agnostic_fairr(omega_background, k: int) -> float:
    """The reference's ranker-agnostic FaiRR@k: mean ω of the background set times
    :math:`\\sum_{r=1}^{k} 1/\\log_2(r + 1)` (k positions even when the set is smaller)."""
    values, _ = _single(omega_background)
    depth = _check_k(k)
    if depth is None:
        raise ValueError("the ranker-agnostic FaiRR needs a cutoff k (a positive integer)")
    if values.size == 0:
        return 0.0
    return float(values.mean() * position_discount(np.arange(1, depth + 1)).sum())
