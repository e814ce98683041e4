"""The ``TExFAIR`` and ``TED`` measures: group term exposure of a whole ranking (Abolghasemi et al. 2024).

Abolghasemi, Azzopardi, Askari, de Rijke, Verberne, *Measuring Bias in a Ranked List using
Term-based Representations* (ECIR 2024), Eq. 8-13.
"""

from __future__ import annotations

import numpy as np
from ir_measures import measures

from ..math import TermFairnessResult, max_ted, texfair_lists
from .base import MeasureValues, degenerate_causes
from .ranked import RankedLists
from .registry import register_builtin
from .termbase import TARGETS_PARAM, TERM_PARAMS, TermMeasure

__all__ = ["TExFAIR", "TED"]

#: Per-document columns :meth:`_TED.prepare` attaches: occurrences of each group's terms, and token counts.
_GROUP_COUNTS, _LENGTHS = "term_group_counts", "term_lengths"


class _TED(TermMeasure):
    r"""Term exposure-based divergence (Abolghasemi et al. 2024, Eq. 8-12): lower is fairer.

    .. math::  \mathrm{TED}@k = \sum_G \left| p(G \mid q, k) - \hat p_G \right| \cdot \mathrm{RBDF}(q, k)

    with :math:`p(G \mid q, k)` the share of term exposure
    :math:`\sum_{r \le k} \frac{\mathrm{tf}(t, d_r)/|d_r|}{\log_2(r + 1)}` on group :math:`G`'s terms
    and RBDF the share of position weight on documents with a group term (``rbdf=False`` drops it).
    """

    __name__ = "TED"
    NAME = __name__
    PRETTY_NAME = "Term Exposure-based Divergence"
    SHORT_DESC = "Gender bias: divergence of group term exposure in the top-k from the targets (lower = fairer)."
    SUPPORTED_PARAMS = {
        **TERM_PARAMS,
        "targets": TARGETS_PARAM,
        "rbdf": measures.ParamInfo(dtype=bool, default=True, desc="multiply the divergence by the rank-biased discounting factor (Eq. 12), so documents without group terms count"),
    }
    DEGENERATE_REASON = "no group term in its documents (the divergence is undefined without RBDF)"
    DIRECTION = "lower-fairer"
    RANGE = "[0, 2(1 - smallest target)]"
    PAGES = ("texfair.md",)
    REFERENCE = ("Abolghasemi, Azzopardi, Askari, de Rijke, Verberne: Measuring Bias in a Ranked List using "
                 "Term-based Representations, ECIR 2024")

    def value_range(self) -> str:
        return f"[0, {max_ted(self.targets()):g}]"

    PREPARE_PER_DOCUMENT = True
    #: Whether the measure is TExFAIR (``max TED - TED``) rather than TED.
    HIGHER_FAIRER = False

    def prepare(self, lists: RankedLists, cutoff: bool = True) -> RankedLists:
        """The considered documents with their group term counts and lengths attached, so every cut-off of a run
        reads the counts of one pass (:meth:`~pairmeasures.PairMeasure.evaluate_cutoffs`)."""
        lists = super().prepare(lists, cutoff)
        stats = self.stats(lists)
        return lists.with_columns(**{_GROUP_COUNTS: stats.group_counts(), _LENGTHS: stats.lengths})

    def _results(self, lists: RankedLists, prefixes=None):
        results = texfair_lists(lists.column(_GROUP_COUNTS), lists.column(_LENGTHS), self.targets(), lists.offsets,
                                self.param("rbdf"), prefixes)
        return results[1] if self.HIGHER_FAIRER else results[0]

    def compute(self, lists: RankedLists) -> MeasureValues:
        return self._values(lists.lengths, self._results(lists))

    def compute_cutoffs(self, lists: RankedLists, cutoffs) -> list[MeasureValues]:
        prefixes = lists.prefix_lengths(cutoffs)
        result = self._results(lists, prefixes)
        return [self._values(prefixes[:, j], TermFairnessResult(result.value[:, j], result.degenerate[:, j]))
                for j in range(prefixes.shape[1])]

    def _values(self, lengths: np.ndarray, result) -> MeasureValues:
        causes = degenerate_causes(result.degenerate, [(lengths == 0, "no documents")], "no group terms")
        return MeasureValues(values=result.value, degenerate=result.degenerate, causes=causes)


class _TExFAIR(_TED):
    r"""Term exposure-based fairness (Abolghasemi et al. 2024, Eq. 13): higher is fairer.

    .. math::  \mathrm{TExFAIR}@k = \max \mathrm{TED} - \mathrm{TED}@k, \qquad
               \max \mathrm{TED} = 2 \left(1 - \min_G \hat p_G\right)

    (1 - TED for two groups at ½), with TED as in :data:`TED` (RBDF on by default).
    """

    __name__ = "TExFAIR"
    NAME = __name__
    PRETTY_NAME = "Term Exposure-based Fairness"
    SHORT_DESC = "Gender fairness from the exposure of group terms in the whole top-k (higher = fairer)."
    DIRECTION = "higher-fairer"

    HIGHER_FAIRER = True

    @property
    def DEGENERATE(self) -> float:  # type: ignore[override]  # no group exposure: nothing biased shown
        return max_ted(self.targets())



TExFAIR = _TExFAIR()
TED = _TED()
register_builtin(TExFAIR, TED)
