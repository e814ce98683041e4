r"""Rank-parity measures of group fairness and individual attention: NDKL, ARP's favoured-pair shares, IAA.

Every function takes many ranked lists at once as flat arrays in rank order plus ``offsets`` (list ``q`` owns
rows ``offsets[q]:offsets[q + 1]``, :mod:`pairmeasures.math._lists`); positions :math:`i` are 1-based within
each list.

- NDKL (Geyik et al., KDD 2019, Eq. 4): :math:`\frac{1}{Z} \sum_{i=1}^{n} Z_i\,
  \mathrm{KL}(D_{1..i} \,\|\, D^*)`, :math:`Z_i = 1/\log_2(i + 1)`, :math:`Z = \sum_i Z_i`, natural log,
  :math:`D_{1..i}` the group shares of the top :math:`i`, :math:`D^*` the target shares.
- Favoured-pair representation (Cachel et al., ICDE 2022): the share of the mixed pairs of group :math:`g`
  (one document of :math:`g`, one of another group) in which :math:`g`'s document ranks higher.
- IAA (Biega et al., SIGIR 2018, Eq. 1, single-ranking form): :math:`\sum_i |1/\log_2(i + 1) - u_i|`.
"""

from __future__ import annotations

import numpy as np

from ._lists import check_offsets, list_index, list_lengths, list_positions

__all__ = ["ndkl_lists", "favoured_pair_parts", "iaa_lists", "attention"]


def attention(positions) -> np.ndarray:
    r"""Position weight :math:`1 / \log_2(i + 1)` of 1-based positions :math:`i` (NDKL's :math:`Z_i`, IAA's attention)."""
    return 1.0 / np.log2(np.asarray(positions, dtype=np.float64) + 1.0)


def ndkl_lists(codes, offsets, eps: float = 0.0, target_codes=None, target_offsets=None) -> np.ndarray:
    r"""NDKL of every list (Geyik et al. 2019, Eq. 4), shape ``(lists,)``.

    .. math::  \mathrm{NDKL} = \frac{1}{Z} \sum_{i=1}^{n} Z_i\, \mathrm{KL}(D_{1..i} \,\|\, D^*), \qquad
               \mathrm{KL}(P \,\|\, Q) = \sum_g (p_g + \epsilon) \ln \frac{p_g + \epsilon}{q_g + \epsilon}

    ``codes`` are the rows' group codes (non-negative ints). :math:`D^*` is the group distribution of the list
    itself (FairRankTune's choice) unless ``target_codes``/``target_offsets`` give, per list, the documents whose
    group shares are the target (e.g. everything the system retrieved); every group of a list must occur in its
    target. ``eps = 0`` is the exact divergence with :math:`0 \ln 0 = 0`; FairRankTune adds
    :math:`\epsilon = 10^{-7}` to both distributions. Sums run over the groups of the target only (with
    :math:`\epsilon` an absent group adds :math:`\epsilon \ln 1 = 0` anyway). An empty list gets 0. The work is
    :math:`\sum_q n_q G_q` for :math:`G_q` groups in list :math:`q`'s target.
    """
    codes = np.asarray(codes, dtype=np.int64)
    offsets = check_offsets(offsets, codes.size)
    if target_codes is None:
        target_codes, target_offsets = codes, offsets
    else:
        target_codes = np.asarray(target_codes, dtype=np.int64)
        target_offsets = check_offsets(target_offsets, target_codes.size)
        if target_offsets.size != offsets.size:
            raise ValueError(f"target_offsets describe {target_offsets.size - 1} lists, offsets {offsets.size - 1}")
    if (codes < 0).any() or (target_codes < 0).any():
        raise ValueError("group codes must be non-negative integers")
    n_lists = offsets.size - 1
    n_groups = int(max(codes.max(initial=-1), target_codes.max(initial=-1))) + 1
    # The target's groups per list: (list, group) pairs, and each pair's share of its target list.
    target_keys = list_index(target_offsets) * n_groups + target_codes
    pair_keys, pair_counts = np.unique(target_keys, return_counts=True)
    pair_list, pair_group = pair_keys // max(n_groups, 1), pair_keys % max(n_groups, 1)
    listed = np.isin(list_index(offsets) * n_groups + codes, pair_keys)
    if not listed.all():
        row = int(np.flatnonzero(~listed)[0])
        raise ValueError(f"row {row} (list {int(list_index(offsets)[row])}) has group {int(codes[row])}, which its "
                         "target does not contain")
    target_share = pair_counts / list_lengths(target_offsets)[pair_list]
    # Expand each pair to every row of its list: the pair's share among the top i, for each position i.
    lengths = list_lengths(offsets)
    pair_lengths = lengths[pair_list]
    pair_starts = np.concatenate([[0], np.cumsum(pair_lengths)]).astype(np.int64)
    local = np.arange(pair_starts[-1]) - np.repeat(pair_starts[:-1], pair_lengths)
    rows = np.repeat(offsets[:-1][pair_list], pair_lengths) + local
    in_group = (codes[rows] == np.repeat(pair_group, pair_lengths)).astype(np.float64)
    running = np.cumsum(in_group)
    before = np.concatenate([[0.0], running])[pair_starts[:-1]]
    position = local + 1.0
    share = (running - np.repeat(before, pair_lengths)) / position
    target = np.repeat(target_share, pair_lengths)
    with np.errstate(divide="ignore", invalid="ignore"):
        if eps:
            term = (share + eps) * np.log((share + eps) / (target + eps))
        else:
            term = np.where(share > 0, share * np.log(share / target), 0.0)
    weighted = np.bincount(np.repeat(pair_list, pair_lengths), weights=attention(position) * term, minlength=n_lists)
    normaliser = np.bincount(list_index(offsets), weights=attention(list_positions(offsets)), minlength=n_lists)
    return np.divide(weighted, normaliser, out=np.zeros(n_lists), where=normaliser > 0)


def favoured_pair_parts(codes, offsets, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Favoured-pair representation of every group in every list as ``(favoured, mixed)``, each ``(lists, n_groups)``.

    .. math::  \mathrm{FPR}_g = \frac{\sum_{x \in g} (n - i_x) - \binom{|g|}{2}}{|g|\,(n - |g|)}

    ``favoured`` counts the pairs of one document of :math:`g` and one of another group in which :math:`g`'s
    ranks higher (a document at position :math:`i_x` is above :math:`n - i_x` others, :math:`\binom{|g|}{2}` of
    those pairs lie within :math:`g`); ``mixed`` = :math:`|g|(n - |g|)` is the number of such pairs, 0 for a
    group absent from the list or the only group in it.
    """
    codes = np.asarray(codes, dtype=np.int64)
    offsets = check_offsets(offsets, codes.size)
    n_lists = offsets.size - 1
    row_list = list_index(offsets)
    lengths = list_lengths(offsets)
    below = lengths[row_list] - list_positions(offsets)
    keys = row_list * n_groups + codes
    size = np.bincount(keys, minlength=n_lists * n_groups).reshape(n_lists, n_groups).astype(np.float64)
    above = np.bincount(keys, weights=below.astype(np.float64), minlength=n_lists * n_groups).reshape(n_lists, n_groups)
    favoured = above - size * (size - 1) / 2
    mixed = size * (lengths[:, None] - size)
    return favoured, mixed


def iaa_lists(utilities, offsets) -> np.ndarray:
    r"""Inequity of attention of every list, shape ``(lists,)``: :math:`\sum_{i=1}^{n} |1/\log_2(i + 1) - u_i|`.

    ``utilities`` are the rows' relevance in [0, 1] (Biega et al. 2018, Eq. 1 for one ranking, with
    FairRankTune's unnormalised attention). An empty list gets 0.
    """
    utilities = np.asarray(utilities, dtype=np.float64)
    offsets = check_offsets(offsets, utilities.size)
    gaps = np.abs(attention(list_positions(offsets)) - utilities)
    return np.bincount(list_index(offsets), weights=gaps, minlength=offsets.size - 1)

