"""Paired significance tests against a baseline, the ones ``pt.Experiment(baseline=..., correction=...)`` reports,
computed from per-query values already measured (no second evaluation of the runs).

For each measure, the test runs over the queries every system measured (a paired test needs both values). System
``s`` gets ``scipy.stats.ttest_rel(x_s, x_baseline)`` (the two-sided paired t-test, pt.Experiment's default ``test``),
and the p-values of the non-baseline systems of one measure are corrected together with
``statsmodels.stats.multitest.multipletests(p, alpha, method=correction)``, as pt.Experiment corrects each measure
column. ``p_value`` is the uncorrected p (pt.Experiment's ``p-value`` column), ``p_corrected`` the p-value adjusted
for the correction (its ``p-value corrected`` column: ``reject`` is ``p_corrected <= alpha``), ``reject`` the corrected
decision.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, Optional

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["paired_tests"]


def paired_tests(per_query: "pd.DataFrame", baseline: str, correction: Optional[str] = "holm",
                 alpha: float = 0.05) -> "pd.DataFrame":
    """Columns ``system, measure, p_value, p_corrected, reject, n`` for every non-baseline system and measure measured on at least
    two queries by every system (``n``: those queries). ``per_query``: columns ``system, qid, measure, value`` (a
    query a measure excluded has no row). ``correction``: a ``multipletests`` method (``'holm'``, ``'bonferroni'``,
    ...) or None (``p_corrected`` is then ``p_value``, and ``reject`` ``p < alpha``)."""
    import pandas as pd
    from scipy import stats

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
        p = np.array([stats.ttest_rel(table[s].to_numpy(dtype=np.float64), base)[1] for s in others], dtype=np.float64)
        reject, adjusted = _corrected(p, alpha, correction)
        rows += [(s, measure, float(pv), float(pa), bool(r) and not np.isnan(pv), len(table))
                 for s, pv, pa, r in zip(others, p, adjusted, reject)]
    return pd.DataFrame(rows, columns=["system", "measure", "p_value", "p_corrected", "reject", "n"])


@contextmanager
def _heap_frozen() -> Iterator[None]:
    """The objects alive now left out of garbage collection for the block: statsmodels' multipletests calls
    ``gc.collect()`` on every Holm correction, which walks the whole heap each time (seconds on an audit's heap of
    runs and embeddings, for a correction of three numbers)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _corrected(p: np.ndarray, alpha: float, correction: Optional[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(reject, adjusted p-values)`` of ``p`` under ``correction``."""
    if correction is None:
        return p < alpha, p
    import statsmodels.stats.multitest

    try:
        with _heap_frozen():
            reject, adjusted = statsmodels.stats.multitest.multipletests(p, alpha=alpha, method=correction)[:2]
            return reject, adjusted
    except ValueError as error:
        raise ValueError(f"correction {correction!r}: {error}; use a statsmodels multipletests method such as "
                         "'holm', 'bonferroni' or 'fdr_bh'") from None
