"""Ragged lists as flat arrays plus offsets, and how to pad them for vectorised dynamic programmes.

A batch of ranked lists is stored as one flat array of rows in rank order and an ``offsets`` array:
list ``q`` owns rows ``offsets[q]:offsets[q + 1]``. Every function in :mod:`pairmeasures.math`
that works on many lists at once takes this pair.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

__all__ = ["check_offsets", "one_or_many_lists", "list_lengths", "list_index", "list_positions", "pad_lists", "chunks_by_length", "segment_sum"]


def check_offsets(offsets: np.ndarray, n_rows: int) -> np.ndarray:
    """Return ``offsets`` as int64 after checking it describes ``n_rows`` rows."""
    offsets = np.asarray(offsets)
    if offsets.ndim != 1 or offsets.size == 0 or not np.issubdtype(offsets.dtype, np.integer):
        raise ValueError("offsets must be a 1-D integer array starting at 0 (one more entry than lists)")
    offsets = offsets.astype(np.int64, copy=False)
    if offsets[0] != 0 or offsets[-1] != n_rows or np.any(np.diff(offsets) < 0):
        raise ValueError(
            f"offsets must start at 0, never decrease and end at the number of rows ({n_rows}); "
            f"got start {offsets[0]}, end {offsets[-1]}"
        )
    return offsets


def one_or_many_lists(values, offsets) -> tuple[np.ndarray, np.ndarray, bool]:
    """``values`` as floats with checked ``offsets``, and whether they are one list: ``offsets=None`` makes every row
    one list (for the functions that take a single ranking or, with ``offsets``, many)."""
    values = np.asarray(values, dtype=np.float64)
    single = offsets is None
    offsets = np.array([0, values.shape[0]]) if single else check_offsets(offsets, values.shape[0])
    return values, offsets, single


def list_lengths(offsets: np.ndarray) -> np.ndarray:
    """Number of rows of each list."""
    return np.diff(offsets)


def list_index(offsets: np.ndarray) -> np.ndarray:
    """For every row, the index of the list it belongs to."""
    lengths = list_lengths(offsets)
    return np.repeat(np.arange(lengths.size), lengths)


def list_positions(offsets: np.ndarray) -> np.ndarray:
    """For every row, its 1-based rank within its list."""
    lengths = list_lengths(offsets)
    return np.arange(1, offsets[-1] + 1) - np.repeat(offsets[:-1], lengths)


def segment_sum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sum of ``values`` (1-D, or 2-D summed per column) within each list; empty lists sum to 0."""
    return prefix_sum(values, offsets, list_lengths(offsets)[:, None])[:, 0]


def prefix_sum(values: np.ndarray, offsets: np.ndarray, prefixes: np.ndarray) -> np.ndarray:
    """Sum of ``values`` over the first ``prefixes[q, j]`` rows of each list q: shape ``(lists, J) + values.shape[1:]``."""
    values = np.asarray(values, dtype=np.float64)
    cumulative = np.concatenate([np.zeros((1,) + values.shape[1:]), np.cumsum(values, axis=0)])
    starts = offsets[:-1, None]
    return cumulative[starts + prefixes] - cumulative[starts]


def pad_lists(values: np.ndarray, offsets: np.ndarray, lists: np.ndarray, fill: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Gather the chosen ``lists`` into a matrix padded with ``fill``.

    Returns ``(matrix, lengths)``; ``matrix`` has shape ``(len(lists), L)`` for 1-D ``values`` and
    ``(len(lists), L, m)`` for 2-D ``values`` of shape ``(rows, m)``, where ``L`` is the longest
    chosen list.
    """
    lengths = offsets[lists + 1] - offsets[lists]
    width = int(lengths.max(initial=0))
    columns = np.arange(width)
    valid = columns[None, :] < lengths[:, None]
    rows = np.where(valid, offsets[lists][:, None] + columns[None, :], 0)
    if values.shape[0] == 0:
        matrix = np.full((lists.size, width) + values.shape[1:], fill, dtype=np.float64)
        return matrix, lengths
    matrix = np.asarray(values, dtype=np.float64)[rows]
    mask = valid if matrix.ndim == 2 else valid[:, :, None]
    return np.where(mask, matrix, fill), lengths


def chunks_by_length(lengths: np.ndarray, max_cells: int = 1_000_000, ratio: float = 1.25) -> Iterator[np.ndarray]:
    """Split list indices into groups of similar length, so padding wastes little work.

    Within a group the longest list is at most ``ratio`` times (plus 4) the shortest, and a
    group's padded matrix has at most about ``max_cells`` cells (a single long list always forms
    a group of its own).
    """
    order = np.argsort(lengths, kind="stable")
    start = 0
    while start < order.size:
        shortest = int(lengths[order[start]])
        limit = shortest * ratio + 4
        stop = start + 1
        while stop < order.size:
            longest = int(lengths[order[stop]])
            if longest > limit or (stop - start + 1) * longest > max_cells:
                break
            stop += 1
        yield order[start:stop]
        start = stop
