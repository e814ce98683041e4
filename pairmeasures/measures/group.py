"""The ``rND``, ``rKL`` and ``rRD`` measures: group fairness of ranked documents (Yang & Stoyanovich)."""

from __future__ import annotations

import numpy as np
from ir_measures import measures

from ..math import DEGENERATE_GROUP_FAIRNESS, group_fairness_lists, prefix_sum
from .base import COMMON_PARAMS, MAX_CUTOFF, MeasureValues, PairMeasure, RangedParam, SideInput, degenerate_causes
from .batches import check_whole_run
from .ranked import RankedLists, RunInputError
from .registry import register_builtin
from .sideinputs import label_key

__all__ = ["rND", "rKL", "rRD"]


_GROUP_PARAMS = {
    **COMMON_PARAMS,
    "step": RangedParam(dtype=int, default=1, low=1, high=MAX_CUTOFF, desc="prefixes i = s, 2s, ... up to the list length are summed"),
    "normalization": measures.ParamInfo(dtype=str, choices=("minmax", "max"), default="minmax", desc="'minmax': (raw - min) / (max - min) over all rankings (the paper); 'max': raw / max (the reference code)"),
    "protected": measures.ParamInfo(dtype=(str, int), default=None, desc="the protected group's label; default: every group in turn against the rest, reporting the worst"),
    "group": measures.ParamInfo(dtype=str, default=None, desc="resource giving group labels (e.g. 'irds:pair/procon', 'beir:DIR') instead of the run's group column"),
}


class GroupFairnessMeasure(PairMeasure):
    """Shared machinery of rND, rKL and rRD; subclasses set ``FAMILY`` (the math measure name)."""

    FAMILY = ""
    SIDE_INPUTS = (SideInput(column="group", param="group", kind="labels"),)
    DIRECTION = "lower-fairer"
    RANGE = "[0, 1]"
    REFERENCE = "Yang, Stoyanovich: Measuring Fairness in Ranked Outputs, SSDBM 2017"
    PAGES = ("group-fairness.md",)
    DEGENERATE = DEGENERATE_GROUP_FAIRNESS
    DEGENERATE_REASON = "its documents come from one group only, or every ranking of them scores the same"

    def math_options(self) -> dict:
        """Family-specific options passed to :func:`pairmeasures.math.group_fairness_lists`."""
        return {}

    def compute(self, lists: RankedLists) -> MeasureValues:
        return self._compute_prefixes(lists, lists.lengths[:, None])[0]

    def compute_cutoffs(self, lists: RankedLists, cutoffs) -> list[MeasureValues]:
        return self._compute_prefixes(lists, lists.prefix_lengths(cutoffs))

    def _no_protected_document(self, seen: list) -> RunInputError:
        groups = ", ".join(repr(group) for group in seen)
        return RunInputError(f"{self}: no document has group {label_key(self.param('protected'))!r}; groups seen: "
                             f"{groups}. Name one of them as protected= (labels compare as text, case included)")

    def _compute_prefixes(self, lists: RankedLists, prefixes: np.ndarray) -> list[MeasureValues]:
        """One result per column of ``prefixes`` ``(queries, J)``: the values of the top ``prefixes[q, j]``
        documents of each list, each prefix normalised over its own documents."""
        import pandas as pd

        labels = lists.column("group")
        n_queries = lists.query_ids.size
        raw_codes, raw_uniques = pd.factorize(pd.Series(labels, dtype=object))
        key_codes, uniques = pd.factorize(pd.Series([label_key(v) for v in raw_uniques], dtype=object))
        codes = key_codes[raw_codes] if raw_codes.size else raw_codes
        position = np.arange(len(lists)) - lists.offsets[lists.row_query]
        protected = self.param("protected")
        if protected is not None:
            wanted = np.flatnonzero(uniques == label_key(protected))
            mask = codes == wanted[0] if wanted.size else np.zeros(codes.size, dtype=bool)
            for j in range(prefixes.shape[1]):
                within = position < prefixes[lists.row_query, j]
                if within.any():  # in pt.Experiment(batch_size=N), decided once every batch was seen
                    found = bool(mask[within].any())
                    seen = () if found else uniques[np.unique(codes[within])]
                    check_whole_run((str(self), j), found, seen, self._no_protected_document)
            result = self._run(mask, lists.offsets, prefixes)
            protected_count = np.rint(prefix_sum(mask, lists.offsets, prefixes))
            results = []
            for j in range(prefixes.shape[1]):
                degenerate = result.degenerate[:, j]
                causes = degenerate_causes(degenerate, [
                    (prefixes[:, j] == 0, "no documents"),
                    (protected_count[:, j] == 0, f"no document of the protected group {protected!r}"),
                    (protected_count[:, j] == prefixes[:, j], f"only documents of the protected group {protected!r}"),
                ], "every ranking scores the same")
                results.append(MeasureValues(values=result.value[:, j], degenerate=degenerate, causes=causes))
            return results

        # Every group present in a query against the rest of that query's list; report the worst.
        n_groups = max(len(uniques), 1)
        pairs = np.unique(lists.row_query.astype(np.int64) * n_groups + codes)
        pair_query, pair_group = pairs // n_groups, pairs % n_groups
        pair_lengths = lists.lengths[pair_query]
        pair_offsets = np.concatenate([[0], np.cumsum(pair_lengths)]).astype(np.int64)
        rows = np.repeat(lists.offsets[pair_query] - pair_offsets[:-1], pair_lengths) + np.arange(pair_offsets[-1])
        mask = codes[rows] == np.repeat(pair_group, pair_lengths)
        pair_prefixes = prefixes[pair_query]
        result = self._run(mask, pair_offsets, pair_prefixes)
        values = np.full(prefixes.shape, -np.inf)
        np.maximum.at(values, pair_query, np.where(result.degenerate, -np.inf, result.value))
        degenerate = ~np.isfinite(values)
        values[degenerate] = self.DEGENERATE
        present = prefix_sum(mask, pair_offsets, pair_prefixes) > 0  # the pair's group has a document in the prefix
        results = []
        for j in range(prefixes.shape[1]):
            groups = np.bincount(pair_query[present[:, j]], minlength=n_queries)
            causes = degenerate_causes(degenerate[:, j], [(groups == 0, "no documents"), (groups == 1, "one group only")],
                                       "every ranking scores the same")
            results.append(MeasureValues(values=values[:, j], degenerate=degenerate[:, j], causes=causes))
        return results

    def _run(self, mask: np.ndarray, offsets: np.ndarray, prefixes: np.ndarray):
        return group_fairness_lists(mask, offsets, self.FAMILY, step=self.param("step"),
                                    normalization=self.param("normalization"), prefixes=prefixes,
                                    **self.math_options())


class _rND(GroupFairnessMeasure):
    r"""Normalised discounted difference (Yang & Stoyanovich 2017; PAIR Eq. 2-3).

    .. math::  \mathrm{rND} = \frac{\mathrm{raw} - \min}{\max - \min}, \qquad
               \mathrm{raw} = \sum_{i = s, 2s, \ldots \le N} \frac{1}{\log_2(i + 1)} \left| \frac{c_i}{i} - \frac{p}{N} \right|

    with :math:`c_i` protected documents among the top :math:`i`, :math:`p` of :math:`N` overall;
    min and max are exact over all rankings. 0 = fairest, 1 = least fair. Groups come from the run
    column ``group`` or the resource named by ``group=``; by default every group is taken in turn
    as the protected one and the worst value is reported (for two groups rND does not depend on
    the choice). A query with one group only gets 0.
    """

    __name__ = "rND"
    NAME = __name__
    FAMILY = "rnd"
    PRETTY_NAME = "Normalised Discounted Difference"
    SHORT_DESC = "Group fairness: discounted gap between a group's share of each prefix and of the whole list (0 = fairest)."
    SUPPORTED_PARAMS = dict(_GROUP_PARAMS)


class _rKL(GroupFairnessMeasure):
    r"""Normalised discounted KL divergence (Yang & Stoyanovich 2017; PAIR Eq. 2, 4).

    .. math::  \mathrm{raw} = \sum_{i = s, 2s, \ldots \le N} \frac{1}{\log_2(i + 1)}\,
               \mathrm{KL}\!\left( (\tfrac{c_i}{i}, 1 - \tfrac{c_i}{i}) \,\middle\|\, (\tfrac{p}{N}, 1 - \tfrac{p}{N}) \right)

    in bits with :math:`0 \log 0 = 0`, min-max normalised exactly. ``kl_eps=0.001`` reproduces
    the reference code, which replaces a share of exactly 0 or 1 by 0.001.
    """

    __name__ = "rKL"
    NAME = __name__
    FAMILY = "rkl"
    PRETTY_NAME = "Normalised Discounted KL Divergence"
    SHORT_DESC = "Group fairness: discounted KL divergence of each prefix's group shares from the whole list's (0 = fairest)."
    SUPPORTED_PARAMS = {
        **_GROUP_PARAMS,
        "kl_eps": RangedParam(dtype=(float, int), default=0.0, low=0, high=1, high_open=True, desc="0: 0 log 0 = 0 (default); 0.001: the reference code's substitution for shares of 0 or 1"),
    }

    def math_options(self) -> dict:
        return {"kl_eps": float(self.param("kl_eps"))}


class _rRD(GroupFairnessMeasure):
    r"""Normalised discounted ratio difference (Yang & Stoyanovich 2017, the authors' one-sided form).

    .. math::  \mathrm{raw} = \sum_{i = s, 2s, \ldots \le N} \frac{1}{\log_2(i + 1)} \max\!\left(0,\ \frac{p}{N - p} - \frac{c_i}{i - c_i}\right)

    Only under-representation of the protected group counts, so rRD depends on which group is
    protected (by default: each in turn, reporting the worst). A prefix without unprotected
    documents has ratio :math:`\infty` and adds 0; ``all_protected='zero'`` reproduces the
    reference code, which sets that ratio to 0.
    """

    __name__ = "rRD"
    NAME = __name__
    FAMILY = "rrd"
    PRETTY_NAME = "Normalised Discounted Ratio Difference"
    SHORT_DESC = "Group fairness: discounted under-representation of the protected group's ratio in each prefix (0 = fairest)."
    SUPPORTED_PARAMS = {
        **_GROUP_PARAMS,
        "all_protected": measures.ParamInfo(dtype=str, choices=("limit", "zero"), default="limit", desc="ratio of a prefix with no unprotected document: 'limit' (infinite, adds 0) or 'zero' (the reference code)"),
    }

    def math_options(self) -> dict:
        return {"all_protected": self.param("all_protected")}


rND = _rND()
rKL = _rKL()
rRD = _rRD()
register_builtin(rND, rKL, rRD)
