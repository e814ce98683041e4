"""The ``AWRF`` measure: attention-weighted rank fairness (Sapiezynski et al. 2019).

Sapiezynski, Zeng, Robertson, Mislove, Wilson, *Quantifying the Impact of User Attention on Fair
Group Representation in Ranked Lists* (WWW 2019 companion), as Eq. 4-6 of the TExFAIR paper.
"""

from __future__ import annotations

import numpy as np
from ir_measures import measures

from ..math import awrf_lists, max_ted
from ..math.awrf import geometric_attention
from ..math.group_combos import per_group, positions
from .base import MeasureValues, PairMeasure, RangedParam, SideInput, degenerate_causes
from .group_combos import COMBO_PARAM, GROUP_PARAM, ExposureMeasure, GroupComboMeasure
from .ranked import RankedLists
from .registry import register_builtin
from .termbase import TARGETS_PARAM, TERM_PARAMS, TermMeasure

#: Parameters of each form of AWRF (besides the common ones); giving one of the other form is an error.
_GROUP_FORM_PARAMS = ("group", "combo", "p")
_TERM_FORM_PARAMS = ("text", "terms", "tokenizer", "overlap", "targets", "alignment", "weights", "patience", "distance")

__all__ = ["AWRF"]


class GroupAttention(ExposureMeasure):
    r"""AWRF's group form (Sapiezynski et al. 2019; FairRankTune's ``AWRF``), evaluated for ``AWRF(form='groups')``.

    .. math::  x_g = \frac{1}{|g|} \sum_{d_r \in g} 100\,(1 - p)^{r-1}\, p, \qquad
               \mathrm{AWRF}@k = \mathrm{combo}_g\, x_g
    """

    __name__ = "AWRF"
    NAME = __name__
    P_PARAM = RangedParam(dtype=(float, int), default=0.5, low=0, high=1, low_open=True, desc="form='groups': the share of attention rank 1 gets (FairRankTune's p); rank r gets 100 (1 - p)^(r-1) p")
    SUPPORTED_PARAMS = {**GroupComboMeasure.SUPPORTED_PARAMS, "p": P_PARAM}

    def group_parts(self, lists: RankedLists, codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
        attention = geometric_attention(positions(lists.offsets), float(self.param("p")))
        return per_group(attention, lists.offsets, codes, n_groups), self.counts(lists, codes, n_groups)


class _AWRF(TermMeasure):
    r"""Attention-weighted rank fairness (Sapiezynski et al. 2019; TExFAIR paper Eq. 4-6): lower is fairer.

    .. math::  \mathrm{AWRF}@k = \Delta\!\left( \frac{E}{\lVert E \rVert_1}, \hat p \right), \qquad
               E = \sum_{r \le k} v_r\, a_{d_r}

    Alignment :math:`a_d`: ``exposure`` gives :math:`a^G_d = \sum_{t \in V_G} \mathrm{tf}(t, d)/|d|`
    (then AWRF with log weights and L1 is TED without RBDF), ``share`` gives each document's group
    shares :math:`M^G(d) / \sum_x M^x(d)`, with the target shares for a document without group
    terms (the TExFAIR paper's Eq. 14). Weights :math:`v_r`: ``log`` :math:`1/\log_2(r+1)`,
    ``uniform``, ``geometric`` :math:`p^{r-1}`. Distance :math:`\Delta`: ``l1`` or ``jsd``.
    """

    __name__ = "AWRF"
    NAME = __name__
    PRETTY_NAME = "Attention-Weighted Rank Fairness"
    SHORT_DESC = "Gender bias: distance between the attention-weighted group distribution of the top-k and the targets (lower = fairer)."
    SUPPORTED_PARAMS = {
        **TERM_PARAMS,
        "form": measures.ParamInfo(dtype=str, choices=("terms", "groups"), default="terms", desc="'terms': the documents' group terms against targets (TExFAIR's form, default); 'groups': FairRankTune's AWRF on group labels (mean attention per group, combined by combo)"),
        "group": GROUP_PARAM,
        "combo": COMBO_PARAM,
        "p": GroupAttention.P_PARAM,
        "targets": TARGETS_PARAM,
        "alignment": measures.ParamInfo(dtype=str, choices=("exposure", "share"), default="exposure", desc="document-group association: 'exposure' (term frequency / length, as TExFAIR) or 'share' (group shares of the document's terms; the targets when it has none)"),
        "weights": measures.ParamInfo(dtype=str, choices=("log", "uniform", "geometric"), default="log", desc="attention per rank: 'log' 1/log2(r+1), 'uniform', 'geometric' patience^(r-1)"),
        "patience": RangedParam(dtype=(float, int), default=0.5, low=0, low_open=True, high=1, desc="the continuation probability of weights='geometric'"),
        "distance": measures.ParamInfo(dtype=str, choices=("l1", "jsd"), default="l1", desc="'l1': sum of absolute differences; 'jsd': Jensen-Shannon divergence in bits"),
    }
    DEGENERATE_REASON = "no group exposure at all"
    DIRECTION = "lower-fairer"
    RANGE = "[0, 2(1 - smallest target)] (l1), [0, 1] (jsd)"
    PAGES = ("texfair.md", "group-exposure.md")
    REFERENCE = ("Sapiezynski, Zeng, Robertson, Mislove, Wilson: Quantifying the Impact of User Attention on Fair "
                 "Group Representation in Ranked Lists, WWW 2019 companion")

    def groups_form(self) -> GroupAttention | None:
        """The measure ``form='groups'`` evaluates (with this one's parameters), ``None`` in the terms form."""
        if self.param("form") != "groups":
            return None
        return GroupAttention(**{name: value for name, value in self.params.items() if name != "form"})

    def check_params(self) -> None:
        groups = self.param("form") == "groups"
        other = _TERM_FORM_PARAMS if groups else _GROUP_FORM_PARAMS
        given = [name for name in other if name in self.params]
        if given:
            raise ValueError(f"{self}: {', '.join(given)} {'is a parameter' if len(given) == 1 else 'are parameters'} "
                             f"of form={'terms' if groups else 'groups'}, not of form={self.param('form')!r}")
        if not groups:
            super().check_params()
            return
        PairMeasure.check_params(self)
        if self.param("missing") == "neutral":
            raise ValueError(f"{self}: missing='neutral' is for text; a document without a group has no neutral group "
                             "(use 'error' or 'skip')")

    def side_inputs(self) -> tuple[SideInput, ...]:
        groups = self.groups_form()
        return self.SIDE_INPUTS if groups is None else groups.side_inputs()

    def direction(self) -> str:
        groups = self.groups_form()
        return self.DIRECTION if groups is None else groups.direction()

    @property
    def DEFAULT(self) -> float:  # type: ignore[override]
        groups = self.groups_form()
        return super().DEFAULT if groups is None else groups.DEFAULT

    def degenerate_value(self) -> str:
        groups = self.groups_form()
        return super().degenerate_value() if groups is None else groups.degenerate_value()

    def value_range(self) -> str:
        groups = self.groups_form()
        if groups is not None:
            return groups.value_range()
        return "[0, 1]" if self.param("distance") == "jsd" else f"[0, {max_ted(self.targets()):g}]"

    def compute(self, lists: RankedLists) -> MeasureValues:
        groups = self.groups_form()
        if groups is not None:
            return groups.compute(lists)
        stats = self.stats(lists)
        counts = stats.group_counts()
        targets = self.targets()
        if self.param("alignment") == "exposure":
            with np.errstate(divide="ignore", invalid="ignore"):
                alignment = np.where(stats.lengths[:, None] > 0, counts / stats.lengths[:, None], 0.0)
        else:
            total = counts.sum(axis=1, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                alignment = np.where(total > 0, counts / total, targets)
        result = awrf_lists(alignment, targets, lists.offsets, self.param("weights"), self.param("distance"),
                            float(self.param("patience")))
        causes = degenerate_causes(result.degenerate, [(lists.lengths == 0, "no documents")], "no group exposure")
        return MeasureValues(values=result.value, degenerate=result.degenerate, causes=causes)



AWRF = _AWRF()
register_builtin(AWRF)
