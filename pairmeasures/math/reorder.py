r"""Orderings that attain DUO's bounds, and the DuoGreedy re-ranking step (pure NumPy).

:func:`duo_extreme_order` backtracks the interval programmes of :mod:`pairmeasures.math.duo`:
``which="max"`` returns an ordering of maximal raw utility (DUO = 0, the most diverse ordering: its
prefixes are the ``b`` smallest and ``size - b`` largest scores), ``which="min"`` one of minimal raw
utility (DUO = 1, the least diverse: its prefixes are growing intervals of neighbouring scores).
``pole=+1`` / ``-1`` restricts the least diverse ordering to those whose top document lies on that
side of zero (most biased toward that pole); it is exact within that restriction.

:func:`most_signed_order` finds an ordering of extreme *signed* DUO (:math:`\mu^+`, PAIR Appendix A.2) toward one
pole by local search from the least diverse orderings (:func:`window_orders`); ``pole=`` above keeps DUO = 1,
which can still lean the other way in :math:`\mu^+`.

:func:`duogreedy_lists` reorders the top ``k`` of many lists: at position ``t`` it picks the
remaining document maximising

.. math::  \lambda \, \mathrm{rel}(d) + (1 - \lambda) \, \frac{\mathrm{Var}(p_{\text{prefix}} \cup p_d)}{(\mathrm{range}/2)^2} ,

where :math:`\mathrm{rel}(d) = 1 - i_d / k` is rank-based (``i_d`` the document's 0-based input
position, so ``Lambda=1`` returns the input order exactly, whatever the scores) and the variance
term is the prefix variance after adding ``d`` (at the first position, where it is 0 for every
document, the squared distance of ``d`` to the mean of the top ``k``), on the axis where it is smallest when there are
several (DUO with ``axes='max'`` follows the most biased axis). Lists of equal length run together,
``O(k^2)`` per list.
"""

from __future__ import annotations

import itertools
from typing import Optional

import numpy as np

from ._lists import check_offsets, list_lengths
from .duo import check_step, checked_scores, duo_depth_weights, duo_lists

#: Cells of the boolean backtracking tables built in one vectorised pass (about 50 MB).
_MAX_CHOICE_CELLS = 50_000_000

__all__ = ["duo_extreme_order", "duo_extreme_orders", "duogreedy_order", "duogreedy_lists", "most_signed_order",
           "window_orders", "check_lambda_k"]


def _check_which(which: str, pole: Optional[int]) -> None:
    if which not in ("max", "min"):
        raise ValueError(f"which must be 'max' (most diverse, DUO = 0) or 'min' (least diverse, DUO = 1), got {which!r}")
    if pole not in (None, 1, -1):
        raise ValueError(f"pole must be None, +1 or -1, got {pole!r}")
    if pole is not None and which != "min":
        raise ValueError("pole applies to which='min' (the most biased ordering toward a pole) only")


def _extreme_block(block: np.ndarray, step: int, which: str, pole: Optional[int]) -> np.ndarray:
    """Orders of ``block`` (``(B, n)`` scores of lists of one length ``n``), as column indices."""
    batch, n = block.shape
    if n == 0:
        return np.zeros((batch, 0), dtype=np.int64)
    sort = np.argsort(block, axis=1, kind="stable")
    v = np.take_along_axis(block, sort, axis=1)
    centre = v.mean(axis=1, keepdims=True)
    unit = np.abs(v - centre).max(axis=1, keepdims=True)
    v = (v - centre) / np.where(unit > 0, unit, 1.0)
    a1 = np.concatenate([np.zeros((batch, 1)), np.cumsum(v, axis=1)], axis=1)
    a2 = np.concatenate([np.zeros((batch, 1)), np.cumsum(v * v, axis=1)], axis=1)
    weights = duo_depth_weights(n, np.full(batch, n), step)
    rows = np.arange(batch)
    added = np.zeros((batch, n), dtype=np.int64)  # sorted index added at each depth
    if which == "min":
        best = np.zeros((batch, n))
        if pole is not None:
            original = np.take_along_axis(block, sort, axis=1)
            allowed = (original > 0) if pole > 0 else (original < 0)
            allowed = np.where(allowed.any(axis=1, keepdims=True), allowed, True)  # no such document: unrestricted
            best = np.where(allowed, 0.0, np.inf)
        took_left = np.zeros((batch, n + 1, n), dtype=bool)  # [size, start]: newest item is the left end
        for size in range(2, n + 1):
            starts = n - size + 1
            s1 = a1[:, size:size + starts] - a1[:, :starts]
            s2 = a2[:, size:size + starts] - a2[:, :starts]
            var = np.maximum(s2 / size - (s1 / size) ** 2, 0.0)
            left = best[:, 1:] < best[:, :-1]  # [i + 1, i + size) then i: strictly better
            took_left[:, size, :starts] = left
            best = np.where(left, best[:, 1:], best[:, :-1]) + weights[:, size:size + 1] * var
        start = np.zeros(batch, dtype=np.int64)
        for size in range(n, 1, -1):
            left = took_left[rows, size, start]
            added[:, size - 1] = np.where(left, start, start + size - 1)
            start = np.where(left, start + 1, start)
        added[:, 0] = start
    else:
        top_start = n - np.arange(n + 1)
        top1 = a1[:, n:n + 1] - a1[:, top_start]
        top2 = a2[:, n:n + 1] - a2[:, top_start]
        best = np.full((batch, n + 2), -np.inf)
        best[:, 1] = 0.0
        took_small = np.zeros((batch, n + 1, n + 1), dtype=bool)  # [size, b]: newest is the b-th smallest
        for size in range(1, n + 1):
            s1 = a1[:, :size + 1] + top1[:, size::-1]
            s2 = a2[:, :size + 1] + top2[:, size::-1]
            var = np.maximum(s2 / size - (s1 / size) ** 2, 0.0)
            small = best[:, :size + 1] > best[:, 1:size + 2]  # from b - 1 smallest (strictly better)
            took_small[:, size, :size + 1] = small
            best[:, 1:size + 2] = np.where(small, best[:, :size + 1], best[:, 1:size + 2]) + weights[:, size:size + 1] * var
        b = np.argmax(best[:, 1:n + 2], axis=1)
        for size in range(n, 0, -1):
            small = took_small[rows, size, b]
            added[:, size - 1] = np.where(small, b - 1, n - (size - b))
            b = np.where(small, b - 1, b)
    return np.take_along_axis(sort, added, axis=1)


def duo_extreme_orders(scores, offsets, step: int = 1, which: str = "max", pole: Optional[int] = None) -> np.ndarray:
    """Orderings attaining DUO's raw maximum (``which="max"``) or minimum for many lists at once.

    ``scores`` are one axis of polarity, back to back, list ``q`` owning rows
    ``offsets[q]:offsets[q + 1]``. Returns row indices: ``order[offsets[q]:offsets[q + 1]]`` lists
    the rows of list ``q`` in the new order. Lists of equal length run in one vectorised pass.
    """
    step = check_step(step)
    _check_which(which, pole)
    scores = checked_scores(scores)
    if scores.ndim != 1:
        raise ValueError(f"duo_extreme_orders takes one polarity axis (1-D scores); got shape {scores.shape}. "
                         "Pass one column, e.g. scores[:, 0].")
    offsets = check_offsets(offsets, scores.shape[0])
    lengths = list_lengths(offsets)
    order = np.arange(scores.shape[0])
    for n in np.unique(lengths):
        same = np.flatnonzero(lengths == n)
        per_chunk = max(1, _MAX_CHOICE_CELLS // int((n + 1) ** 2))  # the backtracking tables are (lists, n + 1, n + 1)
        for lists in np.array_split(same, -(-same.size // per_chunk)):
            rows = offsets[lists][:, None] + np.arange(n)[None, :]
            columns = _extreme_block(scores[rows], step, which, pole)
            order[rows] = np.take_along_axis(rows, columns, axis=1)
    return order


def duo_extreme_order(p, step: int = 1, which: str = "max", pole: Optional[int] = None) -> np.ndarray:
    """Positions of ``p`` (one list, one axis) in an order of maximal or minimal raw DUO utility.

    ``p[duo_extreme_order(p)]`` has DUO 0 (most diverse); with ``which="min"`` DUO 1 (least
    diverse), and ``pole=+1``/``-1`` puts that side's scores first (most biased toward the pole).
    """
    scores = checked_scores(p)
    return duo_extreme_orders(scores, np.array([0, scores.shape[0]]), step, which, pole)


def _greedy_block(block: np.ndarray, k: int, Lambda: float) -> np.ndarray:
    """Greedy order of the first ``k`` columns of ``block`` (``(B, n, m)``), as column indices."""
    batch, n, axes = block.shape
    top = block[:, :k, :]
    value_range = top.max(axis=1) - top.min(axis=1)  # (B, m)
    norm = np.where(value_range > 0, (value_range / 2) ** 2, 1.0)[:, None, :]
    relevance = 1.0 - np.arange(k) / k
    taken = np.zeros((batch, k), dtype=bool)
    s1 = np.zeros((batch, axes))
    s2 = np.zeros((batch, axes))
    rows = np.arange(batch)
    chosen = np.zeros((batch, n), dtype=np.int64)
    chosen[:, k:] = np.arange(k, n)
    for t in range(k):
        size = t + 1
        if t == 0:  # every one-document prefix has variance 0: start from the farthest from the mean
            var = (top - top.mean(axis=1, keepdims=True)) ** 2
        else:
            var = (s2[:, None, :] + top * top) / size - ((s1[:, None, :] + top) / size) ** 2
        diversity = (np.maximum(var, 0.0) / norm).min(axis=2)
        gain = Lambda * relevance[None, :] + (1.0 - Lambda) * diversity
        pick = np.argmax(np.where(taken, -np.inf, gain), axis=1)
        taken[rows, pick] = True
        chosen[:, t] = pick
        s1 += top[rows, pick]
        s2 += top[rows, pick] ** 2
    return chosen


def duogreedy_lists(scores, offsets, Lambda: float = 0.5, k: int = 10) -> np.ndarray:
    """DuoGreedy order of many lists (rows in rank order; 1-D one axis or 2-D ``(rows, m)``).

    Returns row indices like :func:`duo_extreme_orders`; rows below ``k`` keep their order.
    """
    Lambda, k = check_lambda_k(Lambda, k)
    scores = checked_scores(scores)
    offsets = check_offsets(offsets, scores.shape[0])
    columns = scores.reshape(scores.shape[0], -1)
    lengths = list_lengths(offsets)
    order = np.arange(scores.shape[0])
    for n in np.unique(lengths):
        if n < 2 or Lambda == 1.0:
            continue
        lists = np.flatnonzero(lengths == n)
        rows = offsets[lists][:, None] + np.arange(n)[None, :]
        picked = _greedy_block(columns[rows], min(k, int(n)), Lambda)
        order[rows] = np.take_along_axis(rows, picked, axis=1)
    return order


def duogreedy_order(p, Lambda: float = 0.5, k: int = 10) -> np.ndarray:
    """Positions of ``p`` (one list in rank order) in DuoGreedy's order."""
    scores = checked_scores(p)
    return duogreedy_lists(scores, np.array([0, scores.shape[0]]), Lambda, k)


def check_lambda_k(Lambda, k) -> tuple[float, int]:
    """DuoGreedy's ``Lambda`` (a number in [0, 1]) and ``k`` (a positive integer), checked, as float and int; a
    ValueError naming the parameter otherwise."""
    if isinstance(Lambda, bool) or not isinstance(Lambda, (int, float, np.integer, np.floating)) or not 0 <= Lambda <= 1:
        raise ValueError(f"Lambda must be a number in [0, 1] (1 keeps the input order, 0 lowers DUO most), got {Lambda!r}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer (how many top documents to reorder), got {k!r}")
    return float(Lambda), int(k)


def window_orders(scores) -> np.ndarray:
    """Every ordering of ``scores`` whose prefixes are runs of adjacent scores in sorted order, shape
    ``(2^(n-1), n)`` of positions: it starts at some score and each next one extends the run by its lower or
    upper neighbour. Orderings of DUO = 1 (minimal raw sum) are of this form, since a prefix's variance depends
    on its set only and the exact bounds are chains of such runs (:func:`duo_extreme_order`)."""
    n = len(scores)
    ascending = np.argsort(np.asarray(scores, dtype=np.float64), kind="stable")
    lower = (np.arange(2 ** (n - 1))[:, None] >> np.arange(n - 1)[None, :]) & 1  # step t extends the run downward
    start = lower.sum(axis=1)  # the run ends at the bottom, so it starts this many places up
    steps = np.where(lower == 1, start[:, None] - np.cumsum(lower, axis=1), start[:, None] + np.cumsum(1 - lower, axis=1))
    return ascending[np.hstack([start[:, None], steps])]


def _signed_duo(scores: np.ndarray, orders: np.ndarray) -> np.ndarray:
    r"""Signed DUO (:math:`\mu^+`) of each ordering (row of positions) of ``scores``, by
    :func:`~pairmeasures.math.duo.duo_lists`."""
    return duo_lists(scores[orders].ravel(), np.arange(0, orders.size + 1, orders.shape[1])).signed


def _moves(n: int) -> np.ndarray:
    """Every ordering one move away from the identity of ``n`` positions: two documents swapped, or one moved to
    another place; shape ``(moves, n)``."""
    identity = list(range(n))
    swaps = [identity[:i] + [j] + identity[i + 1:j] + [i] + identity[j + 1:] for i, j in itertools.combinations(range(n), 2)]
    shifts = [(rest := identity[:i] + identity[i + 1:])[:j] + [i] + rest[j:] for i in range(n) for j in range(n)
              if j not in (i, i - 1)]  # j = i is no move; j = i - 1 repeats the adjacent swap
    return np.array(swaps + shifts, dtype=np.int64).reshape(-1, n)


def most_signed_order(scores, toward: int, start=None, starts: int = 8) -> np.ndarray:
    r"""An ordering of ``scores`` of extreme signed DUO toward ``toward`` (+1: the largest :math:`\mu^+`, -1: the
    smallest), by local search: from the ``starts`` best of the window orderings (:func:`window_orders`) and
    ``start`` (default: the given order), apply the best move (a swap of two documents or a document moved
    elsewhere) while one helps; the best ordering reached. Window orderings alone can miss the extreme: when most
    scores lie on one side, every ordering of DUO = 1 leans that way, and the most biased ordering toward the other
    side is a less uniform one (``BiasedOrdering("most", pole=±1)`` keeps DUO = 1 and so can lean the wrong way).
    Deterministic: ties go to the first candidate."""
    scores = np.asarray(scores, dtype=np.float64)
    n = scores.size
    candidates = np.vstack([window_orders(scores), np.arange(n)[None, :] if start is None else np.asarray(start)[None, :]])
    values = toward * _signed_duo(scores, candidates)
    chosen = np.unique(np.r_[np.argsort(-values, kind="stable")[:starts], len(candidates) - 1])
    orders, values = candidates[chosen], values[chosen]
    moves = _moves(n)
    for _ in range(4 * n * n):  # every step strictly improves a start; the bound only guards against float ties
        neighbours = np.take_along_axis(np.repeat(orders, len(moves), axis=0), np.tile(moves, (len(orders), 1)), axis=1)
        found = (toward * _signed_duo(scores, neighbours)).reshape(len(orders), len(moves))
        best = found.argmax(axis=1)
        better = found[np.arange(len(orders)), best] > values + 1e-12
        if not better.any():
            break
        orders = np.where(better[:, None], neighbours.reshape(len(orders), len(moves), n)[np.arange(len(orders)), best],
                          orders)
        values = np.where(better, found[np.arange(len(orders)), best], values)
    return orders[int(np.argmax(values))]
