"""The term-based math (neutrality/FaiRR/NFaiRR, RaB/ARaB, TExFAIR/TED/AWRF, RBO) against the
authors' code (golden cases), hand-worked examples from the papers, and brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from conftest import golden_number, load_golden
from hypothesis import given, settings
from hypothesis import strategies as st

from pairmeasures.math import (
    DEGENERATE_NFAIRR,
    arab,
    awrf,
    awrf_lists,
    bias_labels,
    fairr,
    fairr_lists,
    gender_magnitudes,
    ibbr_magnitudes,
    ifairr,
    max_ted,
    neutrality,
    nfairr,
    nfairr_lists,
    rab,
    rank_bias_lists,
    ranker_agnostic_fairr,
    rbdf,
    rbo,
    ted,
    term_exposure,
    texfair,
    texfair_lists,
)

FAIRR_CASES = load_golden("fairr.json")
RAB_CASES = load_golden("rab.json")


def close(got, expected) -> bool:
    return abs(got - expected) <= 1e-9 + 1e-9 * abs(expected)


# --- neutrality, FaiRR, IFaiRR, NFaiRR -------------------------------------------------------

def _omega_table(case) -> dict:
    groups = list(case["inputs"]["groups_portion"])
    targets = [case["inputs"]["groups_portion"][g] for g in groups]
    ids = list(case["inputs"]["documents"])
    counts = [[case["inputs"]["documents"][d].get(g, 0) for g in groups] for d in ids]
    return dict(zip(ids, neutrality(counts, targets, tau=case["params"]["tau"])))


@pytest.mark.parametrize("case", FAIRR_CASES, ids=lambda c: c["id"])
def test_neutrality_matches_reference(case):
    omega = _omega_table(case)
    for doc, expected in case["expected"]["omega"].items():
        assert close(omega[doc], expected), doc


@pytest.mark.parametrize("case", FAIRR_CASES, ids=lambda c: c["id"])
def test_fairr_ifairr_nfairr_match_reference(case):
    omega = _omega_table(case)
    for qid, ranking in case["inputs"]["rankings"].items():
        ranked = [omega[str(d)] for d in ranking]
        background = [omega[str(d)] for d in case["inputs"]["background"].get(qid, [])]
        expected = case["expected"]["per_query"][qid]
        for k in case["params"]["cutoffs"]:
            key = str(k)
            assert close(fairr(ranked, k), expected["FaiRR"][key])
            assert close(ifairr(background, k), expected["IFaiRR"][key])
            reference = golden_number(expected["NFaiRR"][key])
            if math.isfinite(reference):
                assert close(nfairr(ranked, background, k), reference)
            else:  # IFaiRR = 0: a documented value instead of inf / NaN
                assert nfairr(ranked, background, k) == DEGENERATE_NFAIRR
            assert close(ranker_agnostic_fairr(background, k), expected["FaiRR_rankeragnostic"][key])


def test_nfairr_lists_batches_queries_and_flags_zero_ideal():
    result = nfairr_lists([1.0, 0.0, 0.5], [0, 2, 3], [0.0, 1.0, 0.0, 0.0], [0, 2, 4], k=2)
    assert close(result.value[0], 1.0 / 1.0)
    assert result.degenerate.tolist() == [False, True] and result.value[1] == DEGENERATE_NFAIRR
    assert close(result.fairr[1], 0.5)
    np.testing.assert_allclose(fairr_lists([1.0, 0.0, 0.5], [0, 2, 3], k=2), result.fairr)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=1, max_size=7), st.integers(1, 8))
def test_ifairr_is_the_best_ordering(omega, k):
    best = max(fairr(list(order), k) for order in itertools.permutations(omega))
    assert close(ifairr(omega, k), best)
    assert nfairr(omega, omega, k) <= 1 + 1e-12 or ifairr(omega, k) <= 0


def test_neutrality_rejects_bad_targets():
    with pytest.raises(ValueError, match="summing to 1"):
        neutrality([[1, 2]], [0.5, 0.6])
    with pytest.raises(ValueError, match="one share per group"):
        neutrality([[1, 2]], [1.0])


# --- RaB / ARaB ------------------------------------------------------------------------------

def _magnitudes(documents, variant):
    female = [sum(d["female"].values()) for d in documents]
    male = [sum(d["male"].values()) for d in documents]
    return gender_magnitudes(female, male, variant)


@pytest.mark.parametrize("case", RAB_CASES, ids=lambda c: c["id"])
def test_rab_arab_match_reference(case):
    for qid, documents in case["inputs"]["queries"].items():
        for variant in ("tc", "tf", "bool"):
            magnitudes = _magnitudes(documents, variant)
            for row, expected in zip(magnitudes, case["expected"]["doc_magnitudes"][qid]):
                np.testing.assert_allclose(row, expected[variant], rtol=1e-9, atol=1e-9)
            for t in case["params"]["at_ranks"]:
                for name, function in (("RaB", rab), ("ARaB", arab)):
                    expected = [golden_number(v) for v in case["expected"]["per_query"][qid][variant][name][str(t)]]
                    np.testing.assert_allclose(function(magnitudes, t), expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("case", RAB_CASES, ids=lambda c: c["id"])
def test_rab_aggregate_is_male_minus_female(case):
    queries = case["inputs"]["queries"]
    offsets = np.cumsum([0] + [len(d) for d in queries.values()])
    for variant in ("tc", "tf", "bool"):
        magnitudes = np.concatenate([_magnitudes(d, variant) for d in queries.values()] or [np.zeros((0, 3))])
        for t in case["params"]["at_ranks"]:
            rab_values, arab_values = rank_bias_lists(magnitudes, offsets, t)
            for name, values in (("RaB", rab_values), ("ARaB", arab_values)):
                expected = case["expected"]["aggregate"][name][variant][str(t)]
                male_minus_female = values[:, 2] - values[:, 1]
                np.testing.assert_allclose(male_minus_female.mean(), golden_number(expected["bias"]), rtol=1e-9, atol=1e-9)


def test_rab_cutoff_denominator_divides_by_t():
    magnitudes = gender_magnitudes([2, 0], [0, 1], "tc")  # rows [2, 2, 0], [-1, 0, 1]
    np.testing.assert_allclose(rab(magnitudes, 4, denominator="cutoff"), [1 / 4, 2 / 4, 1 / 4])
    # ARaB_4 = (RaB_1 + RaB_2 + RaB_3 + RaB_4) / 4 with RaB_x = (sum of the first min(x, 2) rows) / x
    expected = (np.array([2, 2, 0]) + np.array([1, 2, 1]) / 2 + np.array([1, 2, 1]) / 3 + np.array([1, 2, 1]) / 4) / 4
    np.testing.assert_allclose(arab(magnitudes, 4, denominator="cutoff"), expected)
    np.testing.assert_allclose(rab(magnitudes, 4), [0.5, 1.0, 0.5])  # the reference: min(t, len) = 2


def test_ibbr_magnitude_and_labels():
    # female words: she x3, her x1; male words: he x2 -> female = ln 3 + ln 1, male = ln 2
    magnitudes = ibbr_magnitudes([[3, 1], [0, 0], [1, 0]], [[2], [0], [0]])
    np.testing.assert_allclose(magnitudes[0], [math.log(3) - math.log(2), math.log(3), math.log(2)])
    np.testing.assert_allclose(magnitudes[1:], 0.0)  # ln 0 := 0, and a single occurrence weighs ln 1 = 0
    assert bias_labels(magnitudes).tolist() == [-1, 0, 0]
    assert bias_labels(ibbr_magnitudes([[0]], [[5]])).tolist() == [1]


# --- TExFAIR, TED, RBDF, AWRF ----------------------------------------------------------------

HALF = [0.5, 0.5]


def test_texfair_separates_lists_that_nfairr_cannot():
    """TExFAIR paper, Figure 1: every document is one-sided, so NFaiRR is 0 for both lists, but
    a list that alternates female and male documents is balanced as a whole."""
    female, male, neutral = [2, 0], [0, 2], [0, 0]
    alternating = [female, male, female, male]
    segregated = [female, female, female, male]
    lengths = [10, 10, 10, 10]
    for ranking in (alternating, segregated):
        background = neutrality(ranking + [neutral], HALF)
        assert nfairr(neutrality(ranking, HALF), background, 4) == 0.0
    assert texfair(alternating, lengths, HALF) > texfair(segregated, lengths, HALF)
    # By hand: exposure f = 0.2 (1/log2 2 + 1/log2 4), m = 0.2 (1/log2 3 + 1/log2 5)
    f, m = 0.2 * (1 + 1 / 2), 0.2 * (1 / math.log2(3) + 1 / math.log2(5))
    assert close(ted(alternating, lengths, HALF), abs(f / (f + m) - 0.5) + abs(m / (f + m) - 0.5))
    assert close(texfair(alternating, lengths, HALF), 1 - ted(alternating, lengths, HALF))


def test_rbdf_counts_non_representative_documents():
    counts = [[2, 0], [0, 0], [0, 0]]  # one female document on top, two neutral ones below
    lengths = [20, 20, 20]
    weights = [1, 1 / math.log2(3), 1 / 2]
    assert close(rbdf([1, 0, 0]), weights[0] / sum(weights))
    assert close(ted(counts, lengths, HALF, use_rbdf=False), 1.0)
    assert close(ted(counts, lengths, HALF), weights[0] / sum(weights))
    assert close(texfair(counts, lengths, HALF), 1 - weights[0] / sum(weights))


def test_texfair_with_three_groups_and_unequal_targets():
    targets = [0.2, 0.3, 0.5]
    assert max_ted(targets) == pytest.approx(1.6)
    counts = [[1, 0, 0]]  # all exposure on the group with the smallest target: the largest TED
    assert close(ted(counts, [5], targets), max_ted(targets))
    assert close(texfair(counts, [5], targets), 0.0)
    assert close(texfair([[2, 3, 5]], [10], targets), max_ted(targets))  # exactly on target


def test_no_group_term_is_zero_ted_and_degenerate_without_rbdf():
    ted_result, texfair_result = texfair_lists([[0, 0], [0, 0]], [5, 5], HALF, [0, 2], use_rbdf=False)
    assert ted_result.value.tolist() == [0.0] and ted_result.degenerate.tolist() == [True]
    ted_result, texfair_result = texfair_lists([[0, 0], [0, 0]], [5, 5], HALF, [0, 2], use_rbdf=True)
    assert ted_result.value.tolist() == [0.0] and not ted_result.degenerate.any()
    assert texfair_result.value.tolist() == [1.0]


def test_ted_is_awrf_with_term_alignment():
    """TExFAIR as an AWRF instantiation: alignment = group term proportions, log weights, L1."""
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 4, size=(12, 3)).astype(float)
    lengths = counts.sum(axis=1) + rng.integers(1, 30, size=12)
    targets = [0.25, 0.25, 0.5]
    alignment = counts / lengths[:, None]
    assert close(awrf(alignment, targets), ted(counts, lengths, targets, use_rbdf=False))
    np.testing.assert_allclose(term_exposure(counts, lengths).sum(), term_exposure(counts, lengths, [0, 12]).sum())


def test_awrf_distances_and_weights():
    alignment = [[1, 0], [0, 1]]
    assert awrf(alignment, HALF, weights="uniform") == 0.0
    assert awrf(alignment, HALF, weights="uniform", distance="jsd") == 0.0
    # JSD of (1, 0) against (1/2, 1/2): 1/2 KL((1,0) || (3/4, 1/4)) + 1/2 KL((1/2,1/2) || (3/4,1/4))
    expected = 0.5 * math.log2(4 / 3) + 0.5 * (0.5 * math.log2(0.5 / 0.75) + 0.5 * math.log2(0.5 / 0.25))
    assert close(awrf([[1, 0]], HALF, distance="jsd"), expected)
    assert close(awrf(alignment, HALF, weights="geometric", patience=0.5), abs(1 / 1.5 - 0.5) * 2)
    assert close(awrf(alignment, HALF, weights=np.array([1.0, 3.0])), abs(0.25 - 0.5) * 2)
    result = awrf_lists(np.zeros((2, 2)), HALF, [0, 2])
    assert result.degenerate.tolist() == [True] and result.value.tolist() == [0.0]


def test_texfair_rejects_bad_inputs():
    with pytest.raises(ValueError, match="more term occurrences than tokens"):
        ted([[3, 0]], [2], HALF)
    with pytest.raises(ValueError, match="summing to 1"):
        ted([[1, 0]], [5], [0.5, 0.4])


# --- RBO -------------------------------------------------------------------------------------

def _rbo_truncated(a, b, p, depth):
    """RBO's defining sum (1 - p) Σ_d p^(d-1) A_d, evaluated far beyond both lists, where a list
    that has ended is extended by items that occur in no other list (the 'uneven' case)."""
    total = 0.0
    for d in range(1, depth + 1):
        total += p ** (d - 1) * len(set(a[:d]) & set(b[:d])) / d
    return (1 - p) * total


def test_rbo_extremes_and_symmetry():
    assert rbo(list("abcde"), list("abcde")) == pytest.approx(1.0)
    assert rbo(list("abc"), list("xyz")) == 0.0
    assert rbo([], []) == 1.0 and rbo([], ["a"]) == 0.0
    assert rbo(list("abcd"), list("bacd"), 0.9) == pytest.approx(rbo(list("bacd"), list("abcd"), 0.9))
    with pytest.raises(ValueError, match="twice"):
        rbo(["a", "a"], ["a"])


@settings(max_examples=80, deadline=None)
@given(st.permutations(list(range(8))), st.integers(1, 8), st.sampled_from([0.5, 0.8, 0.9]))
def test_rbo_ext_bounds_the_truncated_sum_for_even_lists(order, k, p):
    """For two lists of equal length k, RBO_ext = RBO@k + A_k p^k (Webber et al. Eq. 30)."""
    a, b = list(range(8))[:k], list(order)[:k]
    overlap_k = len(set(a) & set(b)) / k
    assert close(rbo(a, b, p), _rbo_truncated(a, b, p, k) + overlap_k * p ** k)


def test_rbo_uneven_lists_by_hand():
    # S = [a, c] (s = 2), L = [a, b, c] (l = 3), p = 0.5: X_1 = 1, X_2 = 1, X_3 = 2
    p = 0.5
    expected = (1 - p) / p * (1 * p + 1 / 2 * p ** 2 + 2 / 3 * p ** 3 + 1 * (3 - 2) / (2 * 3) * p ** 3) + ((2 - 1) / 3 + 1 / 2) * p ** 3
    assert close(rbo(["a", "c"], ["a", "b", "c"], p), expected)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 4)), max_size=9),
                min_size=1, max_size=5),
       st.lists(st.integers(0, 10), min_size=1, max_size=4), st.booleans())
def test_texfair_of_prefixes_equals_texfair_of_each_prefix_alone(docs, cuts, use_rbdf):
    """One pass over every cut-off gives what each top-k list gives on its own (Eq. 8-13)."""
    rows = [d for lst in docs for d in lst]
    counts = np.array([[a, b] for a, b, _ in rows], dtype=float).reshape(-1, 2)
    lengths = np.array([a + b + extra for a, b, extra in rows], dtype=float)
    sizes = np.array([len(lst) for lst in docs])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    prefixes = np.minimum(np.array(cuts)[None, :], sizes[:, None])
    ted_all, texfair_all = texfair_lists(counts, lengths, [0.5, 0.5], offsets, use_rbdf, prefixes=prefixes)
    for j in range(prefixes.shape[1]):
        keep = np.concatenate([np.arange(a, a + n) for a, n in zip(offsets[:-1], prefixes[:, j])]).astype(int)
        head_offsets = np.concatenate([[0], np.cumsum(prefixes[:, j])])
        ted_one, texfair_one = texfair_lists(counts[keep], lengths[keep], [0.5, 0.5], head_offsets, use_rbdf)
        np.testing.assert_allclose(ted_all.value[:, j], ted_one.value, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(texfair_all.value[:, j], texfair_one.value, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(ted_all.degenerate[:, j], ted_one.degenerate)


def test_texfair_prefixes_must_lie_within_the_lists():
    with pytest.raises(ValueError, match="prefixes"):
        texfair_lists(np.ones((3, 2)), np.full(3, 4.0), [0.5, 0.5], [0, 3], prefixes=[[4]])
