r"""One value for a whole run, as FairRankTune computes its group measures from many rankings at once.

FairRankTune's ``EXP(ranking_df, item_group_dict, combo)`` takes a table whose columns are rankings and
pools them before combining the groups. :func:`pooled` gives that value for a run: every query's considered
documents are one ranking, an item is a (query, document) pair, and each measure pools as its
:attr:`~pairmeasures.measures.group_combos.GroupComboMeasure.POOLING` says: EXP, EXPU, EXPRU, ERBP, ERBR and
AWRF(form='groups') divide the summed numerators by the summed denominators (all exposure of the group over
all its items), ERBE and ARP add the per-query group values. The per-query measures (``ir_measures.calc``)
average after combining; the pooled value combines after pooling, and is not their mean.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..io.frames import ir_names
from .base import DegenerateQueryWarning, PairMeasure
from .group_combos import GroupComboMeasure, PooledValue
from .ranked import (
    QrelsLookup,
    RunInputError,
    build_ranked_lists,
    id_problem,
    missing_columns_problem,
    relevance_problem,
    user_stacklevel,
)
from .sideinputs import missing_side_columns

__all__ = ["pooled", "pooled_value", "ranked_lists_for"]

#: Measures of the family that FairRankTune computes on one ranking only: no pooled form.
_SINGLE_RANKING = {
    "NDKL": "FairRankTune's NDKL reads only the first ranking (column) of its table",
    "IAA": "FairRankTune's IAA compares attention with relevance ranking by ranking, with no groups to pool",
}


def pooled(measure: Any, run: Any, qrels: Any = None) -> float:
    """FairRankTune's value of a group measure over all queries of ``run`` at once (items are (query, document)).

    ``measure`` is a measure or its name (``"EXP(combo='MaxMinDiff')@10"``); ``run`` a DataFrame with the
    columns ``query_id``, ``doc_id``, ``score`` and the side columns the measure reads (as for
    ``ir_measures.calc_aggregate``), or a PyTerrier result frame (``qid``, ``docno``) as a pipeline returns it;
    ``qrels`` the judgements (ir_measures' or PyTerrier's column names), needed by measures that read utility (EXPU,
    EXPRU, ERBR) or set ``rel=``. With qrels, their queries are the ones evaluated, as in the provider; without,
    the run's. A run with nothing to combine (one group only, a group of zero utility) gives the measure's
    degenerate value, with a :class:`~pairmeasures.DegenerateQueryWarning` saying why.
    """
    return pooled_value(measure, run, qrels).value


def pooled_value(measure: Any, run: Any, qrels: Any = None) -> PooledValue:
    """:func:`pooled` with each group's pooled value (FairRankTune's second return value) and the cause of a
    degenerate value."""
    measure = _group_measure(measure)
    lists = measure.prepare(ranked_lists_for(measure, run, qrels))
    result = measure.compute_pooled(lists)
    if result.cause is not None:
        value = np.nan if measure.excludes_degenerate() else result.value
        warnings.warn(f"{measure}: the pooled run has nothing to combine ({result.cause}) and gets {value}",
                      DegenerateQueryWarning, stacklevel=user_stacklevel())
        result = PooledValue(value=value, cause=result.cause, groups=result.groups, skipped=result.skipped)
    if result.skipped:
        warnings.warn(f"{measure}: {result.skipped} of {lists.query_ids.size} queries add nothing to some group's "
                      f"pooled value ({measure.ZERO_DENOMINATOR} there)", DegenerateQueryWarning,
                      stacklevel=user_stacklevel())
    return result


def _group_measure(measure: Any) -> GroupComboMeasure:
    import ir_measures

    if isinstance(measure, str):
        measure = ir_measures.parse_measure(measure)
    if isinstance(measure, GroupComboMeasure):
        return measure
    form = getattr(measure, "groups_form", None)  # AWRF: form='groups' evaluates a group-combination measure
    if form is not None:
        if isinstance(form(), GroupComboMeasure):
            return form()
        raise ValueError(f"{measure} has no pooled form: the terms form compares each list with targets; "
                         "AWRF(form='groups') (FairRankTune's AWRF) has one")
    name = getattr(measure, "NAME", type(measure).__name__)
    reason = _SINGLE_RANKING.get(name)
    if reason is not None:
        raise ValueError(f"{measure} has no pooled form: {reason}; evaluate it per query "
                         "(ir_measures.calc_aggregate, ir_measures.iter_calc)")
    raise ValueError(f"{measure} has no pooled form: pm.pooled takes the group-exposure measures that combine "
                     "per-group values (EXP, EXPU, EXPRU, ERBE, ERBP, ERBR, AWRF(form='groups'), ARP); "
                     "see docs/group-exposure.md")


def ranked_lists_for(measure: PairMeasure, run: Any, qrels: Any):
    """``run`` (a DataFrame with ir_measures' or PyTerrier's column names, or anything ir_measures reads as a run) as
    ranked lists for ``measure``, checked as the provider checks it: the queries of ``qrels`` when given (their
    relevance attached if the measure reads it), else the run's; for a whole-run computation outside the provider
    (:func:`pooled`, :func:`~pairmeasures.delta_a_prf`)."""
    import pandas as pd
    from ir_measures.util import QrelsConverter, RunConverter

    frame = RunConverter(ir_names(run), strict=False).as_pd_dataframe()
    problem = missing_columns_problem(frame.columns, "run") or missing_side_columns([measure], list(frame.columns))
    if problem:
        raise RunInputError(f"{measure}: {problem}")
    lookup = None
    if qrels is None:
        if measure.needs_relevance():
            raise ValueError(f"{measure} reads relevance (utility or rel=) from qrels: pass pm.pooled(measure, run, "
                             "qrels)")
        query_ids = pd.unique(frame["query_id"].astype(str))
    else:
        judgements = QrelsConverter(ir_names(qrels), strict=False).as_pd_dataframe()
        problem = (missing_columns_problem(judgements.columns, "qrels") or id_problem(judgements, "qrels")
                   or relevance_problem(judgements))
        if problem:
            raise ValueError(f"{measure}: {problem}")
        query_ids = pd.unique(judgements["query_id"].astype(str))
        lookup = QrelsLookup(judgements) if measure.needs_relevance() else None
    wanted = set(measure.run_columns()) | {c for c in measure.optional_run_columns() if c in frame.columns}
    try:
        return build_ranked_lists(frame, np.asarray(query_ids, dtype=object), measure.depth(), sorted(wanted), lookup,
                                  ties=measure.tie_policy())
    except RunInputError as exc:
        raise RunInputError(f"{measure}: {exc}") from None
