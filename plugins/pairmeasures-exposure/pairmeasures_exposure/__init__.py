r"""ExposureGap: the gap in mean positional exposure between groups of ranked documents.

A document at 0-based position :math:`j` of the considered list gets exposure
:math:`1 / \log_2(j + 2)`; each group's mean exposure is averaged over its documents, and the
measure is the largest mean minus the smallest (0: every group equally exposed on average).
A query whose documents all belong to one group scores 0.
"""

import numpy as np
from ir_measures import measures

import pairmeasures as pm


class _ExposureGap(pm.PairMeasure):
    __doc__ = __doc__
    __name__ = "ExposureGap"
    NAME = __name__
    PRETTY_NAME = "Group exposure gap"
    SHORT_DESC = "Largest minus smallest mean positional exposure 1/log2(rank+1) of the groups in a ranking."
    SUPPORTED_PARAMS = {
        **pm.measures.COMMON_PARAMS,
        "group": measures.ParamInfo(dtype=str, default=None, desc="resource giving group labels instead of the run's group column"),
    }
    SIDE_INPUTS = (pm.SideInput(column="group", param="group", kind="labels"),)
    DIRECTION = "lower-fairer"  # one of pm.measures.DIRECTIONS; left out, it is "unknown"
    RANGE = "[0, 1)"
    REFERENCE = "after Singh, Joachims: Fairness of Exposure in Rankings, KDD 2018"
    DEGENERATE = 0.0
    DEGENERATE_REASON = "its documents come from one group only"

    def compute(self, lists):
        import pandas as pd

        codes, uniques = pd.factorize(pd.Series(lists.column("group"), dtype=object).astype(str))
        n_queries, n_groups = lists.query_ids.size, max(len(uniques), 1)
        row_query = lists.row_query
        position = np.arange(len(lists)) - lists.offsets[row_query]
        exposure = 1.0 / np.log2(position + 2.0)
        totals = np.zeros((n_queries, n_groups))
        counts = np.zeros((n_queries, n_groups))
        np.add.at(totals, (row_query, codes), exposure)
        np.add.at(counts, (row_query, codes), 1.0)
        present = counts > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            means = totals / counts
        gap = np.where(present, means, -np.inf).max(axis=1) - np.where(present, means, np.inf).min(axis=1)
        degenerate = present.sum(axis=1) < 2
        return pm.MeasureValues(values=np.where(degenerate, self.DEGENERATE, gap), degenerate=degenerate)


ExposureGap = _ExposureGap()


@pm.hookimpl
def pairmeasures_measures():
    return [ExposureGap]
