r"""RaB and ARaB: rank bias from per-document gender magnitudes (Rekabsaz & Schedl, *Do Neural
Ranking Models Intensify Gender Bias?*, SIGIR 2020), and the IBBR passage magnitude (Li et al.,
*Debiasing Neural Retrieval via In-batch Balancing Regularization*, Eq. 1).

Magnitudes are ``(n, 3)`` arrays in rank order, one row ``[female - male, female, male]`` per
document (the reference notebooks' layout). With :math:`F`, :math:`M` the totals of a document's
female and male term occurrences:

- ``tc``: :math:`(F, M)`; ``tf``: :math:`(\ln(F + 1), \ln(M + 1))`; ``bool``: :math:`(\mathrm{sgn} F, \mathrm{sgn} M)`.

:math:`\mathrm{RaB}_t` is the component-wise mean of the first :math:`t` rows and
:math:`\mathrm{ARaB}_t = \frac{1}{t} \sum_{x=1}^{t} \mathrm{RaB}_x`. As in the reference code, a
list shorter than :math:`t` averages over the rows it has (``denominator="available"``);
``denominator="cutoff"`` divides by :math:`t` as the usual definition does. Measures report the
aggregate bias as male − female (positive = male-leaning), the opposite sign of the first
component here.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ._lists import check_offsets, list_lengths, list_positions, segment_sum

__all__ = ["MAGNITUDE_VARIANTS", "DENOMINATORS", "gender_magnitudes", "ibbr_magnitudes", "bias_labels",
           "rab", "arab", "rank_bias_lists"]

MAGNITUDE_VARIANTS = ("tc", "tf", "bool")
DENOMINATORS = ("available", "cutoff")


def gender_magnitudes(female_counts, male_counts, variant: str = "tf") -> np.ndarray:
    """``[female - male, female, male]`` magnitudes per document from group term totals."""
    female = np.asarray(female_counts, dtype=np.float64)
    male = np.asarray(male_counts, dtype=np.float64)
    if female.shape != male.shape or female.ndim != 1:
        raise ValueError("female_counts and male_counts must be 1-D arrays of the same length")
    if np.any(female < 0) or np.any(male < 0):
        raise ValueError("term counts must be non-negative")
    if variant == "tc":
        f, m = female, male
    elif variant == "tf":
        f, m = np.log1p(female), np.log1p(male)
    elif variant == "bool":
        f, m = np.sign(female), np.sign(male)
    else:
        raise ValueError(f"variant must be one of {MAGNITUDE_VARIANTS}; got {variant!r}")
    return np.stack([f - m, f, m], axis=1)


def ibbr_magnitudes(female_word_counts, male_word_counts) -> np.ndarray:
    r"""IBBR's passage magnitude (Eq. 1) in the ``[female - male, female, male]`` layout.

    From per-word counts (``(n, W_f)`` and ``(n, W_m)``): female :math:`= \sum_{w} \ln c_w`,
    male likewise, and IBBR's :math:`\mathrm{mag}(p) = \mathrm{male} - \mathrm{female}` is minus
    the first column. A word that does not occur contributes 0 (:math:`\ln 0 := 0`, i.e. the sums
    run over the words present); note that a word occurring once also contributes
    :math:`\ln 1 = 0`.
    """
    sums = []
    for counts in (female_word_counts, male_word_counts):
        counts = np.asarray(counts, dtype=np.float64)
        if counts.ndim != 2 or np.any(counts < 0):
            raise ValueError("word counts must be (n_docs, n_words) arrays of non-negative counts")
        sums.append(np.log(np.where(counts > 0, counts, 1.0)).sum(axis=1))
    female, male = sums
    if female.shape != male.shape:
        raise ValueError("female and male word counts must have the same number of documents")
    return np.stack([female - male, female, male], axis=1)


def bias_labels(magnitudes) -> np.ndarray:
    """IBBR's label :math:`d(p) \\in \\{-1, 0, 1\\}`: the sign of male − female (1 = male-biased)."""
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    return -np.sign(magnitudes[:, 0]).astype(np.int64)


def _check_magnitudes(magnitudes) -> np.ndarray:
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    if magnitudes.ndim != 2 or magnitudes.shape[1] != 3:
        raise ValueError(f"magnitudes must be an (n, 3) array of [female - male, female, male]; got {magnitudes.shape}")
    return magnitudes


def rank_bias_lists(magnitudes, offsets, t: Optional[int] = None, denominator: str = "available") -> tuple[np.ndarray, np.ndarray]:
    """RaB_t and ARaB_t of many lists at once, each ``(n_lists, 3)``; an empty list gives NaN rows.

    ``t = None`` uses each list's own length.
    """
    magnitudes = _check_magnitudes(magnitudes)
    offsets = check_offsets(offsets, magnitudes.shape[0])
    if denominator not in DENOMINATORS:
        raise ValueError(f"denominator must be one of {DENOMINATORS}; got {denominator!r}")
    if t is not None and (int(t) != t or t < 1):
        raise ValueError(f"t must be a positive integer or None; got {t!r}")
    ranks = list_positions(offsets)
    keep = np.ones(ranks.size, bool) if t is None else ranks <= t
    lengths = np.minimum(list_lengths(offsets), t) if t is not None else list_lengths(offsets)
    kept_offsets = np.concatenate([[0], np.cumsum(lengths)])
    values, ranks = magnitudes[keep], ranks[keep]
    totals = segment_sum(values, kept_offsets)
    # RaB_x for every prefix x of every list: the running sums divided by x.
    starts = np.repeat(kept_offsets[:-1], lengths)
    running = np.cumsum(values, axis=0)
    running -= np.concatenate([np.zeros((1, 3)), running])[starts]
    prefix_means = segment_sum(running / ranks[:, None], kept_offsets)
    width = lengths.astype(np.float64) if (denominator == "available" or t is None) else np.full(lengths.size, float(t))
    if denominator == "cutoff" and t is not None:
        # Positions beyond the list's end hold no document: RaB_x = total / x for x in (len, t].
        harmonic_tail = _harmonic(t) - _harmonic(lengths)
        prefix_means = prefix_means + totals * harmonic_tail[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        empty = (lengths == 0)[:, None]
        rab_values = np.where(empty, np.nan, totals / width[:, None])
        arab_values = np.where(empty, np.nan, prefix_means / width[:, None])
    return rab_values, arab_values


def _harmonic(n) -> np.ndarray:
    n = np.asarray(n, dtype=np.int64)
    table = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, int(n.max(initial=0)) + 1))])
    return table[n]


def rab(magnitudes, t: Optional[int] = None, denominator: str = "available") -> np.ndarray:
    """RaB_t ``[bias, female, male]`` of one list (bias = female − male here; NaN when empty)."""
    magnitudes = _check_magnitudes(magnitudes)
    return rank_bias_lists(magnitudes, np.array([0, magnitudes.shape[0]]), t, denominator)[0][0]


def arab(magnitudes, t: Optional[int] = None, denominator: str = "available") -> np.ndarray:
    """ARaB_t ``[bias, female, male]`` of one list: the mean of RaB_1 … RaB_t (NaN when empty)."""
    magnitudes = _check_magnitudes(magnitudes)
    return rank_bias_lists(magnitudes, np.array([0, magnitudes.shape[0]]), t, denominator)[1][0]
