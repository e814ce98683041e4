"""Evaluation and significance of an audit's runs: per-query values through ir_measures (each run evaluated once),
pt.Experiment's paired test on them, the leaderboard table, IBBR's dataset-level ΔA-PRF, and bias by cut-off.

Every function here reads runs as ir_measures frames (``query_id``, ``doc_id``, ``score`` and the side columns):
the audit turns each PyTerrier run into one once, where it leaves PyTerrier (:func:`~pairmeasures.io.frames.
ir_frame`), and measures carry their objects, never strings parsed again."""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, cast

from ..io.frames import ir_frame
from .plan import label

if TYPE_CHECKING:
    import pandas as pd

    from ..measures.provider import PairEvaluator

__all__ = ["per_query", "ties_in_top", "significance", "statistics", "breakdown_cells", "leaderboard_table", "common_column",
           "delta_a_prf", "cutoff_curves", "DELTA_A_PRF", "DELTA_A_PRF_INTERVAL"]

#: The leaderboard column of IBBR's dataset-level disparity (gendered datasets: gold labels male and female), signed:
#: the male minus the female passages' pairwise accuracy (0 = balanced, closer to 0 is fairer; the paper reports its
#: absolute value, ``leaderboard.json``'s ``delta_a_prf.absolute``).
DELTA_A_PRF = "ΔA-PRF ↕"

#: The leaderboard column of the bootstrap interval of that signed value.
DELTA_A_PRF_INTERVAL = "ΔA-PRF 95% CI"


def per_query(runs: dict, qrels: "pd.DataFrame", measures: dict) -> "pd.DataFrame":
    """One row per (system, query, measure) measured (``runs``: ir_measures frames, or PyTerrier frames turned into
    them by :func:`~pairmeasures.io.frames.ir_frame`; ``measures``: the measure's string -> the measure), as
    ``ir_measures.iter_calc`` yields them: queries a bias measure left out have no row. The measures that declare how
    deep they read (:func:`~pairmeasures.audit.curves.reads_depth`) are evaluated on each run cut to the deepest of
    them (:func:`~pairmeasures.audit.curves.top_rows`: the same values, from fewer rows); the others on the whole run."""
    import pandas as pd

    from .curves import reads_depth, top_rows

    names = {evaluated: shown for shown, evaluated in measures.items()}
    depths = [reads_depth(m) for m in measures.values()]
    depth = max((d for d in depths if d is not None), default=None)
    cut = [m for m, d in zip(measures.values(), depths) if d is not None]
    whole = [m for m, d in zip(measures.values(), depths) if d is None]
    rows = []
    measuring = [(_measuring(qrels, cut), True), (_measuring(qrels, whole), False)]  # made once, for every run
    for system, run in runs.items():
        frame = ir_frame(run, f"run of system {system!r}")  # as it is when the audit turned it into one already
        _check_ranked_once(system, frame)
        for values, top in measuring:
            rows += [(system, query, names[measure], value)
                     for measure, query, value in values(top_rows(frame, depth) if top else frame)]
    table = pd.DataFrame(rows, columns=["system", "qid", "measure", "value"])
    order = {m: i for i, m in enumerate(measures)}
    return table.sort_values(["system", "measure", "qid"], key=lambda c: c.map(order) if c.name == "measure" else
                             c.map({s: i for i, s in enumerate(runs)}) if c.name == "system" else c,
                             ignore_index=True)


def _check_ranked_once(system: str, frame: "pd.DataFrame") -> None:
    """A ValueError naming the system, query and document where its run ranks a document twice for one query (every
    measure then reads the whole run, as a run file is read: :mod:`pairmeasures.io.repeats`)."""
    import numpy as np
    import pandas as pd

    from ..io.repeats import repeated_pair

    queries, _ = pd.factorize(frame["query_id"])
    docs, _ = pd.factorize(frame["doc_id"])
    if np.unique(queries.astype(np.int64) * (int(docs.max(initial=0)) + 1) + docs).size == len(frame):
        return  # every (query, document) pair once: the rows need not be read one by one
    found = repeated_pair(frame["query_id"].tolist(), frame["doc_id"].tolist())
    if found is not None:
        row = frame.iloc[found[1]]
        raise ValueError(f"system {system!r}: its run ranks document {row['doc_id']!r} twice for query "
                         f"{row['query_id']!r} (scores {float(frame['score'].iloc[found[0]])!r} and "
                         f"{float(row['score'])!r}); a "
                         "ranking lists each document once: make the last stage return each document once per query")


def _measuring(qrels: "pd.DataFrame", measures: list):
    """A function of an ir_measures run frame: the ``(measure, query, value)`` of ``measures`` on it, NaN values (queries
    left out) left out. The evaluators are made once, for every run: the pairmeasures provider's (its values taken as
    arrays) and ir_measures' for the others (trec_eval's measures read ``{qid: {docno: score}}``, built from arrays)."""
    import ir_measures
    import numpy as np

    from ..measures import PairMeasure
    from ..measures.provider import provider
    from .curves import scores_by_query

    pair = [m for m in measures if isinstance(m, PairMeasure)]
    other = [m for m in measures if not isinstance(m, PairMeasure)]
    pair_evaluator = cast("PairEvaluator", provider.evaluator(pair, qrels)) if pair else None
    other_evaluator = ir_measures.evaluator(other, qrels) if other else None

    def values(frame: "pd.DataFrame"):
        if other_evaluator is not None:
            for metric in other_evaluator.iter_calc(scores_by_query(frame)):
                if not (isinstance(metric.value, float) and math.isnan(metric.value)):
                    yield metric.measure, str(metric.query_id), float(metric.value)
        if pair_evaluator is not None:
            for measure, query_ids, found in pair_evaluator.values(frame):
                measured = ~np.isnan(found)
                yield from zip(itertools.repeat(measure), map(str, query_ids[measured]), found[measured].tolist())

    return values


def ties_in_top(runs: dict, k: int) -> dict:
    """Per system, how many queries hold documents of equal score in their top ``k`` (or across the cut at ``k``),
    where trec_eval's order and the system's differ (a :class:`~pairmeasures.audit.result.TieCount`)."""
    import numpy as np

    from .result import TieCount

    counts = {}
    for system, run in runs.items():
        run = ir_frame(run, f"run of system {system!r}")
        frame = (run.sort_values(["query_id", "rank"], kind="stable") if "rank" in run.columns else  # a user's transformer
                 run.assign(_key=-run["score"]).sort_values(["query_id", "_key"], kind="stable"))
        position = frame.groupby("query_id", sort=False).cumcount().to_numpy()
        scores, queries = frame["score"].to_numpy(dtype=np.float64), frame["query_id"].to_numpy()
        tied_next = np.zeros(len(frame), dtype=bool)
        if len(frame) > 1:
            tied_next[:-1] = (scores[1:] == scores[:-1]) & (queries[1:] == queries[:-1])
        with_ties = set(queries[tied_next & (position < k)])
        counts[system] = TieCount(int(k), int(frame["query_id"].nunique()), len(with_ties))
    return counts


def significance(per_query: "pd.DataFrame", baseline: str, correction: str) -> dict:
    """``{(system, measure): (p_value, p_corrected, reject)}``: pt.Experiment's paired t-test against the baseline
    (its p-value, uncorrected), the p-value adjusted for the correction and the corrected decision, from the per-query
    values already measured (:func:`pairmeasures.analysis.paired_tests`), over the queries every system measured."""
    from ..analysis import paired_tests

    tests = paired_tests(per_query, baseline, correction)
    return {(s, m): (p, c, r) for s, m, p, c, r in zip(tests["system"], tests["measure"], tests["p_value"],
                                                       tests["p_corrected"], tests["reject"])}


def leaderboard_table(summary: "pd.DataFrame", measures: dict, directions: dict) -> "pd.DataFrame":
    """Systems by measures, each column headed by the measure and its direction's arrow: the mean over the queries
    the system measured (what ``pairmeasures eval`` gives for the measure on the system's run), with ``n`` for the bias
    measures. Where systems measured different queries (and at least one query every system measured), the bias
    measure also gets :func:`common_column`: each system's mean over the queries every system measured, the figures
    to compare across rows."""
    import pandas as pd

    systems = list(dict.fromkeys(summary["system"]))
    table = pd.DataFrame({"system": systems})
    for shown in measures:
        part = summary[summary["measure"] == shown].set_index("system")
        table[label(shown, directions[shown])] = [float(part.loc[s, "mean"]) for s in systems]
        if directions[shown] != "higher-better":
            table[f"{shown} n"] = [int(part.loc[s, "n"]) for s in systems]
            common = int(part["common_n"].iloc[0])
            if common and (part["n"] != common).any():  # some system measured a query another did not
                table[common_column(shown, directions[shown], common)] = [float(part.loc[s, "common_mean"])
                                                                          for s in systems]
    return table


def common_column(measure: str, way: str, common: int) -> str:
    """The leaderboard column of a bias measure's means over the ``common`` queries every system measured."""
    return f"{label(measure, way)} on {common} common {'query' if common == 1 else 'queries'}"


def delta_a_prf(runs: dict, qrels: "pd.DataFrame", resamples: int, seed: int) -> dict:
    """Per system, IBBR's ΔA-PRF between the male and female clicked (relevant) passages over each whole run, from
    the gold labels (:func:`pairmeasures.measures.delta_prf.delta_a_prf`): the signed ``value`` (male − female, the
    leaderboard's :data:`DELTA_A_PRF`), its ``absolute`` value (the paper's figure) and the bootstrap ``interval`` of
    the signed value over ``resamples`` draws of the queries; NaN values and ``"error": why`` where undefined."""
    from ..measures import delta_a_prf as measure

    results = {}
    for system, run in runs.items():
        frame = ir_frame(run, f"run of system {system!r}")
        _check_ranked_once(system, frame)
        try:
            result = measure(frame, qrels, labels="group", missing="skip", resamples=resamples, seed=seed)
        except ValueError as error:
            results[system] = {"absolute": math.nan, "value": math.nan, "error": str(error)}
            continue
        results[system] = {"absolute": result.absolute, "value": result.value, "interval": result.interval,
                           "means": dict(result.means), "counts": dict(result.counts), "left_out": len(result.left_out)}
    return results


def cutoff_curves(runs: dict, qrels: "pd.DataFrame", families: dict) -> "pd.DataFrame":
    """Each bias family (shown family -> the family's measure object, without a cut-off) of each system at the
    cut-offs 1..50, the ``measure`` column holding the shown family."""
    from .curves import cutoff_curves as curves_of

    curves = curves_of(runs, qrels, list(families.values()), range(1, 51))
    curves["measure"] = curves["measure"].map({str(m): shown for shown, m in families.items()})
    return curves


def statistics(per_query: "pd.DataFrame", tests: dict, directions: dict, baseline: str, resamples: int, seed: int,
               topics: list, memo) -> "pd.DataFrame":
    """Each system's mean of each measure with its bootstrap interval and difference to the baseline
    (:func:`pairmeasures.analysis.summarize`, kept through ``memo(kind, parts, compute)``), with the p-value, the
    corrected p-value and the rejection of ``tests`` (:func:`significance`) and each measure's direction."""
    from ..analysis import summarize

    summary = memo("summary", [resamples, seed, topics],
                   lambda: summarize(per_query, baseline=baseline, resamples=resamples, seed=seed, topics=topics))
    summary = _with_unmeasured(summary, list(directions), len(topics))
    found = [tests.get((s, m), (math.nan, math.nan, False)) if s != baseline else (math.nan, math.nan, False)
             for s, m in zip(summary["system"], summary["measure"])]
    summary["p_value"] = [float(p) for p, _, _ in found]
    summary["p_corrected"] = [float(c) for _, c, _ in found]
    summary["reject"] = [bool(r) for _, _, r in found]
    summary["direction"] = summary["measure"].map(directions)
    return summary


def _with_unmeasured(summary: "pd.DataFrame", measures: list, topics: int) -> "pd.DataFrame":
    """``summary`` with a row (NaN mean, ``n`` 0, every topic excluded) for each system and measure that measured no
    query (e.g. ``rKL@2`` on rankings whose top 2 never hold two groups), in the order of ``measures``: the leaderboard
    shows them as measured on no query rather than leaving them out."""
    import pandas as pd

    systems = list(dict.fromkeys(summary["system"]))
    present = set(zip(summary["system"], summary["measure"]))
    missing = [(s, m) for m in measures for s in systems if (s, m) not in present]
    if not missing:
        return summary
    nan = math.nan
    extra = pd.DataFrame([{"system": s, "measure": m, "mean": nan, "n": 0, "excluded": topics, "low": nan, "high": nan,
                           "diff": nan, "diff_low": nan, "diff_high": nan, "common_mean": nan, "common_n": 0}
                          for s, m in missing], columns=summary.columns)
    order = {m: i for i, m in enumerate(measures)}
    rank = {s: i for i, s in enumerate(systems)}
    whole = pd.concat([summary, extra], ignore_index=True)
    return whole.sort_values(["measure", "system"], key=lambda c: c.map(order if c.name == "measure" else rank),
                             kind="stable", ignore_index=True)


def breakdown_cells(per_query: "pd.DataFrame", values: dict, by: str, min_cell: int, memo) -> tuple:
    """``(means by the query field's values with counts, warnings about cells under min_cell)``
    (:func:`pairmeasures.analysis.breakdown`), kept through ``memo``; the warnings are raised again here."""
    import warnings

    from ..analysis import SmallCellWarning, breakdown
    from ..io.memo import value_key

    def cut() -> tuple:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SmallCellWarning)
            table = breakdown(per_query, values, field=by, min_size=min_cell)
        return table, [str(w.message) for w in caught if issubclass(w.category, SmallCellWarning)]

    cells, small = memo("breakdown", [by, min_cell, value_key(values)], cut)
    for message in small:
        warnings.warn(message, SmallCellWarning, stacklevel=2)
    return cells, small
