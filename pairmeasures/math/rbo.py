r"""Rank-biased overlap (Webber, Moffat & Zobel, *A Similarity Measure for Indefinite Rankings*,
TOIS 2010), extrapolated form, as used by CRBO in the TExFAIR paper (§5, p = 0.9).

With :math:`X_d` the overlap of the two lists' top :math:`d`, :math:`S` the shorter list (length
:math:`s`) and :math:`L` the longer (length :math:`l`), Webber et al.'s Eq. 32:

.. math::  \mathrm{RBO_{ext}} = \frac{1 - p}{p} \left( \sum_{d=1}^{l} \frac{X_d}{d} p^d
           + \sum_{d=s+1}^{l} \frac{X_s (d - s)}{s\, d} p^d \right)
           + \left( \frac{X_l - X_s}{l} + \frac{X_s}{s} \right) p^l

where for :math:`d > s`, :math:`X_d` counts the overlap of all of :math:`S` with :math:`L`'s top
:math:`d`. Identical lists score 1 and disjoint lists 0. Two empty lists score 1; one empty
list against a non-empty one scores 0.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["rbo"]


def _positions(items: Sequence, name: str) -> dict:
    positions: dict = {}
    for rank, item in enumerate(items, start=1):
        if item in positions:
            raise ValueError(f"{name} lists {item!r} twice (ranks {positions[item]} and {rank}); "
                             "RBO compares rankings of distinct items")
        positions[item] = rank
    return positions


def rbo(a: Sequence, b: Sequence, p: float = 0.9) -> float:
    """Extrapolated rank-biased overlap of two rankings of distinct items (best first)."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1); got {p}")
    first, second = _positions(a, "the first ranking"), _positions(b, "the second ranking")
    short, long_ = (first, second) if len(first) <= len(second) else (second, first)
    s, l = len(short), len(long_)  # noqa: E741 (s and l as in Webber et al.'s Eq. 32)
    if s == 0:
        return 1.0 if l == 0 else 0.0
    # An item in both lists joins the overlap at depth max(its two ranks).
    joins = [max(rank, long_[item]) for item, rank in short.items() if item in long_]
    overlap = np.cumsum(np.bincount(np.asarray(joins, dtype=np.int64), minlength=l + 1)[1:l + 1]).astype(np.float64)
    depths = np.arange(1, l + 1, dtype=np.float64)
    powers = p ** depths
    x_s, x_l = overlap[s - 1], overlap[l - 1]
    tail = depths[s:]
    extrapolated = (1 - p) / p * ((overlap / depths * powers).sum() + (x_s * (tail - s) / (s * tail) * powers[s:]).sum())
    return float(extrapolated + ((x_l - x_s) / l + x_s / s) * p ** l)
