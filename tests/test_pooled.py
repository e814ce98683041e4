"""pm.pooled: a group measure over all queries at once equals FairRankTune fed every query's ranking as a column,
items named by (query, document). FairRankTune takes the rankings it is handed: the run's, its tied documents in the
order the run gives them, as the measures' default ``ties='system'`` does (:func:`fairranktune_input`)."""

from __future__ import annotations

import re
import warnings

import ir_measures
import numpy as np
import pandas as pd
import pytest

import pairmeasures as pm
from pairmeasures.math.group_combos import COMBOS, group_sums
from pairmeasures.measures import pooled_value
from pairmeasures.measures.group_combos import GroupComboMeasure, group_presence

FairRankTune = pytest.importorskip("FairRankTune")
from FairRankTune.Metrics.ARP import ARP as frt_ARP  # noqa: E402
from FairRankTune.Metrics.ERB import ERBE as frt_ERBE  # noqa: E402
from FairRankTune.Metrics.EXP import EXP as frt_EXP  # noqa: E402


def positions(lists: pm.RankedLists) -> np.ndarray:
    """1-based position of each row in its considered list."""
    return np.arange(len(lists)) - lists.offsets[lists.row_query] + 1


class _MeanExposure(GroupComboMeasure):
    """EXP's definition, written here so the pooling is tested apart from the built-in measures."""

    __name__ = "TestMeanExposure"
    NAME = __name__

    def group_parts(self, lists, codes, n_groups):
        exposure = 1.0 / np.log2(positions(lists) + 1.0)
        shape = (lists.row_query, codes, lists.query_ids.size, n_groups)
        return group_sums(exposure, *shape), group_sums(np.ones(len(lists)), *shape)


class _RBPExposure(GroupComboMeasure):
    """ERBE's definition (decay 0.5): added over the rankings."""

    __name__ = "TestRBPExposure"
    NAME = __name__
    POOLING = "sum"

    def group_parts(self, lists, codes, n_groups):
        exposure = 0.5 * 0.5 ** (positions(lists) - 1.0)
        numerator = group_sums(exposure, lists.row_query, codes, lists.query_ids.size, n_groups)
        return numerator, np.ones_like(numerator)


class _FavouredPairs(GroupComboMeasure):
    """ARP's favoured-pair representation: per query, (pairs the group wins over other groups) / (|g| (n - |g|))."""

    __name__ = "TestFavouredPairs"
    NAME = __name__
    POOLING = "sum"
    ZERO_DENOMINATOR = "a group has no document of another group to be compared with"

    def group_parts(self, lists, codes, n_groups):
        n_queries = lists.query_ids.size
        below = (lists.lengths[lists.row_query] - positions(lists)).astype(float)
        size = group_sums(np.ones(len(lists)), lists.row_query, codes, n_queries, n_groups)
        favoured = group_sums(below, lists.row_query, codes, n_queries, n_groups) - size * (size - 1) / 2
        mixed = size * (lists.lengths[:, None] - size)
        return favoured, np.where(group_presence(lists, codes, n_groups), mixed, 0.0)


def random_run(seed: int, n_queries: int, n_groups: int, depth: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        n = int(rng.integers(2, depth + 1))
        scores = rng.integers(0, 4, size=n).astype(float)  # ties
        groups = rng.integers(0, n_groups, size=n)
        groups[:2] = [0, 1]  # two groups at least in every query
        rows += [{"query_id": f"q{q}", "doc_id": f"d{j}", "score": s, "group": f"g{g}"}
                 for j, (s, g) in enumerate(zip(scores, groups))]
    return pd.DataFrame(rows)


def fairranktune_input(run: pd.DataFrame, cutoff: int) -> tuple[pd.DataFrame, dict]:
    """Every query's considered documents in the run's order (score descending, tied documents in the run's row
    order), as one column of items (query, document), and the items' groups."""
    ordered = run.sort_values(["query_id", "score"], ascending=[True, False], kind="stable")
    top = ordered.groupby("query_id", sort=False).head(cutoff)
    columns = {q: pd.Series([(q, d) for d in frame["doc_id"]]) for q, frame in top.groupby("query_id", sort=False)}
    groups = {(q, d): g for q, d, g in zip(top["query_id"], top["doc_id"], top["group"])}
    return pd.DataFrame(columns), groups


@pytest.mark.parametrize("seed, n_groups, cutoff", [(0, 2, 5), (1, 3, 10), (2, 5, 3), (3, 4, 20)])
@pytest.mark.parametrize("combo", COMBOS)
def test_ratio_pooling_equals_fairranktune(seed, n_groups, cutoff, combo):
    run = random_run(seed, 30, n_groups, 12)
    ranking, groups = fairranktune_input(run, cutoff)
    expected, per_group = frt_EXP(ranking, groups, combo)
    measure = _MeanExposure(combo=combo) @ cutoff
    result = pooled_value(measure, run)
    assert result.value == pytest.approx(expected, abs=1e-12, rel=1e-12)
    assert {str(g): v for g, v in result.groups.items()} == pytest.approx(
        {str(g): v for g, v in per_group.items()}, abs=1e-12)
    assert pm.pooled(measure, run) == result.value


@pytest.mark.parametrize("seed, n_groups, cutoff", [(4, 2, 5), (5, 3, 10), (6, 5, 8)])
@pytest.mark.parametrize("combo", ["MaxMinDiff", "MaxAbsDiff", "LTwo", "MinMaxRatio"])
def test_sum_pooling_equals_fairranktune(seed, n_groups, cutoff, combo):
    run = random_run(seed, 25, n_groups, 12)
    ranking, groups = fairranktune_input(run, cutoff)
    expected, _ = frt_ERBE(ranking, groups, 0.5, combo)
    assert pm.pooled(_RBPExposure(combo=combo) @ cutoff, run) == pytest.approx(expected, abs=1e-12, rel=1e-12)


@pytest.mark.parametrize("seed, n_groups", [(7, 2), (8, 3), (9, 4)])
def test_summed_favoured_pairs_equal_fairranktune_ranking_by_ranking(seed, n_groups):
    """FairRankTune's ARP adds each ranking's favoured-pair representation per group, but needs every ranking to
    rank the same items (it looks every item of a group up in each ranking), so it cannot take rankings of
    different queries at once: the pooled value is compared with the sum of its per-ranking group values."""
    run = random_run(seed, 20, n_groups, 10)
    ranking, groups = fairranktune_input(run, 10)
    totals: dict = {}
    for query in ranking.columns:
        items = ranking[query].dropna().tolist()
        if len({groups[i] for i in items}) < 2:
            continue
        docs = [doc for _, doc in items]  # one ranking: its document ids name the items (ARP compares items with ==)
        _, per_group = frt_ARP(pd.DataFrame({query: docs}), {i[1]: groups[i] for i in items}, "MaxMinDiff")
        for group, value in per_group.items():
            totals[str(group)] = totals.get(str(group), 0.0) + value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)  # queries where a group fills the whole list
        result = pooled_value(_FavouredPairs() @ 10, run)
    assert {str(g): v for g, v in result.groups.items()} == pytest.approx(totals, abs=1e-12)
    values = np.array(list(totals.values()))
    assert result.value == pytest.approx(values.max() - values.min(), abs=1e-12)


def test_pooled_is_not_the_mean_of_the_queries():
    run = pd.DataFrame({"query_id": ["1"] * 3 + ["2"] * 2, "doc_id": list("abcab"), "score": [3.0, 2, 1, 2, 1],
                        "group": ["x", "y", "y", "x", "x"]})
    ranking, groups = fairranktune_input(run, 10)
    expected, _ = frt_EXP(ranking, groups, "MaxMinDiff")
    assert pm.pooled(_MeanExposure(), run) == pytest.approx(expected, abs=1e-15)
    with pytest.warns(pm.DegenerateQueryWarning, match="one group only"):
        per_query = ir_measures.calc_aggregate([_MeanExposure()], pd.DataFrame(
            {"query_id": ["1", "2"], "doc_id": ["a", "a"], "relevance": [1, 1]}), run)
    assert list(per_query.values())[0] != pytest.approx(expected)


def test_pyterrier_frames_are_taken_as_a_pipeline_returns_them():
    """A PyTerrier result frame and qrels (qid, docno, label) pool as their ir_measures-named equals."""
    run = pd.DataFrame({"query_id": ["1", "1", "2", "2"], "doc_id": ["a", "b", "a", "b"], "score": [2.0, 1, 2, 1],
                        "group": ["x", "y", "y", "x"]})
    qrels = pd.DataFrame({"query_id": ["1", "1", "2"], "doc_id": ["a", "b", "a"], "relevance": [1, 1, 1]})
    expected = pm.pooled("EXPU@10", run, qrels)
    assert expected > 0
    assert pm.pooled("EXPU@10", run.rename(columns={"query_id": "qid", "doc_id": "docno"}),
                     qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})) == expected


def test_one_group_overall_is_degenerate_with_a_warning():
    run = pd.DataFrame({"query_id": ["1", "1", "2"], "doc_id": ["a", "b", "a"], "score": [2.0, 1, 1],
                        "group": ["x", "x", "x"]})
    with pytest.warns(pm.DegenerateQueryWarning, match=r"nothing to combine \(one group only\) and gets nan"):
        assert np.isnan(pm.pooled(_MeanExposure(), run))  # left out, as a query with nothing to measure
    with pytest.warns(pm.DegenerateQueryWarning, match=r"nothing to combine \(one group only\) and gets 0.0"):
        assert pm.pooled(_MeanExposure(degenerate="default"), run) == 0.0
    with pytest.warns(pm.DegenerateQueryWarning, match="gets 1.0"):
        assert pm.pooled(_MeanExposure(combo="MinMaxRatio", degenerate="default"), run) == 1.0


def test_queries_come_from_the_qrels_when_given():
    run = pd.DataFrame({"query_id": ["1", "1", "2", "2"], "doc_id": ["a", "b", "a", "b"], "score": [2.0, 1, 2, 1],
                        "group": ["x", "y", "y", "x"]})
    qrels = pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "relevance": [1]})
    assert pm.pooled(_MeanExposure(), run) == pytest.approx(0.0, abs=1e-15)  # the two queries mirror each other
    assert pm.pooled(_MeanExposure(), run, qrels) == pytest.approx(1 - 1 / np.log2(3), abs=1e-15)


def test_measures_without_a_pooled_form_are_refused():
    run = pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "score": [1.0], "group": ["x"]})
    with pytest.raises(ValueError, match=r"rKL@10 has no pooled form: pm.pooled takes the group-exposure measures"):
        pm.pooled("rKL@10", run)


def test_bad_input_names_what_to_fix():
    run = pd.DataFrame({"qid": ["1"], "doc": ["a"], "score": [1.0], "group": ["x"]})
    with pytest.raises(pm.RunInputError, match=r"TestMeanExposure: .*doc_id"):
        pm.pooled(_MeanExposure(), run)
    run = pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "score": [1.0]})
    with pytest.raises(pm.RunInputError, match=r"reads the run's 'group' column, which it lacks"):
        pm.pooled(_MeanExposure(), run)


def utility_run(seed: int, n_groups: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    run = random_run(seed, 30, n_groups, 12)
    rng = np.random.default_rng(seed)
    run["ctr"] = rng.random(len(run))
    qrels = run[["query_id", "doc_id"]].assign(relevance=rng.integers(0, 3, size=len(run)))
    return run, qrels


def fairranktune_tables(run: pd.DataFrame, qrels: pd.DataFrame, cutoff: int, max_rel: int) -> tuple:
    """ranking_df, item_group_dict, relevance_df (utilities) and ctr_df, every query a column."""
    frame = run.merge(qrels, on=["query_id", "doc_id"])
    ranking, groups = fairranktune_input(frame, cutoff)
    utility = {(q, d): min(r, max_rel) / max_rel for q, d, r in zip(frame["query_id"], frame["doc_id"], frame["relevance"])}
    ctr = dict(zip(zip(frame["query_id"], frame["doc_id"]), frame["ctr"]))
    column = {q: ranking[q].dropna().tolist() for q in ranking.columns}
    relevance = pd.DataFrame({q: pd.Series([utility[i] for i in items]) for q, items in column.items()})
    rates = pd.DataFrame({q: pd.Series([ctr[i] for i in items]) for q, items in column.items()})
    return ranking, groups, relevance, rates


@pytest.mark.parametrize("seed, n_groups, cutoff, max_rel", [(10, 2, 5, 1), (11, 3, 10, 2), (12, 4, 8, 1)])
@pytest.mark.parametrize("combo", ["MaxMinDiff", "MeanAbsDev", "MinMaxRatio", "Variance"])
def test_builtin_measures_pool_as_fairranktune(seed, n_groups, cutoff, max_rel, combo):
    from FairRankTune.Metrics.AWRF import AWRF
    from FairRankTune.Metrics.ERB import ERBE, ERBP, ERBR
    from FairRankTune.Metrics.EXP import EXP, EXPRU, EXPU

    run, qrels = utility_run(seed, n_groups)
    r, g, u, c = fairranktune_tables(run, qrels, cutoff, max_rel)
    expected = {
        f"EXP(combo='{combo}')": EXP(r, g, combo)[0],
        f"EXPU(combo='{combo}', max_rel={max_rel})": EXPU(r, g, u, combo)[0],
        f"EXPRU(combo='{combo}', max_rel={max_rel})": EXPRU(r, g, u, c, combo)[0],
        f"ERBE(combo='{combo}', decay=0.7)": ERBE(r, g, 0.7, combo)[0],
        f"ERBP(combo='{combo}', decay=0.7)": ERBP(r, g, 0.7, combo)[0],
        f"ERBR(combo='{combo}', decay=0.7, max_rel={max_rel})": ERBR(r, g, u, 0.7, combo)[0],
        f"AWRF(form='groups', combo='{combo}', p=0.3)": AWRF(r, g, 0.3, combo)[0],
    }
    for text, value in expected.items():
        assert pm.pooled(f"{text}@{cutoff}", run, qrels) == pytest.approx(value, abs=1e-12, rel=1e-12), text


def test_builtin_arp_pools_the_per_ranking_fprs():
    run = random_run(13, 20, 3, 10)
    expected = pooled_value(_FavouredPairs() @ 10, run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        assert pooled_value("ARP@10", run).groups == pytest.approx(expected.groups, abs=1e-12)


@pytest.mark.parametrize("text, reason", [("NDKL@10", "reads only the first ranking"),
                                          ("IAA@10", "ranking by ranking"),
                                          ("AWRF@10", "the terms form compares each list with targets")])
def test_single_ranking_measures_have_no_pooled_form(text, reason):
    run = pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "score": [1.0], "group": ["x"]})
    with pytest.raises(ValueError, match=f"{re.escape(text)} has no pooled form: .*{reason}"):
        pm.pooled(text, run, pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "relevance": [1]}))


def test_utility_measures_need_qrels():
    run = random_run(14, 3, 2, 5)
    with pytest.raises(ValueError, match=r"EXPU@10 reads relevance .* pass pm.pooled\(measure, run, qrels\)"):
        pm.pooled("EXPU@10", run)


def test_a_group_without_utility_anywhere_is_degenerate():
    run = pd.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "b"], "score": [2.0, 1], "group": ["x", "y"]})
    qrels = pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "relevance": [1]})
    with pytest.warns(pm.DegenerateQueryWarning, match="zero utility"):
        assert np.isnan(pm.pooled("EXPU@10", run, qrels))  # utility measures leave undefined values out by default
    with pytest.warns(pm.DegenerateQueryWarning):
        assert pm.pooled("EXPU(degenerate='default')@10", run, qrels) == 0.0
