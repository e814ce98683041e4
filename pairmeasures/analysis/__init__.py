"""Statistics of an audit (floor 10): paired bootstrap intervals, summaries and per-group breakdowns; how well
polarity axes separate gold perspectives (:mod:`pairmeasures.analysis.polarity`, ``validate-polarity``).

Works on tidy per-query frames (columns ``system, qid, measure, value``; a query a measure could not
measure has no row). NumPy at import; pandas only when a frame function is called. See docs/statistics.md.
"""

from .bootstrap import BootstrapWarning, paired_bootstrap, paired_ratio_bootstrap, summarize
from .breakdown import SmallCellWarning, breakdown
from .significance import paired_tests

__all__ = ["BootstrapWarning", "SmallCellWarning", "breakdown", "paired_bootstrap", "paired_ratio_bootstrap", "paired_tests", "summarize"]
