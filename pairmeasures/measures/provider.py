"""One ir_measures Provider serving every :class:`PairMeasure`, built-in or from a plugin.

The evaluator sorts a run once into :class:`RankedLists` (cut at the deepest cutoff asked for)
and lets each measure compute all queries at once; no Python loop runs per query.
"""

from __future__ import annotations

import sys
import warnings
from typing import Iterable, Iterator, List

import numpy as np
from ir_measures import Metric, providers
from ir_measures.util import QrelsConverter, RunConverter

from .base import DegenerateQueryWarning, PairMeasure
from .ranked import QrelsLookup, RunInputError, build_ranked_lists, id_problem, relevance_problem

__all__ = ["PairProvider", "PairEvaluator", "provider"]


class PairProvider(providers.Provider):
    """Evaluates every :class:`PairMeasure` (claimed by class, so plugin measures need no provider)."""

    NAME = "pairmeasures"

    def supports(self, measure) -> bool:
        measure.validate_params()
        return isinstance(measure, PairMeasure)

    def run_inputs(self, measures: Iterable[PairMeasure]) -> List[str]:
        columns = {"query_id", "doc_id", "score"}
        for measure in measures:
            columns.update(measure.run_columns())
        return sorted(columns)

    def qrel_inputs(self, measures: Iterable[PairMeasure]) -> List[str]:
        return ["query_id", "doc_id", "relevance"]

    def _evaluator(self, measures, qrels) -> "PairEvaluator":
        return PairEvaluator(list(measures), qrels)


class PairEvaluator(providers.Evaluator):
    """Scores runs against fixed qrels for a set of pairmeasures measures."""

    def __init__(self, measures: List[PairMeasure], qrels):
        frame = QrelsConverter(qrels, strict=False).as_pd_dataframe()
        names = ", ".join(str(m) for m in measures)
        for column in ("query_id", "doc_id", "relevance"):
            if column not in frame.columns:
                raise ValueError(f"{names}: qrels need a {column!r} column; found {list(frame.columns)}")
        if len(frame) == 0 and not _pyterrier_batch():
            raise ValueError(f"{names}: the qrels are empty, so there is nothing to evaluate against; "
                             "pass the judgements of the queries to evaluate")
        problem = id_problem(frame, "qrels") or relevance_problem(frame)
        if problem:
            raise ValueError(f"{names}: {problem}")
        query_ids = frame["query_id"].astype(str).unique()
        super().__init__(measures, set(query_ids))
        self.query_ids = np.asarray(query_ids, dtype=object)
        self._qrels = frame
        self._lookup = None

    def _relevance(self) -> QrelsLookup:
        if self._lookup is None:
            self._lookup = QrelsLookup(self._qrels)
        return self._lookup

    def _iter_calc(self, run) -> Iterator[Metric]:
        frame = RunConverter(run, strict=False).as_pd_dataframe()
        depths = [m.depth() for m in self.measures]
        depth = None if any(d is None for d in depths) else max(depths, default=None)
        columns = {c for m in self.measures for c in m.run_columns()}
        columns |= {c for m in self.measures for c in m.optional_run_columns() if c in frame.columns}
        columns = sorted(columns)
        needs_relevance = any(m.param("rel") is not None for m in self.measures)
        try:
            lists = build_ranked_lists(frame, self.query_ids, depth, columns,
                                       self._relevance() if needs_relevance else None)
        except RunInputError as exc:
            raise RunInputError(f"{', '.join(str(m) for m in self.measures)}: {exc}") from None
        for measure in self.measures:
            result = measure.evaluate(lists)
            if result.degenerate.any():
                _warn_degenerate(measure, lists.query_ids, result.degenerate)
            for query_id, value in zip(lists.query_ids, result.values.tolist()):
                yield Metric(query_id=query_id, measure=measure, value=value)


def _pyterrier_batch() -> bool:
    """Whether pt.Experiment's batched evaluation is the caller: it passes each batch of topics the
    qrels of that batch, which are empty for a batch of unjudged topics."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("pyterrier._evaluation"):
            return True
        frame = frame.f_back
    return False


def _warn_degenerate(measure: PairMeasure, query_ids: np.ndarray, degenerate: np.ndarray) -> None:
    examples = ", ".join(repr(q) for q in query_ids[degenerate][:3])
    count = int(degenerate.sum())
    warnings.warn(
        f"{measure}: {count} of {degenerate.size} queries had nothing to measure "
        f"({measure.DEGENERATE_REASON}) and were given {measure.DEGENERATE}; e.g. {examples}",
        DegenerateQueryWarning,
        stacklevel=3,
    )


provider = PairProvider()
