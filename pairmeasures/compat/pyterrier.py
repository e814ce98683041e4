"""The patches of PyTerrier: ``pt.Experiment`` knows the judged queries a pairmeasures measure left out.

A measure with ``degenerate='exclude'`` (the default) has no value for a query with nothing to measure (its provider
yields none, as no ir_measures measure ever yields NaN). ``pt.Experiment`` assumes every judged query has a value of
every measure; these patches of ``pyterrier._evaluation`` (checked with PyTerrier 1.1) adapt it, and touch nothing
in an evaluation without our measures (the table, its order, the warnings):

- ``_execution._ir_measures_to_dict`` (the per-query table of query -> measure -> value, which fills a topic without
  any value with NaN, "not found in qrels"): a judged query one of our measures left out gets :data:`LEFT_OUT`, a NaN
  of its own, and each row keeps the measures' order;
- ``_rendering._mean_of_measures``: our measures' means are their aggregators' (the mean over the measured queries,
  ``Measured``'s sum), without :data:`LEFT_OUT`;
- ``_rendering.RenderFromPerQuery.averages``: the baseline test (``scipy.stats.ttest_rel`` or any ``test=``) runs
  over the queries both the system and the baseline measured; ``.perquery``: no row for a query left out (nor in
  ``pt.Evaluate(..., perquery=True)``);
- ``_execution._run_and_evaluate``, ``_exec_tree.tree_execution`` and ``_exec_tree.TransformerRadixTree.traverse``:
  ``pt.Experiment(..., batch_size=N)`` (plans ``'linear'`` and ``'tree'``) evaluates inside
  :func:`~pairmeasures.measures.batches.evaluating_in_batches`, each system's batches booked to it, so that checks of
  the whole run wait for every batch of a system (:func:`~pairmeasures.measures.batches.check_whole_run`).

In an evaluation with our measures, the values, means, counts and tests of the other measures are PyTerrier's (a NaN
of theirs stays in their test, which is then NaN).
"""

from __future__ import annotations

import functools
import inspect
import math
import struct
import sys
import warnings
from typing import Any, Callable, Iterable, Iterator, Optional

import numpy as np
from ir_measures import Metric

from ..measures.base import PairMeasure
from ..measures.batches import current_batches, evaluating_in_batches
from .imports import replace_once

__all__ = ["experiment_knows_left_out_queries", "pair_measure", "JudgedMetrics", "LEFT_OUT", "left_out"]

#: The bits of :data:`LEFT_OUT`: a quiet NaN whose payload (``pair``) no arithmetic of anyone else's makes.
_LEFT_OUT_BITS = 0x7FF8_0000_7061_6972

#: pt.Experiment's per-query value of a judged query one of our measures left out: never shown, averaged or tested.
#: A NaN of its own, told apart from any other NaN (PyTerrier's for a topic that is not judged, a NaN another measure
#: gives) by its bits, which a float and a NumPy array of floats keep (:func:`left_out`).
LEFT_OUT: float = struct.unpack("<d", struct.pack("<Q", _LEFT_OUT_BITS))[0]


def left_out(values) -> np.ndarray:
    """Which of ``values`` (an array, or a sequence of values) are :data:`LEFT_OUT` (not any NaN: that one)."""
    values = np.asarray(values)
    if values.dtype != np.float64:  # values of another kind hold no LEFT_OUT
        return np.zeros(values.shape, dtype=bool)
    return np.ascontiguousarray(values).view(np.uint64) == _LEFT_OUT_BITS


class JudgedMetrics(Iterator[Metric]):
    """The metrics of one run, as ``iter_calc`` yields them, knowing the ``judged`` query ids they are for (so that
    pt.Experiment can tell a judged query every measure left out from a topic without judgements)."""

    def __init__(self, metrics: Iterator[Metric], judged: Iterable[str]):
        self.metrics, self.judged = metrics, frozenset(judged)

    def __iter__(self) -> "JudgedMetrics":
        return self

    def __next__(self) -> Metric:
        return next(self.metrics)


def pair_measure(name: str):
    """The pairmeasures measure a result column is named after, else ``None``."""
    return _parsed(name)


@functools.lru_cache(maxsize=1024)
def _parsed(name: str):
    import ir_measures

    try:
        measure = ir_measures.parse_measure(name)
    except (ValueError, NameError, TypeError, SyntaxError, AssertionError):
        return None
    return measure if isinstance(measure, PairMeasure) else None


def experiment_knows_left_out_queries() -> None:
    modules = {name: sys.modules.get(f"pyterrier._evaluation.{name}")
               for name in ("_execution", "_rendering", "_exec_linear", "_exec_tree", "_experiment", "_grid")}
    execution, rendering, tree = modules["_execution"], modules["_rendering"], modules["_exec_tree"]
    renderer: Any = getattr(rendering, "RenderFromPerQuery", None)
    if not all((hasattr(execution, "_ir_measures_to_dict"), hasattr(rendering, "_mean_of_measures"),
                hasattr(renderer, "averages"), hasattr(renderer, "perquery"))):
        warnings.warn("this PyTerrier version lacks the pieces of pyterrier._evaluation that pairmeasures adapts: "
                      "pt.Experiment may average Measured(...) counts and fail on queries a measure left out; use "
                      "ir_measures.calc_aggregate, or pass degenerate='default'", RuntimeWarning, stacklevel=5)
        return
    importers = [module for module in modules.values() if module is not None]
    replace_once(execution, "_ir_measures_to_dict", _with_placeholders, importers)
    replace_once(rendering, "_mean_of_measures", _aggregated_mean)
    replace_once(renderer, "averages", _tested_over_measured)
    replace_once(renderer, "perquery", _without_placeholders)
    batched = [replace_once(execution, "_run_and_evaluate", _run_in_batches, importers),
               replace_once(tree, "tree_execution", _tree_in_batches, importers)]
    replace_once(getattr(tree, "TransformerRadixTree", None), "traverse", _each_system_apart)
    if not all(batched):
        warnings.warn("this PyTerrier version lacks the pieces of pyterrier._evaluation that pairmeasures adapts for "
                      "batch_size: pt.Experiment(..., batch_size=N) may fail on a batch without judged topics; leave "
                      "batch_size out", RuntimeWarning, stacklevel=5)


def _with_placeholders(to_dict: Callable) -> Callable:
    """PyTerrier's per-query table with :data:`LEFT_OUT` for every judged query one of our measures left out (and no
    "not found in qrels" NaN row for a judged query every measure left out), each row's measures in the order given
    (PyTerrier reads the columns of its means from one system's first row and each system's values by position)."""

    @functools.wraps(to_dict)
    def ir_measures_to_dict(seq, measures, rev_mapping, num_q, perquery=True, backfill_qids=None):
        judged = getattr(seq, "judged", frozenset())
        ours = [rev_mapping.get(m, str(m)) for m in measures if isinstance(m, PairMeasure)]
        if not perquery or not ours:
            return to_dict(seq, measures, rev_mapping, num_q, perquery, backfill_qids)
        if backfill_qids is not None:
            backfill_qids = [qid for qid in backfill_qids if str(qid) not in judged]
        table = to_dict(seq, measures, rev_mapping, num_q, perquery, backfill_qids)
        for qid in judged:
            table.setdefault(qid, {})
        order = {rev_mapping.get(m, str(m)): None for m in measures}
        for qid, row in table.items():  # every row in the measures' order: pt.Experiment lines up systems by position
            for name in ours:
                row.setdefault(name, LEFT_OUT)
            table[qid] = {**{name: row[name] for name in order if name in row}, **row}
        return table

    return ir_measures_to_dict


def _aggregated_mean(plain_mean: Callable) -> Callable:
    """PyTerrier's mean of per-query values, with our measures' aggregators for our measures, NaN left out."""

    def mean_of_measures(result, measures=None, num_q=None):
        means = plain_mean(result, measures, num_q)
        for name in means:
            measure = pair_measure(name)
            if measure is not None and num_q is None:
                aggregator = measure.aggregator()
                for row in result.values():
                    value = row[name]
                    if not (isinstance(value, float) and math.isnan(value)):
                        aggregator.add(value)
                means[name] = aggregator.result()
        return means

    return mean_of_measures


def _tested_over_measured(averages: Callable) -> Callable:
    """``RenderFromPerQuery.averages`` whose baseline test drops the queries either system has no value for."""

    @functools.wraps(averages)
    def with_tests_over_measured(self, *args, **kwargs):
        test = self.test_fn
        if test is not None:
            self.test_fn = _over_measured(test)
        try:
            return averages(self, *args, **kwargs)
        finally:
            self.test_fn = test

    return with_tests_over_measured


def _over_measured(test: Callable) -> Callable:
    """``test(system, baseline)`` over the queries where both have a value: pairs holding :data:`LEFT_OUT` (one of our
    measures left the query out) are dropped; where there is none, the test gets what PyTerrier gave it."""

    def paired(values, baseline):
        kept = ~(left_out(values) | left_out(baseline))
        if kept.all():
            return test(values, baseline)
        return test(np.asarray(values, dtype=np.float64)[kept], np.asarray(baseline, dtype=np.float64)[kept])

    return paired


def _without_placeholders(perquery: Callable) -> Callable:
    """``RenderFromPerQuery.perquery`` without the :data:`LEFT_OUT` placeholders (no row for a query left out)."""

    @functools.wraps(perquery)
    def without_left_out(self, *args, **kwargs):
        tables = getattr(self, "systemEvalDictsPerQ", {})
        hidden = _take_placeholders(tables)
        try:
            result = perquery(self, *args, **kwargs)
            if result is tables:  # dataframe=False hands out the table itself: a copy without them
                result = {system: {qid: dict(row) for qid, row in rows.items() if row}
                          for system, rows in result.items()}
            return result
        finally:  # each row as it was, its measures in their order (the means of perquery='both' read them next)
            for row, whole in hidden:
                row.clear()
                row.update(whole)

    return without_left_out


def _take_placeholders(per_system: dict) -> list[tuple[dict, dict]]:
    """Remove every :data:`LEFT_OUT` value from the per-query tables, in place; each row changed, with a copy of it
    as it was, to put it back."""
    hidden = [(row, dict(row)) for rows in per_system.values() for row in rows.values()
              if any(value is LEFT_OUT for value in row.values())]
    for row, whole in hidden:
        for name, value in whole.items():
            if value is LEFT_OUT:
                del row[name]
    return hidden


def _without_left_out(table: dict) -> dict:
    """A per-query table (query -> measure -> value) without :data:`LEFT_OUT` values, nor rows left empty."""
    rows = {qid: {name: value for name, value in row.items() if value is not LEFT_OUT} for qid, row in table.items()}
    return {qid: row for qid, row in rows.items() if row}


def _run_in_batches(run_and_evaluate: Callable) -> Callable:
    """PyTerrier's ``_run_and_evaluate`` (one system, in the linear plan and ``GridScan``), whose batches
    (``batch_size=N``, a pipeline: a frame of results is evaluated whole) run inside :func:`evaluating_in_batches`.
    Its one caller without topics, ``pt.Evaluate(..., perquery=True)``, gets no :data:`LEFT_OUT` placeholders."""
    signature = inspect.signature(run_and_evaluate)

    @functools.wraps(run_and_evaluate)
    def run_and_evaluate_in_batches(*args, **kwargs):
        import pandas as pd

        given = signature.bind_partial(*args, **kwargs).arguments
        if given.get("batch_size") is not None and not isinstance(given.get("system"), pd.DataFrame):
            with evaluating_in_batches():
                return run_and_evaluate(*args, **kwargs)
        time, values = run_and_evaluate(*args, **kwargs)
        if given.get("topics") is None and given.get("perquery"):
            values = _without_left_out(values)
        return time, values

    return run_and_evaluate_in_batches


def _tree_in_batches(tree_execution: Callable) -> Callable:
    """PyTerrier's ``tree_execution`` (``plan='tree'``), whose batches (``batch_size=N``) of every system run inside
    :func:`evaluating_in_batches`."""
    signature = inspect.signature(tree_execution)

    @functools.wraps(tree_execution)
    def tree_execution_in_batches(*args, **kwargs):
        if signature.bind_partial(*args, **kwargs).arguments.get("batch_size") is None:
            return tree_execution(*args, **kwargs)
        with evaluating_in_batches():
            return tree_execution(*args, **kwargs)

    return tree_execution_in_batches


def _each_system_apart(traverse: Callable) -> Callable:
    """``TransformerRadixTree.traverse``, whose evaluation of each system in a batch is booked to that system (the
    tree plan evaluates every system on each batch in turn)."""

    @functools.wraps(traverse)
    def traverse_each_system_apart(self, *args, eval_callback: Optional[Callable] = None, **kwargs):
        batches = current_batches()
        if batches is None or eval_callback is None:
            return traverse(self, *args, eval_callback=eval_callback, **kwargs)
        evaluate = eval_callback

        def evaluate_system(results, system, *more, **options):
            with batches.evaluating(system):
                return evaluate(results, system, *more, **options)

        return traverse(self, *args, eval_callback=evaluate_system, **kwargs)

    return traverse_each_system_apart
