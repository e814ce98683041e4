"""DUO math: golden reference cases, brute force over orderings, the subset DP, invariants, edge cases."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import golden_number, load_golden
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pairmeasures.math import duo, duo_bounds, duo_depth_weights, duo_lists, duo_raw

GOLDEN = load_golden("duo.json")


def close(got, expected, rel=1e-9, abs_=1e-9):
    return abs(got - expected) <= abs_ + rel * abs(expected)


def ranked(case) -> np.ndarray:
    return np.asarray(case["inputs"]["polarities"], dtype=float)[case["inputs"]["ranking"]]


@pytest.mark.parametrize("case", GOLDEN, ids=[c["id"] for c in GOLDEN])
def test_golden_duo(case):
    p, step, expected = ranked(case), case["params"]["step_size"], case["expected"]
    noise = "fp_noise" in case["tags"]
    rel = 0.0 if noise else 1e-9
    lo, hi = duo_bounds(p, step)
    assert close(duo_raw(p, step), golden_number(expected["raw"]), rel)
    assert close(lo, golden_number(expected["min"]), rel)
    assert close(hi, golden_number(expected["max"]), rel)
    assert close(duo(p, step), golden_number(expected["duo"]), rel)
    assert close(duo_raw(p, step, signed=True), golden_number(expected["raw_signed"]), rel)
    if not noise and expected["raw_signed"] != 0:
        # The published sign (Appendix A.2) taken from the signed raw sum, kept in every case.
        assert duo(p, step, signed=True) == pytest.approx(expected["sign_ref"] * golden_number(expected["duo"]), abs=1e-9)


def test_golden_covers_both_normalisers():
    assert {c["normalizer"] for c in GOLDEN} == {"exhaustive", "subset_dp"}


def brute_force_raw(p: np.ndarray, step: int) -> np.ndarray:
    """Raw DUO of every ordering of ``p``, straight from Eq. 5 (prefix variance over log2 k)."""
    n = len(p)
    out = []
    for perm in itertools.permutations(range(n)):
        q = p[list(perm)]
        out.append(sum(np.var(q[:k]) / np.log2(k) for k in range(step, n, step) if k > 1))
    return np.array(out)


def subset_dp_bounds(p: np.ndarray, step: int) -> tuple[float, float]:
    """Exact extremes by the O(2^n n) dynamic programme over prefix sets."""
    n = len(p)
    weights = duo_depth_weights(n, np.array([n]), step)[0]
    best_lo = {0: 0.0}
    best_hi = {0: 0.0}
    for size in range(1, n + 1):
        for members in itertools.combinations(range(n), size):
            mask = sum(1 << i for i in members)
            gain = weights[size] * np.var(p[list(members)])
            prev = [mask ^ (1 << i) for i in members]
            best_lo[mask] = min(best_lo[m] for m in prev) + gain
            best_hi[mask] = max(best_hi[m] for m in prev) + gain
    return best_lo[(1 << n) - 1], best_hi[(1 << n) - 1]


scores = st.floats(min_value=-10, max_value=10, allow_nan=False, allow_subnormal=False)
distinctive = st.one_of(scores, st.sampled_from([-1.0, 0.0, 0.5, 1.0]))


@settings(max_examples=150, deadline=None)
@given(st.lists(distinctive, min_size=1, max_size=7), st.integers(1, 3))
def test_bounds_and_duo_match_brute_force(values, step):
    p = np.array(values)
    raws = brute_force_raw(p, step)
    lo, hi = duo_bounds(p, step)
    scale = 1e-9 * max(1.0, abs(raws).max())
    assert abs(lo - raws.min()) <= scale and abs(hi - raws.max()) <= scale
    assert abs(duo_raw(p, step) - raws[0]) <= scale
    if raws.max() - raws.min() > 1e-6 * max(1.0, raws.max()):
        assert duo(p, step) == pytest.approx(1 - (raws[0] - raws.min()) / (raws.max() - raws.min()), abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.lists(distinctive, min_size=9, max_size=12), st.integers(1, 4))
def test_bounds_match_subset_dp(values, step):
    p = np.array(values)
    lo, hi = duo_bounds(p, step)
    exact_lo, exact_hi = subset_dp_bounds(p, step)
    scale = 1e-9 * max(1.0, exact_hi)
    assert abs(lo - exact_lo) <= scale and abs(hi - exact_hi) <= scale


@settings(max_examples=60, deadline=None)
@given(st.lists(scores, min_size=3, max_size=7), st.integers(1, 2))
def test_extreme_orderings_score_zero_and_one(values, step):
    p = np.array(values)
    perms = list(itertools.permutations(range(len(p))))
    raws = brute_force_raw(p, step)
    assume(raws.max() - raws.min() > 1e-6 * max(1.0, raws.max()))
    assert duo(p[list(perms[int(raws.argmax())])], step) == pytest.approx(0.0, abs=1e-9)
    assert duo(p[list(perms[int(raws.argmin())])], step) == pytest.approx(1.0, abs=1e-9)
    for perm, raw in zip(perms[:50], raws[:50]):
        expected = 1 - (raw - raws.min()) / (raws.max() - raws.min())
        assert duo(p[list(perm)], step) == pytest.approx(expected, abs=1e-6)


def test_batch_equals_single_lists():
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 40, size=60)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    flat = rng.normal(size=offsets[-1])
    result = duo_lists(flat, offsets, step=2)
    for q, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        single = duo_lists(flat[a:b], np.array([0, b - a]), step=2)
        assert result.duo[q] == pytest.approx(single.duo[0], abs=1e-12)
        assert result.min_raw[q] == pytest.approx(single.min_raw[0], rel=1e-9, abs=1e-12)
        assert result.max_raw[q] == pytest.approx(single.max_raw[0], rel=1e-9, abs=1e-12)


def test_multi_axis_is_per_axis():
    rng = np.random.default_rng(3)
    p = rng.normal(size=(9, 3))
    together = duo(p)
    assert together.shape == (3,)
    for axis in range(3):
        assert together[axis] == pytest.approx(duo(p[:, axis]))
    lo, hi = duo_bounds(p)
    assert lo.shape == hi.shape == (3,)


@pytest.mark.parametrize("p", [[], [0.3], [0.3, -0.9], [0.1] * 6, [2.0] * 3])
def test_degenerate_lists_get_one_half_and_no_sign(p):
    assert duo(p) == 0.5
    assert duo(p, signed=True) == 0.0
    result = duo_lists(np.array(p, dtype=float), np.array([0, len(p)]))
    assert result.degenerate[0]


def test_symmetric_multiset_with_equal_prefix_variances_is_degenerate():
    # With step 3 on four items only 3-item prefixes count, and every 3-subset of
    # {-1, -1, 1, 1} has the same variance: all orderings tie (up to rounding).
    assert duo([-1.0, -1.0, 1.0, 1.0], step=3) == 0.5


def test_step_larger_than_list_is_degenerate():
    assert duo([1.0, -1.0, 0.5, 0.2], step=5) == 0.5


def test_signed_duo_follows_the_top_of_the_list():
    positive_first = [1.0, 0.9, 0.8, -0.8, -0.9, -1.0]
    assert duo(positive_first, signed=True) == pytest.approx(duo(positive_first))
    assert duo(positive_first[::-1], signed=True) == pytest.approx(-duo(positive_first[::-1]))
    assert duo(positive_first) > 0.9


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_scores_are_rejected_with_position(bad):
    with pytest.raises(ValueError, match="position 2"):
        duo([0.1, 0.2, bad, 0.4])


@pytest.mark.parametrize("step", [0, -1, 1.5, True])
def test_invalid_step(step):
    with pytest.raises(ValueError, match="step"):
        duo([0.1, 0.2, 0.3], step=step)


def test_bad_offsets_are_rejected():
    with pytest.raises(ValueError, match="offsets"):
        duo_lists(np.zeros(4), np.array([0, 2, 3]))


def test_long_list_bounds_are_consistent():
    rng = np.random.default_rng(11)
    p = rng.normal(size=300)
    lo, hi = duo_bounds(p, 1)
    assert lo <= duo_raw(p) <= hi
    assert duo_raw(np.sort(p)) >= lo - 1e-9  # a sorted order is feasible
    interleaved = np.sort(p)[np.argsort(np.abs(np.arange(300) - 149.5))][::-1]  # extremes first
    assert duo_raw(interleaved) <= hi + 1e-9


def test_multi_axis_lists_may_be_empty():
    scores = np.array([[0.3, 1.0], [-0.4, 0.2], [0.9, -0.5]])
    result = duo_lists(scores, np.array([0, 0, 3, 3]))
    assert result.duo.shape == (3, 2)
    assert np.all(result.duo[[0, 2]] == 0.5) and result.degenerate[[0, 2]].all()
    assert np.allclose(result.duo[1], duo(scores))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=3, max_size=9), st.integers(1, 2),
       st.sampled_from([1e-170, 1e-100, 1e-20, 3.7, 1e20, 1e100, 1e160]))
def test_duo_is_invariant_to_the_scale_of_the_scores(values, step, c):
    p = np.array(values, dtype=float)
    scaled = duo_lists(c * p, np.array([0, p.size]), step)
    plain = duo_lists(p, np.array([0, p.size]), step)
    assert scaled.duo[0] == pytest.approx(plain.duo[0], abs=1e-9)
    assert scaled.sign[0] == plain.sign[0] and scaled.degenerate[0] == plain.degenerate[0]
    if 1e-100 <= c <= 1e100:  # raw sums in the scores' units: c^2 times the unscaled ones
        assert scaled.raw[0] == pytest.approx(c * c * plain.raw[0], rel=1e-9)
        assert scaled.max_raw[0] == pytest.approx(c * c * plain.max_raw[0], rel=1e-9)


def test_known_bounds_give_the_same_numbers_bit_for_bit():
    """Bounds read from a KnownBounds table (lists seen before: the same top k reordered, another cut-off, another
    run) are the very bounds the programmes compute, also where the table forgets everything at its limit."""
    from pairmeasures.math.duo import KnownBounds

    rng = np.random.default_rng(0)
    for limit in (64_000_000, 20_000):
        table = KnownBounds(limit_bytes=limit)
        for trial in range(40):
            lengths = rng.integers(0, 30, 60)
            offsets = np.concatenate([[0], np.cumsum(lengths)])
            scores = rng.choice([-1.0, 0.0, 0.5, 1.0], size=offsets[-1]) if trial % 2 else rng.normal(size=offsets[-1])
            for _ in range(2):  # the second pass reads what the first kept (unless the limit cleared it)
                for step in (1, 2):
                    plain, known = duo_lists(scores, offsets, step), duo_lists(scores, offsets, step, known=table)
                    for field in ("duo", "raw", "raw_signed", "min_raw", "max_raw", "sign", "degenerate"):
                        assert getattr(plain, field).tobytes() == getattr(known, field).tobytes()
        assert len(table) > 0


def test_duo_batches_give_each_batch_what_duo_lists_gives_bit_for_bit():
    """A family at every cut-off in one call: the lists of one padded width taken together across the batches (and
    a pass split at its cell limit) change no bit of any list's result."""
    from pairmeasures.math import duo_batches

    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 60, 300)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    for scores in (rng.normal(size=offsets[-1]), rng.normal(size=(offsets[-1], 2))):
        positions = np.arange(offsets[-1]) - np.repeat(offsets[:-1], lengths)
        batches = []
        for k in range(1, 51):
            keep = positions < k
            batches.append((scores[keep], np.concatenate([[0], np.cumsum(np.minimum(lengths, k))])))
        for step in (1, 2):
            for got, (part, part_offsets) in zip(duo_batches(batches, step), batches):
                alone = duo_lists(part, part_offsets, step)
                for field in ("duo", "raw", "raw_signed", "min_raw", "max_raw", "sign", "degenerate"):
                    assert getattr(got, field).tobytes() == getattr(alone, field).tobytes()
