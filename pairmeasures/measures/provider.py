"""One ir_measures Provider serving every :class:`PairMeasure`, built-in or from a plugin.

The evaluator sorts a run once into :class:`RankedLists` (cut at the deepest cutoff asked for)
and lets each measure compute all queries at once; no Python loop runs per query.
"""

from __future__ import annotations

import sys
import warnings
from typing import Iterable, Iterator, List, Optional, cast

import numpy as np
from ir_measures import Metric, providers
from ir_measures.measures import Measure
from ir_measures.util import QrelsConverter, RunConverter

from .base import DegenerateQueryWarning, MeasureOutputError, MeasureValues, PairMeasure
from .ranked import (
    QrelsLookup,
    RankedLists,
    RunInputError,
    build_ranked_lists,
    id_problem,
    in_pyterrier_batch,
    missing_columns_problem,
    relevance_problem,
    user_stacklevel,
)
from .sideinputs import missing_side_columns

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
        _pyterrier_uses_aggregators(measures)
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
        if len(frame) == 0 and not in_pyterrier_batch():
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

    def _iter_calc(self, run) -> Iterator[Metric]:
        for measure, query_ids, values in self.values(run):
            for query_id, value in zip(query_ids, values.tolist()):
                yield Metric(query_id=query_id, measure=measure, value=value)

    def values(self, run) -> Iterator[tuple[PairMeasure, np.ndarray, np.ndarray]]:
        """``(measure, query_ids, values)`` of every measure, in order, as arrays (NaN: a degenerate query the
        measure excludes). The cut-offs of one measure family are evaluated together
        (:meth:`PairMeasure.evaluate_cutoffs`)."""
        frame = RunConverter(run, strict=False).as_pd_dataframe()
        by_policy: dict[str, RankedLists] = {}  # one sort per tie policy the measures ask for (usually one)
        results: dict[int, MeasureValues] = {}
        for family in _families(self.measures):
            policy = self.measures[family[0]].tie_policy()
            if policy not in by_policy:
                by_policy[policy] = self._lists(frame, policy)
            lists = by_policy[policy]
            if len(family) > 1:
                cutoffs = [self.measures[i].param("cutoff") for i in family]
                computed = self.measures[family[0]].evaluate_cutoffs(lists, cutoffs)
            else:
                computed = [self.measures[family[0]].evaluate(lists)]
            results.update(zip(family, computed))
        query_ids = self.query_ids
        for position, measure in enumerate(self.measures):
            result = _checked(measure, results.pop(position), query_ids)
            values = result.values
            if result.degenerate.any():
                _warn_degenerate(measure, query_ids, result)
                if measure.excludes_degenerate():
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


def _warn_degenerate(measure: PairMeasure, query_ids: np.ndarray, result: MeasureValues) -> None:
    """One warning per measure and run: how many queries had nothing to measure, counted by cause, with examples."""
    degenerate = result.degenerate
    causes = result.causes[degenerate] if result.causes is not None else np.full(int(degenerate.sum()), None)
    causes = np.array([measure.DEGENERATE_REASON if c is None else str(c) for c in causes], dtype=object)
    degenerate_ids = query_ids[degenerate]
    kinds, counts = np.unique(causes.astype(str), return_counts=True)
    parts = []
    for index in np.argsort(-counts, kind="stable"):
        examples = ", ".join(repr(q) for q in degenerate_ids[causes == kinds[index]][:3])
        parts.append(f"{counts[index]}: {kinds[index]} (e.g. {examples})")
    if measure.excludes_degenerate():
        outcome = "got NaN, left out of the mean"
        advice = (f"Measured(of={str(measure)!r}) counts the measured queries; for a pt.Experiment baseline test pass "
                  "test=functools.partial(scipy.stats.ttest_rel, nan_policy='omit')")
    else:
        outcome = f"got {measure.degenerate_value()}"
        advice = "Pass degenerate='exclude' to leave them out of the mean" if "degenerate" in measure.SUPPORTED_PARAMS else ""
    skipped = ("documents are counted after missing='skip' left out those without side information; "
               if "missing" in measure.SUPPORTED_PARAMS and measure.param("missing") == "skip" else "")
    warnings.warn(
        f"{measure}: {degenerate_ids.size} of {degenerate.size} queries had nothing to measure and {outcome}. "
        + skipped + "; ".join(parts) + (f". {advice}." if advice else "."),
        DegenerateQueryWarning,
        stacklevel=user_stacklevel(),
    )


def _pyterrier_uses_aggregators(measures: List[PairMeasure]) -> None:
    """Make pt.Experiment's means use our measures' aggregators, as ``ir_measures.calc_aggregate`` does.

    PyTerrier 1.1 averages the per-query values itself (``pyterrier._evaluation._rendering._mean_of_measures``)
    instead of asking ``measure.aggregator()``: it would average ``Measured`` counts and take NaN means under
    ``degenerate='exclude'``. Replaced once, when PyTerrier is loaded and one of our evaluators is built; other
    measures keep PyTerrier's mean. A PyTerrier without that function gets a warning when it matters.
    """
    if "pyterrier" not in sys.modules or not any(_needs_own_aggregator(m) for m in measures):
        return
    rendering = sys.modules.get("pyterrier._evaluation._rendering")
    plain_mean = getattr(rendering, "_mean_of_measures", None)
    if rendering is None or plain_mean is None:
        warnings.warn("this PyTerrier version has no pyterrier._evaluation._rendering._mean_of_measures: "
                      "pt.Experiment may average Measured(...) counts and give NaN means under degenerate='exclude'; "
                      "use ir_measures.calc_aggregate, or pt.Experiment(perquery=True) and aggregate yourself",
                      RuntimeWarning, stacklevel=4)
        return
    if plain_mean in _OUR_MEANS:
        return

    def mean_of_measures(result, measures=None, num_q=None):
        means = plain_mean(result, measures, num_q)
        for name in means:
            measure = _pair_measure(name)
            if measure is not None and num_q is None:
                aggregator = measure.aggregator()
                for row in result.values():
                    aggregator.add(row[name])
                means[name] = aggregator.result()
        return means

    _OUR_MEANS.add(mean_of_measures)
    vars(rendering)["_mean_of_measures"] = mean_of_measures


#: The replacements of PyTerrier's mean installed by :func:`_pyterrier_uses_aggregators` (installed once).
_OUR_MEANS: set = set()


def _needs_own_aggregator(measure: PairMeasure) -> bool:
    """Whether the plain mean over all queries would misreport ``measure`` (NaNs left out, or a count)."""
    return type(measure).aggregator is not PairMeasure.aggregator or measure.excludes_degenerate()


def _pair_measure(name: str):
    """The pairmeasures measure a result column is named after, else ``None``."""
    import ir_measures

    try:
        measure = ir_measures.parse_measure(name)
    except (ValueError, NameError, TypeError, SyntaxError):
        return None
    return measure if isinstance(measure, PairMeasure) else None


provider = PairProvider()
