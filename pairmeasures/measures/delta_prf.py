r"""|ΔA-PRF|: IBBR's dataset-level ranking disparity between two groups (Li et al. 2022, §4).

.. math::  \Delta\text{A-PRF} = \frac{1}{|T_m|} \sum_{i \in T_m} \mathrm{PRF}_m(s_i)
           - \frac{1}{|T_f|} \sum_{i \in T_f} \mathrm{PRF}_f(s_i)

with :math:`T_g` the queries that have a clicked passage of group :math:`g` (and a non-clicked one) in the
top k. It is not a per-query measure: a query usually has clicked passages of one group only, so it
contributes to one of the two means, and the difference exists only between the means over many queries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

import numpy as np

from .pooled import ranked_lists_for
from .prf import PRF

__all__ = ["DeltaAPRF", "delta_a_prf"]


@dataclass(frozen=True)
class DeltaAPRF:
    """|ΔA-PRF| of a run: ``value`` = ``means[first] - means[second]`` (signed; + = the first group's clicked
    passages are ranked above the non-clicked ones more often), ``absolute`` = \\|value\\| as the paper
    reports it, ``counts`` = :math:`|T_g|`, ``left_out``: the queries in neither mean, with why, and ``interval``: a
    bootstrap interval of ``value`` (signed: whether it holds 0 says whether the disparity is told from noise)."""

    value: float
    groups: tuple[str, str]
    means: Mapping[str, float]
    counts: Mapping[str, int]
    left_out: Mapping[str, str]
    #: Percentile bootstrap interval of ``value`` over queries (``resamples`` > 0), else None.
    interval: Optional[tuple[float, float]] = None

    @property
    def absolute(self) -> float:
        """\\|ΔA-PRF\\| (the paper's figure; lower is fairer)."""
        return abs(self.value)


def delta_a_prf(run: Any, qrels: Any, *, groups: tuple[str, str] = ("male", "female"), resamples: int = 0,
                seed: int = 0, confidence: float = 0.95, **params: Any) -> DeltaAPRF:
    """ΔA-PRF of ``run`` against ``qrels`` (clicked: qrel >= ``rel``, default 1) between ``groups``.

    ``params`` are PRF's (``cutoff``, ``rel``, ``labels``, ``group``, ``text``, ``terms``, ``variant``,
    ``missing``...): e.g. ``labels='group', group='beir:DIR'`` for gold labels, or the default IBBR labelling
    from the passage text (``text=`` or the run's ``text`` column). Raises a ValueError when a group has no
    query to average (naming why the queries were left out).

    ``resamples`` > 0 adds ``interval``: the ``confidence`` percentile interval of ΔA-PRF over that many resamples
    of the queries with replacement (seeded by ``seed``), each resample's T_m and T_f being its drawn queries'.
    """
    if len(groups) != 2 or groups[0] == groups[1]:
        raise ValueError(f"delta_a_prf: groups={groups!r}; expected two different groups")
    if resamples < 0 or not 0 < confidence < 1:
        raise ValueError(f"delta_a_prf: resamples must be >= 0 and confidence in (0, 1), got {resamples}, {confidence}")
    unknown = sorted({"of", "degenerate"} & set(params))
    if unknown:
        raise ValueError(f"delta_a_prf sets {', '.join(unknown)} itself; pass groups=(A, B) instead")
    cutoff = params.pop("cutoff", None)
    measures = [PRF(of=group, degenerate="exclude", **params) for group in groups]
    if cutoff is not None:
        measures = [m.at(cutoff) for m in measures]
    lists = ranked_lists_for(measures[0], run, qrels)
    results = [m.evaluate(lists) for m in measures]
    query_ids = np.asarray(lists.query_ids, dtype=str)
    means, counts = {}, {}
    for group, result in zip(groups, results):
        counts[group] = int((~result.degenerate).sum())
        means[group] = float(result.values[~result.degenerate].mean()) if counts[group] else float("nan")
    neither = results[0].degenerate & results[1].degenerate
    first_causes, second_causes = (np.asarray(r.causes, dtype=object) for r in results)
    prefix = "no clicked passage of group"
    both_other = (np.char.startswith(first_causes.astype(str), prefix)
                  & np.char.startswith(second_causes.astype(str), prefix))
    why = np.where(both_other, f"its clicked passages are of neither {groups[0]!r} nor {groups[1]!r}", first_causes)
    left_out = dict(zip(query_ids[neither].tolist(), why[neither].tolist()))
    empty = [position for position, group in enumerate(groups) if counts[group] == 0]
    if empty:
        causes = np.asarray(results[empty[0]].causes, dtype=object)
        reasons = _count_causes(causes[results[empty[0]].degenerate])
        raise ValueError(f"delta_a_prf: no query has a clicked passage of group {groups[empty[0]]!r} with a "
                         f"non-clicked passage in the top k, so ΔA-PRF is undefined ({reasons}). Check the group "
                         "labels (labels=, group=, of the groups named by groups=) and rel=")
    interval = None
    if resamples:
        values = np.stack([np.where(r.degenerate, 0.0, r.values) for r in results], axis=1)
        measured = np.stack([~r.degenerate for r in results], axis=1)
        differences = resampled_differences(values, measured, resamples, np.random.default_rng(seed))
        tail = 100 * (1 - confidence) / 2
        low, high = np.nanpercentile(differences, [tail, 100 - tail])
        interval = (float(low), float(high))
    return DeltaAPRF(value=means[groups[0]] - means[groups[1]], groups=(groups[0], groups[1]), means=means,
                     counts=counts, left_out=left_out, interval=interval)


def resampled_differences(values: np.ndarray, measured: np.ndarray, resamples: int, rng: np.random.Generator,
                          chunk: int = 1000) -> np.ndarray:
    """ΔA-PRF of ``resamples`` bootstrap draws of the queries: ``values`` and ``measured`` are (queries, 2) (each
    query's PRF of the two groups, and whether it is in T_g); a draw's difference is the mean over its drawn
    queries in T_1 minus that over T_2 (a query drawn twice counts twice), NaN where a draw holds none of a group.
    Draws are multinomial counts, ``chunk`` resamples at a time."""
    n = values.shape[0]
    weighted, mask = np.where(measured, values, 0.0), measured.astype(float)
    out = np.empty(resamples)
    for start in range(0, resamples, chunk):
        counts = rng.multinomial(n, np.full(n, 1 / n), size=min(chunk, resamples - start)).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = (counts @ weighted) / (counts @ mask)
        out[start:start + len(counts)] = means[:, 0] - means[:, 1]
    return out


def _count_causes(causes: np.ndarray) -> str:
    """``"N: cause; ..."``, the most frequent first."""
    names, counts = np.unique(np.asarray(causes, dtype=str), return_counts=True)
    order = np.argsort(-counts, kind="stable")
    return "; ".join(f"{counts[i]}: {names[i]}" for i in order)
