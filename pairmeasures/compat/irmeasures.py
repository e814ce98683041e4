"""The patch of ir_measures: its ``FallbackEvaluator`` fills no value in for a pairmeasures measure.

``FallbackEvaluator`` is what ``ir_measures.calc_aggregate``, ``iter_calc`` and ``pt.Experiment`` use when relevance
and bias measures are evaluated together (several providers). It yields ``measure.DEFAULT`` for every (measure,
query) no provider yielded. A pairmeasures measure with ``degenerate='exclude'`` (the default) leaves out, on
purpose, a query with nothing to measure: its evaluator yields every judged query it measured and no other, so the
replacement fills nothing in for our measures and everything else as before.
"""

from __future__ import annotations

import itertools

from ir_measures import Metric

from ..measures.base import PairMeasure
from .imports import replace_once

__all__ = ["fallback_fills_no_pair_measure"]


def fallback_fills_no_pair_measure() -> None:
    """Install the replacement of ``FallbackEvaluator.iter_calc`` (once; nothing when the class is not there)."""
    from ir_measures.providers import fallback_provider

    replace_once(getattr(fallback_provider, "FallbackEvaluator", None), "iter_calc", _without_pair_defaults)


def _without_pair_defaults(_original):
    def iter_calc(self, run):
        """``Evaluator.iter_calc``, filling ``measure.DEFAULT`` in for the (measure, query) pairs no provider yielded,
        except for pairmeasures measures (installed by pairmeasures: their evaluator leaves a query out on purpose)."""
        filled = [measure for measure in self.measures if not isinstance(measure, PairMeasure)]
        expected = set(itertools.product(filled, self.qrel_qids))
        for metric in self._iter_calc(run):
            expected.discard((metric.measure, metric.query_id))
            yield metric
        for measure, query_id in sorted(expected, key=lambda x: (str(x[0]), x[1])):
            yield Metric(query_id=query_id, measure=measure, value=measure.DEFAULT)

    return iter_calc
