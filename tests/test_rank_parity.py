"""NDKL, ARP and IAA: parity with FairRankTune 0.0.7, brute force, hand-worked cases, degenerate queries.

One query is one FairRankTune ranking: the considered documents (top k of the system's ranking, tied documents in the
order the run gives them, then ``rel=``) in rank order, their groups and utilities. FairRankTune takes the ranking it
is handed, as the measures' default ``ties='system'`` does; the comparisons spell out the rest of its behaviour
(:data:`REFERENCE`): a query with nothing to measure gets the documented value (``degenerate='default'``), as
FairRankTune gives every ranking a number.
"""

from __future__ import annotations

import itertools
import math
import warnings

import ir_measures
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pairmeasures as pm
from pairmeasures.math.group_combos import COMBOS
from pairmeasures.math.parity import favoured_pair_parts, iaa_lists, ndkl_lists

frt = pytest.importorskip("FairRankTune.Metrics")


def random_run(seed: int, n_groups: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Queries of 0-12 documents, integer scores (many ties), groups among ``n_groups`` labels, graded qrels."""
    rng = np.random.default_rng(seed)
    rows, judged = [], []
    for q in range(6):
        length = int(rng.integers(0, 13))
        for d in range(length):
            doc = f"q{q}d{d:02d}"
            rows.append((f"q{q}", doc, float(rng.integers(0, 4)), f"g{rng.integers(0, n_groups)}"))
            if rng.random() < 0.7:
                judged.append((f"q{q}", doc, int(rng.integers(0, 4))))
        judged.append((f"q{q}", "unretrieved", 1))
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "group"])
    qrels = pd.DataFrame(judged, columns=["query_id", "doc_id", "relevance"])
    return run, qrels


def considered(run: pd.DataFrame, qrels: pd.DataFrame, query: str, cutoff, rel) -> pd.DataFrame:
    """The query's considered documents in the run's order (tied documents in its row order), with their qrels (NaN
    unjudged)."""
    ranked = run[run.query_id == query].sort_values("score", ascending=False, kind="stable")
    if cutoff is not None:
        ranked = ranked.head(cutoff)
    ranked = ranked.merge(qrels, on=["query_id", "doc_id"], how="left")
    if rel is not None:
        ranked = ranked[ranked.relevance >= rel]
    return ranked


def ours(measure, run, qrels) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}


def frt_inputs(docs: pd.DataFrame, max_rel: int = 1):
    ranking = pd.DataFrame({0: docs.doc_id.tolist()})
    groups = dict(zip(docs.doc_id, docs.group))
    utility = pd.DataFrame({0: (np.clip(docs.relevance.fillna(0), 0, max_rel) / max_rel).tolist()})
    return ranking, groups, utility


#: The reference behaviour the comparisons spell out (the library's default is degenerate='exclude').
REFERENCE = {"degenerate": "default"}


def build(measure, cutoff, rel, **params):
    """``measure(**REFERENCE, **params, rel=rel) @ cutoff``, leaving out what is None (MaxMinRatio keeps leaving out
    what FairRankTune makes infinite)."""
    reference = {k: v for k, v in REFERENCE.items() if not (k == "degenerate" and params.get("combo") == "MaxMinRatio")}
    measure = measure(**reference, **params, **({} if rel is None else {"rel": rel}))
    return measure @ cutoff if cutoff else measure


SETTINGS = [(seed, n_groups, cutoff, rel) for seed, n_groups in zip(range(8), [2, 3, 4, 5, 2, 3, 4, 5])
            for cutoff, rel in [(None, None), (1, None), (3, None), (5, 1), (10, None), (10, 2)]]


@pytest.mark.parametrize(("seed", "n_groups", "cutoff", "rel"), SETTINGS)
def test_ndkl_matches_fairranktune_with_its_epsilon(seed, n_groups, cutoff, rel):
    run, qrels = random_run(seed, n_groups)
    values = ours(build(pm.NDKL, cutoff, rel, eps=1e-7), run, qrels)
    exact = ours(build(pm.NDKL, cutoff, rel), run, qrels)
    for query, value in values.items():
        docs = considered(run, qrels, query, cutoff, rel)
        if docs.empty:
            assert value == 0.0
            continue
        ranking, groups, _ = frt_inputs(docs)
        expected = frt.NDKL(ranking, groups)
        assert value == pytest.approx(expected, abs=1e-12, rel=0)
        assert exact[query] == pytest.approx(expected, abs=1e-5)  # eps changes the value by about 1e-7 ln 1e-7


@pytest.mark.parametrize("combo", COMBOS)
@pytest.mark.parametrize(("seed", "n_groups", "cutoff", "rel"), SETTINGS[::3])
def test_arp_matches_fairranktune_for_every_combo(seed, n_groups, cutoff, rel, combo):
    run, qrels = random_run(seed, n_groups)
    values = ours(build(pm.ARP, cutoff, rel, combo=combo), run, qrels)
    for query, value in values.items():
        docs = considered(run, qrels, query, cutoff, rel)
        if docs.group.nunique() < 2:  # FairRankTune divides by zero
            assert value == (1.0 if combo == "MinMaxRatio" else 0.0) or (combo == "MaxMinRatio" and math.isnan(value))
            continue
        ranking, groups, _ = frt_inputs(docs)
        with np.errstate(divide="ignore"):
            expected, _ = frt.ARP(ranking, groups, combo)
        if math.isinf(expected):  # MaxMinRatio with a group at the bottom: unbounded, left out of the mean here
            assert math.isnan(value)
        else:
            assert value == pytest.approx(expected, abs=1e-12, rel=0)


@pytest.mark.parametrize("max_rel", [1, 2, 3])
@pytest.mark.parametrize(("seed", "n_groups", "cutoff", "rel"), SETTINGS[::2])
def test_iaa_matches_fairranktune(seed, n_groups, cutoff, rel, max_rel):
    run, qrels = random_run(seed, n_groups)
    values = ours(build(pm.IAA, cutoff, rel, max_rel=max_rel), run, qrels)
    for query, value in values.items():
        docs = considered(run, qrels, query, cutoff, rel)
        if docs.empty:
            assert value == 0.0
            continue
        ranking, _, utility = frt_inputs(docs, max_rel)
        assert value == pytest.approx(frt.IAA(ranking, utility), abs=1e-12, rel=0)


# --- brute force -----------------------------------------------------------------------------------------------

def ndkl_brute(groups: list[int], eps: float = 0.0, target: list[int] | None = None) -> float:
    target = groups if target is None else target
    labels = sorted(set(target))
    q = [target.count(g) / len(target) for g in labels]
    total = weight_sum = 0.0
    for i in range(1, len(groups) + 1):
        p = [groups[:i].count(g) / i for g in labels]
        kl = sum((a + eps) * math.log((a + eps) / (b + eps)) for a, b in zip(p, q) if a + eps > 0)
        weight = 1 / math.log2(i + 1)
        total, weight_sum = total + weight * kl, weight_sum + weight
    return total / weight_sum


def fpr_brute(groups: list[int], g: int) -> float:
    mixed = [(a, b) for a, b in itertools.combinations(range(len(groups)), 2) if (groups[a] == g) != (groups[b] == g)]
    return sum(groups[a] == g for a, _ in mixed) / len(mixed)


lists_of_groups = st.lists(st.lists(st.integers(0, 4), min_size=1, max_size=9), min_size=1, max_size=5)


@settings(max_examples=150, deadline=None)
@given(lists_of_groups, st.sampled_from([0.0, 1e-7, 0.01]))
def test_ndkl_equals_brute_force_on_many_lists_at_once(lists, eps):
    codes = np.array([g for groups in lists for g in groups])
    offsets = np.cumsum([0] + [len(groups) for groups in lists])
    values = ndkl_lists(codes, offsets, eps=eps)
    assert values == pytest.approx([ndkl_brute(groups, eps) for groups in lists], abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(lists_of_groups, st.lists(st.integers(0, 4), max_size=6), st.integers(1, 9))
def test_ndkl_against_a_retrieved_target_equals_brute_force(lists, extra, cutoff):
    """Target = a longer list (the prefix plus more documents, whose groups may be new)."""
    targets = [groups + extra for groups in lists]
    heads = [groups[:cutoff] for groups in lists]
    codes = np.array([g for h in heads for g in h])
    target_codes = np.array([g for t in targets for g in t])
    values = ndkl_lists(codes, np.cumsum([0] + [len(h) for h in heads]), target_codes=target_codes,
                        target_offsets=np.cumsum([0] + [len(t) for t in targets]))
    assert values == pytest.approx([ndkl_brute(h, 0.0, t) for h, t in zip(heads, targets)], abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(lists_of_groups)
def test_favoured_pair_shares_equal_counting_pairs(lists):
    codes = np.array([g for groups in lists for g in groups])
    favoured, mixed = favoured_pair_parts(codes, np.cumsum([0] + [len(groups) for groups in lists]), 5)
    for q, groups in enumerate(lists):
        for g in range(5):
            if g in groups and len(set(groups)) > 1:
                assert favoured[q, g] / mixed[q, g] == pytest.approx(fpr_brute(groups, g), abs=1e-12)
            else:
                assert mixed[q, g] == 0


@pytest.mark.parametrize(("seed", "n_groups", "cutoff", "rel"), SETTINGS[::2])
def test_ndkl_against_everything_retrieved_equals_brute_force_on_runs(seed, n_groups, cutoff, rel):
    run, qrels = random_run(seed, n_groups)
    values = ours(build(pm.NDKL, cutoff, rel, target="retrieved"), run, qrels)
    for query, value in values.items():
        retrieved = considered(run, qrels, query, None, rel).group.tolist()
        head = considered(run, qrels, query, cutoff, rel).group.tolist()
        expected = 0.0 if not head or len(set(retrieved)) < 2 else ndkl_brute(head, 0.0, retrieved)
        assert value == pytest.approx(expected, abs=1e-12)


# --- hand-worked cases -------------------------------------------------------------------------------------------

def one_query(groups: str, relevance=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    run = pd.DataFrame({"query_id": "q", "doc_id": [f"d{i}" for i in range(len(groups))],
                        "score": [float(len(groups) - i) for i in range(len(groups))], "group": list(groups)})
    relevance = relevance or [0] * len(groups)
    qrels = pd.DataFrame({"query_id": "q", "doc_id": [f"d{i}" for i in range(len(groups))], "relevance": relevance})
    return run, qrels


def test_hand_worked_ndkl():
    # [A, B]: the top 1 is (1, 0) against (1/2, 1/2): KL = ln 2; the top 2 matches: 0.
    run, qrels = one_query("AB")
    assert ours(pm.NDKL, run, qrels)["q"] == pytest.approx(math.log(2) / (1 + 1 / math.log2(3)), abs=1e-15)
    # [A, A, B, B] against (1/2, 1/2): prefixes 1 and 2 are (1, 0), ln 2; prefix 3 is (2/3, 1/3).
    run, qrels = one_query("AABB")
    kl3 = 2 / 3 * math.log(4 / 3) + 1 / 3 * math.log(2 / 3)
    weights = [1 / math.log2(i + 1) for i in range(1, 5)]
    expected = (weights[0] * math.log(2) + weights[1] * math.log(2) + weights[2] * kl3) / sum(weights)
    assert ours(pm.NDKL, run, qrels)["q"] == pytest.approx(expected, abs=1e-15)


def test_hand_worked_ndkl_against_everything_retrieved():
    run, qrels = one_query("AABB")
    # target='considered' at 1: one group, nothing to measure (0 as documented); against the retrieved: ln 2.
    assert "q" not in ours(pm.NDKL @ 1, run, qrels)
    assert ours(pm.NDKL(degenerate="default") @ 1, run, qrels)["q"] == 0.0
    assert ours(pm.NDKL(target="retrieved") @ 1, run, qrels)["q"] == pytest.approx(math.log(2), abs=1e-15)
    # at 2 the considered documents are [A, A]: every prefix is (1, 0) against (1/2, 1/2)
    assert ours(pm.NDKL(target="retrieved") @ 2, run, qrels)["q"] == pytest.approx(math.log(2), abs=1e-15)
    assert ours(pm.NDKL(target="retrieved"), run, qrels) == ours(pm.NDKL, run, qrels)


def test_hand_worked_arp():
    # [A, B, A, B]: A wins 3 of the 4 mixed pairs, B 1: FPR 3/4 and 1/4.
    run, qrels = one_query("ABAB")
    assert ours(pm.ARP, run, qrels)["q"] == pytest.approx(0.5, abs=1e-15)
    assert ours(pm.ARP(combo="MinMaxRatio"), run, qrels)["q"] == pytest.approx(1 / 3, abs=1e-15)
    assert ours(pm.ARP(combo="LTwo"), run, qrels)["q"] == pytest.approx(math.sqrt(0.75**2 + 0.25**2), abs=1e-15)
    # [A, B, C]: FPR 1, 1/2, 0; [A, B, B, A] is at parity.
    run, qrels = one_query("ABC")
    assert ours(pm.ARP(combo="MeanAbsDev"), run, qrels)["q"] == pytest.approx(1 / 3, abs=1e-15)
    run, qrels = one_query("ABBA")
    assert ours(pm.ARP, run, qrels)["q"] == 0.0


def test_hand_worked_iaa():
    # attention 1, 1/log2(3), 1/2 against utilities 1, 0, 1 (max_rel=1), or 1, 0, 1/2 (max_rel=2)
    run, qrels = one_query("ABC", [2, 0, 1])
    assert ours(pm.IAA, run, qrels)["q"] == pytest.approx(1 / math.log2(3) + 0.5, abs=1e-15)
    assert ours(pm.IAA(max_rel=2), run, qrels)["q"] == pytest.approx(1 / math.log2(3), abs=1e-15)
    assert iaa_lists(np.array([]), np.array([0, 0])).tolist() == [0.0]


def test_iaa_reads_qrels_without_rel_and_unjudged_documents_have_no_utility():
    run, qrels = one_query("AB", [1, 1])
    assert ours(pm.IAA, run, qrels.head(1))["q"] == pytest.approx(1 / math.log2(3), abs=1e-15)


def test_ties_are_ranked_by_document_id_descending_with_ties_trec_eval():
    run = pd.DataFrame({"query_id": "q", "doc_id": ["a", "b", "c"], "score": 1.0, "group": ["X", "Y", "Y"]})
    qrels = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]})
    # order c, b, a: Y, Y, X; X wins no mixed pair
    assert ours(pm.ARP(ties="trec_eval"), run, qrels)["q"] == 1.0
    assert ours(pm.IAA(ties="trec_eval"), run, qrels)["q"] == pytest.approx(1 + 1 / math.log2(3) + abs(0.5 - 1), abs=1e-15)
    # by default the order the system showed (here the rows'): a, b, c, X first: X wins both mixed pairs
    assert ours(pm.ARP, run, qrels)["q"] == 1.0
    assert ours(pm.IAA, run, qrels)["q"] == pytest.approx(abs(1 - 1) + 1 / math.log2(3) + 0.5, abs=1e-15)


# --- degenerate queries ------------------------------------------------------------------------------------------

def test_degenerate_queries_get_documented_values_and_causes():
    run = pd.DataFrame({"query_id": ["one", "one", "two", "two", "two"], "doc_id": list("abcde"),
                        "score": [2.0, 1.0, 3.0, 2.0, 1.0], "group": ["X", "X", "X", "Y", "Z"]})
    qrels = pd.DataFrame({"query_id": ["one", "two", "empty"], "doc_id": ["a", "c", "z"], "relevance": [1, 1, 1]})
    for measure, cause in [(pm.NDKL, "one group only"), (pm.ARP, "one group only"), (pm.IAA(rel=1), None)]:
        with pytest.warns(pm.DegenerateQueryWarning) as caught:
            values = {m.query_id: m.value for m in ir_measures.iter_calc([measure(degenerate="default")], qrels, run)}
        message = str(caught[0].message)
        assert "no documents" in message and (cause is None or cause in message)
        assert values["empty"] == 0.0
        if cause:
            assert values["one"] == 0.0
        with pytest.warns(pm.DegenerateQueryWarning):
            left = {m.query_id for m in ir_measures.iter_calc([measure], qrels, run)}
        assert "empty" not in left and (not cause or "one" not in left)  # by default, left out
    # MaxMinRatio: 'Z' is below every other document (FPR 0), FairRankTune's inf: left out of the mean by default
    with pytest.warns(pm.DegenerateQueryWarning, match="undefined"):
        values = {m.query_id: m.value for m in ir_measures.iter_calc([pm.ARP(combo="MaxMinRatio")], qrels, run)}
    assert "two" not in values and "one" not in values
    with pytest.warns(pm.DegenerateQueryWarning, match="undefined"):
        values = {m.query_id: m.value for m in ir_measures.iter_calc([pm.ARP(combo="MaxMinRatio", degenerate="default")],
                                                                     qrels, run)}
    assert values["two"] == 1.0 and values["one"] == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        aggregate = ir_measures.calc_aggregate([pm.NDKL(degenerate="exclude")], qrels, run)
    assert aggregate[pm.NDKL(degenerate="exclude")] == ours(pm.NDKL, run, qrels)["two"]


# --- the measures as ir_measures measures ------------------------------------------------------------------------

def test_measures_parse_and_describe_themselves():
    assert ir_measures.parse_measure("NDKL(eps=1e-7, target='retrieved')@10") == pm.NDKL(eps=1e-7, target="retrieved") @ 10
    assert ir_measures.parse_measure("ARP(combo='LTwo')@5") == pm.ARP(combo="LTwo") @ 5
    assert ir_measures.parse_measure("IAA(max_rel=3)@10") == pm.IAA(max_rel=3) @ 10
    assert pm.ARP.direction() == "lower-fairer" and pm.ARP(combo="MinMaxRatio").direction() == "higher-fairer"
    assert pm.ARP.POOLING == "sum" and pm.IAA.needs_relevance() and not pm.NDKL.needs_relevance()
    assert pm.NDKL(target="retrieved").depth() is None and (pm.NDKL @ 5).depth() == 5
    for measure in (pm.NDKL, pm.ARP, pm.IAA):
        assert measure.REFERENCE and measure.SHORT_DESC and ".. math::" in type(measure).__doc__
        assert measure in pm.measures.BUILTIN_MEASURES


@pytest.mark.parametrize(("write", "message"), [
    (lambda: pm.NDKL(eps=1), "eps=1 is out of range"),
    (lambda: pm.NDKL(target="everything"), "invalid target='everything'"),
    (lambda: pm.ARP(combo="MaxDiff"), "invalid combo='MaxDiff'"),
    (lambda: pm.IAA(max_rel=0), "max_rel=0 is out of range"),
    (lambda: pm.IAA(missing="skip"), "IAA has no parameter 'missing'"),
])
def test_bad_parameters_fail_where_written(write, message):
    with pytest.raises(ValueError, match=message):
        write()


def test_missing_group_names_the_document():
    run, qrels = one_query("AB")
    run.loc[1, "group"] = None
    with pytest.raises(pm.RunInputError, match="NDKL.*no group for document 'd1' of query 'q'"):
        ours(pm.NDKL(missing="error"), run, qrels)


def test_one_pass_through_calc_aggregate_and_pt_experiment():
    pt = pytest.importorskip("pyterrier")
    run, qrels = random_run(3, 3)
    measures = [pm.NDKL(eps=1e-7) @ 5, pm.NDKL @ 10, pm.ARP @ 5, pm.ARP(combo="Variance") @ 10, pm.IAA @ 5]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        aggregate = ir_measures.calc_aggregate(measures, qrels, run)
        system = pt.Transformer.from_df(run.rename(columns={"query_id": "qid", "doc_id": "docno"}))
        topics = pd.DataFrame({"qid": sorted(qrels.query_id.unique()), "query": "q"})
        table = pt.Experiment([system], topics, qrels.rename(columns={"query_id": "qid", "doc_id": "docno",
                                                                      "relevance": "label"}),
                              eval_metrics=measures, names=["system"])
    for measure in measures:
        per_query = ours(measure, run, qrels)
        assert aggregate[measure] == pytest.approx(np.mean(list(per_query.values())), abs=1e-12)
        assert table[str(measure)].iloc[0] == pytest.approx(aggregate[measure], abs=1e-12)
