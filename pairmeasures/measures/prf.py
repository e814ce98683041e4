"""The ``PRF`` and ``nPRF`` measures: pairwise ranking fairness of one group's clicked passages (IBBR Eq. 2, 3).

Li et al., *Debiasing Neural Retrieval via In-batch Balancing Regularization* (GeBNLP 2022), after Beutel et
al., *Fairness in Recommendation Ranking through Pairwise Comparisons* (KDD 2019). The formulas are in
:mod:`pairmeasures.math.prf`; the dataset-level |ΔA-PRF| is :func:`pairmeasures.measures.delta_prf.delta_a_prf`.
"""

from __future__ import annotations

import numpy as np
from ir_measures import measures

from ..math import bias_labels, prf_lists
from .base import MeasureValues, SideInput, degenerate_causes
from .ranked import RankedLists
from .registry import register_builtin
from .sideinputs import attach, label_key
from .termbase import TERM_PARAMS, TEXT_INPUT, TermMeasure

__all__ = ["PRF", "nPRF"]

_GROUP_INPUT = SideInput(column="group", param="group", kind="labels")

_PRF_PARAMS = {
    **TERM_PARAMS,
    "rel": measures.ParamInfo(dtype=int, default=1, desc="click threshold: a passage with a qrel >= rel is clicked, every other ranked passage (unjudged included) is non-clicked; unlike other measures, no passage is dropped"),
    "missing": measures.ParamInfo(dtype=str, choices=("error", "skip", "neutral"), default="skip", desc="a clicked passage without a group label (labels='group') or text (labels='terms'): 'skip' it (default; it leaves the pairs, counted and said in one warning per measure and run), raise an 'error' naming the first, or count it as 'neutral' (of no group); non-clicked passages need neither"),
    "of": measures.ParamInfo(dtype=(str, int), default="male", desc="the group g whose clicked passages are compared with all non-clicked ones: a group of contrast= (labels='terms') or a label of the group column (labels='group', compared as text)"),
    "labels": measures.ParamInfo(dtype=str, choices=("terms", "group"), default="terms", desc="where passage groups come from: 'terms' the sign of the gender magnitude of the passage text (IBBR's d(p)), 'group' the run's group column or the resource named by group="),
    "group": measures.ParamInfo(dtype=str, default=None, desc="labels='group': resource giving group labels (e.g. 'beir:DIR' reading labels.tsv) instead of the run's group column"),
    "variant": measures.ParamInfo(dtype=str, choices=("ibbr", "tc", "tf", "bool"), default="ibbr", desc="labels='terms': the magnitude whose sign is d(p): 'ibbr' IBBR Eq. 1 (sum of ln(count) per word), 'tc'/'tf' term counts (same sign), 'bool' presence"),
    "contrast": measures.ParamInfo(dtype=str, default="male-female", desc="labels='terms': 'A-B', d(p) = +1 where group A's magnitude is larger, -1 where B's is, 0 on a tie"),
    "degenerate": measures.ParamInfo(dtype=str, choices=("default", "exclude"), default="exclude", desc="a query without a clicked passage of the group or without a non-clicked passage: 'exclude' (default) gives it NaN and leaves it out of the mean; 'default' gives it 0, counted in the mean"),
}


class PRFMeasure(TermMeasure):
    """Shared machinery of PRF and nPRF (``NORMED``: Eq. 3)."""

    NORMED = False
    SUPPORTED_PARAMS = _PRF_PARAMS
    PREPARE_PER_DOCUMENT = True
    DIRECTION = "neither"
    DEGENERATE = 0.0
    DEGENERATE_REASON = "no clicked passage of the group, or no non-clicked passage, in the top k"
    PAGES = ("ibbr.md",)
    REFERENCE = ("Li et al.: Debiasing Neural Retrieval via In-batch Balancing Regularization, GeBNLP 2022 "
                 "(after Beutel et al., KDD 2019)")

    def check_params(self) -> None:
        super().check_params()
        if self.param("labels") == "group":
            return
        if self.param("group") is not None:
            raise ValueError(f"{self}: group= names group labels, which labels='group' reads; pass labels='group' "
                             "or drop group=")
        pair = self.contrast()
        if str(self.param("of")) not in pair:
            raise ValueError(f"{self}: of={self.param('of')!r} is not a group of contrast={self.param('contrast')!r}; "
                             f"expected {pair[0]!r} or {pair[1]!r}")

    def side_inputs(self) -> tuple[SideInput, ...]:
        return (_GROUP_INPUT,) if self.param("labels") == "group" else (TEXT_INPUT,)

    def needs_relevance(self) -> bool:
        return True

    def prepare(self, lists: RankedLists, cutoff: bool = True) -> RankedLists:
        """The top k, each passage marked clicked (qrel >= ``rel``; unjudged: not clicked) and, if clicked,
        whether it is of the group ``of``. Only clicked passages need a label or text (Eq. 2 compares them with
        every non-clicked passage, whatever its group); ``missing='skip'`` drops a clicked passage without one."""
        if cutoff:
            lists = lists.head(self.param("cutoff"))
        clicked = lists.relevance >= self.param("rel")  # NaN (unjudged) compares False
        rows = np.flatnonzero(clicked)
        labelled = lists.select(clicked).with_columns(prf_row=rows)
        for side in self.side_inputs():
            labelled = attach(self, labelled, side)
        kept = np.ones(len(lists), dtype=bool)
        kept[rows] = False
        kept[labelled.columns["prf_row"]] = True  # clicked passages skipped for a missing label leave
        in_group = np.zeros(len(lists), dtype=bool)
        in_group[labelled.columns["prf_row"]] = self.in_group(labelled)
        return lists.with_columns(prf_clicked=clicked, prf_in_group=in_group).select(kept)

    def in_group(self, lists: RankedLists) -> np.ndarray:
        """Per row, whether the passage belongs to the group ``of`` (from its label or text)."""
        wanted = label_key(self.param("of"))
        if self.param("labels") == "group":
            import pandas as pd

            codes, uniques = pd.factorize(pd.Series(lists.column("group"), dtype=object))
            matches = np.array([label_key(value) == wanted for value in uniques], dtype=bool)  # one per label
            return matches[codes] if codes.size else np.zeros(0, dtype=bool)
        return self.bias_labels(lists) == (1 if wanted == self.contrast()[0] else -1)

    def bias_labels(self, lists: RankedLists) -> np.ndarray:
        """IBBR's d(p) per row: +1 for the contrast's first group, -1 for its second, 0 neutral."""
        return bias_labels(self.magnitudes(lists))

    def compute(self, lists: RankedLists) -> MeasureValues:
        result = prf_lists(lists.scores, lists.column("prf_clicked"), lists.column("prf_in_group"), lists.offsets,
                           normed=self.NORMED)
        degenerate = np.isnan(result.values)
        of = label_key(self.param("of"))
        causes = degenerate_causes(degenerate, [
            (lists.lengths == 0, "no documents"),
            (result.n_clicked == 0, "no clicked passage in the top k"),
            (result.n_group_clicked == 0, f"no clicked passage of group {of!r} (the clicked ones are of other groups)"),
        ], "no non-clicked passage in the top k")
        return MeasureValues(values=np.where(degenerate, self.DEGENERATE, result.values), degenerate=degenerate,
                             causes=causes)


class _PRF(PRFMeasure):
    r"""Pairwise ranking fairness of group g (IBBR Eq. 2; Beutel et al. 2019), per query over the top k.

    .. math::  \mathrm{PRF}_g = \frac{1}{n_1^g n_0} \sum_{j \in g_1^g} \sum_{k \in g_0} \mathbb{1}[R(p_j) \ge R(p_k)]

    :math:`g_1^g`: clicked passages (qrel >= ``rel``) of group g; :math:`g_0`: all non-clicked passages;
    :math:`R`: the run's scores. Ties count for the clicked passage.
    """

    __name__ = "PRF"
    NAME = __name__
    PRETTY_NAME = "Pairwise ranking fairness"
    SHORT_DESC = "One group's pairwise accuracy: the share of (clicked passage of the group, non-clicked passage) pairs ranked right."
    RANGE = "[0, 1]"
    EXAMPLE = "PRF(of='female')"


class _NPRF(PRFMeasure):
    r"""Normed pairwise ranking fairness of group g (IBBR Eq. 3), per query over the top k.

    .. math::  \mathrm{nPRF}_g = \Bigl(\frac{1}{n_1^g n_0} \sum_{j \in g_1^g} \sum_{k \in g_0} |R(p_j)|^2\,
               \mathbb{1}[R(p_j) \ge R(p_k)]\Bigr)^{1/2}

    with the run's raw scores :math:`R` (the paper assumes :math:`R \in [0, 1]`; the value scales with them).
    """

    __name__ = "nPRF"
    NAME = __name__
    NORMED = True
    PRETTY_NAME = "Normed pairwise ranking fairness"
    SHORT_DESC = "PRF weighted by the clicked passage's squared score (IBBR's differentiable relaxation)."
    RANGE = ">= 0 ([0, 1] for scores in [0, 1])"
    EXAMPLE = "nPRF(of='female')"


PRF = _PRF()
nPRF = _NPRF()
register_builtin(PRF, nPRF)
