"""The board's statistics: ranks by a measure's direction, mean ranks across tasks, and paired tests against the
suite's baseline on the stored per-query values, Holm-corrected (docs/leaderboard.md, "How the board ranks").

- **Ranks** (:func:`ranks`): on one task and measure, the systems with a value are ranked 1 (best) to m by the
  measure's direction: higher first for relevance (``higher-better``) and ``higher-fairer`` measures, lower first
  for ``lower-fairer`` ones, smaller ``|value|`` first for ``signed`` ones; ties share the mean of their places.
  Measures whose direction is ``neither`` or ``unknown`` are not ranked. The systems of the board without a value
  there (no record of the task, or a record missing that value) share the places after them, m + 1 to N: the mean
  of those places, (m + 1 + N) / 2. A missing task therefore counts as a tie for last, never as a gap that lifts a
  system's mean.
- **Mean rank** (:func:`mean_ranks`): the mean of a system's ranks over the tasks that have the measure.
- **Significance** (:func:`paired_tests`): for each system but the baseline, the two-sided paired t-test of its
  per-query values against the baseline's over the queries both measured (``scipy.stats.ttest_rel``'s p-value,
  computed here from the t distribution, ``scipy.special.stdtr``); the p-values of one task and measure are
  corrected together with Holm's step-down method (``statsmodels.stats.multitest.multipletests(method="holm")``'s
  values, computed here); a system differs significantly when its corrected p-value is at most alpha = 0.05.
  Fewer than two shared queries, or differences that are all zero, give no p-value. The tests check both against
  scipy and statsmodels; computing them here spares a build the import of ``scipy.stats`` and statsmodels (over a
  second of its budget).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import numpy as np

__all__ = ["ALPHA", "CORRECTION", "RANKED", "Test", "average_ranks", "holm", "mean_ranks", "paired_tests", "ranks",
           "sort_key"]

#: The significance level, after correction.
ALPHA = 0.05
#: The multiple-testing correction (a ``statsmodels`` ``multipletests`` method).
CORRECTION = "holm"
#: The directions that rank systems.
RANKED = ("higher-better", "higher-fairer", "lower-fairer", "signed")


def sort_key(direction: str, value: float) -> float:
    """The number that orders ``value`` best-first (smaller is better) under ``direction``."""
    if direction in ("higher-better", "higher-fairer"):
        return -value
    if direction == "signed":
        return abs(value)
    return value


def ranks(values: Mapping[str, Optional[float]], direction: str, systems: Sequence[str]) -> dict:
    """``{system: rank}`` of every one of ``systems`` (the board's) for one task and measure, from ``values``
    (system -> mean, None or absent: no value); empty for a direction that does not rank."""
    if direction not in RANKED:
        return {}
    measured = [s for s in systems if values.get(s) is not None and np.isfinite(values[s])]  # type: ignore[arg-type]
    if not measured:
        return {}  # no system has a value: the task does not rank this measure (nor count in its mean rank)
    keys = np.array([sort_key(direction, float(values[s])) for s in measured], dtype=np.float64)  # type: ignore[arg-type]
    found = dict(zip(measured, average_ranks(keys).tolist())) if measured else {}
    tied_last = (len(measured) + 1 + len(systems)) / 2
    return {s: found.get(s, tied_last) for s in systems}


def average_ranks(keys: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``keys`` (smallest first), ties sharing the mean of their places (``scipy.stats.rankdata``'s
    ``method="average"``)."""
    n = len(keys)
    if n == 0:
        return np.zeros(0)
    order = np.argsort(keys, kind="mergesort")
    ordered = keys[order]
    group = np.cumsum(np.r_[True, ordered[1:] != ordered[:-1]])
    means = np.bincount(group, weights=np.arange(1, n + 1)) / np.maximum(np.bincount(group), 1)
    found = np.empty(n)
    found[order] = means[group]
    return found


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (``multipletests(p, method="holm")[1]``)."""
    p = np.asarray(p, dtype=np.float64)
    m = len(p)
    if m == 0:
        return p
    order = np.argsort(p, kind="mergesort")
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    found = np.empty(m)
    found[order] = adjusted
    return found


def mean_ranks(per_task: Sequence[Mapping[str, float]], systems: Sequence[str]) -> dict:
    """``{system: mean rank}`` over the tasks in ``per_task`` (each ``{system: rank}`` from :func:`ranks`)."""
    tasks = [r for r in per_task if r]
    if not tasks:
        return {}
    return {s: float(np.mean([r[s] for r in tasks])) for s in systems}


@dataclass(frozen=True)
class Test:
    """A system's paired test against the baseline on one task and measure: ``p`` (uncorrected, None when there is
    none), ``p_holm`` (corrected), ``significant`` (``p_holm < ALPHA``), ``n`` (the queries both measured) and
    ``difference`` (the mean of system minus baseline over them)."""

    p: Optional[float]
    p_holm: Optional[float]
    significant: bool
    n: int
    difference: Optional[float]


def _paired_p(system: np.ndarray, baseline: np.ndarray) -> tuple[float, int, float]:
    """``(t, n, mean difference)`` of the paired t-test over the positions where both are measured (t NaN: none)."""
    both = ~(np.isnan(system) | np.isnan(baseline))
    n = int(both.sum())
    if n < 2:
        return float("nan"), n, float("nan") if n == 0 else float((system[both] - baseline[both]).mean())
    differences = system[both] - baseline[both]
    mean = float(differences.mean())
    deviation = float(differences.std(ddof=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.float64(mean) / np.float64(deviation / np.sqrt(n))
    return float(t), n, mean


def paired_tests(values: Mapping[str, np.ndarray], baseline: str) -> dict:
    """``{system: Test}`` for every system of ``values`` but ``baseline`` (system -> per-query values aligned on one
    list of queries, NaN where not measured); {} when the baseline has no values."""
    if baseline not in values:
        return {}
    from scipy.special import stdtr

    base = values[baseline]
    others = [s for s in values if s != baseline]
    found = {s: _paired_p(values[s], base) for s in others}
    tested = [s for s, (t, n, _) in found.items() if n >= 2 and not np.isnan(t)]
    t = np.array([found[s][0] for s in tested], dtype=np.float64)
    df = np.array([found[s][1] - 1 for s in tested], dtype=np.float64)
    p = dict(zip(tested, (2 * stdtr(df, -np.abs(t))).tolist()))
    corrected = dict(zip(tested, holm(np.array([p[s] for s in tested])).tolist()))
    return {s: Test(p.get(s), corrected.get(s), corrected.get(s, 1.0) <= ALPHA, found[s][1],
                    None if np.isnan(found[s][2]) else found[s][2]) for s in others}
