r"""Term exposure, TED, RBDF and TExFAIR (Abolghasemi et al., *Measuring Bias in a Ranked List
using Term-based Representations*, Eq. 7-13).

For a ranking :math:`d_1, \dots, d_k` and the position bias :math:`v_r = 1/\log_2(r + 1)`:

- term exposure (Eq. 8): :math:`\mathrm{TE}@k(t) = \sum_{r \le k} v_r\, \mathrm{tf}(t, d_r) / |d_r|`;
- group representation (Eq. 9): :math:`p(G) = \sum_{t \in V_G} \mathrm{TE}(t) / \sum_{G'} \sum_{t \in V_{G'}} \mathrm{TE}(t)`;
- TED (Eq. 10): :math:`\sum_G |p(G) - \hat p_G|`, optionally times (Eq. 11-12)
  :math:`\mathrm{RBDF} = \sum_{r \le k} v_r [d_r \text{ has a group term}] / \sum_{r \le k} v_r`;
- TExFAIR (Eq. 13): :math:`\max \mathrm{TED} - \mathrm{TED}`, with
  :math:`\max \mathrm{TED} = 2 (1 - \min_G \hat p_G)` (all exposure on the group with the
  smallest target; 1 for two groups at ½).

TED without RBDF is AWRF (:mod:`pairmeasures.math.awrf`) with :math:`a^G_{d} = \sum_{t \in V_G}
\mathrm{tf}(t, d)/|d|`, log weights and the L1 distance.

The paper leaves the logarithm's base open; base 2 is used (every quantity here is a ratio of
discounted sums, so the base does not change any value). A list with no group term at all has no
group representation: its TED is 0 (with RBDF this is exact, since RBDF = 0) and it is flagged
degenerate when RBDF is off. The discount's denominator in RBDF sums the positions the list has (at most k).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np

from ._lists import list_positions, one_or_many_lists, prefix_sum, segment_sum
from .fairr import check_targets, position_discount

__all__ = ["TermFairnessResult", "term_exposure", "rbdf", "ted", "max_ted", "texfair", "texfair_lists"]


@dataclass(frozen=True)
class TermFairnessResult:
    """Per-list values; ``degenerate`` marks lists with no group exposure at all."""

    value: np.ndarray
    degenerate: np.ndarray


def _proportions(counts: np.ndarray, lengths) -> np.ndarray:
    """tf(t, d) / |d| per row; a document with no tokens has no term occurrences and contributes 0."""
    lengths = np.asarray(lengths, dtype=np.float64)
    if lengths.shape != counts.shape[:1]:
        raise ValueError(f"lengths must give one token count per document ({counts.shape[0]}); got {lengths.shape}")
    if np.any(counts.sum(axis=1) > lengths):
        raise ValueError("a document has more term occurrences than tokens: lengths must count all tokens")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lengths[:, None] > 0, counts / lengths[:, None], 0.0)


def term_exposure(term_counts, lengths, offsets=None) -> np.ndarray:
    """TE@k per term (Eq. 8): ``term_counts`` ``(n_docs, n_terms)`` in rank order, ``lengths`` the
    documents' token counts. One list gives ``(n_terms,)``; with ``offsets``, ``(n_lists, n_terms)``."""
    counts, offsets, single = one_or_many_lists(term_counts, offsets)
    if counts.ndim != 2:
        raise ValueError(f"term_counts must be an (n_docs, n_terms) matrix; got shape {counts.shape}")
    exposure = segment_sum(_proportions(counts, lengths) * position_discount(list_positions(offsets))[:, None], offsets)
    return exposure[0] if single else exposure


def rbdf(representative, offsets=None) -> Union[float, np.ndarray]:
    """RBDF (Eq. 11): the share of position weight on documents with at least one group term."""
    mask, offsets, single = one_or_many_lists(representative, offsets)
    share = _rbdf(mask, list_positions(offsets), offsets, np.diff(offsets)[:, None])[:, 0]
    return float(share[0]) if single else share


def _rbdf(mask: np.ndarray, positions: np.ndarray, offsets: np.ndarray, prefixes: np.ndarray) -> np.ndarray:
    """RBDF of the top ``prefixes[q, j]`` documents of each list; 0 for an empty prefix."""
    weights = position_discount(positions)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = prefix_sum(weights * (mask > 0), offsets, prefixes) / prefix_sum(weights, offsets, prefixes)
    return np.nan_to_num(share, nan=0.0)


def max_ted(targets) -> float:
    """The largest TED any ranking can have: :math:`2 (1 - \\min_G \\hat p_G)`."""
    targets = np.asarray(targets, dtype=np.float64)
    return float(2.0 * (1.0 - targets.min()))


def texfair_lists(group_counts, lengths, targets, offsets, use_rbdf: bool = True,
                  prefixes=None) -> tuple[TermFairnessResult, TermFairnessResult]:
    """TED and TExFAIR of many lists: ``group_counts`` ``(n_docs, n_groups)`` in rank order.

    With ``prefixes`` ``(n_lists, J)``, of the top ``prefixes[q, j]`` documents of each list q, in one pass
    (values ``(n_lists, J)``): every cut-off of a run from the same prefix sums of Eq. 8 and 11.
    """
    counts, offsets, _ = one_or_many_lists(group_counts, offsets)
    if counts.ndim != 2:
        raise ValueError(f"group_counts must be an (n_docs, n_groups) matrix; got shape {counts.shape}")
    targets = check_targets(targets, counts.shape[1])
    lengths_of_lists = np.diff(offsets)
    cut = lengths_of_lists[:, None] if prefixes is None else np.asarray(prefixes, dtype=np.int64)
    if cut.ndim != 2 or cut.shape[0] != lengths_of_lists.size or (cut < 0).any() or (cut > lengths_of_lists[:, None]).any():
        raise ValueError(f"prefixes must be an (n_lists, J) matrix of prefix lengths within each list; got {cut.shape}")
    positions = list_positions(offsets)
    exposure = prefix_sum(_proportions(counts, lengths) * position_discount(positions)[:, None], offsets, cut)
    total = exposure.sum(axis=2)
    degenerate = ~(total > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        representation = exposure / total[:, :, None]
    divergence = np.where(degenerate, 0.0, np.abs(representation - targets).sum(axis=2))
    if use_rbdf:
        divergence = divergence * _rbdf(counts.sum(axis=1), positions, offsets, cut)
        degenerate = np.zeros_like(degenerate)  # TED = 0 exactly: no document is representative
    if prefixes is None:
        divergence, degenerate = divergence[:, 0], degenerate[:, 0]
    ted_result = TermFairnessResult(value=divergence, degenerate=degenerate)
    return ted_result, TermFairnessResult(value=max_ted(targets) - divergence, degenerate=degenerate)


def ted(group_counts, lengths, targets, use_rbdf: bool = True) -> float:
    """TED of one ranking (Eq. 10, times RBDF as in Eq. 12 when ``use_rbdf``)."""
    counts = np.asarray(group_counts, dtype=np.float64)
    return float(texfair_lists(counts, lengths, targets, np.array([0, counts.shape[0]]), use_rbdf)[0].value[0])


def texfair(group_counts, lengths, targets, use_rbdf: bool = True) -> float:
    """TExFAIR of one ranking (Eq. 13): ``max TED - TED``; 1 - TED for two groups at ½."""
    counts = np.asarray(group_counts, dtype=np.float64)
    return float(texfair_lists(counts, lengths, targets, np.array([0, counts.shape[0]]), use_rbdf)[1].value[0])
