"""Exact DUO bounds: the interval dynamic programmes against brute force over all orderings.

n = 8: brute force enumerates the 8! = 40,320 orderings (as the reference code's exhaustive
update_Z does, vectorised with NumPy) and takes min and max of the raw sum; pairmeasures computes
the same bounds exactly. Reported per query both for a single call and for 5,000 queries in one
vectorised call (how the provider evaluates runs). Target: >= 1000x.
n = 1000: time per query, single call and 20 queries at once. Target: < 50 ms per query.

Usage: python benchmarks/duo_bounds.py
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from _common import best_of, save

from pairmeasures.math import duo_bounds, duo_depth_weights, duo_lists, group_fairness_lists


def brute_force_bounds(p: np.ndarray, step: int = 1) -> tuple[float, float]:
    n = len(p)
    orderings = p[np.array(list(itertools.permutations(range(n))))]
    depth = np.arange(1, n + 1)
    prefix_var = np.cumsum(orderings ** 2, axis=1) / depth - (np.cumsum(orderings, axis=1) / depth) ** 2
    raw = prefix_var @ duo_depth_weights(n, np.array([n]), step)[0, 1:]
    return float(raw.min()), float(raw.max())


def per_call(function, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        function()
    return (time.perf_counter() - start) / calls


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    rng = np.random.default_rng(0)
    results = {}
    for step in (1, 2):
        p = rng.normal(size=8)
        brute = brute_force_bounds(p, step)
        exact = duo_bounds(p, step)
        assert np.allclose(brute, exact, rtol=1e-12, atol=1e-12), (brute, exact)
        t_brute = best_of(lambda p=p, step=step: brute_force_bounds(p, step), 5)
        t_single = min(per_call(lambda p=p, step=step: duo_bounds(p, step), 500) for _ in range(3))
        many = rng.normal(size=(5000, 8))
        offsets = np.arange(5001) * 8
        t_batch = best_of(lambda many=many, offsets=offsets, step=step: duo_lists(many.ravel(), offsets, step), 3) / 5000
        results[f"n8_step{step}"] = {
            "brute_force_ms": round(t_brute * 1e3, 3),
            "single_call_ms": round(t_single * 1e3, 4),
            "batched_per_query_ms": round(t_batch * 1e3, 5),
            "speedup_single_call": round(t_brute / t_single, 1),
            "speedup_batched_per_query": round(t_brute / t_batch, 1),
        }
        print(f"n=8 step={step}: brute force {t_brute * 1e3:.1f} ms; exact DP {t_single * 1e3:.3f} ms per single call "
              f"({t_brute / t_single:.0f}x), {t_batch * 1e6:.1f} us per query in a batch of 5000 "
              f"({t_brute / t_batch:.0f}x; target >= 1000x)")

    for step in (1, 2):
        long = rng.normal(size=1000)
        t_single = best_of(lambda long=long, step=step: duo_bounds(long, step), 5)
        twenty = rng.normal(size=20 * 1000)
        t_batch = best_of(lambda twenty=twenty, step=step: duo_lists(twenty, np.arange(21) * 1000, step), 3) / 20
        results[f"n1000_step{step}"] = {"single_call_ms": round(t_single * 1e3, 2),
                                        "batched_per_query_ms": round(t_batch * 1e3, 2), "target_ms": 50}
        print(f"n=1000 step={step}: {t_single * 1e3:.1f} ms single call, {t_batch * 1e3:.1f} ms per query in a "
              f"batch of 20 (target < 50 ms)")

    mask = rng.random(1000) < 0.4
    for measure in ("rnd", "rkl", "rrd"):
        t = best_of(lambda measure=measure: group_fairness_lists(mask, [0, 1000], measure), 3)
        results[f"{measure}_exact_n1000_ms"] = round(t * 1e3, 2)
        print(f"{measure} exact bounds, n=1000 with 40% protected: {t * 1e3:.1f} ms")
    print("saved", save("duo_bounds", results))


if __name__ == "__main__":
    main()
