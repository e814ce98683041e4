"""The ``Duo`` measure: DUO of the polarity scores of ranked documents (PAIR Eq. 6, Appendix A.2)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from ir_measures import measures

from ..io.memo import Memo
from ..math import DEGENERATE_DUO, DuoResult, KnownBounds, duo_batches, duo_lists
from .base import COMMON_PARAMS, MAX_CUTOFF, MeasureValues, PairMeasure, RangedParam, SideInput, degenerate_causes
from .ranked import RankedLists
from .registry import register_builtin

__all__ = ["Duo"]

#: The exact bounds computed in this process, by the sorted scores they derive from (one table for every Duo measure:
#: a list seen again, in another system's run or at another cut-off, reads its bounds instead of computing them).
_KNOWN = Memo("DUO bounds")


def _known() -> KnownBounds:
    return _KNOWN.get("bounds", None, KnownBounds)


class _Duo(PairMeasure):
    r"""Discounted Uniformity of Opinions (Ziems et al., PAIR, Eq. 5-6).

    .. math::  \mathrm{DUO}(r) = 1 - \frac{\mathrm{raw}(r) - \min_{r'} \mathrm{raw}(r')}{\max_{r'} \mathrm{raw}(r') - \min_{r'} \mathrm{raw}(r')},
               \qquad \mathrm{raw}(r) = \sum_{k = s, 2s, \ldots < n} \frac{\mathrm{Var}(p_1, \ldots, p_k)}{\log_2 k}

    over the polarity scores :math:`p` of the considered documents in ranked order; min and max
    are exact over all orderings of the same documents. 1 = the least diverse ordering (most
    biased), 0 = the most diverse. Polarity comes from the run column ``polarity`` (a float, or a
    sequence of floats for several axes) or from the resource named by ``polarity=``. With
    several axes the per-axis values are aggregated by ``axes`` (``max``: the most biased axis,
    as the paper suggests). ``signed=True`` gives :math:`\mu^+` (Appendix A.2): positive when the
    top of the list leans to the positive pole.

    Queries whose orderings all score the same (fewer than 3 considered documents with
    ``step=1``, all polarities equal) get 0.5, as in the reference implementation.
    """

    __name__ = "Duo"
    NAME = __name__
    PRETTY_NAME = "Discounted Uniformity of Opinions"
    SHORT_DESC = "Indexical bias: how unevenly opinions are spread over the top of a ranking (1 = most biased ordering)."
    SUPPORTED_PARAMS = {
        **COMMON_PARAMS,
        "step": RangedParam(dtype=int, default=1, low=1, high=MAX_CUTOFF, desc="depth step s: prefixes k = s, 2s, ... below the list length are summed"),
        "signed": measures.ParamInfo(dtype=bool, default=False, desc="signed DUO (Appendix A.2): + when the top leans to the positive pole"),
        "axes": measures.ParamInfo(dtype=str, choices=("max", "mean"), default="max", desc="aggregate over polarity axes: the most biased axis (max) or the mean"),
        "polarity": measures.ParamInfo(dtype=str, default=None, desc="resource giving polarity scores (e.g. 'pca:irds:pair/procon', 'pca:DIR', 'tsv:FILE') instead of the run's polarity column"),
    }
    SIDE_INPUTS = (SideInput(column="polarity", param="polarity", kind="scores"),)
    DIRECTION = "lower-fairer"
    RANGE = "[0, 1]"
    PAGES = ("duo.md",)
    REFERENCE = ("Ziems, Held, Dwivedi-Yu, Yang: Measuring and Addressing Indexical Bias in Information Retrieval "
                 "(PAIR), Findings of ACL 2024")
    DEGENERATE = DEGENERATE_DUO
    DEGENERATE_REASON = "every ordering of its documents scores the same, e.g. fewer than 3 documents or equal polarities"

    def degenerate_value(self) -> str:
        if self.param("signed"):
            return f"{DEGENERATE_DUO} times the sign of the signed raw sum (0 when nothing is summed)"
        return str(DEGENERATE_DUO)

    def direction(self) -> str:
        return "signed" if self.param("signed") else self.DIRECTION

    def value_range(self) -> str:
        return "[-1, 1]" if self.param("signed") else self.RANGE

    def compute(self, lists: RankedLists) -> MeasureValues:
        scores = lists.column("polarity")
        return self._values(lists, scores, duo_lists(scores, lists.offsets, self.param("step"), known=_known()))

    def compute_cutoffs(self, lists: RankedLists, cutoffs: Sequence[int]) -> list[MeasureValues]:
        """Every cut-off's lists in one :func:`~pairmeasures.math.duo.duo_batches` call: the same values as each
        cut-off's :meth:`compute`, the lists of one padded width taken together across the cut-offs."""
        heads = [lists.head(k) for k in cutoffs]
        results = duo_batches([(head.column("polarity"), head.offsets) for head in heads], self.param("step"),
                              known=_known())
        return [self._values(head, head.column("polarity"), result) for head, result in zip(heads, results)]

    def _values(self, lists: RankedLists, scores: np.ndarray, result: DuoResult) -> MeasureValues:
        values = result.signed if self.param("signed") else result.duo
        degenerate = result.degenerate
        if values.ndim == 2:
            if self.param("axes") == "max":
                pick = np.argmax(result.duo, axis=1)[:, None]
                values = np.take_along_axis(values, pick, axis=1)[:, 0]
            else:
                values = values.mean(axis=1)
            degenerate = np.asarray(degenerate.all(axis=1))
        return MeasureValues(values=values, degenerate=degenerate, causes=self._causes(lists, scores, degenerate))

    def _causes(self, lists: RankedLists, scores: np.ndarray, degenerate: np.ndarray) -> np.ndarray:
        lengths = lists.lengths
        spread = np.zeros((lengths.size,) + scores.shape[1:])
        if scores.shape[0]:
            highest = np.full_like(spread, -np.inf)
            lowest = np.full_like(spread, np.inf)
            np.maximum.at(highest, lists.row_query, scores)
            np.minimum.at(lowest, lists.row_query, scores)
            spread = np.where(lengths.reshape((-1,) + (1,) * (scores.ndim - 1)) > 0, highest - lowest, 0.0)
        equal = spread == 0 if spread.ndim == 1 else (spread == 0).all(axis=1)
        step = self.param("step")
        return degenerate_causes(degenerate, [
            (lengths == 0, "no documents"),
            (lengths < 3, "fewer than 3 documents"),
            (lengths <= step, f"no depth k = {step}, {2 * step}, ... below the list length"),
            (equal, "all polarities equal"),
        ], "every ordering scores the same")


Duo = _Duo()
register_builtin(Duo)
