"""Shared machinery of the group-exposure family (EXP, EXPU, EXPRU, ERB*, ARP, AWRF's group form, ...): group codes
from the ``group`` side input, per-group values, and FairRankTune's ways of combining them
(:mod:`pairmeasures.math.group_combos`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional, Sequence, cast

import numpy as np
from ir_measures import measures

from ..math.group_combos import COMBOS, combine_groups, per_group
from .base import COMMON_PARAMS, MeasureValues, PairMeasure, RangedParam, SideInput, degenerate_causes
from .ranked import RankedLists
from .sideinputs import label_key

__all__ = ["GROUP_PARAM", "COMBO_PARAM", "MAX_REL_PARAM", "UTILITY_DEGENERATE_PARAM", "GroupComboMeasure", "PooledValue", "group_codes",
           "head_codes", "codes_by_cutoff", "group_presence", "utility", "ExposureMeasure"]

GROUP_PARAM = measures.ParamInfo(dtype=str, default=None, desc="resource giving group labels (e.g. 'irds:pair/procon', 'beir:DIR', 'tsv:FILE') instead of the run's group column")
COMBO_PARAM = measures.ParamInfo(dtype=str, choices=COMBOS, default="MaxMinDiff", desc="how per-group values combine (FairRankTune's names): 'MaxMinDiff' max - min, 'MaxAbsDiff' max |x - mean|, 'MeanAbsDev', 'LTwo' L2 norm, 'Variance', 'MinMaxRatio' min/max (1 = equal), 'MaxMinRatio' max/min")

MAX_REL_PARAM = RangedParam(dtype=int, default=1, low=1, high=1000, desc="utility of a document: min(qrel, max_rel) / max_rel, unjudged and negative labels 0 (default 1: binary, a qrel >= 1 is relevant)")

#: ``degenerate`` of the measures that divide by a group's utility: most queries of a sparsely judged collection
#: have a group without a relevant document, where the value is undefined, so they are left out by default
#: rather than counted as fair.
UTILITY_DEGENERATE_PARAM = measures.ParamInfo(dtype=str, choices=("default", "exclude"), default="exclude", desc="a query with nothing to measure or a group without utility: 'exclude' (default) gives it NaN and leaves it out of the mean; 'default' gives it the measure's documented value, counted in the mean")


def utility(lists: RankedLists, max_rel: int) -> np.ndarray:
    r"""Each row's utility in [0, 1] from its qrel: :math:`\min(\mathrm{rel}, m) / m`, 0 when unjudged or negative."""
    relevance = np.nan_to_num(lists.relevance, nan=0.0)
    return np.clip(relevance, 0, max_rel) / max_rel


def group_codes(lists: RankedLists) -> tuple[np.ndarray, np.ndarray]:
    """Each row's group code and the groups' labels: labels compare as text, so 1, 1.0 and '1' are one group."""
    import pandas as pd

    raw_codes, raw_uniques = pd.factorize(pd.Series(lists.column("group"), dtype=object))
    key_codes, uniques = pd.factorize(pd.Series([label_key(v) for v in raw_uniques], dtype=object))
    codes = key_codes[raw_codes] if raw_codes.size else raw_codes.astype(np.int64)
    return codes.astype(np.int64), np.asarray(uniques, dtype=object)


def head_codes(codes: np.ndarray, uniques: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`group_codes` of ``lists.select(keep)`` from those of ``lists`` (labels without a missing one): the kept
    rows' codes numbered again by first appearance, as factorizing the kept rows numbers them, and their labels."""
    kept = codes[keep]
    if not kept.size:
        return kept, uniques[:0]
    present, first = np.unique(kept, return_index=True)
    order = present[np.argsort(first)]
    renumber = np.zeros(len(uniques), dtype=np.int64)
    renumber[order] = np.arange(order.size)
    return renumber[kept], uniques[order]


def codes_by_cutoff(lists: RankedLists, cutoffs) -> Optional[list[tuple[RankedLists, np.ndarray, np.ndarray]]]:
    """``(lists.head(k), its group codes, its labels)`` for each cut-off k, the labels factorized once (None where a
    label is missing: each head is then coded on its own)."""
    import pandas as pd

    if pd.isna(pd.Series(lists.column("group"), dtype=object)).any():
        return None
    codes, uniques = group_codes(lists)
    heads = []
    for k in cutoffs:
        keep = lists.ranks < k
        heads.append((lists.select(keep), *head_codes(codes, uniques, keep)))
    return heads


def group_presence(lists: RankedLists, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Whether each list has a document of each group: booleans, shape ``(queries, n_groups)``."""
    n_queries = lists.query_ids.size
    return np.bincount(lists.row_query * n_groups + codes, minlength=n_queries * n_groups).reshape(n_queries, n_groups) > 0


class GroupComboMeasure(PairMeasure):
    """A measure that computes one value per group of each list and combines them with ``combo``.

    Subclasses implement :meth:`group_parts`; the group value is ``numerator / denominator``, taken over the
    groups with at least one considered document. A list with fewer than two groups, or where a present group's
    denominator is 0 or the combination is undefined, is degenerate and gets :meth:`degenerate_default`.
    """

    SIDE_INPUTS = (SideInput(column="group", param="group", kind="labels"),)
    SUPPORTED_PARAMS = {**COMMON_PARAMS, "group": GROUP_PARAM, "combo": COMBO_PARAM}
    DIRECTION = "lower-fairer"
    DEGENERATE_REASON = "its documents come from one group only"

    #: How FairRankTune pools a set of rankings (one per query here) into one value per group: ``"ratio"``
    #: sums numerators and denominators over the rankings first (EXP: all exposure over all items of the
    #: group), ``"sum"`` adds the per-ranking group values (ERBE, ARP).
    POOLING: ClassVar[str] = "ratio"
    #: Says, in a few words, what a zero denominator means (e.g. "a group has no relevant document").
    ZERO_DENOMINATOR = "a group's value is undefined (zero denominator)"

    def direction(self) -> str:
        return "higher-fairer" if self.param("combo") == "MinMaxRatio" else "lower-fairer"

    def excludes_degenerate(self) -> bool:
        """As ``degenerate=`` says; left unset, ``MaxMinRatio`` excludes: its ratio is unbounded where a group's value
        is 0 (the least fair case), and no finite value could stand for it in a mean."""
        if self.param("combo") == "MaxMinRatio" and "degenerate" not in self.params:
            return True
        return super().excludes_degenerate()

    def degenerate_default(self) -> float:
        """The value of a degenerate list: 1 for the ratio combinations (groups equal), else :attr:`DEGENERATE`."""
        return 1.0 if self.param("combo") in ("MinMaxRatio", "MaxMinRatio") else self.DEGENERATE

    @property
    def DEFAULT(self) -> float:  # type: ignore[override]
        return float("nan") if self.excludes_degenerate() else self.degenerate_default()

    def degenerate_value(self) -> str:
        return str(self.degenerate_default())

    def group_parts(self, lists: RankedLists, codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
        """``(numerator, denominator)``, each ``(queries, n_groups)``: the group values are their ratio."""
        raise NotImplementedError

    def compute(self, lists: RankedLists) -> MeasureValues:
        return self.compute_coded(lists, *group_codes(lists))

    def compute_cutoffs(self, lists: RankedLists, cutoffs: Sequence[int]) -> list[MeasureValues]:
        """Each cut-off's :meth:`compute`, the group labels factorized once (:func:`codes_by_cutoff`)."""
        heads = codes_by_cutoff(lists, cutoffs) if type(self).compute is GroupComboMeasure.compute else None
        if heads is None:
            return super().compute_cutoffs(lists, cutoffs)
        return [cast(GroupComboMeasure, self.at(k)).compute_coded(*head) for k, head in zip(cutoffs, heads)]

    def compute_coded(self, lists: RankedLists, codes: np.ndarray, uniques: np.ndarray) -> MeasureValues:
        """:meth:`compute` from the lists' group codes and labels (:func:`group_codes`)."""
        n_groups = max(len(uniques), 1)
        present = group_presence(lists, codes, n_groups)
        numerator, denominator = self.group_parts(lists, codes, n_groups)
        zero = (present & (denominator == 0)).any(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            group_values = np.where(present & (denominator != 0), numerator / np.where(denominator == 0, 1, denominator), 0.0)
        value, defined = combine_groups(group_values, present & ~zero[:, None], self.param("combo"))
        degenerate = ~defined | zero
        groups = present.sum(axis=1)
        causes = degenerate_causes(degenerate, [(lists.lengths == 0, "no documents"), (groups < 2, "one group only"),
                                                (zero, self.ZERO_DENOMINATOR)],
                                   "the combination is undefined (a ratio with a zero group value)")
        return MeasureValues(values=np.where(degenerate, self.degenerate_default(), value), degenerate=degenerate,
                             causes=causes)

    def compute_pooled(self, lists: RankedLists) -> PooledValue:
        r"""One value over all the lists at once, as FairRankTune computes it from many rankings (one per query).

        ``POOLING = "ratio"``: :math:`x_g = \sum_q n_{qg} / \sum_q d_{qg}`; ``"sum"``:
        :math:`x_g = \sum_q n_{qg} / d_{qg}` over the lists where ``g`` has a document and :math:`d_{qg} \ne 0`
        (the others are counted in :attr:`PooledValue.skipped`). The groups are those with a document in any list.
        """
        codes, uniques = group_codes(lists)
        n_groups = max(len(uniques), 1)
        present = group_presence(lists, codes, n_groups)
        numerator, denominator = self.group_parts(lists, codes, n_groups)
        anywhere = present.any(axis=0)
        skipped = 0
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.POOLING == "ratio":
                total = np.where(present, denominator, 0.0).sum(axis=0)
                zero = bool((anywhere & (total == 0)).any())
                group_values = np.where(total != 0, np.where(present, numerator, 0.0).sum(axis=0) / total, 0.0)
            elif self.POOLING == "sum":
                usable = present & (denominator != 0)
                skipped = int((present & ~usable).any(axis=1).sum())
                zero = False
                group_values = np.where(usable, numerator / np.where(usable, denominator, 1.0), 0.0).sum(axis=0)
            else:
                raise ValueError(f"{self.NAME}: POOLING must be 'ratio' or 'sum', not {self.POOLING!r}")
        combined = np.logical_and(anywhere, not zero).reshape(1, -1)
        value, defined = combine_groups(group_values.reshape(1, -1), combined, self.param("combo"))
        cause = ("no documents" if not len(lists) else "one group only" if anywhere.sum() < 2 else
                 self.ZERO_DENOMINATOR if zero else
                 "the combination is undefined (a ratio with a zero group value)" if not defined[0] else None)
        return PooledValue(value=float(value[0]) if cause is None else self.degenerate_default(), cause=cause,
                           groups=dict(zip(uniques.tolist(), group_values.tolist())), skipped=skipped)


@dataclass(frozen=True)
class PooledValue:
    """A measure's value over all queries pooled (:meth:`GroupComboMeasure.compute_pooled`)."""

    #: The combined value; the measure's degenerate default when ``cause`` is set.
    value: float
    #: Why there is nothing to combine (e.g. "one group only"), else ``None``.
    cause: Optional[str]
    #: Each group's pooled value (FairRankTune's second return value).
    groups: dict
    #: Lists left out of some group's sum because that group's denominator is 0 there (``POOLING = "sum"``).
    skipped: int


class ExposureMeasure(GroupComboMeasure):
    """Shared metadata of the group-exposure measures (EXP, ERB*, and AWRF's group form): the range depends on
    ``combo``."""

    RANGE = ">= 0; MinMaxRatio in [0, 1] (1 = equal), MaxMinRatio >= 1 (1 = equal)"
    PAGES = ("group-exposure.md",)

    def value_range(self) -> str:
        combo = self.param("combo")
        return {"MinMaxRatio": "[0, 1]", "MaxMinRatio": ">= 1"}.get(combo, ">= 0")

    def counts(self, lists: RankedLists, codes: np.ndarray, n_groups: int) -> np.ndarray:
        """Number of considered documents of each (query, group)."""
        return per_group(np.ones(codes.size), lists.offsets, codes, n_groups)
