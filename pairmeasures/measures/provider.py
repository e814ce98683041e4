"""One ir_measures Provider serving every :class:`PairMeasure`, built-in or from a plugin.

The evaluator sorts a run once into :class:`RankedLists` (cut at the deepest cutoff asked for)
and lets each measure compute all queries at once; no Python loop runs per query.

A query a measure leaves out (``degenerate='exclude'``, the default) is not in its iteration: no value, no NaN, as
no ir_measures measure yields NaN. What was left out, queries and documents without side information, is counted
in one warning per measure and run; ``Measured(of=...)`` counts the measured queries. How ``ir_measures`` and
``pt.Experiment`` are told not to fill such queries in is :mod:`pairmeasures.compat`.
"""

from __future__ import annotations

import warnings
from typing import Iterable, Iterator, List, Optional, Sequence, cast

import numpy as np
from ir_measures import Metric, providers
from ir_measures.measures import Measure
from ir_measures.util import QrelsConverter, RunConverter

from ..compat import adapt_frameworks, adapt_when_loaded
from ..compat.pyterrier import JudgedMetrics
from .base import DegenerateQueryWarning, MeasureOutputError, MeasureValues, PairMeasure
from .batches import in_batches
from .ranked import (
    QrelsLookup,
    RankedLists,
    RunInputError,
    build_ranked_lists,
    id_problem,
    missing_columns_problem,
    relevance_problem,
    user_stacklevel,
)
from .sideinputs import LeftOutDocuments, MissingSideInfoWarning, missing_side_columns, noting_left_out

__all__ = ["PairProvider", "PairEvaluator", "provider"]


class PairProvider(providers.Provider):
    """Evaluates every :class:`PairMeasure` (claimed by class, so plugin measures need no provider)."""

    NAME = "pairmeasures"

    def supports(self, measure) -> bool:
        measure.validate_params()
        return isinstance(measure, PairMeasure)

    def run_inputs(self, measures: Iterable[Measure]) -> List[str]:
        """The run columns the measures read; their resources are checked first, because pt.Experiment asks
        for these columns while validating its pipelines, before running any of them."""
        columns = {"query_id", "doc_id", "score"}
        for measure in cast(Iterable[PairMeasure], measures):  # the measures this provider supports
            measure.check_resources()
            columns.update(measure.run_columns())
        return sorted(columns)

    def qrel_inputs(self, measures: Iterable[Measure]) -> List[str]:
        return ["query_id", "doc_id", "relevance"]

    def _evaluator(self, measures, qrels) -> "PairEvaluator":
        measures = list(measures)
        for measure in measures:
            measure.check_resources()
        adapt_frameworks(measures)
        return PairEvaluator(measures, qrels)


class PairEvaluator(providers.Evaluator):
    """Scores runs against fixed qrels for a set of pairmeasures measures."""

    measures: List[PairMeasure]

    def __init__(self, measures: List[PairMeasure], qrels):
        frame = QrelsConverter(qrels, strict=False).as_pd_dataframe()
        names = _names(measures)
        problem = missing_columns_problem(frame.columns, "qrels")
        if problem:
            raise ValueError(f"{names}: {problem}")
        if len(frame) == 0 and not in_batches():  # a batch of pt.Experiment(batch_size=N) may hold no judged topic
            raise ValueError(f"{names}: the qrels are empty, so there is nothing to evaluate against; "
                             "pass the judgements of the queries to evaluate")
        problem = id_problem(frame, "qrels") or relevance_problem(frame)
        if problem:
            raise ValueError(f"{names}: {problem}")
        query_ids = frame["query_id"].astype(str).unique()
        super().__init__(measures, set(query_ids))
        self.query_ids = np.asarray(query_ids, dtype=object)
        self._qrels = frame
        self._lookup: Optional[QrelsLookup] = None

    def _relevance(self) -> QrelsLookup:
        if self._lookup is None:
            self._lookup = QrelsLookup(self._qrels)
        return self._lookup

    def iter_calc(self, run) -> Iterator[Metric]:
        """Every judged query's value of every measure, except the queries a measure left out (no default is filled
        in for them, unlike ``ir_measures.providers.Evaluator.iter_calc``: every other judged query is yielded), as a
        :class:`~pairmeasures.compat.pyterrier.JudgedMetrics` that knows the judged queries."""
        return JudgedMetrics(self._iter_calc(run), self.query_ids.tolist())

    def _iter_calc(self, run) -> Iterator[Metric]:
        for measure, query_ids, values in self.values(run):
            measured = ~np.isnan(values)
            for query_id, value in zip(query_ids[measured], values[measured].tolist()):
                yield Metric(query_id=query_id, measure=measure, value=value)

    def values(self, run, warn: bool = True) -> Iterator[tuple[PairMeasure, np.ndarray, np.ndarray]]:
        """``(measure, query_ids, values)`` of every measure, in order, as arrays (NaN: a query the measure left out,
        ``degenerate='exclude'``). The cut-offs of one measure family are evaluated together
        (:meth:`PairMeasure.evaluate_cutoffs`). What each measure left out is said in one warning per measure;
        ``warn=False`` leaves those warnings unwritten (a caller that counts the measured queries itself, such as the
        cut-off curves, would silence every one of them)."""
        frame = RunConverter(run, strict=False).as_pd_dataframe()
        by_policy: dict[str, RankedLists] = {}  # one sort per tie policy the measures ask for (usually one)
        results: dict[int, MeasureValues] = {}
        notes: dict[int, list[LeftOutDocuments]] = {}
        # ir_measures hands the measures over in set order: evaluate the families in the order of their names, so
        # that the first error a run raises (of several measures it fails) is the same in every process
        for family in sorted(_families(self.measures), key=lambda family: str(self.measures[family[0]])):
            policy = self.measures[family[0]].tie_policy()
            if policy not in by_policy:
                by_policy[policy] = self._lists(frame, policy)
            lists = by_policy[policy]
            with noting_left_out() as noted:
                if len(family) > 1:
                    cutoffs = [self.measures[i].param("cutoff") for i in family]
                    computed = self.measures[family[0]].evaluate_cutoffs(lists, cutoffs)
                else:
                    computed = [self.measures[family[0]].evaluate(lists)]
            results.update(zip(family, computed))
            notes.update((position, noted) for position in family)
        query_ids = self.query_ids
        for position, measure in enumerate(self.measures):
            result = _checked(measure, results.pop(position), query_ids)
            values = result.values
            if warn:
                _warn_left_out(measure, query_ids, result, _documents_left_out(notes.pop(position), measure.depth()))
            if result.degenerate.any() and measure.excludes_degenerate():
                values = np.where(result.degenerate, np.nan, values)
            yield measure, query_ids, values

    def _lists(self, frame, ties: str = "trec_eval") -> RankedLists:
        """The run (as a frame) sorted into ranked lists as deep as the measures read, equal scores ordered by the
        tie policy ``ties``, its columns checked first."""
        depths = [m.depth() for m in self.measures]
        depth = None if None in depths else max((d for d in depths if d is not None), default=None)
        wanted = {c for m in self.measures for c in m.run_columns()}
        wanted |= {c for m in self.measures for c in m.optional_run_columns() if c in frame.columns}
        columns = sorted(wanted)
        needs_relevance = any(m.needs_relevance() for m in self.measures)
        if len(frame):  # an empty run is "no results", even without its side columns
            problem = missing_columns_problem(frame.columns, "run")
            if problem:
                raise RunInputError(f"{_names(self.measures)}: {problem}")
            problem = missing_side_columns(self.measures, list(frame.columns))
            if problem:
                raise RunInputError(problem)
        try:
            return build_ranked_lists(frame, self.query_ids, depth, columns,
                                      self._relevance() if needs_relevance else None, ties=ties)
        except RunInputError as exc:
            raise RunInputError(f"{_names(self.measures)}: {exc}") from None


def _families(measures: List[PairMeasure]) -> List[List[int]]:
    """Positions of the measures grouped by family: the same measure and parameters but the cut-off (a measure
    without a cut-off is a family of its own)."""
    families: dict[tuple, List[int]] = {}
    for position, measure in enumerate(measures):
        cut = "cutoff" in measure.SUPPORTED_PARAMS and measure.param("cutoff") is not None
        key: tuple = ((type(measure), tuple(sorted((name, repr(value)) for name, value in measure.params.items()
                                                   if name != "cutoff"))) if cut else (position,))
        families.setdefault(key, []).append(position)
    return list(families.values())


def _names(measures: Iterable[Measure]) -> str:
    """The measures' names, sorted (ir_measures hands them over in set order)."""
    return ", ".join(sorted(str(m) for m in measures))


def _checked(measure: PairMeasure, result, query_ids: np.ndarray) -> MeasureValues:
    """``result`` as float values and boolean flags, one per query, all values finite (except degenerate queries
    the measure excludes); a :class:`MeasureOutputError` naming the measure and its module otherwise."""
    where = f"{measure} (from {type(measure).__module__})"
    if not isinstance(result, MeasureValues):
        raise MeasureOutputError(f"{where}: evaluate returned a {type(result).__name__}, not a pm.MeasureValues")
    n = query_ids.size
    try:
        values = np.asarray(result.values, dtype=np.float64)
    except (TypeError, ValueError):
        raise MeasureOutputError(f"{where}: its values are not numbers ({np.asarray(result.values).dtype})") from None
    degenerate = np.asarray(result.degenerate)
    causes = None if result.causes is None else np.asarray(result.causes, dtype=object)
    for name, array in (("values", values), ("degenerate", degenerate), ("causes", causes)):
        if array is not None and array.shape != (n,):
            raise MeasureOutputError(f"{where}: {name} has shape {array.shape} for {n} queries; a measure returns "
                                     "exactly one per query, aligned with lists.query_ids")
    if degenerate.dtype != bool:
        raise MeasureOutputError(f"{where}: degenerate must be booleans, not {degenerate.dtype}")
    bad = ~np.isfinite(values) & ~(degenerate & measure.excludes_degenerate())
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise MeasureOutputError(f"{where}: value {values[row]} for query {query_ids[row]!r} ({int(bad.sum())} of {n} "
                                 "not finite); a query with nothing to measure must be flagged degenerate and get "
                                 "the measure's DEGENERATE value")
    return MeasureValues(values=values, degenerate=degenerate, causes=causes)


def _documents_left_out(notes: Sequence[LeftOutDocuments], cutoff: Optional[int]) -> list[str]:
    """What the notes of a measure family say about the measure at ``cutoff``, per side input: the note taken at that
    cut-off, else the deepest (the family prepared once at its deepest cut-off), counted above ``cutoff``."""
    chosen: dict[str, LeftOutDocuments] = {}
    for note in notes:
        known = chosen.get(note.column)
        if known is None or known.depth != cutoff and (note.depth == cutoff or note.depth is None
                                                       or known.depth is not None and note.depth > known.depth):
            chosen[note.column] = note
    return [sentence for sentence in (note.sentence(cutoff) for note in chosen.values()) if sentence]


def _warn_left_out(measure: PairMeasure, query_ids: np.ndarray, result: MeasureValues, documents: list[str]) -> None:
    """One warning per measure and run: the considered documents without side information (skipped or neutral), and
    the queries that had nothing to measure, counted by cause, with examples. A :class:`DegenerateQueryWarning` where
    queries were left out or given the default, else a :class:`MissingSideInfoWarning`."""
    degenerate = result.degenerate
    if not degenerate.any() and not documents:
        return
    sentences = list(documents)
    advice = []
    if documents:
        advice.append("missing='error' stops at the first document without one")
    if degenerate.any():
        causes = result.causes[degenerate] if result.causes is not None else np.full(int(degenerate.sum()), None)
        causes = np.array([measure.DEGENERATE_REASON if c is None else str(c) for c in causes], dtype=object)
        degenerate_ids = query_ids[degenerate]
        kinds, counts = np.unique(causes.astype(str), return_counts=True)
        parts = []
        for index in np.argsort(-counts, kind="stable"):
            examples = ", ".join(repr(q) for q in degenerate_ids[causes == kinds[index]][:3])
            parts.append(f"{counts[index]}: {kinds[index]} (e.g. {examples})")
        if measure.excludes_degenerate():
            outcome = "were left out (no value, not in the mean)"
            advice.insert(0, f"Measured(of={str(measure)!r}) counts the measured queries")
        else:
            outcome = f"got {measure.degenerate_value()}, counted in the mean"
            if "degenerate" in measure.SUPPORTED_PARAMS:
                advice.insert(0, "degenerate='exclude' leaves them out of the mean")
        sentences.append(f"{degenerate_ids.size} of {degenerate.size} queries had nothing to measure and {outcome}: "
                         + "; ".join(parts))
    warnings.warn(f"{measure}: " + "; ".join(sentences) + (f". {'; '.join(advice)}." if advice else "."),
                  DegenerateQueryWarning if degenerate.any() else MissingSideInfoWarning,
                  stacklevel=user_stacklevel())


provider = PairProvider()
adapt_when_loaded()  # pt.Experiment knows the queries a measure leaves out from its first system on
