"""The ``NDKL``, ``ARP`` and ``IAA`` measures, named and defined as FairRankTune (0.0.7) defines them.

One query is one FairRankTune ranking: its considered documents (the top k of the system's ranking, then
``rel=``) in rank order, positions 1-based within them. Where a default here differs from FairRankTune, a
parameter reproduces FairRankTune and the docstring says why.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from ir_measures import measures

from ..math.parity import favoured_pair_parts, iaa_lists, ndkl_lists
from .base import COMMON_PARAMS, MeasureValues, PairMeasure, RangedParam, SideInput, degenerate_causes
from .group_combos import GROUP_PARAM, MAX_REL_PARAM, GroupComboMeasure, codes_by_cutoff, group_codes, utility
from .ranked import RankedLists
from .registry import register_builtin

__all__ = ["NDKL", "ARP", "IAA"]


class _NDKL(PairMeasure):
    r"""Normalised discounted KL divergence (Geyik, Ambler, Kenthapadi, KDD 2019, Eq. 4).

    .. math::  \mathrm{NDKL} = \frac{1}{Z} \sum_{i=1}^{n} \frac{1}{\log_2(i + 1)}\,
               \mathrm{KL}\!\left(D_{1..i} \,\middle\|\, D^*\right), \qquad Z = \sum_{i=1}^{n} \frac{1}{\log_2(i + 1)}

    with :math:`D_{1..i}` the group shares among the top :math:`i` considered documents, natural log, over any
    number of groups. The target :math:`D^*` is, with ``target='considered'`` (default, FairRankTune), the group
    shares of the :math:`n` considered documents themselves, so only the order counts; with
    ``target='retrieved'``, the shares of everything the system retrieved for the query (after ``rel=``; every
    retrieved document then needs a group), so an unrepresentative top k counts too. 0 = every prefix has the
    target's shares.

    ``eps=0`` (default) is the exact divergence with :math:`0 \ln 0 = 0`; ``eps=1e-7`` reproduces FairRankTune,
    which adds :math:`10^{-7}` to both distributions (a difference of order :math:`10^{-7} \ln 10^{-7}` per
    absent group). A query whose target has one group only gets 0 (also the formula's value), reported as
    degenerate, as is an empty one.
    """

    __name__ = "NDKL"
    NAME = __name__
    PRETTY_NAME = "Normalised Discounted KL Divergence (multi-group)"
    SHORT_DESC = "Group fairness: discounted KL divergence of each prefix's group shares from the target's, any number of groups (0 = fairest)."
    SIDE_INPUTS = (SideInput(column="group", param="group", kind="labels"),)
    SUPPORTED_PARAMS = {
        **COMMON_PARAMS,
        "group": GROUP_PARAM,
        "eps": RangedParam(dtype=(float, int), default=0.0, low=0, high=1, high_open=True, desc="added to both distributions: 0 exact with 0 ln 0 = 0 (default); 1e-7 reproduces FairRankTune"),
        "target": measures.ParamInfo(dtype=str, choices=("considered", "retrieved"), default="considered", desc="the desired group shares: 'considered' those of the considered documents (FairRankTune, default); 'retrieved' those of everything retrieved for the query"),
    }
    DIRECTION = "lower-fairer"
    RANGE = ">= 0, 0 = every prefix has the target's group shares"
    PAGES = ("group-exposure.md",)
    REFERENCE = ("Geyik, Ambler, Kenthapadi: Fairness-Aware Ranking in Search & Recommendation Systems with "
                 "Application to LinkedIn Talent Search, KDD 2019")
    DEGENERATE_REASON = "its documents come from one group only"

    def depth(self):
        return None if self.param("target") == "retrieved" else self.param("cutoff")

    def evaluate(self, lists: RankedLists) -> MeasureValues:
        if self.param("target") == "considered":
            return super().evaluate(lists)
        retrieved = self.prepare(lists, cutoff=False)
        codes, _ = group_codes(retrieved)
        cutoff = self.param("cutoff")
        keep = retrieved.ranks < cutoff if cutoff is not None else np.ones(len(retrieved), dtype=bool)
        return self._values(retrieved.select(keep), codes[keep], codes, retrieved.offsets)

    def evaluate_cutoffs(self, lists: RankedLists, cutoffs: Sequence[int]) -> list[MeasureValues]:
        """With ``target='considered'`` :meth:`evaluate` is :class:`PairMeasure`'s: the documents are prepared once, at
        the deepest cut-off (:meth:`PairMeasure.evaluate_cutoffs`), not once per cut-off."""
        if self.param("target") == "considered":
            return self.compute_cutoffs(self.at(max(cutoffs)).prepare(lists), cutoffs)
        return super().evaluate_cutoffs(lists, cutoffs)

    def compute(self, lists: RankedLists) -> MeasureValues:
        codes, _ = group_codes(lists)
        return self._values(lists, codes, codes, lists.offsets)

    def compute_cutoffs(self, lists: RankedLists, cutoffs: Sequence[int]) -> list[MeasureValues]:
        """Each cut-off's :meth:`compute`, the group labels factorized once (:func:`codes_by_cutoff`)."""
        heads = codes_by_cutoff(lists, cutoffs) if type(self).compute is _NDKL.compute else None
        if heads is None:
            return super().compute_cutoffs(lists, cutoffs)
        return [self._values(head, codes, codes, head.offsets) for head, codes, _ in heads]

    def _values(self, lists: RankedLists, codes: np.ndarray, target_codes: np.ndarray,
                target_offsets: np.ndarray) -> MeasureValues:
        values = ndkl_lists(codes, lists.offsets, eps=float(self.param("eps")), target_codes=target_codes,
                            target_offsets=target_offsets)
        width = int(target_codes.max(initial=0)) + 1
        target_list = np.repeat(np.arange(lists.query_ids.size), np.diff(target_offsets))
        groups = np.bincount(np.unique(target_list * width + target_codes) // width, minlength=lists.query_ids.size)
        degenerate = (lists.lengths == 0) | (groups < 2)
        causes = degenerate_causes(degenerate, [(lists.lengths == 0, "no documents")], "one group only")
        return MeasureValues(values=np.where(degenerate, self.DEGENERATE, values), degenerate=degenerate,
                             causes=causes)


class _ARP(GroupComboMeasure):
    r"""Attribute rank parity (Cachel, Rundensteiner, Harrison, ICDE 2022): how unequally groups win mixed pairs.

    .. math::  \mathrm{FPR}_g = \frac{\sum_{x \in g} (n - i_x) - \binom{|g|}{2}}{|g|\,(n - |g|)}, \qquad
               \mathrm{ARP} = \mathrm{combo}_g\, \mathrm{FPR}_g

    :math:`\mathrm{FPR}_g` is the share of the pairs of one document of group :math:`g` and one of another group
    in which :math:`g`'s ranks higher (0.5 = parity), :math:`i_x` a document's position among the :math:`n`
    considered ones; groups combine by ``combo`` (default ``MaxMinDiff``, Cachel et al.'s ARP: 0 = parity,
    1 = one group always above another). Pooled over queries (:func:`pairmeasures.pooled`), FairRankTune
    adds the per-ranking FPRs (``POOLING = "sum"``).

    A query with fewer than two groups is degenerate (FairRankTune divides by zero). ``MaxMinRatio`` with a
    group below every other document (FPR 0) is infinite in FairRankTune; here the query is degenerate with the
    ratio combinations' documented value 1, and the warning names the cause.
    """

    __name__ = "ARP"
    NAME = __name__
    PRETTY_NAME = "Attribute Rank Parity"
    SHORT_DESC = "Group fairness: gap between groups' shares of won mixed pairs (favoured-pair representation), combined by combo (0 = fairest)."
    PAGES = ("group-exposure.md",)
    REFERENCE = ("Cachel, Rundensteiner, Harrison: MANI-Rank: Multiple Attribute and Intersectional Group Fairness "
                 "for Consensus Ranking, ICDE 2022")
    RANGE = "[0, 1], 0 = parity"
    POOLING = "sum"
    ZERO_DENOMINATOR = "a group has no document of another group to pair with"

    def value_range(self) -> str:
        combo = self.param("combo")
        if combo == "MinMaxRatio":
            return "[0, 1], 1 = parity"
        if combo == "MaxMinRatio":
            return ">= 1, 1 = parity"
        if combo == "LTwo":
            return "[0, sqrt(groups)], the L2 norm of the groups' shares (not 0 at parity)"
        return "[0, 1], 0 = parity"

    def group_parts(self, lists: RankedLists, codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
        return favoured_pair_parts(codes, lists.offsets, n_groups)


class _IAA(PairMeasure):
    r"""Inequity of attention (Biega, Gummadi, Weikum, SIGIR 2018, Eq. 1, for one ranking as in FairRankTune).

    .. math::  \mathrm{IAA} = \sum_{i=1}^{n} \left| \frac{1}{\log_2(i + 1)} - u_i \right|, \qquad
               u_i = \frac{\min(\mathrm{rel}_i, m)}{m}

    the gap between the attention a position receives and the utility of the document there (``max_rel``
    :math:`m`, unjudged documents 0), summed over the considered documents. An individual-fairness measure: no
    groups. Biega et al. amortise attention and relevance over a sequence of rankings; FairRankTune's IAA
    (reproduced here) takes a single ranking, its first, which is one query here, and has no pooled form.
    An empty query gets 0, reported as degenerate.
    """

    __name__ = "IAA"
    NAME = __name__
    PRETTY_NAME = "Inequity of Amortized Attention"
    SHORT_DESC = "Individual fairness: summed gap between each position's attention 1/log2(i+1) and its document's utility (0 = fairest)."
    SUPPORTED_PARAMS = {name: info for name, info in COMMON_PARAMS.items() if name != "missing"} | {"max_rel": MAX_REL_PARAM}
    DIRECTION = "lower-fairer"
    RANGE = "[0, n) for n considered documents, 0 = attention matches utility at every position"
    PAGES = ("group-exposure.md",)
    REFERENCE = "Biega, Gummadi, Weikum: Equity of Attention: Amortizing Individual Fairness in Rankings, SIGIR 2018"
    DEGENERATE_REASON = "no ranked documents"

    def needs_relevance(self) -> bool:
        return True

    def compute(self, lists: RankedLists) -> MeasureValues:
        values = iaa_lists(utility(lists, self.param("max_rel")), lists.offsets)
        degenerate = lists.lengths == 0
        return MeasureValues(values=np.where(degenerate, self.DEGENERATE, values), degenerate=degenerate,
                             causes=degenerate_causes(degenerate, [(degenerate, "no documents")], "no documents"))


NDKL = _NDKL()
ARP = _ARP()
IAA = _IAA()
register_builtin(NDKL, ARP, IAA)
