"""Paired bootstrap confidence intervals of per-query means, and the audit's summary frame.

One resample draws ``Q`` query indices with replacement, shared by every system (paired), so a
system's interval and its difference to the baseline reflect the same topic sample. With
:math:`c_{bq}` the number of times resample :math:`b` drew query :math:`q` and :math:`m_{sq}` = 1
when system :math:`s` measured query :math:`q`, the resampled mean is

.. math:: \\bar x^{(b)}_s = \\frac{\\sum_q c_{bq} m_{sq} x_{sq}}{\\sum_q c_{bq} m_{sq}},

i.e. ``counts @ values`` for all systems and resamples at once; a resample with no measured draw
for a system is dropped for that system. Intervals are percentile intervals of these means.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..io.memo import Memo

if TYPE_CHECKING:
    import pandas as pd

#: Bytes the index, counts and float counts of one chunk of resamples may take together.
_CHUNK_BYTES = 200_000_000
#: Query draws counted at once (the index and its counts: 2 x 8 MB).
_BLOCK_DRAWS = 1_000_000
#: Counts of one (seed, resamples, queries) up to this size are kept for the next call with the same three.
_KEPT_BYTES = 128_000_000
#: The counts last drawn (:func:`_chunks_of_counts`).
_DRAWS = Memo("bootstrap draws")
#: Below this share of usable resamples, a system's interval is flagged.
_USABLE = 0.95


class BootstrapWarning(UserWarning):
    """An interval rests on fewer resamples than asked for, or a system has nothing to resample."""


def _check(values, baseline, resamples, confidence) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
        raise ValueError(f"values must be a (systems, queries) array with at least one of each; got shape "
                         f"{np.shape(values)}")
    if np.isinf(array).any():
        raise ValueError("values has infinite entries: use NaN for a query a system was not measured on")
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer; got {resamples!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1 (e.g. 0.95); got {confidence!r}")
    if baseline is not None and (isinstance(baseline, bool) or not isinstance(baseline, (int, np.integer))
                                 or not 0 <= baseline < array.shape[0]):
        raise ValueError(f"baseline must be a row index in 0..{array.shape[0] - 1} of values; got {baseline!r}")
    return array


def _centred(values: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row minus one of its measured values (0 where unmeasured), and that value: sums stay small and a
    constant row resamples to exactly its value."""
    centre = np.where(mask.any(axis=1), values[np.arange(len(values)), mask.argmax(axis=1)], 0.0)
    return np.where(mask, values - centre[:, None], 0.0), centre


def _draw_counts(rng, size: int, queries: int) -> np.ndarray:
    """How often each of ``size`` resamples drew each query (float, shape (size, queries)): ``queries`` draws
    with replacement per resample, as one ``rng.integers(0, queries, (size, queries))`` call draws them (drawn and
    counted a block of resamples at a time: the generator gives the same numbers in blocks)."""
    counts = np.empty((size, queries))
    block = max(1, _BLOCK_DRAWS // queries)
    for start in range(0, size, block):
        rows = min(block, size - start)
        drawn = rng.integers(0, queries, (rows, queries))
        drawn += (np.arange(rows) * queries)[:, None]
        counts[start:start + rows] = np.bincount(drawn.ravel(), minlength=rows * queries).reshape(rows, queries)
    return counts


def _chunks_of_counts(seed, resamples: int, queries: int) -> Iterator[np.ndarray]:
    """The counts of ``resamples`` resamples of ``queries`` queries drawn by ``np.random.default_rng(seed)``, in
    chunks of at most :data:`_CHUNK_BYTES`. They depend on the three alone, and an audit resamples every measure with
    one seed: counts of up to :data:`_KEPT_BYTES` are kept (read-only) for the next call with the same three."""
    step = max(1, _CHUNK_BYTES // (24 * queries))
    sizes = [min(step, resamples - start) for start in range(0, resamples, step)]

    def draw() -> list:
        rng = np.random.default_rng(seed)
        chunks = [_draw_counts(rng, size, queries) for size in sizes]
        for chunk in chunks:
            chunk.flags.writeable = False
        return chunks

    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and 8 * resamples * queries <= _KEPT_BYTES:
        yield from _DRAWS.get("counts", (int(seed), int(resamples), int(queries), tuple(sizes)), draw)
        return
    rng = np.random.default_rng(seed)
    for size in sizes:
        yield _draw_counts(rng, size, queries)


def _resampled_means(weighted: np.ndarray, mask: np.ndarray, resamples: int, seed) -> np.ndarray:
    """Resampled means, shape (resamples, rows), NaN where a resample drew no measured query of a row."""
    queries = weighted.shape[1]
    stacked = np.concatenate([weighted, mask.astype(np.float64)]).T  # (queries, 2 * rows)
    rows = weighted.shape[0]
    out = np.empty((resamples, rows))
    start = 0
    for counts in _chunks_of_counts(seed, resamples, queries):
        size = counts.shape[0]
        sums = counts @ stacked
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start:start + size] = np.where(sums[:, rows:] > 0, sums[:, :rows] / sums[:, rows:], np.nan)
        start += size
    return out


def _interval(means: np.ndarray, centre: np.ndarray, confidence: float, what: str, names) -> tuple:
    usable = (~np.isnan(means)).sum(axis=0)
    low, high = np.full(means.shape[1], np.nan), np.full(means.shape[1], np.nan)
    alpha = (1 - confidence) / 2
    for row in np.flatnonzero(usable):
        column = means[:, row]
        low[row], high[row] = centre[row] + np.quantile(column[~np.isnan(column)], [alpha, 1 - alpha])
    short = np.flatnonzero((usable > 0) & (usable < _USABLE * len(means)))
    if short.size:
        listed = ", ".join(f"{names[r]} ({usable[r]:,} of {len(means):,})" for r in short)
        warnings.warn(f"fewer than {_USABLE:.0%} of the resamples drew a measured query for the {what} of "
                      f"{listed}: too few measured queries for a reliable interval", BootstrapWarning, stacklevel=3)
    return low, high


def paired_bootstrap(values: np.ndarray, *, baseline: int | None = None, resamples: int = 10_000,
                     confidence: float = 0.95, seed: int = 0, names: Sequence[str] | None = None
                     ) -> dict[str, np.ndarray]:
    """Means of ``values`` (systems, queries; NaN = not measured) with paired percentile bootstrap intervals.

    Returns arrays of shape (systems,): ``mean``, ``low``, ``high``, ``n`` (queries measured), and with a
    ``baseline`` row ``diff``, ``diff_low``, ``diff_high``: the mean of system minus baseline over the queries
    both measured (NaN in the baseline's row). Every resample's query draw is shared by all systems (module
    docstring); a resample without a measured draw is dropped for that system, with a
    :class:`BootstrapWarning` when fewer than 95% remain. ``names`` (optional) name the rows in warnings.
    Deterministic under ``seed``.
    """
    array = _check(values, baseline, resamples, confidence)
    names = list(names) if names is not None else [f"row {r}" for r in range(array.shape[0])]
    if len(names) != array.shape[0]:
        raise ValueError(f"names has {len(names)} entries but values has {array.shape[0]} rows")
    mask = ~np.isnan(array)
    n = mask.sum(axis=1)
    if not n.all():
        warnings.warn(f"nothing measured for {', '.join(names[r] for r in np.flatnonzero(n == 0))}: its mean and "
                      "interval are NaN", BootstrapWarning, stacklevel=2)
    weighted, centre = _centred(array, mask)
    rows = [weighted]
    masks = [mask]
    if baseline is not None:
        both = mask & mask[baseline]
        both[baseline] = False  # the baseline's own difference is not estimated
        difference, diff_centre = _centred(np.where(both, array - array[baseline], np.nan), both)
        rows.append(difference)
        masks.append(both)
    resampled = _resampled_means(np.concatenate(rows), np.concatenate(masks), resamples, seed)
    systems = array.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        result = {"mean": np.where(n > 0, centre + weighted.sum(axis=1) / n, np.nan)}
    result["low"], result["high"] = _interval(resampled[:, :systems], centre, confidence, "mean", names)
    result["n"] = n
    if baseline is not None:
        paired = both.sum(axis=1)
        lonely = [names[r] for r in np.flatnonzero(paired == 0) if r != baseline]
        if lonely:
            warnings.warn(f"no query measured by both the baseline {names[baseline]} and {', '.join(lonely)}: "
                          "their differences are NaN", BootstrapWarning, stacklevel=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            result["diff"] = np.where(paired > 0, diff_centre + difference.sum(axis=1) / paired, np.nan)
        result["diff_low"], result["diff_high"] = _interval(resampled[:, systems:], diff_centre, confidence,
                                                            "difference to the baseline", names)
    return result


def check_per_query(per_query: pd.DataFrame) -> None:
    """A TypeError or ValueError, naming what to change, unless ``per_query`` is a long frame of per-query results
    with the columns ``system``, ``qid``, ``measure`` and numeric ``value`` (as the statistics here read it)."""
    import pandas as pd

    if not isinstance(per_query, pd.DataFrame):
        raise TypeError(f"per_query must be a pandas DataFrame with columns system, qid, measure, value; got "
                        f"{type(per_query).__name__}")
    missing = [c for c in ("system", "qid", "measure", "value") if c not in per_query.columns]
    if missing:
        hint = (" (pt.Experiment(perquery=True) calls the system column 'name': "
                "frame.rename(columns={'name': 'system'}))" if "name" in per_query.columns else "")
        raise ValueError(f"per_query lacks the column(s) {', '.join(missing)}: it needs system, qid, measure, "
                         f"value{hint}")
    values = pd.to_numeric(per_query["value"], errors="coerce")
    bad = ~np.isfinite(values.to_numpy(dtype=np.float64))
    if bad.any():
        row = per_query[bad].iloc[0]
        raise ValueError(f"per_query has {int(bad.sum())} row(s) whose value is not a finite number (first: system "
                         f"{row['system']!r}, qid {row['qid']!r}, measure {row['measure']!r}, value {row['value']!r}): "
                         "a query a measure could not measure has no row; drop those rows")
    duplicated = per_query.duplicated(["system", "qid", "measure"])
    if duplicated.any():
        row = per_query[duplicated].iloc[0]
        raise ValueError(f"per_query has {int(duplicated.sum())} repeated (system, qid, measure) row(s), first "
                         f"({row['system']!r}, {row['qid']!r}, {row['measure']!r}): one value per query is expected")


def summarize(per_query: pd.DataFrame, *, baseline: str | None = None, resamples: int = 10_000,
              seed: int = 0, topics: Sequence[str] | None = None) -> pd.DataFrame:
    """Summary frame of a per-query frame: per (system, measure) the mean over measured queries, ``n``,
    ``excluded`` (topics without a row), the paired bootstrap interval ``low``/``high``, with a ``baseline`` system
    ``diff``/``diff_low``/``diff_high`` (see :func:`paired_bootstrap`), and ``common_mean``: the mean over the
    ``common_n`` queries every system measured on that measure (the mean to compare across systems when they measured
    different queries; ``mean`` itself where they all measured the same).

    ``topics`` is the topic set (default: every qid in ``per_query``). A measure is resampled over the queries
    at least one system measured on it, with the same draws (``seed``) for every measure.
    """
    import pandas as pd

    check_per_query(per_query)
    frame = per_query.assign(system=per_query["system"].astype(str), qid=per_query["qid"].astype(str),
                             measure=per_query["measure"].astype(str),
                             value=pd.to_numeric(per_query["value"]).astype(np.float64))
    systems = list(dict.fromkeys(frame["system"]))
    if topics is None:
        topic_set = list(dict.fromkeys(frame["qid"]))
    else:
        topic_set = list(dict.fromkeys(str(t) for t in topics))
        unknown = sorted(set(frame["qid"]) - set(topic_set))
        if unknown:
            raise ValueError(f"per_query has {len(unknown)} qid(s) not among topics, e.g. {unknown[:5]}: pass the "
                             "full topic set")
    if baseline is not None and str(baseline) not in systems:
        raise ValueError(f"baseline {baseline!r} is not a system of per_query; its systems are {systems}")
    rows = []
    for measure, cells in frame.groupby("measure", sort=False):
        matrix = cells.pivot(index="system", columns="qid", values="value").reindex(systems)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            stats = paired_bootstrap(matrix.to_numpy(), resamples=resamples, seed=seed,
                                     baseline=None if baseline is None else systems.index(str(baseline)),
                                     names=[f"{s} on {measure}" for s in systems])
        for warning in caught:  # shown at the caller's line, not this one
            warnings.warn(warning.message, warning.category, stacklevel=2)
        nan = np.full(len(systems), np.nan)
        values = matrix.to_numpy(dtype=np.float64)
        common = ~np.isnan(values).any(axis=0)
        rows.append(pd.DataFrame({
            "system": systems, "measure": measure, "mean": stats["mean"], "n": stats["n"],
            "excluded": len(topic_set) - stats["n"], "low": stats["low"], "high": stats["high"],
            "diff": stats.get("diff", nan), "diff_low": stats.get("diff_low", nan),
            "diff_high": stats.get("diff_high", nan),
            "common_mean": values[:, common].mean(axis=1) if common.any() else nan, "common_n": int(common.sum())}))
    columns = ["system", "measure", "mean", "n", "excluded", "low", "high", "diff", "diff_low", "diff_high",
               "common_mean", "common_n"]
    if not rows:
        raise ValueError("per_query has no rows: nothing to summarise")
    return pd.concat(rows, ignore_index=True)[columns]


def paired_ratio_bootstrap(numerators, denominators, *, baseline: int | None = None, resamples: int = 10_000,
                           confidence: float = 0.95, seed: int = 0) -> dict[str, np.ndarray]:
    """Ratios of sums over queries, :math:`\\sum_q x_{sq} / \\sum_q n_q`, with paired percentile bootstrap intervals.

    For measures averaged over documents rather than queries (polarity accuracy: correctly placed documents
    ``numerators`` (systems, queries) over documents ``denominators`` (queries,)), which :func:`paired_bootstrap`'s
    per-query means do not give. Resample ``b`` draws queries with replacement (counts :math:`c_{bq}`, shared by
    all systems) and takes :math:`\\sum_q c_{bq} x_{sq} / \\sum_q c_{bq} n_q`. Returns ``mean`` (the ratio on all
    queries), ``low``, ``high`` and, with a ``baseline`` row, ``diff``, ``diff_low``, ``diff_high`` (system minus
    baseline per resample; NaN in the baseline's row). Resample ``b`` uses row ``b`` of
    ``np.random.default_rng(seed).integers(0, Q, (resamples, Q))`` (drawn in chunks when large).
    """
    values = np.asarray(numerators, dtype=np.float64)
    sizes = np.asarray(denominators, dtype=np.float64)
    if values.ndim != 2 or values.shape[0] < 1 or values.shape[1] < 1:
        raise ValueError(f"numerators must be a (systems, queries) array with at least one of each; got shape "
                         f"{np.shape(numerators)}")
    if sizes.shape != (values.shape[1],):
        raise ValueError(f"denominators must hold one number per query ({values.shape[1]}); got shape {sizes.shape}")
    if not (np.isfinite(values).all() and np.isfinite(sizes).all() and (sizes > 0).all()):
        raise ValueError("numerators must be finite and denominators finite and positive")
    _check(values, baseline, resamples, confidence)
    ratios = np.empty((resamples, values.shape[0]))
    start = 0
    for counts in _chunks_of_counts(seed, resamples, values.shape[1]):
        ratios[start:start + counts.shape[0]] = (counts @ values.T) / (counts @ sizes)[:, None]
        start += counts.shape[0]
    alpha = (1 - confidence) / 2
    result = {"mean": values.sum(axis=1) / sizes.sum()}
    result["low"], result["high"] = np.quantile(ratios, [alpha, 1 - alpha], axis=0)
    if baseline is not None:
        differences = ratios - ratios[:, [baseline]]
        result["diff"] = result["mean"] - result["mean"][baseline]
        result["diff_low"], result["diff_high"] = np.quantile(differences, [alpha, 1 - alpha], axis=0)
        for name in ("diff", "diff_low", "diff_high"):
            result[name][baseline] = np.nan
    return result
