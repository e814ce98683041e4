r"""ExposureEntropy: how evenly a ranking spreads its positional exposure over the groups of its documents.

A document at 1-based position :math:`r` of the considered list gets exposure :math:`v_r = 1 / \log_2(r + 1)`.
Group :math:`g`'s share of the list's exposure is :math:`s_g = \sum_{d \in g} v_{r(d)} / \sum_d v_{r(d)}`, and
the measure is the normalised Shannon entropy of the shares over the :math:`G \ge 2` groups in the list:

.. math:: \mathrm{ExposureEntropy} = -\frac{1}{\ln G} \sum_g s_g \ln s_g

1: every group gets the same share of exposure; towards 0: one group takes almost all of it. Unlike the
built-in ``EXP`` (mean exposure per document of each group), the shares are totals, so a group with more
documents in the list gets more exposure. A query whose documents all belong to one group scores 1.
"""

import numpy as np
from ir_measures import measures

import pairmeasures as pm


class _ExposureEntropy(pm.PairMeasure):
    __doc__ = __doc__
    __name__ = "ExposureEntropy"
    NAME = __name__
    PRETTY_NAME = "Entropy of group exposure shares"
    SHORT_DESC = "Normalised entropy of the groups' shares of positional exposure 1/log2(rank+1) in a ranking."
    SUPPORTED_PARAMS = {
        **pm.measures.COMMON_PARAMS,
        "group": measures.ParamInfo(dtype=str, default=None, desc="resource giving group labels instead of the run's group column"),
    }
    SIDE_INPUTS = (pm.SideInput(column="group", param="group", kind="labels"),)
    DIRECTION = "higher-fairer"  # one of pm.measures.DIRECTIONS; left out, it is "unknown"
    RANGE = "[0, 1]"
    REFERENCE = "after Singh, Joachims: Fairness of Exposure in Rankings, KDD 2018"
    DEGENERATE = 1.0
    DEGENERATE_REASON = "its documents come from one group only"

    def compute(self, lists):
        import pandas as pd

        codes, uniques = pd.factorize(pd.Series(lists.column("group"), dtype=object).astype(str))
        n_queries, n_groups = lists.query_ids.size, max(len(uniques), 1)
        row_query = lists.row_query
        position = np.arange(len(lists)) - lists.offsets[row_query] + 1
        exposure = 1.0 / np.log2(position + 1.0)
        totals = np.zeros((n_queries, n_groups))
        np.add.at(totals, (row_query, codes), exposure)
        present = totals > 0
        shares = totals / np.maximum(totals.sum(axis=1, keepdims=True), 1e-300)
        entropy = -np.where(present, shares * np.log(np.where(present, shares, 1.0)), 0.0).sum(axis=1)
        groups = present.sum(axis=1)
        degenerate = groups < 2
        value = entropy / np.log(np.maximum(groups, 2))
        return pm.MeasureValues(values=np.where(degenerate, self.DEGENERATE, value), degenerate=degenerate)


ExposureEntropy = _ExposureEntropy()


@pm.hookimpl
def pairmeasures_measures():
    return [ExposureEntropy]
