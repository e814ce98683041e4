"""EXP, EXPU, EXPRU, ERBE, ERBP, ERBR and AWRF(form='groups') equal FairRankTune 0.0.7 query by query, through the
provider; their degenerate queries are left out (or get documented values) with causes. FairRankTune takes the
ranking it is handed: the run's, its tied documents in the order the run gives them, as the measures' default
``ties='system'`` does (:func:`considered`)."""

from __future__ import annotations

import math
import warnings

import ir_measures
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pairmeasures as pm
from pairmeasures.math.awrf import geometric_attention
from pairmeasures.math.exposure import log_exposure, rbp_exposure
from pairmeasures.math.group_combos import COMBOS, per_group

frt = pytest.importorskip("FairRankTune.Metrics")

MAX_REL = 3
CUTOFFS = (3, 7, 20)


def random_run(seed: int, n_queries: int = 8):
    """A run with tied scores, 2-5 groups, graded and unjudged documents, click-through rates."""
    rng = np.random.default_rng(seed)
    runs, qrels = [], []
    for q in range(n_queries):
        n = int(rng.integers(2, 16))
        groups = int(rng.integers(2, 6))
        docs = [f"d{q}-{i:02d}" for i in range(n)]
        runs.append(pd.DataFrame({"query_id": f"q{q}", "doc_id": docs, "score": rng.integers(0, 5, n).astype(float),
                                  "group": rng.integers(0, groups, n), "ctr": rng.random(n)}))
        judged = rng.random(n) < 0.85
        judged[0] = True  # ir_measures evaluates the queries of the qrels
        qrels.append(pd.DataFrame({"query_id": f"q{q}", "doc_id": np.array(docs)[judged],
                                   "relevance": rng.choice([0, 1, 2, 3, 3], n)[judged]}))
    return pd.concat(runs, ignore_index=True), pd.concat(qrels, ignore_index=True)


def considered(run: pd.DataFrame, qrels: pd.DataFrame, query: str, k: int) -> pd.DataFrame:
    """The query's top k in the run's order (score descending, tied documents in the run's row order), with
    utilities."""
    rows = run[run["query_id"] == query].sort_values("score", ascending=False, kind="stable").head(k)
    rel = rows["doc_id"].map(qrels[qrels["query_id"] == query].set_index("doc_id")["relevance"]).fillna(0)
    return rows.assign(utility=np.clip(rel.to_numpy(), 0, MAX_REL) / MAX_REL)


def fairranktune(name: str, rows: pd.DataFrame, combo: str, decay: float = 0.5, p: float = 0.5,
                 clicks: str = "observed") -> float:
    """FairRankTune's value of one ranking: the considered documents in rank order."""
    ranking = pd.DataFrame({0: rows["doc_id"].to_numpy()})
    groups = dict(zip(rows["doc_id"], rows["group"]))
    utility = pd.DataFrame({0: rows["utility"].to_numpy()})
    if name == "EXP":
        return frt.EXP(ranking, groups, combo)[0]
    if name == "EXPU":
        return frt.EXPU(ranking, groups, utility, combo)[0]
    if name == "EXPRU":
        rates = rows["ctr"].to_numpy() if clicks == "observed" else rows["utility"].to_numpy() / np.log2(np.arange(len(rows)) + 2)
        return frt.EXPRU(ranking, groups, utility, pd.DataFrame({0: rates}), combo)[0]
    if name == "ERBE":
        return frt.ERBE(ranking, groups, decay, combo)[0]
    if name == "ERBP":
        return frt.ERBP(ranking, groups, decay, combo)[0]
    if name == "ERBR":
        return frt.ERBR(ranking, groups, utility, decay, combo)[0]
    assert name == "AWRF"
    return frt.AWRF(ranking, groups, p, combo)[0]


MEASURES = {
    "EXP": lambda combo: pm.EXP(combo=combo),
    "EXPU": lambda combo: pm.EXPU(combo=combo, max_rel=MAX_REL),
    "EXPRU": lambda combo: pm.EXPRU(combo=combo, max_rel=MAX_REL),
    "ERBE": lambda combo: pm.ERBE(combo=combo),
    "ERBP": lambda combo: pm.ERBP(combo=combo),
    "ERBR": lambda combo: pm.ERBR(combo=combo, max_rel=MAX_REL),
    "AWRF": lambda combo: pm.AWRF(form="groups", combo=combo),
}
UTILITY_DENOMINATOR = {"EXPU", "EXPRU", "ERBR"}


def per_query(measures, qrels, run, quiet: bool = True) -> dict[str, dict[str, float]]:
    """measure -> judged query -> value, NaN for a query the measure left out (not yielded)."""
    values: dict[str, dict[str, float]] = {str(m): {q: math.nan for q in qrels["query_id"]} for m in measures}
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        for result in ir_measures.iter_calc(measures, qrels, run):
            assert not math.isnan(result.value)
            values[str(result.measure)][result.query_id] = result.value
    return values


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_measure_and_combo_equals_fairranktune_on_random_runs(seed):
    run, qrels = random_run(seed)
    wanted = {(name, combo, k): make(combo) @ k
              for name, make in MEASURES.items() for combo in COMBOS for k in CUTOFFS}
    ours = per_query(list(wanted.values()), qrels, run)
    compared = 0
    for (name, combo, k), measure in wanted.items():
        for query in run["query_id"].unique():
            rows = considered(run, qrels, query, k)
            value = ours[str(measure)][query]
            zero_utility = name in UTILITY_DENOMINATOR and (rows.groupby("group")["utility"].sum() == 0).any()
            with np.errstate(divide="ignore", invalid="ignore"):
                expected = fairranktune(name, rows, combo)
            if rows["group"].nunique() < 2 or zero_utility or not np.isfinite(expected):
                assert np.isnan(value), (measure, query, value, expected)  # degenerate: excluded
                continue
            assert value == pytest.approx(expected, rel=1e-12, abs=1e-12), (measure, query)
            compared += 1
    assert compared > 0.6 * len(wanted) * run["query_id"].nunique()


def test_parameters_reach_fairranktune():
    run, qrels = random_run(7)
    wanted = {("ERBE", 0.8): pm.ERBE(decay=0.8, combo="LTwo") @ 10,
              ("ERBP", 0.2): pm.ERBP(decay=0.2) @ 10,
              ("ERBR", 0.95): pm.ERBR(decay=0.95, max_rel=MAX_REL) @ 10,
              ("AWRF", 0.3): pm.AWRF(form="groups", p=0.3, combo="Variance") @ 10,
              ("AWRF", 1.0): pm.AWRF(form="groups", p=1) @ 10,
              ("EXPRU", None): pm.EXPRU(clicks="position", max_rel=MAX_REL) @ 10}
    ours = per_query(list(wanted.values()), qrels, run)
    for (name, parameter), measure in wanted.items():
        for query in run["query_id"].unique():
            rows = considered(run, qrels, query, 10)
            if np.isnan(ours[str(measure)][query]) or rows["group"].nunique() < 2:
                continue
            options = {"decay": parameter} if name.startswith("ERB") else {"p": parameter} if name == "AWRF" else \
                {"clicks": "position"}
            expected = fairranktune(name, rows, measure.param("combo"), **options)
            assert ours[str(measure)][query] == pytest.approx(expected, rel=1e-12, abs=1e-12), (measure, query)


def test_relevance_threshold_keeps_judged_documents_in_rank_order():
    run, qrels = random_run(3)
    measure = pm.EXP(rel=2) @ 10
    ours = per_query([measure], qrels, run)[str(measure)]
    for query in run["query_id"].unique():
        rows = considered(run, qrels, query, 10)
        rows = rows[rows["utility"] >= 2 / MAX_REL]
        if rows["group"].nunique() >= 2:
            assert ours[query] == pytest.approx(fairranktune("EXP", rows, "MaxMinDiff"), rel=1e-12, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 4), min_size=0, max_size=12), min_size=1, max_size=6),
       st.floats(0.05, 0.95))
def test_per_group_sums_equal_a_loop(lists, decay):
    codes = np.array([c for lst in lists for c in lst], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum([len(lst) for lst in lists])]).astype(np.int64)
    ranks = np.concatenate([np.arange(1, len(lst) + 1) for lst in lists]).astype(float)
    weights = rbp_exposure(ranks, decay)
    expected = np.zeros((len(lists), 5))
    for q, lst in enumerate(lists):
        for r, code in enumerate(lst, start=1):
            expected[q, code] += (1 - decay) * decay ** (r - 1)
    assert per_group(weights, offsets, codes, 5) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_position_weights():
    assert log_exposure([1, 3]) == pytest.approx([1.0, 0.5])
    assert rbp_exposure([1, 2, 3], 0.5) == pytest.approx([0.5, 0.25, 0.125])
    assert geometric_attention([1, 2], 0.25) == pytest.approx([25.0, 18.75])
    assert geometric_attention(np.arange(1, 200), 0.5).sum() == pytest.approx(100.0)  # all attention, in percent
    with pytest.raises(ValueError, match="decay must be in"):
        rbp_exposure([1], 1.0)


ONE_GROUP = pd.DataFrame({"query_id": ["a", "a", "b", "b", "b"], "doc_id": ["a1", "a2", "b1", "b2", "b3"],
                          "score": [2.0, 1.0, 3.0, 2.0, 1.0], "group": ["x", "x", "x", "y", "x"],
                          "ctr": [0.1, 0.2, 0.3, 0.4, 0.5]})
QRELS = pd.DataFrame({"query_id": ["a", "a", "b", "b", "b"], "doc_id": ["a1", "a2", "b1", "b2", "b3"],
                      "relevance": [1, 1, 1, 0, 1]})


@pytest.mark.parametrize("measure,value,cause", [
    (pm.EXP @ 5, 0.0, "one group only"),
    (pm.EXP(combo="MinMaxRatio") @ 5, 1.0, "one group only"),
    (pm.ERBE(combo="MaxMinRatio") @ 5, 1.0, "one group only"),
    (pm.AWRF(form="groups", combo="LTwo") @ 5, 0.0, "one group only"),  # FairRankTune: the one group's value
])
def test_one_group_is_degenerate(measure, value, cause):
    with pytest.warns(pm.DegenerateQueryWarning, match=cause):
        assert math.isnan(per_query([measure], QRELS, ONE_GROUP, quiet=False)[str(measure)]["a"])  # left out
    documented = measure(degenerate="default")
    with pytest.warns(pm.DegenerateQueryWarning, match=cause):
        assert per_query([documented], QRELS, ONE_GROUP, quiet=False)[str(documented)]["a"] == value


@pytest.mark.parametrize("measure", [pm.EXPU @ 5, pm.EXPRU @ 5, pm.ERBR @ 5, pm.ERBR(combo="MinMaxRatio") @ 5])
def test_group_without_utility_is_left_out_unless_asked(measure):
    """Group y of query b has no relevant document: FairRankTune divides by 0 (inf or nan). Here the query is
    degenerate and, for these measures, left out of the mean by default: counting it as fair would let sparse
    judgements pass for fairness."""
    with pytest.warns(pm.DegenerateQueryWarning, match="a group has no relevant document"):
        value = per_query([measure], QRELS, ONE_GROUP, quiet=False)[str(measure)]["b"]
    assert math.isnan(value)
    counted = measure(degenerate="default")
    with pytest.warns(pm.DegenerateQueryWarning, match="a group has no relevant document"):
        value = per_query([counted], QRELS, ONE_GROUP, quiet=False)[str(counted)]["b"]
    assert value == (1.0 if measure.param("combo") == "MinMaxRatio" else 0.0)


def test_zero_click_group_with_max_min_ratio_is_left_out():
    """A group never clicked although relevant: FairRankTune's MaxMinRatio is inf, the least fair case. No finite
    value stands for it, so MaxMinRatio leaves such queries out unless degenerate='default' is asked for;
    MinMaxRatio is 0 there."""
    run = ONE_GROUP.assign(ctr=[0.1, 0.2, 0.3, 0.0, 0.5])
    qrels = QRELS.assign(relevance=1)
    with pytest.warns(pm.DegenerateQueryWarning) as caught:
        values = per_query([pm.EXPRU(combo="MaxMinRatio") @ 5, pm.EXPRU(combo="MinMaxRatio") @ 5], qrels, run, quiet=False)
    assert any("MaxMinRatio" in str(w.message) and "the combination is undefined" in str(w.message) for w in caught)
    assert math.isnan(values["EXPRU(combo='MaxMinRatio')@5"]["b"]) and values["EXPRU(combo='MinMaxRatio')@5"]["b"] == 0.0
    with pytest.warns(pm.DegenerateQueryWarning, match="2 of 2 queries"):  # nothing measured: NaN, and said so
        assert math.isnan(ir_measures.calc_aggregate([pm.EXPRU(combo="MaxMinRatio") @ 5], qrels, run)[pm.EXPRU(combo="MaxMinRatio") @ 5])


def test_click_rates_outside_the_unit_interval_name_the_document():
    run = ONE_GROUP.assign(ctr=[0.1, 0.2, 0.3, 1.5, 0.5])
    with pytest.raises(pm.RunInputError, match=r"click-through rate 1.5 of document 'b2' of query 'b' is outside \[0, 1\]"):
        ir_measures.calc_aggregate([pm.EXPRU @ 5], QRELS, run)


def test_missing_ctr_column_says_what_to_do():
    with pytest.raises(pm.RunInputError, match="EXPRU@5 reads the run's 'ctr' column"):
        ir_measures.calc_aggregate([pm.EXPRU @ 5], QRELS, ONE_GROUP.drop(columns="ctr"))
    with pytest.warns(pm.DegenerateQueryWarning, match="1: a group has no relevant document .* 1: one group only"):
        assert ir_measures.calc_aggregate([pm.EXPRU(clicks="position") @ 5], QRELS, ONE_GROUP.drop(columns="ctr"))


def test_parameters_of_the_other_form_or_click_source_are_errors():
    with pytest.raises(ValueError, match=r"combo is a parameter of form=terms, not of form='groups'|of form=groups"):
        pm.AWRF(combo="LTwo")
    with pytest.raises(ValueError, match=r"patience is a parameter of form=terms, not of form='groups'"):
        pm.AWRF(form="groups", patience=0.3)
    with pytest.raises(ValueError, match="missing='neutral' is for text"):
        pm.AWRF(form="groups", missing="neutral")
    with pytest.raises(ValueError, match="drop one of them"):
        pm.EXPRU(clicks="position", ctr="tsv:rates.tsv")
    with pytest.raises(ValueError, match="decay=1 is out of range"):
        pm.ERBE(decay=1)


def test_metadata_follows_the_parameters():
    assert pm.AWRF.side_inputs()[0].column == "text"
    assert pm.AWRF(form="groups").side_inputs()[0].column == "group"
    assert pm.AWRF(form="groups", combo="MinMaxRatio").direction() == "higher-fairer"
    assert pm.AWRF(form="groups", combo="MinMaxRatio").value_range() == "[0, 1]"
    assert [s.column for s in pm.EXPRU.side_inputs()] == ["group", "ctr"]
    assert [s.column for s in pm.EXPRU(clicks="position").side_inputs()] == ["group"]
    assert pm.EXPU.needs_relevance() and pm.ERBR.needs_relevance() and not pm.EXP.needs_relevance()
    assert pm.ERBE.POOLING == "sum" and pm.EXP.POOLING == "ratio"
    for measure in (pm.EXP, pm.EXPU, pm.EXPRU, pm.ERBE, pm.ERBP, pm.ERBR):
        assert measure.REFERENCE and measure.SHORT_DESC and "math::" in (type(measure).__doc__ or "")
        assert measure in pm.measures.BUILTIN_MEASURES


def test_parsed_from_strings_and_aggregated_with_relevance():
    run, qrels = random_run(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        table = ir_measures.calc_aggregate(
            [ir_measures.parse_measure("EXP(combo='MeanAbsDev')@10"), ir_measures.nDCG @ 10,
             ir_measures.parse_measure("AWRF(form='groups', p=0.2)@10")], qrels, run)
    assert set(map(str, table)) == {"EXP(combo='MeanAbsDev')@10", "nDCG@10", "AWRF(form='groups',p=0.2)@10"}
    assert all(np.isfinite(v) for v in table.values())


def test_experiment_reports_the_family_next_to_relevance():
    pt = pytest.importorskip("pyterrier")
    from pairmeasures.demo import load_toy

    toy = load_toy()
    systems = [pt.Transformer.from_df(toy.runs[name]) for name in toy.runs]
    measures = [pm.EXP @ 5, pm.EXPU(max_rel=2) @ 5, pm.ERBP @ 5, pm.AWRF(form="groups") @ 5, ir_measures.nDCG @ 5]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        table = pt.Experiment(systems, toy.topics, toy.qrels, eval_metrics=measures, names=list(toy.runs))
    table = table.set_index("name")
    run = toy.runs["interleaved"].rename(columns={"qid": "query_id", "docno": "doc_id"})
    qrels = toy.qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        direct = ir_measures.calc_aggregate(measures, qrels, run)
    for measure in measures:
        assert table.loc["interleaved", str(measure)] == pytest.approx(direct[measure], rel=1e-12)


def test_click_rates_from_a_resource_equal_the_same_rates_in_the_run(tmp_path):
    run, qrels = random_run(11)
    rates = tmp_path / "ctr.tsv"
    rates.write_text("corpus-id\tctr\n" + "".join(f"{d}\t{c!r}\n" for d, c in zip(run["doc_id"], 1 - run["ctr"])))
    from_resource = pm.EXPRU(ctr=f"tsv:{rates}", max_rel=MAX_REL, combo="LTwo") @ 10
    from_run = pm.EXPRU(max_rel=MAX_REL, combo="LTwo") @ 10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        resource = ir_measures.calc_aggregate([from_resource], qrels, run.drop(columns="ctr"))[from_resource]
        column = ir_measures.calc_aggregate([from_run], qrels, run.assign(ctr=1 - run["ctr"]))[from_run]
        other = ir_measures.calc_aggregate([from_run], qrels, run)[from_run]
    assert resource == pytest.approx(column, rel=1e-12) and resource != pytest.approx(other)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4), st.integers(0, 3)), min_size=2, max_size=14),
       st.sampled_from(COMBOS), st.sampled_from(sorted(MEASURES)), st.integers(1, 15))
def test_one_ranking_equals_fairranktune(rows, combo, name, k):
    """Any small ranking (score ties, 2-5 groups, graded relevance), any combo and cut-off."""
    n = len(rows)
    run = pd.DataFrame({"query_id": "q", "doc_id": [f"d{i:02d}" for i in range(n)],
                        "score": [float(s) for s, _, _ in rows], "group": [g for _, g, _ in rows],
                        "ctr": np.linspace(0.05, 0.95, n)})
    qrels = pd.DataFrame({"query_id": "q", "doc_id": run["doc_id"], "relevance": [r for _, _, r in rows]})
    measure = MEASURES[name](combo) @ k
    value = per_query([measure], qrels, run)[str(measure)]["q"]
    chosen = considered(run, qrels, "q", k)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = fairranktune(name, chosen, combo)
    zero_utility = name in UTILITY_DENOMINATOR and (chosen.groupby("group")["utility"].sum() == 0).any()
    if chosen["group"].nunique() < 2 or zero_utility or not np.isfinite(expected):
        assert np.isnan(value)
    else:
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-12)
