"""rND / rKL / rRD math: golden reference cases, brute force over rankings, edge cases."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import golden_number, load_golden
from hypothesis import given, settings
from hypothesis import strategies as st

from pairmeasures.math import (
    group_fairness_bounds,
    group_fairness_lists,
    group_fairness_raw,
    prefix_disparity,
    rkl,
    rnd,
    rrd,
)

GOLDEN = [c for c in load_golden("rnd_rkl_rrd.json") if "error" not in c["expected"]]
REJECTED = [c for c in load_golden("rnd_rkl_rrd.json") if "error" in c["expected"]]
REFERENCE = {"kl_eps": 0.001, "all_protected": "zero"}


def mask_of(case) -> np.ndarray:
    protected = set(case["inputs"]["protected"])
    return np.array([item in protected for item in case["inputs"]["ranking"]])


def close(got, expected):
    return abs(got - expected) <= 1e-9 + 1e-9 * abs(expected)


@pytest.mark.parametrize("case", GOLDEN, ids=[c["id"] for c in GOLDEN])
@pytest.mark.parametrize("name", ["rND", "rKL", "rRD"])
def test_golden_reference_options(case, name):
    mask, step, expected = mask_of(case), case["params"]["cut_point"], case["expected"][name]
    options = dict(REFERENCE)
    lo, hi = group_fairness_bounds(mask, name.lower(), step, **options)
    assert close(group_fairness_raw(mask, name.lower(), step, **options), expected["raw"])
    assert close(lo, expected["min"]) and close(hi, expected["max"])
    for normalization, field in (("max", "normalized"), ("minmax", "normalized_minmax")):
        result = group_fairness_lists(mask, [0, len(mask)], name.lower(), step, normalization, **options)
        if expected[field] == "NaN":  # the reference divides by zero; we report 0 and flag it
            assert result.degenerate[0] and result.value[0] == 0.0
        else:
            assert close(result.value[0], golden_number(expected[field]))


@pytest.mark.parametrize("case", REJECTED, ids=[c["id"] for c in REJECTED])
def test_reference_rejects_one_group_we_report_zero(case):
    mask = mask_of(case)
    for function in (rnd, rkl, rrd):
        assert function(mask) == 0.0
    assert group_fairness_lists(mask, [0, len(mask)], "rnd").degenerate[0]


def raw_by_definition(mask, measure, step, **options) -> float:
    """The published per-prefix sum, computed directly, one prefix at a time."""
    n, p = len(mask), int(np.sum(mask))
    total = 0.0
    for i in range(step, n + 1, step):
        c = int(np.sum(mask[:i]))
        total += prefix_disparity(measure, c, i, p, n, **options) / np.log2(i + 1)
    return float(total)


def all_rankings(n: int, p: int):
    for positions in itertools.combinations(range(n), p):
        mask = np.zeros(n, dtype=bool)
        mask[list(positions)] = True
        yield mask


masks = st.lists(st.booleans(), min_size=2, max_size=10).filter(lambda m: 0 < sum(m) < len(m))


@settings(max_examples=120, deadline=None)
@given(masks, st.integers(1, 4), st.sampled_from(["rnd", "rkl", "rrd"]), st.sampled_from(["limit", "zero"]))
def test_exact_bounds_and_value_match_brute_force(mask, step, measure, all_protected):
    mask = np.array(mask)
    options = {"all_protected": all_protected} if measure == "rrd" else {}
    raws = [raw_by_definition(m, measure, step, **options) for m in all_rankings(len(mask), int(mask.sum()))]
    lo, hi = group_fairness_bounds(mask, measure, step, **options)
    assert lo == pytest.approx(min(raws), abs=1e-12) and hi == pytest.approx(max(raws), abs=1e-12)
    raw = raw_by_definition(mask, measure, step, **options)
    assert group_fairness_raw(mask, measure, step, **options) == pytest.approx(raw, abs=1e-12)
    result = group_fairness_lists(mask, [0, len(mask)], measure, step, **options)
    if max(raws) - min(raws) > 1e-9:
        assert result.value[0] == pytest.approx((raw - min(raws)) / (max(raws) - min(raws)), abs=1e-9)
    else:  # every ranking ties: the documented value, flagged
        assert result.value[0] == 0.0 and result.degenerate[0]


def test_kl_uses_zero_log_zero_by_default():
    # Top prefix all protected: the reference substitutes 0.001 for the share 1 (Y3); KL(1 || 0.3) = log2(1/0.3).
    assert prefix_disparity("rkl", 3, 3, 3, 10) == pytest.approx(np.log2(1 / 0.3))
    assert prefix_disparity("rkl", 3, 3, 3, 10, kl_eps=0.001) == pytest.approx(prefix_disparity("rkl", 0, 3, 3, 10, kl_eps=0.001))
    assert prefix_disparity("rkl", 0, 3, 3, 10) == pytest.approx(np.log2(1 / 0.7))


def test_protected_first_is_the_rkl_maximum_by_default():
    mask = np.array([True] * 10 + [False] * 40)
    assert rkl(mask) == pytest.approx(1.0)
    assert rkl(mask, kl_eps=0.001) < 0.7  # the reference's substitution makes it look fairer (Y3)


def test_rnd_and_rkl_are_symmetric_in_the_groups_rrd_is_not():
    mask = np.array([True, True, False, True, False, False, False, False])
    assert rnd(mask) == pytest.approx(rnd(~mask))
    assert rkl(mask) == pytest.approx(rkl(~mask))
    assert rrd(mask) != pytest.approx(rrd(~mask))


def test_rrd_counts_only_under_representation():
    assert rrd([True, True, False, False, False, False]) == 0.0  # protected over-represented on top
    assert rrd([False, False, False, False, True, True]) == pytest.approx(1.0)


def test_fair_and_unfair_extremes():
    assert rnd([True, False] * 5) < 0.2
    assert rnd([True] * 5 + [False] * 5) == pytest.approx(1.0)
    assert rnd([False] * 5 + [True] * 5) == pytest.approx(1.0)


def test_max_normalisation_is_raw_over_max():
    mask = np.array([False, True, False, False, True, True, False])
    lo, hi = group_fairness_bounds(mask, "rnd")
    assert rnd(mask, normalization="max") == pytest.approx(group_fairness_raw(mask, "rnd") / hi)
    assert lo > 0  # min is not 0, which is why the paper subtracts it


def test_batch_equals_single_lists():
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 30, size=40)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    flat = rng.random(offsets[-1]) < 0.3
    for measure in ("rnd", "rkl", "rrd"):
        batch = group_fairness_lists(flat, offsets, measure, step=2)
        for q, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
            single = group_fairness_lists(flat[a:b], [0, b - a], measure, step=2)
            assert batch.value[q] == pytest.approx(single.value[0], abs=1e-12)
            assert batch.degenerate[q] == single.degenerate[0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.booleans(), max_size=12), min_size=1, max_size=6), st.sampled_from(["rnd", "rkl", "rrd"]),
       st.integers(1, 3), st.sampled_from([0.0, 0.001]))
def test_remembered_bounds_equal_the_lattice_computed_afresh(masks, measure, step, kl_eps):
    """The normalisers depend only on (N, p) and the options: a warm memo gives exactly the cold computation."""
    from pairmeasures.math import group as gf

    offsets = np.concatenate([[0], np.cumsum([len(m) for m in masks])])
    flat = np.array([x for m in masks for x in m], dtype=bool)
    warm = group_fairness_lists(flat, offsets, measure, step=step, kl_eps=kl_eps)
    gf._BOUNDS.clear()
    cold = group_fairness_lists(flat, offsets, measure, step=step, kl_eps=kl_eps)
    lengths = np.diff(offsets)
    low, high = gf._lattice_bounds(lengths, np.array([m.count(True) for m in masks]), measure, step, kl_eps, "limit")
    for result in (warm, cold):
        np.testing.assert_array_equal(result.min_raw, low)
        np.testing.assert_array_equal(result.max_raw, high)
        np.testing.assert_array_equal(result.value, cold.value)


def test_long_lists():
    rng = np.random.default_rng(1)
    mask = rng.random(1000) < 0.35
    for measure in ("rnd", "rkl", "rrd"):
        result = group_fairness_lists(mask, [0, 1000], measure)
        assert 0.0 < result.value[0] < 0.2  # random rankings are far from the unfair extreme
        assert result.min_raw[0] <= result.raw[0] <= result.max_raw[0]


@pytest.mark.parametrize("kwargs,match", [
    ({"step": 0}, "step"), ({"normalization": "sum"}, "normalization"), ({"kl_eps": 1.5}, "kl_eps"),
    ({"all_protected": "x"}, "all_protected"),
])
def test_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        group_fairness_lists(np.array([True, False]), [0, 2], "rkl", **kwargs)


def test_bad_mask():
    with pytest.raises(ValueError, match="boolean mask"):
        rnd([0.2, 0.7])
    with pytest.raises(ValueError, match="measure"):
        group_fairness_lists(np.array([True]), [0, 1], "rxx")


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.booleans(), max_size=11), min_size=1, max_size=5), st.lists(st.integers(0, 12), min_size=1,
       max_size=4), st.sampled_from(["rnd", "rkl", "rrd"]), st.integers(1, 3), st.sampled_from(["minmax", "max"]))
def test_prefixes_in_one_pass_equal_each_prefix_alone(masks, cuts, measure, step, normalization):
    """Every cut-off of a run at once: each top-k list scored and normalised over its own items."""
    sizes = np.array([len(m) for m in masks])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    flat = np.array([x for m in masks for x in m], dtype=bool)
    prefixes = np.minimum(np.array(cuts)[None, :], sizes[:, None])
    together = group_fairness_lists(flat, offsets, measure, step=step, normalization=normalization, prefixes=prefixes)
    for j in range(prefixes.shape[1]):
        keep = np.concatenate([np.arange(a, a + n) for a, n in zip(offsets[:-1], prefixes[:, j])]).astype(int)
        alone = group_fairness_lists(flat[keep], np.concatenate([[0], np.cumsum(prefixes[:, j])]), measure, step=step,
                                     normalization=normalization)
        np.testing.assert_allclose(together.value[:, j], alone.value, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(together.raw[:, j], alone.raw, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(together.degenerate[:, j], alone.degenerate)


def test_prefixes_must_lie_within_the_lists():
    with pytest.raises(ValueError, match="prefixes"):
        group_fairness_lists([True, False], [0, 2], "rnd", prefixes=[[3]])
