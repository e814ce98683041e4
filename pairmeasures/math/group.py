r"""rND, rKL and rRD: group fairness of a ranking (Yang & Stoyanovich, *Measuring Fairness in
Ranked Outputs*, 2017; as used in PAIR Eq. 2-4).

For a boolean protected-group mask in rank order, with :math:`N` items of which :math:`p` are
protected and :math:`c_i` protected items among the top :math:`i`, the raw score sums a per-prefix
disparity over the prefixes :math:`i = s, 2s, \dots \le N` (step :math:`s`), discounted by
:math:`1/\log_2(i + 1)`:

- rND: :math:`\left| c_i / i - p / N \right|`
- rKL: :math:`\mathrm{KL}(P_i \| Q)` in bits, :math:`P_i = (c_i/i,\ 1 - c_i/i)`,
  :math:`Q = (p/N,\ 1 - p/N)`, with :math:`0 \log 0 = 0`
- rRD: :math:`\max(0,\ R^* - R_i)` with :math:`R_i = c_i / (i - c_i)`, :math:`R^* = p / (N - p)`
  (the authors' one-sided ratio difference: only under-representation counts; a prefix without
  unprotected items has :math:`R_i = \infty`)

and the value is its min-max normalisation over all rankings of the same items (PAIR Eq. 2):
:math:`(\mathrm{raw} - \min) / (\max - \min)`, 0 for the fairest ranking, 1 for the least fair.
The value depends only on which positions hold protected items, so the extremes are monotone
lattice paths through (prefix length, protected count): an exact :math:`O(N p)` dynamic programme,
vectorised here over lists and computed once per process for each (N, p) and options.

Reference behaviour (``SALT-NLP/pair`` ``src/metrics/measures.py``) as named options:
``normalization="max"`` divides by the maximum only; ``kl_eps=0.001`` replaces a top-i share of
exactly 0 or 1 by 0.001 (both become 0.001); ``all_protected="zero"`` sets :math:`R_i = 0` for a
prefix without unprotected items. The reference's sampled normaliser is never used: the maximum
here is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ._lists import check_offsets, chunks_by_length, list_lengths, pad_lists, prefix_sum

__all__ = [
    "GROUP_MEASURES",
    "GroupFairnessResult",
    "group_fairness_lists",
    "group_fairness_raw",
    "group_fairness_bounds",
    "prefix_disparity",
    "rnd",
    "rkl",
    "rrd",
    "DEGENERATE_GROUP_FAIRNESS",
]

GROUP_MEASURES = ("rnd", "rkl", "rrd")
NORMALIZATIONS = ("minmax", "max")
ALL_PROTECTED = ("limit", "zero")

#: Value of a list with nothing to measure: one group only, no items, or every ranking scoring the same.
DEGENERATE_GROUP_FAIRNESS = 0.0

SPREAD_RTOL = 1e-12


@dataclass(frozen=True)
class GroupFairnessResult:
    """One measure over many lists; every field has shape ``(lists,)`` (``(lists, J)`` for ``J`` prefixes).

    ``degenerate`` marks lists with nothing to measure (no protected or no unprotected item, or
    every ranking of the items scoring the same); ``value`` is 0 there.
    """

    value: np.ndarray
    raw: np.ndarray
    min_raw: np.ndarray
    max_raw: np.ndarray
    degenerate: np.ndarray


def _check_options(measure: str, step: int, normalization: str, kl_eps: float, all_protected: str) -> None:
    if measure not in GROUP_MEASURES:
        raise ValueError(f"measure must be one of {GROUP_MEASURES}, got {measure!r}")
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 1:
        raise ValueError(f"step must be a positive integer, got {step!r}")
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")
    if not 0.0 <= kl_eps < 1.0:
        raise ValueError(f"kl_eps must be in [0, 1), got {kl_eps!r} (0 means 0 log 0 = 0; the reference uses 0.001)")
    if all_protected not in ALL_PROTECTED:
        raise ValueError(f"all_protected must be one of {ALL_PROTECTED}, got {all_protected!r}")


def _bernoulli_kl(px: np.ndarray, qx: np.ndarray) -> np.ndarray:
    """KL((px, 1-px) || (qx, 1-qx)) in bits with 0 log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where(px > 0, px * np.log2(px / qx), 0.0)
        second = np.where(px < 1, (1 - px) * np.log2((1 - px) / (1 - qx)), 0.0)
    return first + second


def prefix_disparity(measure: str, protected_top: ArrayLike, depth: ArrayLike, protected_total: ArrayLike,
                     total: ArrayLike, kl_eps: float = 0.0, all_protected: str = "limit") -> np.ndarray:
    """Per-prefix disparity f(i, c_i) of ``measure`` (arrays broadcast together).

    ``protected_top`` is c_i, ``depth`` is i, ``protected_total`` is p and ``total`` is N.
    """
    c = np.asarray(protected_top, dtype=np.float64)
    i = np.asarray(depth, dtype=np.float64)
    p = np.asarray(protected_total, dtype=np.float64)
    n = np.asarray(total, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = c / i
        population = p / n
        if measure == "rnd":
            return np.abs(share - population)
        if measure == "rkl":
            if kl_eps > 0:
                share = np.where((share == 0) | (share == 1), kl_eps, share)
                population = np.where((population == 0) | (population == 1), kl_eps, population)
            return _bernoulli_kl(share, population)
        target = np.where(n > p, p / np.where(n > p, n - p, 1), 0.0)
        unprotected = i - c
        empty_ratio = np.inf if all_protected == "limit" else 0.0
        ratio = np.where(unprotected > 0, c / np.where(unprotected > 0, unprotected, 1), empty_ratio)
        return np.maximum(0.0, target - ratio)


def _discounts(width: int, step: int) -> np.ndarray:
    """Weight of prefix i (column i): 1/log2(i + 1) for multiples of ``step``, else 0."""
    depth = np.arange(width + 1)
    weights = np.zeros(width + 1)
    summed = (depth % step == 0) & (depth > 0)
    weights[summed] = 1.0 / np.log2(depth[summed] + 1)
    return weights


def _raw(mask: np.ndarray, prefixes: np.ndarray, measure: str, step: int, kl_eps: float, all_protected: str) -> np.ndarray:
    """Raw discounted sums ``(B, J)`` of the top ``prefixes[b, j]`` items of lists padded into ``mask`` ``(B, L)``
    (1.0 = protected): each prefix is scored against its own totals (N = the prefix length, p its protected items)."""
    width = mask.shape[1]
    weights = _discounts(width, step)
    depth = np.arange(1, width + 1)
    top_counts = np.cumsum(mask, axis=1)
    protected_total = np.take_along_axis(np.concatenate([np.zeros((mask.shape[0], 1)), top_counts], axis=1), prefixes, axis=1)
    within = depth[None, None, :] <= prefixes[:, :, None]
    with np.errstate(invalid="ignore", divide="ignore"):  # beyond a prefix's end may give NaN; masked out
        disparity = prefix_disparity(measure, top_counts[:, None, :], depth[None, None, :], protected_total[:, :, None],
                                     prefixes[:, :, None], kl_eps, all_protected)
    return (weights[None, None, 1:] * np.where(within, disparity, 0.0)).sum(axis=2)


def _lattice_bounds(lengths: np.ndarray, protected_total: np.ndarray, measure: str, step: int, kl_eps: float,
                    all_protected: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact (min, max) raw sums over all rankings of ``lengths`` items of which ``protected_total`` are protected:
    lattice paths through the state c = protected items among the top i."""
    batch, width = lengths.size, int(lengths.max(initial=0))
    weights = _discounts(width, step)
    most = int(protected_total.max(initial=0))
    counts = np.arange(most + 1)
    high = np.where(counts[None, :] == 0, 0.0, -np.inf) * np.ones((batch, 1))
    low = np.where(counts[None, :] == 0, 0.0, np.inf) * np.ones((batch, 1))
    min_raw = np.zeros(batch)
    max_raw = np.zeros(batch)
    unprotected_total = lengths - protected_total
    minus_inf = np.full((batch, 1), -np.inf)
    plus_inf = np.full((batch, 1), np.inf)
    finishing = {int(size): np.flatnonzero(lengths == size) for size in np.unique(lengths)}
    for i in range(1, width + 1):
        high = np.maximum(high, np.concatenate([minus_inf, high[:, :-1]], axis=1))
        low = np.minimum(low, np.concatenate([plus_inf, low[:, :-1]], axis=1))
        feasible = ((counts[None, :] <= protected_total[:, None]) & (counts[None, :] <= i)
                    & (i - counts[None, :] <= unprotected_total[:, None]))
        if weights[i]:
            with np.errstate(invalid="ignore"):  # infeasible states may give NaN; masked below
                gain = weights[i] * prefix_disparity(measure, counts[None, :], i, protected_total[:, None],
                                                     lengths[:, None], kl_eps, all_protected)
                high = high + gain
                low = low + gain
        high = np.where(feasible, high, -np.inf)
        low = np.where(feasible, low, np.inf)
        if i in finishing:
            done = finishing[i]
            max_raw[done] = high[done, protected_total[done]]
            min_raw[done] = low[done, protected_total[done]]
    return min_raw, max_raw


#: Exact (min, max) raw sums already computed, by (measure, step, kl_eps, all_protected, N, p): the bounds depend
#: only on those, so a run (and every cut-off of it) needs each once. Started afresh beyond ``_BOUNDS_LIMIT``.
_BOUNDS: dict[tuple, tuple[float, float]] = {}
_BOUNDS_LIMIT = 1_000_000


def _bounds(lengths: np.ndarray, protected_total: np.ndarray, measure: str, step: int, kl_eps: float,
            all_protected: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_lattice_bounds` of every list, each distinct (N, p) computed once per process."""
    options = (measure, step, kl_eps, all_protected)
    span = int(protected_total.max(initial=0)) + 1
    codes, inverse = np.unique(lengths * span + protected_total, return_inverse=True)
    pairs = np.stack([codes // span, codes % span], axis=1)
    keys = [options + (int(n), int(p)) for n, p in pairs.tolist()]
    new = [row for row, key in enumerate(keys) if key not in _BOUNDS]
    if new:
        if len(_BOUNDS) + len(new) > _BOUNDS_LIMIT:
            _BOUNDS.clear()
        low, high = _lattice_bounds(pairs[new, 0], pairs[new, 1], measure, step, kl_eps, all_protected)
        _BOUNDS.update(zip((keys[row] for row in new), zip(low.tolist(), high.tolist())))
    found = np.array([_BOUNDS[key] for key in keys], dtype=np.float64).reshape(-1, 2)
    return found[inverse.reshape(-1), 0], found[inverse.reshape(-1), 1]


def group_fairness_lists(protected, offsets, measure: str, step: int = 1, normalization: str = "minmax",
                         kl_eps: float = 0.0, all_protected: str = "limit", prefixes=None) -> GroupFairnessResult:
    """rND, rKL or rRD (``measure``) of many lists at once.

    ``protected`` is a boolean mask of all lists back to back in rank order; list ``q`` owns rows
    ``offsets[q]:offsets[q + 1]``. With ``prefixes`` ``(n_lists, J)``, of the top ``prefixes[q, j]`` items of each
    list q (every field ``(n_lists, J)``): each prefix is a ranking of its own, normalised over its own items.
    """
    _check_options(measure, step, normalization, kl_eps, all_protected)
    mask = np.asarray(protected)
    if mask.ndim != 1 or (mask.dtype != bool and not np.isin(mask, (0, 1)).all()):
        raise ValueError("protected must be a 1-D boolean mask in rank order (True = protected item)")
    mask = mask.astype(np.float64)
    offsets = check_offsets(offsets, mask.shape[0])
    lengths = list_lengths(offsets)
    cut = lengths[:, None] if prefixes is None else np.asarray(prefixes, dtype=np.int64)
    if cut.ndim != 2 or cut.shape[0] != lengths.size or (cut < 0).any() or (cut > lengths[:, None]).any():
        raise ValueError(f"prefixes must be an (n_lists, J) matrix of prefix lengths within each list; got {cut.shape}")
    raw = np.zeros(cut.shape)
    for lists in chunks_by_length(lengths, max_cells=max(1, 1_000_000 // cut.shape[1])):
        padded, _ = pad_lists(mask, offsets, lists)
        raw[lists] = _raw(padded, cut[lists], measure, step, kl_eps, all_protected)
    protected_total = np.rint(prefix_sum(mask, offsets, cut)).astype(np.int64)
    min_raw, max_raw = (bound.reshape(cut.shape) for bound in
                        _bounds(cut.reshape(-1), protected_total.reshape(-1), measure, step, kl_eps, all_protected))
    one_group = (protected_total == 0) | (protected_total == cut)
    tolerance = SPREAD_RTOL * np.abs(max_raw)
    above_min = np.where(np.abs(raw - min_raw) <= tolerance, 0.0, raw - min_raw)
    at_max = np.abs(max_raw - raw) <= tolerance
    if normalization == "minmax":
        spread = max_raw - min_raw
        degenerate = one_group | (spread <= tolerance)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = np.where(at_max, 1.0, above_min / spread)
    else:
        degenerate = one_group | (max_raw <= 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = np.where(at_max, 1.0, raw / max_raw)
    value = np.where(degenerate, DEGENERATE_GROUP_FAIRNESS, np.clip(value, 0.0, 1.0))
    fields = {"value": value, "raw": raw, "min_raw": min_raw, "max_raw": max_raw, "degenerate": degenerate}
    if prefixes is None:
        fields = {name: array[:, 0] for name, array in fields.items()}
    return GroupFairnessResult(**fields)


def _single(protected, measure, step, normalization="minmax", kl_eps=0.0, all_protected="limit"):
    mask = np.asarray(protected)
    return group_fairness_lists(mask, np.array([0, mask.shape[0]]), measure, step, normalization, kl_eps,
                                all_protected)


def group_fairness_raw(protected, measure: str, step: int = 1, kl_eps: float = 0.0,
                       all_protected: str = "limit") -> float:
    r"""Unnormalised discounted sum :math:`\sum_i f(i, c_i) / \log_2(i + 1)` of ``measure``."""
    return float(_single(protected, measure, step, kl_eps=kl_eps, all_protected=all_protected).raw[0])


def group_fairness_bounds(protected, measure: str, step: int = 1, kl_eps: float = 0.0,
                          all_protected: str = "limit") -> tuple[float, float]:
    """Exact ``(min_raw, max_raw)`` over all rankings with the same number of protected items."""
    result = _single(protected, measure, step, kl_eps=kl_eps, all_protected=all_protected)
    return float(result.min_raw[0]), float(result.max_raw[0])


def rnd(protected, step: int = 1, normalization: str = "minmax") -> float:
    r"""rND: normalised discounted difference :math:`\sum_i |c_i/i - p/N| / \log_2(i+1)`, normalised exactly.

    ``protected`` is a boolean mask in rank order. 0 when there is nothing to measure (no item of
    one of the groups, or every ranking scoring the same).
    """
    return float(_single(protected, "rnd", step, normalization).value[0])


def rkl(protected, step: int = 1, normalization: str = "minmax", kl_eps: float = 0.0) -> float:
    r"""rKL: normalised discounted KL divergence of the top-i group shares from the overall shares.

    ``kl_eps=0.001`` reproduces the reference code (a share of exactly 0 or 1 becomes 0.001).
    """
    return float(_single(protected, "rkl", step, normalization, kl_eps=kl_eps).value[0])


def rrd(protected, step: int = 1, normalization: str = "minmax", all_protected: str = "limit") -> float:
    r"""rRD: normalised discounted ratio difference :math:`\sum_i \max(0, R^* - R_i) / \log_2(i+1)`.

    Depends on which group is protected; ``all_protected="zero"`` reproduces the reference code
    (a prefix without unprotected items counts as ratio 0, i.e. maximal under-representation).
    """
    return float(_single(protected, "rrd", step, normalization, all_protected=all_protected).value[0])
