"""Paired significance tests against a baseline, the ones ``pt.Experiment(baseline=..., correction=...)`` reports,
computed from per-query values already measured (no second evaluation of the runs).

For each measure, the test runs over the queries every system measured (a paired test needs both values). System
``s`` gets the p-value of ``scipy.stats.ttest_rel(x_s, x_baseline)`` (the two-sided paired t-test, pt.Experiment's
default ``test``), and the p-values of the non-baseline systems of one measure are corrected together as
``statsmodels.stats.multitest.multipletests(p, alpha, method=correction)`` corrects them, as pt.Experiment corrects
each measure column. ``p_value`` is the uncorrected p (pt.Experiment's ``p-value`` column), ``p_corrected`` the
p-value adjusted for the correction (its ``p-value corrected`` column: ``reject`` is ``p_corrected <= alpha``),
``reject`` the corrected decision.

Both are computed here as those functions compute them, step for step (the same numbers, bit for bit;
``tests/test_significance.py`` checks them against scipy and statsmodels): the t statistic in NumPy and its
p-value from ``scipy.special.stdtr``, the t distribution scipy's test reads, and the Holm and Bonferroni corrections
in NumPy. So an audit imports neither ``scipy.stats`` nor statsmodels (about a second of imports for three numbers);
the other corrections are statsmodels' own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["paired_tests", "ttest_rel_p"]


def paired_tests(per_query: "pd.DataFrame", baseline: str, correction: Optional[str] = "holm",
                 alpha: float = 0.05) -> "pd.DataFrame":
    """Columns ``system, measure, p_value, p_corrected, reject, n`` for every non-baseline system and measure measured on at least
    two queries by every system (``n``: those queries). ``per_query``: columns ``system, qid, measure, value`` (a
    query a measure excluded has no row). ``correction``: a ``multipletests`` method (``'holm'``, ``'bonferroni'``,
    ...) or None (``p_corrected`` is then ``p_value``, and ``reject`` ``p < alpha``)."""
    import pandas as pd

    missing = [c for c in ("system", "qid", "measure", "value") if c not in per_query.columns]
    if missing:
        raise ValueError(f"per_query lacks the columns {missing}: pass a frame with system, qid, measure, value")
    systems = list(dict.fromkeys(per_query["system"]))
    if baseline not in systems:
        raise ValueError(f"baseline {baseline!r} is not a system of per_query: {', '.join(map(str, systems))}")
    others = [s for s in systems if s != baseline]
    rows = []
    for measure, part in per_query.groupby("measure", sort=False):
        table = part.pivot(index="qid", columns="system", values="value").reindex(columns=systems).dropna()
        if len(table) < 2 or not others:
            continue
        base = table[baseline].to_numpy(dtype=np.float64)
        p = np.array([ttest_rel_p(table[s].to_numpy(dtype=np.float64), base) for s in others], dtype=np.float64)
        reject, adjusted = _corrected(p, alpha, correction)
        rows += [(s, measure, float(pv), float(pa), bool(r) and not np.isnan(pv), len(table))
                 for s, pv, pa, r in zip(others, p, adjusted, reject)]
    return pd.DataFrame(rows, columns=["system", "measure", "p_value", "p_corrected", "reject", "n"])


def ttest_rel_p(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sided p-value of the paired t-test of ``a`` against ``b`` (1-D, the same length, at least 2, no NaN),
    computed as ``scipy.stats.ttest_rel(a, b).pvalue`` computes it: the mean difference over the standard error of
    the differences (their variance with ``ddof=1``), and twice the t distribution's tail beyond ``|t|`` with ``n - 1``
    degrees of freedom. NaN when every difference is the same 0 (no direction)."""
    from scipy.special import stdtr

    d = a - b
    n = d.shape[0]
    mean = np.mean(d)
    var = np.mean((d - np.mean(d, keepdims=True)) ** 2) * (np.float64(n) / (np.float64(n) - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.divide(mean - 0.0, np.sqrt(var / n))
    return float(2 * stdtr(np.float64(n - 1), -np.abs(t)))


def _corrected(p: np.ndarray, alpha: float, correction: Optional[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(reject, adjusted p-values)`` of ``p`` under ``correction``: Holm and Bonferroni computed here as
    ``multipletests`` computes them, the other methods by ``multipletests`` itself."""
    if correction is None:
        return p < alpha, p
    method = correction.lower() if isinstance(correction, str) else correction
    if method in ("h", "holm", "b", "bonf", "bonferroni"):
        return _holm_or_bonferroni(np.asarray(p), alpha, method in ("h", "holm"))
    import statsmodels.stats.multitest

    try:
        reject, adjusted = statsmodels.stats.multitest.multipletests(p, alpha=alpha, method=correction)[:2]
        return reject, adjusted
    except ValueError as error:
        raise ValueError(f"correction {correction!r}: {error}; use a statsmodels multipletests method such as "
                         "'holm', 'bonferroni' or 'fdr_bh'") from None


def _holm_or_bonferroni(p: np.ndarray, alpha: float, holm: bool) -> tuple[np.ndarray, np.ndarray]:
    """``multipletests(p, alpha, method='holm' or 'bonferroni')[:2]``, step for step: the p-values sorted, Holm's
    step-down (reject up to the first p above ``alpha / (m - i)``; adjusted ``p * (m - i)``, made non-decreasing) or
    Bonferroni's ``p * m``, capped at 1, in the original order."""
    order = np.argsort(p)
    ordered = np.take(p, order)
    tests = len(ordered)
    if holm:
        keep = ordered > alpha / np.arange(tests, 0, -1)
        kept = np.nonzero(keep)[0]
        keep[len(ordered) if kept.size == 0 else np.min(kept):] = True
        reject = ~keep
        adjusted = np.maximum.accumulate(ordered * np.arange(tests, 0, -1))
    else:
        reject = ordered <= (alpha / float(tests) if tests else np.nan)
        adjusted = ordered * float(tests)
    adjusted[adjusted > 1] = 1
    in_order, rejected = np.empty_like(adjusted), np.empty_like(reject)
    in_order[order] = adjusted
    rejected[order] = reject
    return rejected, in_order
