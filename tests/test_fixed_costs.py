"""The audit's fixed costs (issues 25 and 34), checked by what runs rather than by timing: the paired tests import
neither scipy.stats nor statsmodels; the per-query SVDs run with BLAS limited to one thread; run annotation gives what
a row-by-row lookup gives."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pairmeasures.compute.blas import one_blas_thread


def test_paired_tests_import_neither_scipy_stats_nor_statsmodels():
    """The audit's paired t-tests and Holm correction come without scipy.stats and statsmodels (about a second of
    imports for a few p-values; statsmodels' Holm also ran gc.collect() on the whole heap): only scipy.special."""
    code = ("import sys, numpy as np, pandas as pd\n"
            "from pairmeasures.analysis import paired_tests\n"
            "rng = np.random.default_rng(0)\n"
            "frame = pd.DataFrame([(s, f'q{q}', 'm', float(rng.normal())) for s in ('base', 'a', 'b') for q in range(20)],"
            " columns=['system', 'qid', 'measure', 'value'])\n"
            "assert len(paired_tests(frame, 'base', 'holm')) == 2\n"
            "print(sorted(m for m in ('scipy.stats', 'statsmodels', 'scipy.special') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["['scipy.special']"]


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


def test_batch_collection_collects_the_young_generation_less_often_inside_the_block_only():
    import gc

    from pairmeasures.apps.collection import YOUNG, batch_collection

    before = gc.get_threshold()
    with batch_collection():
        inside = gc.get_threshold()
    assert inside == (max(before[0], YOUNG), *before[1:]) and gc.get_threshold() == before
