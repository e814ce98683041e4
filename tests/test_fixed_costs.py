"""The audit's fixed costs (issue 25, part 5), checked by what runs rather than by timing: statsmodels' ``gc.collect()``
calls walk no frozen heap; the per-query SVDs run with BLAS limited to one thread; run annotation gives what a
row-by-row lookup gives."""

from __future__ import annotations

import gc

import numpy as np
import pandas as pd
import pytest

from pairmeasures.analysis import paired_tests
from pairmeasures.compute.blas import one_blas_thread


def test_every_gc_collect_of_the_correction_runs_on_a_frozen_heap(monkeypatch):
    """statsmodels' multipletests calls gc.collect() on every Holm correction: each call must find the heap alive
    before it frozen (so a collection walks only what the correction made), and the heap is unfrozen afterwards."""
    alive = [[i] for i in range(200_000)]  # an audit-sized heap of small objects
    seen = []
    collect = gc.collect

    def observed(*args, **kwargs):
        seen.append(gc.get_freeze_count())
        return collect(*args, **kwargs)

    monkeypatch.setattr(gc, "collect", observed)
    rng = np.random.default_rng(0)
    per_query = pd.DataFrame([(s, f"q{q}", m, float(rng.normal())) for s in ("base", "a", "b") for q in range(20)
                              for m in ("x", "y")], columns=["system", "qid", "measure", "value"])
    paired_tests(per_query, "base", "holm")
    assert seen and min(seen) >= len(alive)
    assert gc.get_freeze_count() == 0


def test_one_blas_thread_limits_blas_inside_the_block_only():
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads() -> list:
        return [pool["num_threads"] for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"]

    before = blas_threads()
    with one_blas_thread():
        assert set(blas_threads()) == {1}
        with one_blas_thread():
            assert set(blas_threads()) == {1}
    assert blas_threads() == before
