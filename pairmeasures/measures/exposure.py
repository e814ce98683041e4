r"""Group-exposure measures at parity with FairRankTune: ``EXP``, ``EXPU``, ``EXPRU``, ``ERBE``, ``ERBP``, ``ERBR``.

Each computes one value per group of the considered documents of a query (the top k of the system's ranking,
after ``rel=``; positions :math:`r` are 1-based within that list) and combines the groups' values with
``combo`` (:mod:`pairmeasures.math.group_combos`). One query is one FairRankTune ranking whose items are the
query's considered documents; :attr:`~GroupComboMeasure.POOLING` says how FairRankTune pools several.

Deliberate differences from FairRankTune 0.0.7 (it returns ``inf``/``nan`` or a single group's value):
a query with one group, a group whose denominator is 0 (EXPU, EXPRU, ERBR: no utility), or a ratio
``combo`` with a zero group value is degenerate and gets the measure's documented value (0, or 1 for the
ratio combinations) with the cause in the degenerate-query warning. FairRankTune's ``LTwo`` of a single
group is that group's value; here it is 0 like every other difference combination.
"""

from __future__ import annotations

import numpy as np
from ir_measures import measures

from ..math.exposure import log_exposure, rbp_exposure
from ..math.group_combos import per_group, positions
from .base import RangedParam, SideInput
from .group_combos import MAX_REL_PARAM, UTILITY_DEGENERATE_PARAM, ExposureMeasure, GroupComboMeasure, utility
from .ranked import RankedLists, RunInputError
from .registry import register_builtin

__all__ = ["EXP", "EXPU", "EXPRU", "ERBE", "ERBP", "ERBR"]

_SINGH = "Singh, Joachims: Fairness of Exposure in Rankings, KDD 2018"
_KIRNAP = ("Kirnap, Diaz, Biega, Ekstrand, Carterette, Yilmaz: Estimation of Fair Ranking Metrics with Incomplete "
           "Judgments, WWW 2021")

DECAY_PARAM = RangedParam(dtype=(float, int), default=0.5, low=0, high=1, low_open=True, high_open=True,
                          desc="RBP patience gamma: rank r gets exposure (1 - gamma) gamma^(r-1) (default 0.5: half of "
                               "the exposure on rank 1)")


class _EXP(ExposureMeasure):
    r"""Exposure disparity (Singh & Joachims 2018; FairRankTune's ``EXP``): mean exposure per group.

    .. math::  x_g = \frac{1}{|g|} \sum_{d_r \in g} v_r, \qquad v_r = \frac{1}{\log_2(r + 1)}, \qquad
               \mathrm{EXP}@k = \mathrm{combo}_g\, x_g

    over the groups :math:`g` with a document among the top :math:`k`. Pooled over queries (``POOLING`` ratio):
    all exposure of a group over all its (query, document) items.
    """

    __name__ = "EXP"
    NAME = __name__
    PRETTY_NAME = "Exposure disparity"
    SHORT_DESC = "Group fairness: how unequal the groups' mean exposure 1/log2(r+1) is (0 = equal, by combo)."
    REFERENCE = _SINGH

    def group_parts(self, lists: RankedLists, codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
        return per_group(log_exposure(positions(lists.offsets)), lists.offsets, codes, n_groups), \
            self.counts(lists, codes, n_groups)


class _EXPU(ExposureMeasure):
    r"""Exposure against utility (Singh & Joachims 2018, disparate treatment; FairRankTune's ``EXPU``).

    .. math::  x_g = \frac{\frac{1}{|g|}\sum_{d_r \in g} v_r}{\frac{1}{|g|}\sum_{d_r \in g} u_{d_r}}
               = \frac{\sum_{d_r \in g} v_r}{\sum_{d_r \in g} u_{d_r}}, \qquad
               u_d = \frac{\min(\mathrm{rel}_d, m)}{m}, \qquad \mathrm{EXPU}@k = \mathrm{combo}_g\, x_g

    with :math:`v_r = 1/\log_2(r+1)`, :math:`m` = ``max_rel`` and unjudged documents at utility 0. A query
    where a present group has zero utility (no relevant document) is degenerate (FairRankTune: ``inf``/``nan``).
    """

    __name__ = "EXPU"
    NAME = __name__
    PRETTY_NAME = "Exposure-utility disparity"
    SHORT_DESC = "Group fairness: how unequal the groups' exposure per unit of utility (relevance) is (0 = equal, by combo)."
    SUPPORTED_PARAMS = {**GroupComboMeasure.SUPPORTED_PARAMS, "max_rel": MAX_REL_PARAM, "degenerate": UTILITY_DEGENERATE_PARAM}
    REFERENCE = _SINGH
    ZERO_DENOMINATOR = "a group has no relevant document (zero utility)"

    def needs_relevance(self) -> bool:
        return True

    def group_parts(self, lists: RankedLists, codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
        return (per_group(log_exposure(positions(lists.offsets)), lists.offsets, codes, n_groups),
                per_group(utility(lists, self.param("max_rel")), lists.offsets, codes, n_groups))


class _EXPRU(ExposureMeasure):
    r"""Realised exposure against utility (Singh & Joachims 2018, disparate impact; FairRankTune's ``EXPRU``).

    .. math::  x_g = \frac{\sum_{d_r \in g} c_{d_r}}{\sum_{d_r \in g} u_{d_r}}, \qquad
               \mathrm{EXPRU}@k = \mathrm{combo}_g\, x_g

    with :math:`c_d \in [0, 1]` the document's click-through rate and :math:`u_d = \min(\mathrm{rel}_d, m)/m`.
    ``clicks='observed'`` (default, as FairRankTune, which takes the rates as input) reads :math:`c_d` from the
    run's ``ctr`` column or the resource named by ``ctr=``; ``clicks='position'`` uses the position-based click
    model :math:`c_{d_r} = u_{d_r} / \log_2(r + 1)` (a user examines rank :math:`r` with probability
    :math:`1/\log_2(r+1)` and clicks what is relevant), which needs no clicks. A rate outside [0, 1] is an error
    naming the document; a present group with zero utility makes the query degenerate.
    """

    __name__ = "EXPRU"
    NAME = __name__
    PRETTY_NAME = "Realised-exposure-utility disparity"
    SHORT_DESC = "Group fairness: how unequal the groups' click-through per unit of utility is (0 = equal, by combo)."
    CTR_INPUT = SideInput(column="ctr", param="ctr", kind="scores")
    SUPPORTED_PARAMS = {
        **GroupComboMeasure.SUPPORTED_PARAMS,
        "max_rel": MAX_REL_PARAM,
        "degenerate": UTILITY_DEGENERATE_PARAM,
        "clicks": measures.ParamInfo(dtype=str, choices=("observed", "position"), default="observed", desc="click-through rates: 'observed' from the run's ctr column or ctr= (default), 'position' from the click model ctr = utility / log2(r + 1)"),
        "ctr": measures.ParamInfo(dtype=str, default=None, desc="resource giving each document's click-through rate in [0, 1] (a 'tsv:FILE' of numbers) instead of the run's ctr column; only with clicks='observed'"),
    }
    REFERENCE = _SINGH
    ZERO_DENOMINATOR = "a group has no relevant document (zero utility)"

    def check_params(self) -> None:
        super().check_params()
        if self.param("clicks") == "position" and self.param("ctr") is not None:
            raise ValueError(f"{self}: ctr= names observed click-through rates, but clicks='position' computes them "
                             "from a click model; drop one of them")

    def side_inputs(self) -> tuple[SideInput, ...]:
        observed = self.param("clicks") == "observed"
        return self.SIDE_INPUTS + ((self.CTR_INPUT,) if observed else ())

    def needs_relevance(self) -> bool:
        return True

    def click_rates(self, lists: RankedLists) -> np.ndarray:
        """Each row's click-through rate: observed (checked to lie in [0, 1]) or from the position-based model."""
        if self.param("clicks") == "position":
            return log_exposure(positions(lists.offsets)) * utility(lists, self.param("max_rel"))
        rates = np.asarray(lists.column("ctr"), dtype=np.float64)
        outside = np.flatnonzero(~((rates >= 0) & (rates <= 1)))
        if outside.size:
            row = int(outside[0])
            raise RunInputError(f"{self}: click-through rate {float(rates[row])!r} of {lists.describe(row)} is outside [0, 1] "
                                f"({outside.size} considered documents are); give rates as fractions of impressions")
        return rates

    def group_parts(self, lists: RankedLists, codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
        return (per_group(self.click_rates(lists), lists.offsets, codes, n_groups),
                per_group(utility(lists, self.param("max_rel")), lists.offsets, codes, n_groups))


class _RBPExposure(ExposureMeasure):
    """Shared parts of ERBE, ERBP and ERBR: RBP exposure per group."""

    SUPPORTED_PARAMS = {**GroupComboMeasure.SUPPORTED_PARAMS, "decay": DECAY_PARAM}
    REFERENCE = _KIRNAP

    def exposure(self, lists: RankedLists, codes: np.ndarray, n_groups: int) -> np.ndarray:
        return per_group(rbp_exposure(positions(lists.offsets), float(self.param("decay"))), lists.offsets, codes,
                         n_groups)


class _ERBE(_RBPExposure):
    r"""RBP exposure equality (Kirnap et al. 2021, Eq. 2; FairRankTune's ``ERBE``): each group's total exposure.

    .. math::  x_g = \sum_{d_r \in g} (1 - \gamma)\, \gamma^{r-1}, \qquad \mathrm{ERBE}@k = \mathrm{combo}_g\, x_g

    with patience :math:`\gamma` = ``decay``. Pooled over queries (``POOLING`` sum): the per-query group
    exposures add up.
    """

    __name__ = "ERBE"
    NAME = __name__
    PRETTY_NAME = "RBP exposure equality"
    SHORT_DESC = "Group fairness: how unequal the groups' total RBP exposure is (0 = equal, by combo)."
    POOLING = "sum"

    def group_parts(self, lists: RankedLists, codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
        return self.exposure(lists, codes, n_groups), np.ones((lists.query_ids.size, n_groups))


class _ERBP(_RBPExposure):
    r"""RBP exposure proportional to group size (Kirnap et al. 2021; FairRankTune's ``ERBP``).

    .. math::  x_g = \frac{1}{|g|} \sum_{d_r \in g} (1 - \gamma)\, \gamma^{r-1}, \qquad
               \mathrm{ERBP}@k = \mathrm{combo}_g\, x_g
    """

    __name__ = "ERBP"
    NAME = __name__
    PRETTY_NAME = "RBP exposure proportionality"
    SHORT_DESC = "Group fairness: how unequal the groups' RBP exposure per document is (0 = equal, by combo)."

    def group_parts(self, lists: RankedLists, codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
        return self.exposure(lists, codes, n_groups), self.counts(lists, codes, n_groups)


class _ERBR(_RBPExposure):
    r"""RBP exposure proportional to relevance (Kirnap et al. 2021; FairRankTune's ``ERBR``).

    .. math::  x_g = \frac{\sum_{d_r \in g} (1 - \gamma)\, \gamma^{r-1}}{\sum_{d_r \in g} u_{d_r}}, \qquad
               u_d = \frac{\min(\mathrm{rel}_d, m)}{m}, \qquad \mathrm{ERBR}@k = \mathrm{combo}_g\, x_g

    A present group with zero utility makes the query degenerate (FairRankTune: ``inf``/``nan``).
    """

    __name__ = "ERBR"
    NAME = __name__
    PRETTY_NAME = "RBP exposure relevance-proportionality"
    SHORT_DESC = "Group fairness: how unequal the groups' RBP exposure per unit of utility is (0 = equal, by combo)."
    SUPPORTED_PARAMS = {**_RBPExposure.SUPPORTED_PARAMS, "max_rel": MAX_REL_PARAM, "degenerate": UTILITY_DEGENERATE_PARAM}
    ZERO_DENOMINATOR = "a group has no relevant document (zero utility)"

    def needs_relevance(self) -> bool:
        return True

    def group_parts(self, lists: RankedLists, codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
        return (self.exposure(lists, codes, n_groups),
                per_group(utility(lists, self.param("max_rel")), lists.offsets, codes, n_groups))


EXP = _EXP()
EXPU = _EXPU()
EXPRU = _EXPRU()
ERBE = _ERBE()
ERBP = _ERBP()
ERBR = _ERBR()
register_builtin(EXP, EXPU, EXPRU, ERBE, ERBP, ERBR)
