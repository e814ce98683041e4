r"""DUO: Discounted Uniformity of Opinions (Ziems et al., *Measuring and Addressing Indexical Bias
in Information Retrieval*, Eq. 5-6 and Appendix A.2).

For polarity scores :math:`p_1, \dots, p_n` in the order a system ranked the documents, the
utility at depth :math:`k` is the population variance of the first :math:`k` scores around their
own mean (Eq. 5 as drawn in the paper's Figure 1 and computed by the reference code)

.. math::  u_V(k) = \frac{1}{k} \sum_{j \le k} (p_j - \bar p_{1..k})^2 ,

the raw score sums :math:`u_V(k) / \log_2 k` over the depths :math:`k = s, 2s, \dots < n` (step
:math:`s`; :math:`k = 1` contributes nothing, and the full list :math:`k = n` is left out because
its variance is the same for every ordering), and DUO is one minus its min-max normalisation over
all orderings of the same scores (Eq. 6):

.. math::  \mathrm{DUO}(r) = 1 - \frac{\mathrm{raw}(r) - \min_{r'} \mathrm{raw}(r')}{\max_{r'} \mathrm{raw}(r') - \min_{r'} \mathrm{raw}(r')} .

DUO is invariant to scaling the scores, and is computed on scores scaled to magnitude 1; raw
sums and their extremes are reported in the scores' own units (they overflow to infinity or
underflow to 0 only where the true value lies beyond the range of a float).

DUO is 1 for the least diverse ordering (opinions cluster at the top: most biased) and 0 for the
most diverse one.

Exact extremes. A prefix's variance depends only on the *set* of its items, so an ordering is a
chain of sets and the extremes are optimal chains. With the scores sorted, a minimising chain can
be taken to grow an interval of neighbouring scores, and a maximising chain to shrink an interval
of excluded middle scores; both are :math:`O(n^2)` dynamic programmes over intervals, vectorised
here over diagonals and over lists. The property is checked against exhaustive enumeration
(:math:`n \le 8`) and an :math:`O(2^n n)` subset dynamic programme (:math:`n \le 12`) by the test
suite, and holds for any non-negative depth weights in those checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ._lists import check_offsets, chunks_by_length, list_lengths, pad_lists

__all__ = ["DuoResult", "KnownBounds", "exact_bounds", "duo", "duo_raw", "duo_bounds", "duo_lists", "duo_batches", "duo_depth_weights", "DEGENERATE_DUO", "check_step",
           "checked_scores"]

#: DUO of a list whose orderings all score the same (fewer than 3 documents, equal scores, ...),
#: as in the reference implementation.
DEGENERATE_DUO = 0.5

#: Relative tolerance under which the spread of raw scores over orderings counts as zero.
SPREAD_RTOL = 1e-10


@dataclass(frozen=True)
class DuoResult:
    """DUO of many lists at once; every field has shape ``(lists,)`` or ``(lists, axes)``.

    ``degenerate`` marks lists whose orderings all score the same (``duo`` is 0.5 there);
    ``sign`` is +1 when the top of the list leans to the positive pole, -1 to the negative one,
    0 when the signed utilities cancel exactly or nothing is measured.
    """

    duo: np.ndarray
    raw: np.ndarray
    raw_signed: np.ndarray
    min_raw: np.ndarray
    max_raw: np.ndarray
    sign: np.ndarray
    degenerate: np.ndarray

    @property
    def signed(self) -> np.ndarray:
        r"""Signed DUO :math:`\mu^+ = \mathrm{sgn}(\mathrm{raw}^+) \cdot \mathrm{DUO}` (Appendix A.2)."""
        return self.sign * self.duo


def duo_depth_weights(width: int, lengths: np.ndarray, step: int) -> np.ndarray:
    r"""Weights :math:`1/\log_2 k` of the summed depths, shape ``(lists, width + 1)``, column ``k``.

    Depth ``k`` is summed for a list of length ``n`` when ``k`` is a multiple of ``step`` and
    ``1 < k < n``.
    """
    depth = np.arange(width + 1)
    summed = (depth % step == 0) & (depth > 1)
    base = np.zeros(width + 1)
    base[summed] = 1.0 / np.log2(depth[summed])
    return base[None, :] * (depth[None, :] < np.asarray(lengths)[:, None])


def check_step(step: int) -> int:
    """``step`` as an int after checking it is a positive integer (DUO's depth step s); a ValueError otherwise."""
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 1:
        raise ValueError(f"step must be a positive integer, got {step!r}")
    return int(step)


def checked_scores(p) -> np.ndarray:
    """Polarity scores ``p`` as floats, 1-D (one axis) or 2-D (documents, axes), after checking they are finite; a
    ValueError naming the first bad rank position otherwise."""
    scores = np.asarray(p, dtype=np.float64)
    if scores.ndim not in (1, 2):
        raise ValueError(f"polarity scores must be 1-D (one axis) or 2-D (documents, axes); got shape {scores.shape}")
    bad = ~np.isfinite(scores)
    if bad.any():
        position = int(np.argwhere(bad)[0][0])
        raise ValueError(
            f"polarity scores must be finite; got {scores.reshape(scores.shape[0], -1)[position]} at rank "
            f"position {position} (0-based). Drop or re-score that document."
        )
    return scores


class KnownBounds:
    """Exact bounds computed before, by their programmes' whole input: a list's sorted (centred, unit-scaled) scores
    and the depth step. Lists with the same scores as one seen before (the same top k reordered: re-rankers of one
    first stage, the points of a trade-off curve, a family at every cut-off) take its bounds instead of running the
    programmes again: the same numbers, bit for bit (:func:`exact_bounds` reads nothing else). ``duo_lists(...,
    known=table)`` reads and fills it; it forgets everything when its keys pass ``limit_bytes``."""

    def __init__(self, limit_bytes: int = 64_000_000):
        self.limit_bytes = limit_bytes
        self._found: dict = {}
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._found)

    def bounds(self, ordered: np.ndarray, a1: np.ndarray, a2: np.ndarray, weights: np.ndarray, lengths: np.ndarray,
               step: int) -> tuple:
        """:func:`exact_bounds` of the lists whose sorted scores are the first ``lengths[i]`` of each row of
        ``ordered``: those found here read, the others computed (on the rows of ``a1``, ``a2`` and ``weights``
        only as long as the longest of them) and kept."""
        keys = [(step, row[:n].tobytes()) for row, n in zip(ordered, lengths.tolist())]
        min_raw, max_raw = np.zeros(len(keys)), np.zeros(len(keys))
        missing = []
        for i, key in enumerate(keys):
            found = self._found.get(key)
            if found is None:
                missing.append(i)
            else:
                min_raw[i], max_raw[i] = found
        if missing:
            rows = np.array(missing)
            end = int(lengths[rows].max()) + 1
            low, high = exact_bounds(a1[rows, :end], a2[rows, :end], weights[rows, :end], lengths[rows])
            min_raw[rows], max_raw[rows] = low, high
            self._keep([keys[i] for i in missing], low.tolist(), high.tolist())
        return min_raw, max_raw

    def _keep(self, keys: list, low: list, high: list) -> None:
        size = sum(len(key[1]) + 100 for key in keys)
        if self._bytes + size > self.limit_bytes:
            self._found.clear()
            self._bytes = 0
        self._found.update(zip(keys, zip(low, high)))
        self._bytes += size


def _duo_padded(scores: np.ndarray, lengths: np.ndarray, step: int, known: Optional[KnownBounds]):
    """Raw, signed raw and exact bounds for lists padded into ``scores`` of shape ``(B, L)`` (the bounds of lists
    ``known`` holds taken from it, and the others kept there)."""
    batch, width = scores.shape
    weights = duo_depth_weights(width, lengths, step)
    valid = np.arange(width)[None, :] < lengths[:, None]
    safe_lengths = np.maximum(lengths, 1)
    # DUO is scale-invariant: work on scores scaled to magnitude 1, so that squares neither
    # overflow (1e160) nor underflow (1e-170); raw sums are scaled back by the caller.
    unit = _unit(np.where(valid, np.abs(scores), 0.0))
    scaled = np.where(valid, scores / unit[:, None], 0.0)
    mean = scaled.sum(axis=1) / safe_lengths
    centred = np.where(valid, scaled - mean[:, None], 0.0)
    spread_unit = _unit(np.abs(centred))
    centred = centred / spread_unit[:, None]
    depth = np.arange(1, width + 1)

    # Prefix variances in rank order (Eq. 5), from prefix sums of centred scores.
    s1 = np.cumsum(centred, axis=1)
    s2 = np.cumsum(centred * centred, axis=1)
    prefix_var = np.maximum(s2 / depth - (s1 / depth) ** 2, 0.0)
    raw = (weights[:, 1:] * prefix_var).sum(axis=1)
    positives = np.cumsum(valid & (scores > 0), axis=1)
    prefix_sign = np.where(positives / depth > 0.5, 1.0, -1.0)
    raw_signed = (weights[:, 1:] * prefix_sign * prefix_var).sum(axis=1)

    # Sorted scores and their prefix sums, A[:, j] = sum of the j smallest.
    ordered = np.sort(np.where(valid, centred, np.inf), axis=1)
    ordered = np.where(valid, ordered, 0.0)
    a1 = np.concatenate([np.zeros((batch, 1)), np.cumsum(ordered, axis=1)], axis=1)
    a2 = np.concatenate([np.zeros((batch, 1)), np.cumsum(ordered * ordered, axis=1)], axis=1)

    if known is None:
        min_raw, max_raw = exact_bounds(a1, a2, weights, lengths)
    else:
        min_raw, max_raw = known.bounds(ordered, a1, a2, weights, lengths, step)

    # An upper bound of raw: every prefix variance is at most (range / 2)^2.
    value_range = ordered[np.arange(batch), np.maximum(lengths - 1, 0)] - ordered[:, 0] if width else np.zeros(batch)
    spread_scale = weights.sum(axis=1) * value_range ** 2 / 4
    return raw, raw_signed, min_raw, max_raw, spread_scale, unit * spread_unit


def exact_bounds(a1: np.ndarray, a2: np.ndarray, weights: np.ndarray, lengths: np.ndarray) -> tuple:
    """``(min_raw, max_raw)``: the exact extremes of the raw sum over all orderings of each list, from the prefix sums
    ``a1`` (and ``a2``, of squares) of its sorted scores, shape ``(B, L + 1)``, its depth weights (``(B, L + 1)``,
    :func:`duo_depth_weights`) and its length. Each list's bounds depend on its own ``lengths[i]`` sorted scores
    and weights only, not on the padding ``L`` nor on the other lists."""
    batch, width = a1.shape[0], a1.shape[1] - 1
    finishing = {int(size): np.flatnonzero(lengths == size) for size in np.unique(lengths)}
    min_raw = np.zeros(batch)
    max_raw = np.zeros(batch)
    # Every step below writes into these buffers (the same arithmetic as fresh arrays, without allocating any).
    flat = [np.empty(batch * (width + 1)) for _ in range(3)]
    def buffers(columns: int) -> tuple:  # contiguous (batch, columns) views: the steps run as flat loops
        return tuple(part[:batch * columns].reshape(batch, columns) for part in flat)

    # Minimum: chains of growing intervals [i, i + size) of the sorted scores.
    best_low = np.zeros((batch, width))
    for size in range(2, width + 1):
        starts = width - size + 1
        s1, s2, spare = buffers(starts)
        np.subtract(a1[:, size:size + starts], a1[:, :starts], out=s1)
        np.subtract(a2[:, size:size + starts], a2[:, :starts], out=s2)
        gain = _weighted_variance(s1, s2, size, weights[:, size:size + 1])
        np.minimum(best_low[:, :starts], best_low[:, 1:starts + 1], out=spare)
        np.add(spare, gain, out=best_low[:, :starts])
        if size in finishing:
            min_raw[finishing[size]] = best_low[finishing[size], 0]

    # Maximum: the first `size` items are the b smallest and the size - b largest scores.
    # top1[:, t] / top2[:, t]: sums of the t largest scores (and of their squares).
    rows = np.arange(batch)
    top_start = np.clip(lengths[:, None] - np.arange(width + 1)[None, :], 0, width)
    top1 = a1[rows, lengths][:, None] - np.take_along_axis(a1, top_start, axis=1)
    top2 = a2[rows, lengths][:, None] - np.take_along_axis(a2, top_start, axis=1)
    # best_high[:, 1 + b]: best sum for prefixes whose latest set has b smallest items; -inf borders.
    best_high = np.full((batch, width + 2), -np.inf)
    best_high[:, 1] = 0.0
    for size in range(1, width + 1):
        sets = size + 1
        s1, s2, spare = buffers(sets)
        np.add(a1[:, :sets], top1[:, size::-1], out=s1)
        np.add(a2[:, :sets], top2[:, size::-1], out=s2)
        gain = _weighted_variance(s1, s2, size, weights[:, size:size + 1])
        # The newest item is either the next smallest (b - 1 -> b) or the next largest (b -> b).
        np.maximum(best_high[:, :sets], best_high[:, 1:sets + 1], out=spare)
        np.add(spare, gain, out=best_high[:, 1:sets + 1])
        if size in finishing:
            max_raw[finishing[size]] = best_high[finishing[size], 1:size + 2].max(axis=1)

    return min_raw, max_raw


def _weighted_variance(s1: np.ndarray, s2: np.ndarray, size: int, weight: np.ndarray) -> np.ndarray:
    """``weight * max(s2 / size - (s1 / size) ** 2, 0)``, the weighted population variance of sets of ``size`` items
    from their sums ``s1`` and sums of squares ``s2``, computed in place (in ``s2``; ``s1`` is overwritten)."""
    np.divide(s2, size, out=s2)
    np.divide(s1, size, out=s1)
    np.square(s1, out=s1)
    np.subtract(s2, s1, out=s2)
    np.maximum(s2, 0.0, out=s2)
    return np.multiply(weight, s2, out=s2)


def _unit(magnitudes: np.ndarray) -> np.ndarray:
    """Largest magnitude of each row, 1 for rows of zeros."""
    largest = magnitudes.max(axis=1, initial=0.0)
    return np.where(largest > 0, largest, 1.0)


def _snap(gap: np.ndarray, tolerance: np.ndarray) -> np.ndarray:
    """Distances to a bound that are rounding residue become exactly 0."""
    return np.where(np.abs(gap) <= tolerance, 0.0, gap)


def duo_lists(scores, offsets, step: int = 1, known: Optional[KnownBounds] = None) -> DuoResult:
    """DUO of many ranked lists at once.

    ``scores`` holds the polarity scores of all lists back to back in rank order, shape ``(rows,)``
    or ``(rows, m)`` for ``m`` axes; list ``q`` owns rows ``offsets[q]:offsets[q + 1]``. Lists are
    grouped by length and each group runs the exact interval programmes in one vectorised pass. ``known``: a
    :class:`KnownBounds` to take the bounds of lists seen before from, and to keep those computed here in (the same
    values either way).
    """
    return duo_batches([(scores, offsets)], step, known)[0]


#: Cells (lists times padded width) the programmes take in one pass at most.
_PASS_CELLS = 1_000_000


def duo_batches(batches: Sequence[tuple], step: int = 1, known: Optional[KnownBounds] = None) -> list[DuoResult]:
    """:func:`duo_lists` of each ``(scores, offsets)`` of ``batches`` (e.g. a measure family at every cut-off): the
    same results, with the groups of lists of one padded width from every batch run in one pass (a list's numbers
    depend on its group's width, never on the other lists of its pass), so that 50 cut-offs make a few passes
    of each width rather than a few passes each."""
    step = check_step(step)
    names = ("raw", "raw_signed", "min_raw", "max_raw", "scale", "unit")
    prepared: list = []
    jobs: dict = {}  # padded width -> (batch, its lists, their padded scores, lengths) of every group of that width
    for number, (scores, offsets) in enumerate(batches):
        scores = checked_scores(scores)
        offsets = check_offsets(offsets, scores.shape[0])
        axes = 1 if scores.ndim == 1 else scores.shape[1]
        prepared.append((scores, {name: np.zeros((offsets.size - 1, axes)) for name in names}))
        for lists in chunks_by_length(list_lengths(offsets), max_cells=max(1, _PASS_CELLS // axes)):
            padded, chunk_lengths = pad_lists(scores, offsets, lists)
            if padded.ndim == 3:  # (B, L, m) -> (B * m, L), one row per list and axis
                padded = padded.transpose(0, 2, 1).reshape(padded.shape[0] * axes, padded.shape[1])
            jobs.setdefault(padded.shape[1], []).append((number, lists, padded, np.repeat(chunk_lengths, axes)))
    for width, group in jobs.items():
        for part in _passes(group, width):
            results = _duo_padded(np.concatenate([job[2] for job in part]), np.concatenate([job[3] for job in part]),
                                  step, known)
            start = 0
            for number, lists, padded, _ in part:
                fields = prepared[number][1]
                for name, values in zip(names, results):
                    fields[name][lists] = values[start:start + padded.shape[0]].reshape(lists.size, -1)
                start += padded.shape[0]
    return [_finished(scores, fields) for scores, fields in prepared]


def _passes(group: list, width: int):
    """The jobs of one padded width in runs of at most :data:`_PASS_CELLS` cells (a larger job alone)."""
    part: list = []
    cells = 0
    for job in group:
        size = job[2].shape[0] * max(width, 1)
        if part and cells + size > _PASS_CELLS:
            yield part
            part, cells = [], 0
        part.append(job)
        cells += size
    if part:
        yield part


def _finished(scores: np.ndarray, fields: dict) -> DuoResult:
    """DUO from the raw sums and bounds of each list (and axis): the normalisation of Eq. 6, signs and degeneracy."""
    fields = dict(fields)
    scale = fields.pop("scale")
    spread = fields["max_raw"] - fields["min_raw"]
    degenerate = (scale <= 0) | (spread <= SPREAD_RTOL * scale)
    tolerance = SPREAD_RTOL * scale
    above_min = _snap(fields["raw"] - fields["min_raw"], tolerance)
    below_max = _snap(fields["max_raw"] - fields["raw"], tolerance)
    with np.errstate(divide="ignore", invalid="ignore"):
        normalised = np.where(below_max == 0, 0.0, 1.0 - above_min / spread)
    value = np.where(degenerate, DEGENERATE_DUO, np.clip(normalised, 0.0, 1.0))
    sign = np.where(fields["raw_signed"] > tolerance, 1.0, np.where(fields["raw_signed"] < -tolerance, -1.0, 0.0))
    sign = np.where(scale > 0, sign, 0.0)
    unit = fields.pop("unit")
    with np.errstate(over="ignore", under="ignore"):  # raw sums in the scores' own units
        fields = {name: values * unit * unit for name, values in fields.items()}
    if scores.ndim == 1:
        fields = {name: values[:, 0] for name, values in fields.items()}
        value, sign, degenerate = value[:, 0], sign[:, 0], degenerate[:, 0]
    return DuoResult(duo=value, sign=sign, degenerate=degenerate, **fields)


def _single(p, step: int) -> DuoResult:
    scores = checked_scores(p)
    return duo_lists(scores, np.array([0, scores.shape[0]]), step)


def duo(p, step: int = 1, signed: bool = False):
    """DUO of polarity scores ``p`` given in rank order (Eq. 6); signed DUO with ``signed=True``.

    ``p`` is 1-D (one axis) or 2-D ``(n, m)``: then one value per axis is returned and the caller
    aggregates (the measure takes the maximum, as the paper suggests). Lists whose orderings all
    score the same (fewer than 3 documents with ``step=1``, all scores equal, ...) get 0.5, as in
    the reference implementation; signed DUO takes the sign of the signed raw sum (Appendix A.2,
    0 when it is zero) and keeps it.
    """
    result = _single(p, step)
    values = result.signed if signed else result.duo
    return float(values[0]) if values.ndim == 1 else values[0]


def duo_raw(p, step: int = 1, signed: bool = False):
    r"""Unnormalised discounted sum :math:`\sum_k u_V(k)/\log_2 k` (signed utilities with ``signed=True``)."""
    result = _single(p, step)
    values = result.raw_signed if signed else result.raw
    return float(values[0]) if values.ndim == 1 else values[0]


def duo_bounds(p, step: int = 1):
    """Exact ``(min_raw, max_raw)`` of :func:`duo_raw` over all orderings of the scores ``p``."""
    result = _single(p, step)
    if result.min_raw.ndim == 1:
        return float(result.min_raw[0]), float(result.max_raw[0])
    return result.min_raw[0], result.max_raw[0]
