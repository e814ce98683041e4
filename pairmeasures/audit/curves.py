"""The computations behind the audit's curves: bias against the cut-off k, and the relevance/bias trade-off
of re-rankers over ``Lambda`` (with the cost-matched comparison of two methods).

Everything is measured through ir_measures and the pairmeasures provider; nothing is written to disk.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Callable, Mapping, Optional, Sequence, cast

import numpy as np

from ..io.frames import ir_frame

if TYPE_CHECKING:
    import pandas as pd
    import pyterrier as pt

    from ..measures.provider import PairEvaluator

__all__ = ["cutoff_curves", "tradeoff_curve", "equal_cost", "checked_lambdas", "scores_by_query", "reads_depth",
           "top_rows"]


def cutoff_curves(runs: Mapping[str, "pd.DataFrame"], qrels: "pd.DataFrame", families: Sequence,
                  ks: Sequence[int] = range(1, 51)) -> "pd.DataFrame":
    """Each bias measure family at each cut-off k, per system: columns ``system, measure, k, value, n``.

    ``families`` are measure strings without a cut-off (``"Duo"``, ``"rKL"``, ``"Duo(step=2)"``, each parsed once)
    or pairmeasures measure objects (whose cut-off is replaced); each is evaluated as the family at ``cutoff=k``
    (the object called with it, no string written and parsed again) with ``degenerate='exclude'`` unless the family
    sets ``degenerate`` itself, so
    ``value`` is the mean over the ``n`` queries measured at that k. A cut-off at which no query could be
    measured (e.g. ``Duo@2``: fewer than 3 documents) has no row; ``measure`` is the family as given (an object as
    its string). ``runs`` are PyTerrier result frames (or ir_measures frames) with
    the side columns the measures read (``polarity``, ``group``, ``text``); one evaluator of the pairmeasures
    ir_measures provider serves every system, taking the values as arrays (no per-query ``Metric``) and each
    family's cut-offs together (:meth:`~pairmeasures.PairMeasure.evaluate_cutoffs`).
    """
    import pandas as pd

    from ..io.progress import progress_bar
    from ..measures.base import DegenerateQueryWarning, MissingSideInfoWarning
    from ..measures.provider import provider

    ks = _checked_ks(ks)
    if isinstance(families, str) or not families:
        raise ValueError(f"families must be a non-empty list of measure strings such as ['Duo', 'rKL'], got {families!r}")
    parsed = [(str(family), _family(family)) for family in families]
    grid = [(name, k, _at_cutoff(family, k)) for name, family in parsed for k in ks]
    depths = [reads_depth(measure) for _, _, measure in grid]
    depth = None if None in depths else max(cast("list[int]", depths))
    evaluator = cast("PairEvaluator", provider.evaluator([measure for _, _, measure in grid], ir_frame(qrels, "qrels")))
    frames = []
    for system, run in progress_bar(list(_checked_runs(runs).items()), desc="bias by cut-off", unit="system"):
        with warnings.catch_warnings():  # every k of a family would warn; n counts the measured queries
            warnings.simplefilter("ignore", DegenerateQueryWarning)
            warnings.simplefilter("ignore", MissingSideInfoWarning)
            try:
                frame = top_rows(ir_frame(run, f"run of system {system!r}"), depth)
                values = [values for _, _, values in evaluator.values(frame, warn=False)]
            except ValueError as error:  # the provider's message names the measure and the column to add
                raise ValueError(f"system {system!r}: {error}") from None
        n = np.array([np.count_nonzero(~np.isnan(v)) for v in values])
        total = np.array([np.nansum(v) for v in values])
        keep = n > 0
        frames.append(pd.DataFrame({
            "system": system,
            "measure": [family for (family, _, _), kept in zip(grid, keep) if kept],
            "k": [k for (_, k, _), kept in zip(grid, keep) if kept],
            "value": total[keep] / n[keep],
            "n": n[keep],
        }))
    return pd.concat(frames, ignore_index=True)


def tradeoff_curve(base_run: "pd.DataFrame", qrels: "pd.DataFrame",
                   methods: Mapping[str, Callable[[float], "pt.Transformer"]],
                   lambdas: Sequence[float] = (0, .1, .25, .5, .75, .9, 1), relevance="nDCG@10",
                   bias="Duo@10", seed: int = 0, resamples: int = 1000) -> "pd.DataFrame":
    """Relevance and bias of each re-ranking method at each ``Lambda``, applied to ``base_run`` (no re-retrieval).
    ``relevance`` and ``bias``: measure strings or measure objects.

    Columns ``method, Lambda, relevance, bias, relevance_low, relevance_high, bias_low, bias_high, n``:
    ``relevance`` is the mean over the judged queries, ``bias`` the mean over the ``n`` queries it measured
    (``degenerate='exclude'`` unless ``bias`` sets it); the 95% intervals come from
    :func:`pairmeasures.analysis.paired_bootstrap` (the same resampled queries for every method and ``Lambda``,
    seeded).
    """
    import ir_measures
    import pandas as pd

    from ..analysis import paired_bootstrap
    from ..io.progress import progress_bar
    from ..measures.base import DegenerateQueryWarning, MissingSideInfoWarning, PairMeasure

    if not methods:
        raise ValueError("methods must map at least one method name to a function Lambda -> transformer, "
                         "e.g. {'DuoGreedy': lambda l: pm.DuoGreedy(Lambda=l, k=10)}")
    lambdas = checked_lambdas(lambdas)
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer (bootstrap resamples, e.g. 1000), got {resamples!r}")
    relevance_measure = ir_measures.parse_measure(relevance) if isinstance(relevance, str) else relevance
    bias_measure = ir_measures.parse_measure(bias) if isinstance(bias, str) else bias
    if not isinstance(bias_measure, PairMeasure):
        raise ValueError(f"bias={bias!r} is not a pairmeasures bias measure; name one such as 'Duo@10' or 'rKL@10'")
    if "degenerate" in bias_measure.SUPPORTED_PARAMS and "degenerate" not in bias_measure.params:
        bias_measure = bias_measure(degenerate="exclude")
    ir_qrels = ir_frame(qrels, "qrels")
    query_ids = np.asarray(pd.unique(ir_qrels["query_id"].astype(str)), dtype=object)
    # relevance from {qid: {docno: score}} (what ir_measures would build from the frame row by row), bias from the frame
    relevance_evaluator = ir_measures.evaluator([relevance_measure], ir_qrels)
    bias_evaluator = ir_measures.evaluator([bias_measure], ir_qrels)
    rows, relevance_values, bias_values = [], [], []
    position = {query: row for row, query in enumerate(query_ids)}
    todo = [(method, Lambda) for method in methods for Lambda in lambdas]
    for method, Lambda in progress_bar(todo, desc="trade-off curve", unit="run"):
        reranker = methods[method](Lambda)
        if not callable(getattr(reranker, "transform", None)):
            raise ValueError(f"methods[{method!r}]({Lambda}) returned a {type(reranker).__name__}, not a PyTerrier "
                             "transformer; give a function Lambda -> transformer")
        reranked = reranker.transform(base_run)
        with warnings.catch_warnings():  # every run of the curve would warn; n counts the measured queries
            warnings.simplefilter("ignore", DegenerateQueryWarning)
            warnings.simplefilter("ignore", MissingSideInfoWarning)
            frame = ir_frame(reranked, f"{method}({Lambda})'s output")
            run = scores_by_query(frame) if not isinstance(relevance_measure, PairMeasure) else frame
            relevance_values.append(_by_query(relevance_evaluator.iter_calc(run), position))
            bias_values.append(_by_query(bias_evaluator.iter_calc(frame), position))
        rows.append((method, Lambda))
    names = [f"{method}(Lambda={Lambda:g})" for method, Lambda in rows]
    relevance_ci = paired_bootstrap(np.array(relevance_values), resamples=resamples, seed=seed, names=names)
    bias_ci = paired_bootstrap(np.array(bias_values), resamples=resamples, seed=seed, names=names)
    return pd.DataFrame({
        "method": [method for method, _ in rows], "Lambda": [Lambda for _, Lambda in rows],
        "relevance": relevance_ci["mean"], "bias": bias_ci["mean"],
        "relevance_low": relevance_ci["low"], "relevance_high": relevance_ci["high"],
        "bias_low": bias_ci["low"], "bias_high": bias_ci["high"], "n": bias_ci["n"],
    })


def _by_query(metrics, position: dict) -> np.ndarray:
    """The values of one measure's ir_measures metrics by query, in the order of ``position`` (query id -> row); NaN for
    a query without one (left out), a metric of a query not there dropped."""
    values = np.full(len(position), np.nan)
    for metric in metrics:
        row = position.get(metric.query_id)
        if row is not None:
            values[row] = metric.value
    return values


def equal_cost(curve: "pd.DataFrame", method_a: str, method_b: str, relevance_drop: float) -> "pd.DataFrame":
    """The bias each method reaches at a relevance cost of at most ``relevance_drop`` (columns
    ``method, Lambda, relevance, bias``; one row per method, ``method_a`` first).

    Walking a method's curve from ``Lambda=1`` downwards, the point is where relevance first reaches
    ``relevance(Lambda=1) - relevance_drop``, interpolated linearly between the measured Lambdas (Lambda and
    bias alike); the lowest Lambda when relevance never falls that far.
    """
    import pandas as pd

    if isinstance(relevance_drop, bool) or not isinstance(relevance_drop, (int, float)) or not relevance_drop >= 0:
        raise ValueError(f"relevance_drop must be a number >= 0 (how much relevance may be lost), got {relevance_drop!r}")
    missing = [c for c in ("method", "Lambda", "relevance", "bias") if c not in curve.columns]
    if missing:
        raise ValueError(f"the curve lacks the columns {missing}: pass tradeoff_curve(...)'s output")
    rows = []
    for method in (method_a, method_b):
        points = curve[curve["method"] == method].sort_values("Lambda", ascending=False)
        if len(points) == 0:
            raise ValueError(f"the curve has no method {method!r}; it has {sorted(curve['method'].unique())}")
        Lambda, rel, bias = (points[c].to_numpy(dtype=np.float64) for c in ("Lambda", "relevance", "bias"))
        if Lambda[0] != 1:
            raise ValueError(f"{method}'s curve has no point at Lambda=1 (the input order the cost is measured from); "
                             "include 1 in tradeoff_curve(lambdas=...)")
        floor = rel[0] - relevance_drop
        below = np.flatnonzero(rel < floor)
        if below.size == 0:
            rows.append((method, Lambda[-1], rel[-1], bias[-1]))
            continue
        j = int(below[0])  # rel[j - 1] >= floor > rel[j]: interpolate inside that segment
        t = (rel[j - 1] - floor) / (rel[j - 1] - rel[j])
        rows.append((method, *(v[j - 1] + t * (v[j] - v[j - 1]) for v in (Lambda, rel, bias))))
    return pd.DataFrame(rows, columns=["method", "Lambda", "relevance", "bias"])


def scores_by_query(frame: "pd.DataFrame") -> dict:
    """``{query_id: {doc_id: score}}`` of an ir_measures run frame, built per query from arrays: the run ir_measures'
    trec_eval-based measures read, without its row-by-row conversion of the frame (same values)."""
    if "score" not in frame.columns:
        raise ValueError("the run has no 'score' column; ir_measures ranks by it")
    docs, scores = frame["doc_id"].to_numpy(), frame["score"].to_numpy(dtype=np.float64)
    return {str(qid): dict(zip(docs[rows].tolist(), scores[rows].tolist()))
            for qid, rows in frame.groupby("query_id", sort=False).indices.items()}


#: ir_measures measures that read the top ``cutoff`` documents by score and nothing below (trec_eval's P, R, AP,
#: nDCG and success cuts, MS MARCO's RR, Judged): with ``rel`` at most besides the cutoff; any other parameter
#: (``judged_only``, ``gains``, ``dcg``) may change what is read or the provider, and leaves the run uncut.
_TOP_K_MEASURES = frozenset({"P", "R", "AP", "nDCG", "RR", "Success", "Judged"})


def reads_depth(measure) -> Optional[int]:
    """How deep into each query's ranking ``measure`` reads (``None``: all of it): a pairmeasures measure's
    :meth:`~pairmeasures.PairMeasure.depth`; an ir_measures measure's cut-off when it is one of those known to read
    nothing below it, else ``None``. What :func:`top_rows` may cut a run to without changing a value."""
    from ..measures.base import PairMeasure

    if isinstance(measure, PairMeasure):
        return measure.depth()
    params = dict(getattr(measure, "params", {}))
    cutoff = params.pop("cutoff", None)
    params.pop("rel", None)
    if getattr(measure, "NAME", None) not in _TOP_K_MEASURES or params or not isinstance(cutoff, int):
        return None
    return cutoff


def top_rows(frame: "pd.DataFrame", depth: Optional[int]) -> "pd.DataFrame":
    """The rows of an ir_measures run frame that can be in a query's top ``depth`` under any order of equal scores:
    per ``query_id``, every row whose score is at least the ``depth``-th highest (so documents tied with the last
    one kept stay, whichever tie policy, trec_eval's or the system's, orders them), in the frame's row order; the
    frame itself when nothing is cut, ``depth`` is ``None``, or a score or query id is missing (the evaluation
    then says so)."""
    import pandas as pd

    if depth is None or len(frame) <= depth or "score" not in frame.columns or "query_id" not in frame.columns:
        return frame
    scores = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    codes, uniques = pd.factorize(frame["query_id"], use_na_sentinel=True)
    if np.isnan(scores).any() or (codes < 0).any():
        return frame
    counts = np.bincount(codes, minlength=uniques.size)
    order = np.lexsort((-scores, codes))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    threshold = np.full(uniques.size, -np.inf)
    deep = counts > depth
    threshold[deep] = scores[order[starts[deep] + depth - 1]]
    keep = scores >= threshold[codes]
    return frame if keep.all() else frame[keep]


def _family(family):
    """A family's measure object: a string parsed once (a ValueError naming it when it is not a pairmeasures
    measure string without a cut-off), a pairmeasures measure as it is."""
    import ir_measures

    from ..measures.base import PairMeasure

    if isinstance(family, PairMeasure):
        return family
    if not isinstance(family, str) or "@" in family:
        raise ValueError(f"family {family!r}: give a measure name without a cut-off, e.g. 'Duo' or 'Duo(step=2)'; "
                         "the curves add @k themselves")
    try:
        measure = ir_measures.parse_measure(family)
    except (ValueError, NameError, TypeError, SyntaxError) as error:
        raise ValueError(f"family {family!r} does not parse as a measure ({error}); e.g. 'Duo', 'rKL', 'TExFAIR'") from None
    if not isinstance(measure, PairMeasure):
        raise ValueError(f"family {family!r} is not a pairmeasures bias measure; e.g. 'Duo', 'rKL', 'TExFAIR'")
    return measure


def _at_cutoff(family, k: int):
    """The ``family`` measure at ``cutoff=k`` (the object called with it), with ``degenerate='exclude'`` unless the
    family sets it."""
    measure = family(cutoff=k)
    if "degenerate" in measure.SUPPORTED_PARAMS and "degenerate" not in measure.params:
        measure = measure(degenerate="exclude")
    return measure


def _checked_ks(ks: Sequence[int]) -> list[int]:
    ks = list(ks)
    if not ks or any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in ks):
        raise ValueError(f"ks must be positive integer cut-offs such as range(1, 51), got {ks!r}")
    return [int(k) for k in dict.fromkeys(ks)]


def checked_lambdas(lambdas: Sequence[float]) -> list[float]:
    """``lambdas`` as distinct floats in order; a ValueError unless each is a number in [0, 1]."""
    lambdas = list(lambdas)
    if not lambdas or any(isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating))
                          or not 0 <= v <= 1 for v in lambdas):
        raise ValueError(f"lambdas must be numbers in [0, 1] such as (0, 0.5, 1), got {lambdas!r}")
    return [float(v) for v in dict.fromkeys(lambdas)]


def _checked_runs(runs: Mapping[str, "pd.DataFrame"]) -> Mapping[str, "pd.DataFrame"]:
    import pandas as pd

    if not isinstance(runs, Mapping) or not runs:
        raise ValueError("runs must map each system's name to its PyTerrier result frame, e.g. {'bm25': frame}")
    for system, run in runs.items():
        if not isinstance(run, pd.DataFrame):
            raise ValueError(f"the run of system {system!r} is a {type(run).__name__}, not a PyTerrier result frame")
    return runs
