"""The ``RaB`` and ``ARaB`` measures: rank bias from gender magnitudes (Rekabsaz & Schedl 2020).

Rekabsaz & Schedl, *Do Neural Ranking Models Intensify Gender Bias?* (SIGIR 2020); the ``ibbr``
magnitude from Li et al., *Debiasing Neural Retrieval via In-batch Balancing Regularization*, Eq. 1.
"""

from __future__ import annotations

import numpy as np
from ir_measures import measures

from ..math import rank_bias_lists
from .base import MeasureValues, degenerate_causes
from .ranked import RankedLists
from .registry import register_builtin
from .termbase import TERM_PARAMS, TermMeasure

__all__ = ["RaB", "ARaB"]


class _RankBias(TermMeasure):
    """Shared machinery of RaB and ARaB (``AVERAGED``: report ARaB)."""

    AVERAGED = False
    SUPPORTED_PARAMS = {
        **TERM_PARAMS,
        "variant": measures.ParamInfo(dtype=str, choices=("tc", "tf", "bool", "ibbr"), default="tf", desc="document magnitude: 'tc' term counts, 'tf' ln(count + 1), 'bool' presence (Rekabsaz & Schedl), 'ibbr' sum of ln(count) per word (IBBR Eq. 1)"),
        "contrast": measures.ParamInfo(dtype=str, default="male-female", desc="'A-B': the value is group A's mean magnitude minus group B's (positive = A-leaning)"),
        "component": measures.ParamInfo(dtype=str, default="bias", desc="'bias' (A - B), or a group name of the contrast for that group's mean magnitude alone"),
        "denominator": measures.ParamInfo(dtype=str, choices=("available", "cutoff"), default="available", desc="'available': average over min(k, list length) documents (the reference code); 'cutoff': divide by k"),
    }
    DEGENERATE_REASON = "no ranked documents"
    DIRECTION = "signed"
    RANGE = "unbounded, 0 = balanced, + = A-leaning for contrast='A-B' ([-1, 1] with variant='bool')"
    PAGES = ("rab.md",)
    REFERENCE = "Rekabsaz, Schedl: Do Neural Ranking Models Intensify Gender Bias?, SIGIR 2020"

    def direction(self) -> str:
        return self.DIRECTION if self.param("component") == "bias" else "neither"

    def value_range(self) -> str:
        bounded = self.param("variant") == "bool"
        if self.param("component") != "bias":
            return "[0, 1]" if bounded else ">= 0"
        first, _ = self.contrast()
        return f"{'[-1, 1]' if bounded else 'unbounded'}, 0 = balanced, + = {first}-leaning"

    def check_params(self) -> None:
        super().check_params()
        first, second = self.contrast()
        component = self.param("component")
        if component not in ("bias", first, second):
            raise ValueError(f"{self.NAME}: component={component!r}; expected 'bias', {first!r} or {second!r}")

    def compute(self, lists: RankedLists) -> MeasureValues:
        rab_values, arab_values = rank_bias_lists(self.magnitudes(lists), lists.offsets, self.param("cutoff"),
                                                  self.param("denominator"))
        chosen = arab_values if self.AVERAGED else rab_values
        first, _ = self.contrast()
        component = self.param("component")
        if component == "bias":
            values = chosen[:, 2] - chosen[:, 1]
        else:
            values = chosen[:, 2] if component == first else chosen[:, 1]
        degenerate = lists.lengths == 0
        return MeasureValues(values=np.where(degenerate, self.DEGENERATE, values), degenerate=degenerate,
                             causes=degenerate_causes(degenerate, [(degenerate, "no documents")], "no documents"))


class _RaB(_RankBias):
    r"""Rank bias (Rekabsaz & Schedl 2020; IBBR §4): signed, 0 = balanced, positive = male-leaning.

    .. math::  \mathrm{RaB}@t = \frac{1}{t} \sum_{i \le t} \mathrm{mag}_{m}(d_i) - \frac{1}{t} \sum_{i \le t} \mathrm{mag}_{f}(d_i)

    with magnitudes ``tc`` :math:`M`, ``tf`` :math:`\ln(M + 1)`, ``bool`` :math:`\mathrm{sgn}\, M`
    of a group's term count :math:`M`, or ``ibbr`` :math:`\sum_{w} \ln c_w` over the group's words
    present; :math:`t` is min(t, list length) by default, as in the reference code.
    """

    __name__ = "RaB"
    NAME = __name__
    PRETTY_NAME = "Rank Bias"
    SHORT_DESC = "Gender bias: mean male minus female term magnitude of the top-t documents (0 = balanced, + = male-leaning)."


class _ARaB(_RankBias):
    r"""Average rank bias (Rekabsaz & Schedl 2020): the mean of RaB@1 … RaB@t.

    .. math::  \mathrm{ARaB}@t = \frac{1}{t} \sum_{x = 1}^{t} \mathrm{RaB}@x
    """

    __name__ = "ARaB"
    NAME = __name__
    AVERAGED = True
    PRETTY_NAME = "Average Rank Bias"
    SHORT_DESC = "Gender bias: RaB averaged over the cutoffs 1..t (0 = balanced, + = male-leaning)."



RaB = _RaB()
ARaB = _ARaB()
register_builtin(RaB, ARaB)
