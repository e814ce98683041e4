"""Paired bootstrap: 10,000 resamples over 1,000 queries x 10 systems with a baseline, against a loop.

`pairmeasures.analysis.paired_bootstrap` (one counts matrix per chunk of resamples, multiplied with
the values of every system at once) against a straightforward loop over resamples (index the
draw, `nanmean` per system and per difference) on the same data and the same draws, in the same
run; 10% of the values are NaN (not measured). Also `scipy.stats.bootstrap(paired=True,
method="percentile")` for the ten differences to the baseline on complete data.

Usage: python benchmarks/bootstrap.py
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import best_of, save

from pairmeasures.analysis import paired_bootstrap

SYSTEMS, QUERIES, RESAMPLES = 10, 1_000, 10_000


def loop(values: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Per-resample loop: 95% percentile intervals of the means and of the differences to row 0."""
    draws = np.random.default_rng(seed).integers(0, values.shape[1], (RESAMPLES, values.shape[1]))
    differences = values - values[0]
    means = np.empty((RESAMPLES, len(values)))
    diffs = np.empty((RESAMPLES, len(values)))
    for b, draw in enumerate(draws):
        means[b] = np.nanmean(values[:, draw], axis=1)
        diffs[b] = np.nanmean(differences[:, draw], axis=1)
    return np.nanquantile(means, [0.025, 0.975], axis=0), np.nanquantile(diffs[:, 1:], [0.025, 0.975], axis=0)


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    from scipy import stats

    rng = np.random.default_rng(0)
    values = rng.random((SYSTEMS, QUERIES)) + rng.normal(0, 0.1, (1, QUERIES))
    values[rng.random(values.shape) < 0.1] = np.nan
    ours = best_of(lambda: paired_bootstrap(values, baseline=0, resamples=RESAMPLES))
    baseline = best_of(lambda: loop(values), repeat=1)
    result = paired_bootstrap(values, baseline=0, resamples=RESAMPLES)
    (low, high), (diff_low, diff_high) = loop(values)
    gap = max(np.abs(result["low"] - low).max(), np.abs(result["high"] - high).max(),
              np.abs(result["diff_low"][1:] - diff_low).max(), np.abs(result["diff_high"][1:] - diff_high).max())
    complete = np.nan_to_num(values, nan=0.5)

    def scipy_differences():
        for s in range(1, SYSTEMS):
            stats.bootstrap((complete[s], complete[0]), lambda a, b, axis: np.mean(a - b, axis=axis), paired=True,
                            n_resamples=RESAMPLES, method="percentile", rng=np.random.default_rng(0))

    scipy_s = best_of(scipy_differences, repeat=1)
    ours_complete = best_of(lambda: paired_bootstrap(complete, baseline=0, resamples=RESAMPLES))
    results = {"systems": SYSTEMS, "queries": QUERIES, "resamples": RESAMPLES, "paired_bootstrap_s": ours,
               "loop_s": baseline, "ratio_to_loop": ours / baseline, "max_interval_gap_to_loop": float(gap),
               "complete_data_paired_bootstrap_s": ours_complete, "scipy_9_differences_s": scipy_s,
               "ratio_to_scipy": ours_complete / scipy_s}
    print(f"paired_bootstrap {ours:.3f} s, per-resample loop {baseline:.2f} s ({ours / baseline:.3f}x), "
          f"largest interval difference {gap:.1e}; complete data {ours_complete:.3f} s vs scipy.stats.bootstrap "
          f"for the 9 differences {scipy_s:.2f} s ({ours_complete / scipy_s:.3f}x)")
    print(f"results in {save('bootstrap', results)}")


if __name__ == "__main__":
    main()
