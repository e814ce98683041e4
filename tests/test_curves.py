"""The audit's curves: bias against the cut-off k, the relevance/bias trade-off over Lambda, equal-cost points."""

from __future__ import annotations

import warnings

import ir_measures
import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from ir_measures import nDCG

import pairmeasures as pm
from pairmeasures.audit.curves import cutoff_curves, equal_cost, tradeoff_curve

COLUMNS = ["method", "Lambda", "relevance", "bias", "relevance_low", "relevance_high", "bias_low", "bias_high", "n"]


def result_frame(queries: int, docs: int, seed: int, dim: int = 0) -> pd.DataFrame:
    """A PyTerrier result frame in rank order with polarity and group columns (query q0's polarities all equal)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "qid": np.repeat([f"q{i}" for i in range(queries)], docs),
        "docno": [f"d{j % (queries * docs)}" for j in range(queries * docs)],
        "score": np.tile(np.arange(docs, 0, -1, dtype=float), queries),
        "rank": np.tile(np.arange(docs), queries),
        "polarity": rng.normal(size=queries * docs),
        "group": rng.choice(["pro", "con"], queries * docs),
    })
    frame.loc[frame["qid"] == "q0", "polarity"] = 0.25
    if dim:
        vectors = rng.normal(size=(queries * docs, dim))
        frame["doc_vec"] = list(vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    return frame


def judgements(run: pd.DataFrame, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"qid": run["qid"], "docno": run["docno"], "label": rng.choice([0, 0, 1, 2], len(run))})


def test_cutoff_curves_are_the_means_over_measured_queries_of_each_family_at_each_k():
    runs = {"a": result_frame(6, 12, 0), "b": result_frame(6, 12, 1)}
    qrels = judgements(runs["a"], 2)
    curves = cutoff_curves(runs, qrels, ["Duo", "rKL", "Duo(step=2)"], ks=range(1, 13))
    assert list(curves.columns) == ["system", "measure", "k", "value", "n"]
    assert not curves["value"].isna().any()
    for (system, family, k), row in curves.set_index(["system", "measure", "k"]).iterrows():
        measure = ir_measures.parse_measure(f"{family}@{k}")(degenerate="exclude")
        ir_run = runs[system].rename(columns={"qid": "query_id", "docno": "doc_id"})
        ir_qrels = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
            values = np.array([m.value for m in ir_measures.iter_calc([measure], ir_qrels, ir_run)])
        assert row["n"] == np.count_nonzero(~np.isnan(values))
        assert row["value"] == pytest.approx(np.nanmean(values))
    duo = curves[(curves["system"] == "a") & (curves["measure"] == "Duo")]
    assert list(duo["k"]) == list(range(3, 13))  # Duo@1 and @2 measure nothing: no rows
    assert set(duo["n"]) == {5}  # q0's equal polarities are excluded at every k and counted
    assert set(curves["measure"]) == {"Duo", "rKL", "Duo(step=2)"}


@pytest.mark.parametrize("families", [
    ["TExFAIR", "TED(rbdf=False)", "TED(rel=1)"],
    ["rKL", "rND(protected='pro')", "rRD(step=2)", "rKL(rel=1, normalization='max')"],
])
def test_families_taken_in_one_pass_match_each_cutoff_evaluated_alone(families):
    """Each family's cut-offs come from one prepared pass (term counts once, prefix sums); every point must equal
    ir_measures' per-k evaluation."""
    runs = {"a": result_frame(8, 15, 7), "b": result_frame(8, 15, 8)}
    words = np.array(["he", "she", "him", "her", "the", "debate"], dtype=object)
    rng = np.random.default_rng(9)
    for run in runs.values():
        run["text"] = [" ".join(row) for row in words[rng.integers(0, words.size, size=(len(run), 5))]]
        run.loc[run.index[::7], "group"] = "pro"  # some queries lose "con" in the top k
    qrels = judgements(runs["a"], 10)
    ks = [1, 2, 3, 5, 8, 14, 15, 20]
    curves = cutoff_curves(runs, qrels, families, ks=ks)
    expected_rows = 0
    for system, run in runs.items():
        ir_run = run.rename(columns={"qid": "query_id", "docno": "doc_id"})
        ir_qrels = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
        for family in families:
            for k in ks:
                measure = ir_measures.parse_measure(f"{family}@{k}")(degenerate="exclude")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
                    values = np.array([m.value for m in ir_measures.iter_calc([measure], ir_qrels, ir_run)])
                row = curves[(curves["system"] == system) & (curves["measure"] == family) & (curves["k"] == k)]
                if np.isnan(values).all():
                    assert row.empty
                    continue
                expected_rows += 1
                assert row["n"].item() == np.count_nonzero(~np.isnan(values)), (system, family, k)
                assert row["value"].item() == pytest.approx(np.nanmean(values), rel=1e-12, abs=1e-12), (system, family, k)
    assert len(curves) == expected_rows


def test_cutoff_curves_keep_an_explicit_degenerate_setting_and_take_ir_measures_frames():
    run = result_frame(4, 6, 3).rename(columns={"qid": "query_id", "docno": "doc_id"})
    qrels = judgements(result_frame(4, 6, 3), 4).rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    with pytest.warns(pm.DegenerateQueryWarning):
        expected = ir_measures.calc_aggregate([pm.Duo(degenerate="default") @ 2], qrels, run)
    curves = cutoff_curves({"x": run}, qrels, ["Duo(degenerate='default')"], ks=[2, 5])
    assert list(curves["k"]) == [2, 5] and list(curves["n"]) == [4, 4]
    assert curves["value"].iloc[0] == pytest.approx(expected[pm.Duo(degenerate="default") @ 2])


@pytest.mark.parametrize("families, ks, message", [
    (["Duo@10"], range(1, 5), "without a cut-off"),
    (["nDCG"], range(1, 5), "not a pairmeasures bias measure"),
    (["Dou"], range(1, 5), "does not parse"),
    ("Duo", range(1, 5), "non-empty list"),
    (["Duo"], [0, 1], "positive integer"),
    (["Duo"], [], "positive integer"),
])
def test_cutoff_curves_reject_bad_families_and_cutoffs(families, ks, message):
    run = result_frame(2, 4, 0)
    with pytest.raises(ValueError, match=message):
        cutoff_curves({"a": run}, judgements(run, 0), families, ks=ks)


def test_cutoff_curves_name_a_run_that_is_not_a_frame_or_lacks_a_side_column():
    run = result_frame(2, 4, 0)
    with pytest.raises(ValueError, match="system 'b': .*'polarity' column"):
        cutoff_curves({"a": run, "b": run.drop(columns="polarity")}, judgements(run, 0), ["Duo"])
    with pytest.raises(ValueError, match="system 'b'"):
        cutoff_curves({"a": run, "b": [1, 2]}, judgements(run, 0), ["Duo"])  # type: ignore[dict-item]


def mmr(Lambda: float) -> pt.Transformer:
    """pyterrier_dr's MMR; at Lambda=1 (the input order) the input itself: MmrScorer computes 0 * inf there and
    repeats documents."""
    from pyterrier_dr import MmrScorer

    return MmrScorer(Lambda=Lambda) if Lambda < 1 else pt.Transformer.identity()


@pytest.fixture(scope="module")
def curve_inputs():
    base = result_frame(40, 20, 5, dim=8)
    qrels = judgements(base, 6)
    methods = {
        "DuoGreedy": lambda Lambda: pm.DuoGreedy(Lambda=Lambda, k=10),
        "MMR": lambda Lambda: pt.RankCutoff(10) >> mmr(Lambda),
    }
    curve = tradeoff_curve(base, qrels, methods, resamples=300)
    return base, qrels, methods, curve


def test_tradeoff_curve_has_one_row_per_method_and_lambda_with_intervals(curve_inputs):
    base, qrels, methods, curve = curve_inputs
    assert list(curve.columns) == COLUMNS
    assert len(curve) == 14
    assert list(curve["method"]) == ["DuoGreedy"] * 7 + ["MMR"] * 7
    assert list(curve["Lambda"]) == [0, .1, .25, .5, .75, .9, 1] * 2
    assert (curve["n"] == 39).all()  # q0's equal polarities: excluded from Duo@10, counted
    for measure in ("relevance", "bias"):
        assert (curve[f"{measure}_low"] <= curve[measure]).all() and (curve[measure] <= curve[f"{measure}_high"]).all()
    assert (curve["relevance_low"] < curve["relevance_high"]).all()
    assert (curve["bias_low"] < curve["bias_high"]).sum() >= 12  # DuoGreedy at Lambda=0: DUO = 0 on every query


def test_duogreedy_at_lambda_one_reproduces_the_base_relevance_and_bias_falls_with_lambda(curve_inputs):
    base, qrels, methods, curve = curve_inputs
    ir_qrels = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    ir_base = base.rename(columns={"qid": "query_id", "docno": "doc_id"})
    with pytest.warns(pm.DegenerateQueryWarning):
        expected = ir_measures.calc_aggregate([nDCG @ 10, pm.Duo(degenerate="exclude") @ 10], ir_qrels, ir_base)
    greedy = curve[curve["method"] == "DuoGreedy"].set_index("Lambda")
    assert greedy.loc[1.0, "relevance"] == pytest.approx(expected[nDCG @ 10])
    assert greedy.loc[1.0, "bias"] == pytest.approx(expected[pm.Duo(degenerate="exclude") @ 10])
    bias = greedy["bias"].sort_index(ascending=False).to_numpy()  # Lambda 1 -> 0
    assert (np.diff(bias) <= 1e-9).all(), bias
    assert bias[-1] < bias[0] - 0.1


def test_tradeoff_curve_is_seeded_and_pairs_the_resamples(curve_inputs):
    base, qrels, methods, curve = curve_inputs
    again = tradeoff_curve(base, qrels, {"DuoGreedy": methods["DuoGreedy"]}, lambdas=(0.5, 1), resamples=300)
    other = tradeoff_curve(base, qrels, {"DuoGreedy": methods["DuoGreedy"]}, lambdas=(0.5, 1), resamples=300, seed=1)
    mine = curve[(curve["method"] == "DuoGreedy") & curve["Lambda"].isin([0.5, 1])].reset_index(drop=True)
    pd.testing.assert_frame_equal(again, mine)
    assert not np.allclose(other["bias_low"], mine["bias_low"])


def test_the_top_ranked_rows_give_the_audit_the_same_curve():
    """The audit hands the trade-off each query's first max(k, depth the measures read) rows by rank only
    (audit.tradeoff.top_ranked): DuoGreedy and TopKMMR reorder the top k and keep the rest below, so the curve is
    the very same, bit for bit, from a shuffled run of 20 rows a query cut to 10."""
    from pairmeasures.audit.tradeoff import top_ranked

    base = result_frame(40, 20, 7, dim=8).sample(frac=1, random_state=0)
    qrels = judgements(base, 8)
    methods = {"DuoGreedy": lambda Lambda: pm.DuoGreedy(Lambda=Lambda, k=10),
               "MMR": lambda Lambda: pm.TopKMMR(Lambda=Lambda, k=10)}
    cut = top_ranked(base, 10)
    assert len(cut) == 400 and (cut["rank"] < 10).all() and list(cut.index) == [i for i in base.index if i in cut.index]
    assert top_ranked(base, None) is base and top_ranked(base, 20) is base
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole, part = (tradeoff_curve(run, qrels, methods, lambdas=(0, 0.5, 1), resamples=200) for run in (base, cut))
    pd.testing.assert_frame_equal(whole, part, check_exact=True)


def test_tradeoff_curve_checks_its_arguments(curve_inputs):
    base, qrels, methods, _ = curve_inputs
    with pytest.raises(ValueError, match="lambdas"):
        tradeoff_curve(base, qrels, methods, lambdas=(0.5, 2))
    with pytest.raises(ValueError, match="at least one method"):
        tradeoff_curve(base, qrels, {})
    with pytest.raises(ValueError, match="not a pairmeasures bias measure"):
        tradeoff_curve(base, qrels, methods, bias="P@10")
    with pytest.raises(ValueError, match="resamples"):
        tradeoff_curve(base, qrels, methods, resamples=0)
    with pytest.raises(ValueError, match=r"methods\['x'\]\(0.5\) returned a float"):
        tradeoff_curve(base, qrels, {"x": lambda Lambda: Lambda}, lambdas=(0.5,))


def test_equal_cost_interpolates_where_relevance_first_falls_by_the_drop():
    curve = pd.DataFrame({
        "method": ["A"] * 4 + ["B"] * 3,
        "Lambda": [1, .5, 0, .75, 1, .5, 0],
        "relevance": [.50, .44, .30, .49, .50, .49, .485],
        "bias": [.40, .20, .10, .30, .40, .35, .30],
    })
    points = equal_cost(curve, "A", "B", 0.02)
    assert list(points["method"]) == ["A", "B"]
    a, b = points.iloc[0], points.iloc[1]
    # A: 0.49 at Lambda .75, 0.44 at .5; the floor 0.48 lies a fifth of the way: Lambda .70, bias .30 - .2 * .10
    assert (a["Lambda"], a["relevance"], a["bias"]) == pytest.approx((0.70, 0.48, 0.28))
    # B never falls by 0.02: its lowest Lambda
    assert (b["Lambda"], b["relevance"], b["bias"]) == pytest.approx((0.0, 0.485, 0.30))
    assert equal_cost(curve, "A", "B", 0.0).iloc[0]["Lambda"] == pytest.approx(1.0)


def test_equal_cost_names_what_is_missing():
    curve = pd.DataFrame({"method": ["A", "A"], "Lambda": [.5, 0], "relevance": [.5, .4], "bias": [.3, .2]})
    with pytest.raises(ValueError, match="no point at Lambda=1"):
        equal_cost(curve, "A", "A", 0.1)
    with pytest.raises(ValueError, match="no method 'B'"):
        equal_cost(curve.assign(Lambda=[1, 0]), "A", "B", 0.1)
    with pytest.raises(ValueError, match="relevance_drop"):
        equal_cost(curve, "A", "A", -0.1)
    with pytest.raises(ValueError, match="lacks the columns"):
        equal_cost(curve.drop(columns="bias"), "A", "A", 0.1)
