"""Measures through the real APIs: ir_measures parsing and evaluation, side inputs, bad input."""

from __future__ import annotations

import re
import warnings

import ir_measures
import numpy as np
import pandas as pd
import pytest
from ir_measures import P, nDCG

import pairmeasures as pm
from pairmeasures.math import duo, group_fairness_lists, rkl, rnd, rrd

QRELS = list(ir_measures.read_trec_qrels("""
q1 0 a 2
q1 0 b 1
q1 0 c 0
q1 0 d 1
q2 0 f 1
q2 0 g 1
q3 0 z 1
"""))


def frame(rows, columns=("query_id", "doc_id", "score", "polarity", "group")):
    return pd.DataFrame(rows, columns=list(columns))


RUN = frame([
    ("q1", "a", 5.0, 0.9, "x"), ("q1", "b", 4.0, 0.8, "x"), ("q1", "c", 3.0, -0.7, "y"),
    ("q1", "d", 2.0, -0.9, "y"), ("q1", "e", 1.0, 0.1, "x"),
    ("q2", "f", 4.0, 1.0, "x"), ("q2", "g", 3.0, -1.0, "y"), ("q2", "h", 2.0, 1.0, "x"), ("q2", "i", 1.0, -1.0, "y"),
    ("q9", "u", 1.0, 0.5, "x"),  # not judged: ignored, as pytrec_eval does
])


def per_query(measure, qrels=QRELS, run=RUN):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}


def test_measures_parse_and_are_values():
    assert ir_measures.parse_measure("Duo(step=2)@10") == pm.Duo(step=2) @ 10
    assert repr(pm.Duo(step=1) @ 5) == "Duo@5"  # defaults are omitted
    assert ir_measures.parse_measure("rKL(kl_eps=0.001,protected='y')@10") == pm.rKL(kl_eps=0.001, protected="y") @ 10
    assert ir_measures.parse_measure("rRD(all_protected='zero')") == pm.rRD(all_protected="zero")
    assert len({pm.Duo @ 10, ir_measures.parse_measure("Duo@10")}) == 1
    assert pm.Duo @ 10 != pm.Duo @ 5


def test_invalid_parameters_fail_where_they_are_written():
    with pytest.raises(ValueError, match=r"Duo: invalid axes='median'.*one of \['max', 'mean'\]"):
        pm.Duo(axes="median")
    with pytest.raises(ValueError, match="rND has no parameter 'kl_eps'; supported: cutoff, rel"):
        ir_measures.parse_measure("rND(kl_eps=0.1)")
    with pytest.raises(ValueError, match="invalid cutoff='10'"):
        pm.Duo @ "10"


@pytest.mark.parametrize("write, message", [
    (lambda: pm.Duo(step=0), r"Duo: step=0 is out of range; step must be an int in \[1, 10000000\]"),
    (lambda: pm.Duo @ 0, r"Duo: cutoff=0 is out of range; cutoff must be an int in \[1, 10000000\]"),
    (lambda: pm.Duo @ -1, r"Duo: cutoff=-1 is out of range"),
    (lambda: ir_measures.parse_measure("Duo@0"), r"Duo: cutoff=0 is out of range"),
    (lambda: ir_measures.parse_measure("RaB@100000000"), r"RaB: cutoff=100000000 is out of range"),
    (lambda: pm.Duo @ True, r"Duo: cutoff=True is out of range"),
    (lambda: pm.rND(step=-2), r"rND: step=-2 is out of range"),
    (lambda: pm.rKL(kl_eps=1), r"rKL: kl_eps=1 is out of range; kl_eps must be a number in \[0, 1\)"),
    (lambda: pm.rKL(kl_eps=-0.1), r"rKL: kl_eps=-0.1 is out of range"),
    (lambda: pm.AWRF(patience=0), r"AWRF: patience=0 is out of range; patience must be a number in \(0, 1\]"),
    (lambda: pm.AWRF(patience=1.5), r"AWRF: patience=1.5 is out of range"),
    (lambda: pm.NFaiRR(tau=-1), r"NFaiRR: tau=-1 is out of range; tau must be a number >= 0"),
    (lambda: pm.FaiRR(tau=float("nan")), r"FaiRR: tau=nan is out of range"),
])
def test_parameter_ranges_fail_where_they_are_written(write, message):
    with pytest.raises(ValueError, match=message):
        write()


def test_parameters_at_the_ends_of_their_ranges_are_accepted():
    assert repr(pm.Duo(step=1) @ 1) == "Duo@1"
    assert repr(pm.rKL(kl_eps=0) @ 10_000_000) == "rKL@10000000"
    assert repr(pm.AWRF(patience=1)) == "AWRF(patience=1)"
    assert repr(pm.NFaiRR(tau=0)) == "NFaiRR(tau=0)"
    assert repr(pm.Duo(rel=-3)) == "Duo(rel=-3)"


def test_values_equal_the_math_on_each_query():
    values = per_query(pm.Duo @ 10)
    assert values["q1"] == pytest.approx(duo([0.9, 0.8, -0.7, -0.9, 0.1]))
    assert values["q2"] == pytest.approx(duo([1.0, -1.0, 1.0, -1.0]))
    assert "q3" not in values  # judged, nothing retrieved: nothing to measure, left out
    assert per_query(pm.Duo(degenerate="default") @ 10)["q3"] == 0.5  # or given the documented value
    assert "q9" not in values
    group = per_query(pm.rKL @ 4)
    assert group["q1"] == pytest.approx(rkl([False, False, True, True]))


def test_calc_aggregate_mixes_relevance_and_bias():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        result = ir_measures.calc_aggregate([nDCG @ 10, pm.Duo @ 10, pm.rND @ 10], QRELS, RUN)
    assert set(result) == {nDCG @ 10, pm.Duo @ 10, pm.rND @ 10}
    duo_values = per_query(pm.Duo @ 10)
    assert result[pm.Duo @ 10] == pytest.approx(np.mean(list(duo_values.values())))


def test_cutoff_applies_to_the_ranking_then_rel_filters():
    # Top 3 of q1 are a, b, c; with rel=1 only a, b remain (c is judged 0, d is beyond the cutoff).
    assert "q1" not in per_query(pm.Duo(rel=1) @ 3)  # two documents: nothing to order, left out
    assert per_query(pm.Duo(rel=1, degenerate="default") @ 3)["q1"] == 0.5
    assert per_query(pm.Duo(rel=1) @ 4)["q1"] == pytest.approx(duo([0.9, 0.8, -0.9]))
    assert per_query(pm.Duo(rel=1))["q1"] == pytest.approx(duo([0.9, 0.8, -0.9]))


def test_ties_trec_eval_follow_score_then_docno_descending():
    qrels = list(ir_measures.read_trec_qrels("q1 0 d1 1\nq1 0 d3 0\nq1 0 d2 0"))
    run = frame([("q1", "d1", 1.0, -1.0, "x"), ("q1", "d3", 1.0, 1.0, "y"), ("q1", "d2", 1.0, 0.9, "y"),
                 ("q1", "d0", 0.5, -0.9, "x")])
    # trec_eval puts d3 first among the tied documents, so P@1 = 0 there.
    assert ir_measures.calc_aggregate([P @ 1], qrels, run)[P @ 1] == 0.0
    # Same order for our measures with ties='trec_eval': d3, d2, d1, d0.
    duo_trec = pm.Duo(ties="trec_eval") @ 10
    assert per_query(duo_trec, qrels, run)["q1"] == pytest.approx(duo([1.0, 0.9, -1.0, -0.9]))
    assert per_query(pm.rND(ties="trec_eval", degenerate="default") @ 2, qrels, run)["q1"] == 0.0  # d3, d2: one group
    shuffled = run.sample(frac=1.0, random_state=3)
    assert per_query(duo_trec, qrels, shuffled) == per_query(duo_trec, qrels, run)


def test_tie_across_the_cutoff_is_resolved_by_docno():
    qrels = list(ir_measures.read_trec_qrels("q1 0 a 1\n"))
    run = frame([("q1", "a", 2.0, 1.0, "x"), ("q1", "b", 1.0, 0.5, "x"), ("q1", "c", 1.0, -0.5, "y"),
                 ("q1", "d", 1.0, -1.0, "y")])
    # Cut at 3: a, then d and c (docno descending) from the tie.
    assert per_query(pm.Duo(ties="trec_eval") @ 3, qrels, run)["q1"] == pytest.approx(duo([1.0, -1.0, -0.5]))
    # By default, the order the system showed (here the row order): a, b, c.
    assert per_query(pm.Duo @ 3, qrels, run)["q1"] == pytest.approx(duo([1.0, 0.5, -0.5]))


def test_ties_system_measures_the_order_the_system_showed():
    """ties='system' (the default): equal scores in the run's rank order (PyTerrier's column), else its row order;
    both policies in one calc_aggregate call, and through pt.Experiment."""
    qrels = list(ir_measures.read_trec_qrels("q1 0 d1 1\nq1 0 d3 0\nq1 0 d2 0"))
    run = frame([("q1", "d1", 1.0, -1.0, "x"), ("q1", "d3", 1.0, 1.0, "y"), ("q1", "d2", 1.0, 0.9, "y"),
                 ("q1", "d0", 0.5, -0.9, "x")])
    shown = pm.Duo @ 3
    assert pm.Duo(ties="system") @ 3 == shown and repr(shown) == "Duo@3"  # the default, omitted
    trec = pm.Duo(ties="trec_eval") @ 3
    assert per_query(shown, qrels, run)["q1"] == pytest.approx(duo([-1.0, 1.0, 0.9]))  # the row order: d1, d3, d2
    ranked = run.assign(rank=[2, 0, 1, 3])  # the system showed d3, d2, d1, d0
    assert per_query(shown, qrels, ranked)["q1"] == pytest.approx(duo([1.0, 0.9, -1.0]))
    assert per_query(shown, qrels, ranked.sample(frac=1.0, random_state=1)) == per_query(shown, qrels, ranked)
    ranked = run.assign(rank=[0, 2, 1, 3])  # d1, d2, d3: another value than trec_eval's d3, d2, d1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)  # Duo@2: fewer than 3 documents
        both = ir_measures.calc_aggregate([trec, shown, pm.Duo @ 2], qrels, ranked)
    assert both[trec] == pytest.approx(duo([1.0, 0.9, -1.0]))
    assert both[shown] == pytest.approx(duo([-1.0, 0.9, 1.0])) and both[shown] != both[trec]
    assert ir_measures.parse_measure("Duo(ties='trec_eval')@3") == trec
    with pytest.raises(ValueError, match="invalid ties='shown'"):
        pm.Duo(ties="shown")

    import pyterrier as pt

    topics = pd.DataFrame({"qid": ["q1"], "query": ["anything"]})
    system = pt.Transformer.from_df(ranked.rename(columns={"query_id": "qid", "doc_id": "docno"}), uniform=False)
    table = pt.Experiment([system], topics, pd.DataFrame(qrels).rename(
        columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"}), eval_metrics=[trec, shown],
        names=["s"])
    assert table.loc[0, str(shown)] == pytest.approx(both[shown])
    assert table.loc[0, str(trec)] == pytest.approx(both[trec])


def test_worst_group_and_named_protected_group():
    run = frame([("q1", "a", 6.0, 0.0, "x"), ("q1", "b", 5.0, 0.0, "x"), ("q1", "c", 4.0, 0.0, "y"),
                 ("q1", "d", 3.0, 0.0, "z"), ("q1", "e", 2.0, 0.0, "y"), ("q1", "f", 1.0, 0.0, "z")])
    labels = np.array(["x", "x", "y", "z", "y", "z"])
    expected = {g: rrd(labels == g) for g in "xyz"}
    assert per_query(pm.rRD, QRELS, run)["q1"] == pytest.approx(max(expected.values()))
    assert per_query(pm.rRD(protected="z"), QRELS, run)["q1"] == pytest.approx(expected["z"])
    with pytest.raises(pm.RunInputError, match="no document has group 'nobody'; groups seen: 'x', 'y', 'z'"):
        per_query(pm.rND(protected="nobody"), QRELS, run)


def test_two_groups_rnd_does_not_depend_on_the_protected_choice():
    assert per_query(pm.rND(protected="x"))["q1"] == pytest.approx(per_query(pm.rND(protected="y"))["q1"])
    assert per_query(pm.rND)["q1"] == pytest.approx(rnd([False, False, True, True, False]))


def test_numeric_group_labels_match_protected_given_as_text():
    run = RUN.assign(group=RUN["group"].map({"x": 1, "y": 0}))
    assert per_query(pm.rRD(protected="1"), QRELS, run) == per_query(pm.rRD(protected="x"))


def test_reference_options_reach_the_math():
    mask = np.array([True, True, False, False, True])  # q1's groups x, x, y, y, x with x protected
    expected = group_fairness_lists(mask, [0, 5], "rkl", normalization="max", kl_eps=0.001).value[0]
    assert per_query(pm.rKL(protected="x", normalization="max", kl_eps=0.001))["q1"] == pytest.approx(expected)


def test_multi_axis_polarity_takes_the_most_biased_axis():
    run = RUN.assign(polarity=[(p, -p * p) for p in RUN["polarity"]])
    q1 = np.array([(p, -p * p) for p in [0.9, 0.8, -0.7, -0.9, 0.1]])
    per_axis = duo(q1)
    assert per_query(pm.Duo, QRELS, run)["q1"] == pytest.approx(per_axis.max())
    assert per_query(pm.Duo(axes="mean"), QRELS, run)["q1"] == pytest.approx(per_axis.mean())


def test_signed_duo_measure():
    leaning = [0.9, 0.8, 0.7, -0.9, -0.8]
    run = frame([("q1", d, 5.0 - i, p, "x") for i, (d, p) in enumerate(zip("abcde", leaning))])
    values = per_query(pm.Duo(signed=True) @ 10, QRELS, run)
    assert values["q1"] == pytest.approx(duo(leaning, signed=True))
    assert values["q1"] == pytest.approx(duo(leaning)) and values["q1"] > 0
    flipped = per_query(pm.Duo(signed=True) @ 10, QRELS, run.assign(polarity=-run["polarity"]))
    assert flipped["q1"] == pytest.approx(-values["q1"])


def test_degenerate_queries_are_reported_once_per_measure():
    with pytest.warns(pm.DegenerateQueryWarning, match=re.escape(
            "Duo@10: 1 of 3 queries had nothing to measure and were left out (no value, not in the mean): 1: no "
            "documents (e.g. 'q3'). Measured(of='Duo@10') counts the measured queries.")) as record:
        ir_measures.calc_aggregate([pm.Duo @ 10], QRELS, RUN)
    assert len([w for w in record if issubclass(w.category, pm.DegenerateQueryWarning)]) == 1
    with pytest.warns(pm.DegenerateQueryWarning, match=re.escape(
            "Duo(degenerate='default')@10: 1 of 3 queries had nothing to measure and got 0.5, counted in the mean: 1: "
            "no documents (e.g. 'q3'). degenerate='exclude' leaves them out of the mean.")):
        ir_measures.calc_aggregate([pm.Duo(degenerate="default") @ 10], QRELS, RUN)


def test_pyterrier_named_frames_are_told_to_rename():
    pt_run = RUN.rename(columns={"query_id": "qid", "doc_id": "docno"})
    with pytest.raises(pm.RunInputError, match=re.escape(
            "Duo@10: the run has PyTerrier's column names (found ['qid', 'docno', 'score', 'polarity', 'group']): "
            "rename qid -> query_id, docno -> doc_id, e.g. run.rename(columns={'qid': 'query_id', 'docno': 'doc_id'}); "
            "pt.Experiment does this for you")):
        ir_measures.calc_aggregate([pm.Duo @ 10], QRELS, pt_run)
    pt_qrels = pd.DataFrame(QRELS).rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
    with pytest.raises(ValueError, match=re.escape("rKL@10: the qrels have PyTerrier's column names (found ['qid', "
                                                   "'docno', 'label', 'iteration']): rename qid -> query_id, docno -> "
                                                   "doc_id, label -> relevance, e.g. qrels.rename(")):
        ir_measures.calc_aggregate([pm.rKL @ 10], pt_qrels, RUN)


def test_run_without_scores_says_what_carries_them():
    with pytest.raises(pm.RunInputError, match=r"Duo@10, rKL@10: the run has no 'score' column .*fifth column of a TREC "
                                               r"run file, ScoredDoc\(query_id, doc_id, score\).*add score = -rank$"):
        ir_measures.calc_aggregate([pm.Duo @ 10, pm.rKL @ 10], QRELS, RUN.drop(columns="score").assign(rank=0))


class _GroupPlugin(pm.PairMeasure):
    """A measure as a plugin writes one: it reads the group column and declares it as a side input."""

    __name__ = "GroupPlugin"
    NAME = __name__
    SUPPORTED_PARAMS = {**pm.measures.COMMON_PARAMS, "group": ir_measures.measures.ParamInfo(dtype=str, default=None)}
    SIDE_INPUTS = (pm.SideInput(column="group", param="group", kind="labels"),)

    def compute(self, lists):
        return pm.MeasureValues(values=np.zeros(lists.query_ids.size), degenerate=np.zeros(lists.query_ids.size, bool))


def test_missing_side_column_names_the_measures_reading_it_and_their_resources(tmp_path):
    labels = tmp_path / "groups.tsv"
    labels.write_text("corpus-id\tgroup\na\tp\n")
    with pytest.raises(pm.RunInputError, match=re.escape(
            "Duo@10 reads the run's 'polarity' column, which it lacks (found ['query_id', 'doc_id', 'score', 'group']): "
            "give the run that column (a DataFrame or a PyTerrier transformer can; TREC run files and ScoredDoc tuples "
            "cannot), or name a resource in the measure: Duo(polarity='tsv:FILE' | 'pca:DIR').")):
        ir_measures.calc_aggregate([pm.Duo @ 10, pm.rKL(group=f"tsv:{labels}") @ 10], QRELS, RUN.drop(columns="polarity"))
    scored = [ir_measures.ScoredDoc("q1", "a", 1.0)]
    with pytest.raises(pm.RunInputError) as caught:
        ir_measures.calc_aggregate([pm.rKL @ 10, _GroupPlugin() @ 5, pm.Measured(of="rND@3"), pm.Duo @ 10], QRELS, scored)
    message = str(caught.value)
    assert message.startswith("Duo@10 reads the run's 'polarity' column, which it lacks (found ['query_id', 'doc_id', "
                              "'score'])")
    assert "GroupPlugin@5, Measured(of='rND@3'), rKL@10 read the run's 'group' column, which it lacks too" in message
    assert ("name a resource in the measure: GroupPlugin(group='tsv:FILE' | 'beir:DIR'), rND(group='tsv:FILE' | "
            "'beir:DIR'), rKL(group='tsv:FILE' | 'beir:DIR').") in message
    assert "TREC run files and ScoredDoc tuples cannot" in message


def test_nan_polarity_names_query_and_document():
    run = RUN.copy()
    run.loc[2, "polarity"] = np.nan
    with pytest.raises(pm.RunInputError, match=r"no polarity for document 'c' of query 'q1'.*missing='skip'"):
        ir_measures.calc_aggregate([pm.Duo(missing="error") @ 10], QRELS, run)
    with pytest.warns(pm.MissingSideInfoWarning, match=re.escape(
            "Duo@10: 1 of 9 considered documents have no polarity in the run's 'polarity' column and were skipped (e.g. "
            "document 'c' of query 'q1')")):
        skipped = {m.query_id: m.value for m in ir_measures.iter_calc([pm.Duo @ 10], QRELS[:-1], run)}
    assert skipped["q1"] == pytest.approx(duo([0.9, 0.8, -0.9, 0.1]))
    assert per_query(pm.Duo(missing="skip") @ 10, QRELS, run) == per_query(pm.Duo @ 10, QRELS, run)
    # Beyond the cutoff a missing value does not matter.
    assert per_query(pm.Duo(missing="error", degenerate="default") @ 2, QRELS, run)["q1"] == 0.5


def test_infinite_polarity_is_an_error():
    run = RUN.copy()
    run.loc[0, "polarity"] = np.inf
    with pytest.raises(pm.RunInputError, match="non-finite polarity inf for document 'a' of query 'q1'"):
        ir_measures.calc_aggregate([pm.Duo @ 10], QRELS, run)


def test_bad_scores_and_duplicates():
    run = RUN.copy()
    run.loc[1, "score"] = np.nan
    with pytest.raises(pm.RunInputError, match="scores for document 'b' of query 'q1'"):
        ir_measures.calc_aggregate([pm.Duo @ 10], QRELS, run)
    doubled = pd.concat([RUN, RUN.iloc[[0]]])
    with pytest.raises(pm.RunInputError, match="same document twice for document 'a' of query 'q1'"):
        ir_measures.calc_aggregate([pm.Duo @ 10], QRELS, doubled)


def test_empty_run_leaves_out_every_judged_query_or_gives_defaults():
    empty = pd.DataFrame({"query_id": [], "doc_id": [], "score": []})
    with pytest.warns(pm.DegenerateQueryWarning, match="3 of 3 queries"):
        values = {m.query_id: m.value for m in ir_measures.iter_calc([pm.Duo @ 10], QRELS, empty)}
    assert values == {}
    with pytest.warns(pm.DegenerateQueryWarning, match="3 of 3 queries"):
        assert np.isnan(ir_measures.calc_aggregate([pm.Duo @ 10], QRELS, empty)[pm.Duo @ 10])  # no query measured
    with pytest.warns(pm.DegenerateQueryWarning, match="3 of 3 queries"):
        values = {m.query_id: m.value for m in ir_measures.iter_calc([pm.Duo(degenerate="default") @ 10], QRELS, empty)}
    assert values == {"q1": 0.5, "q2": 0.5, "q3": 0.5}


def test_query_ids_of_other_types_match_as_text():
    qrels = pd.DataFrame({"query_id": ["1", "2"], "doc_id": ["a", "b"], "relevance": [1, 1]})
    run = frame([(1, "a", 3.0, 1.0, "x"), (1, "b", 2.0, -1.0, "y"), (1, "c", 1.0, 0.2, "y")])
    values = per_query(pm.Duo(degenerate="default"), qrels, run)
    assert values["1"] == pytest.approx(duo([1.0, -1.0, 0.2]))
    assert values["2"] == 0.5


def test_run_inputs_declare_side_columns(tmp_path):
    scores = tmp_path / "polarity.tsv"
    scores.write_text("corpus-id\tpolarity\na\t0.5\n")
    assert set(ir_measures.run_inputs([pm.Duo @ 10, nDCG @ 10])) == {"query_id", "doc_id", "score", "polarity"}
    assert "group" in ir_measures.run_inputs([pm.rKL])
    assert "polarity" not in ir_measures.run_inputs([pm.Duo(polarity=f"tsv:{scores}")])


def test_resources_are_checked_before_any_run_is_read(tmp_path):
    class Unreadable:
        def __iter__(self):
            raise AssertionError("the run was read")

    missing = tmp_path / "missing.tsv"
    for call in (lambda: ir_measures.run_inputs([pm.Duo(polarity=f"tsv:{missing}")]),
                 lambda: ir_measures.evaluator([pm.Duo(polarity=f"tsv:{missing}")], QRELS),
                 lambda: ir_measures.calc_aggregate([pm.Duo(polarity=f"tsv:{missing}")], QRELS, Unreadable())):
        with pytest.raises(pm.sideinfo.SideInfoError, match=r"Duo\(polarity='tsv:.*missing\.tsv'\): .*does not exist"):
            call()


def test_polarity_and_groups_from_resources(tmp_path):
    scores = tmp_path / "polarity.tsv"
    scores.write_text("query-id\tcorpus-id\tpolarity\nq1\ta\t0.9\nq1\tb\t-0.9\nq1\tc\t0.8\nq1\td\t-0.2\nq1\te\t0.0\n")
    labels = tmp_path / "groups.tsv"
    labels.write_text("corpus-id\tgroup\na\tp\nb\tq\nc\tp\nd\tq\ne\tq\n")
    bare = RUN.drop(columns=["polarity", "group"])
    values = per_query(pm.Duo(polarity=f"tsv:{scores}"), QRELS, bare)
    assert values["q1"] == pytest.approx(duo([0.9, -0.9, 0.8, -0.2, 0.0]))
    assert "q2" not in values  # nothing known for q2's documents: skipped, then nothing to measure
    group = per_query(pm.rND(group=f"tsv:{labels}") @ 5, QRELS, bare.query("query_id == 'q1'"))
    assert group["q1"] == pytest.approx(rnd([True, False, True, False, False]))


def test_resource_missing_values_are_skipped_and_said_or_an_error(tmp_path):
    labels = tmp_path / "groups.tsv"
    labels.write_text("corpus-id\tgroup\na\tp\nb\tq\nc\tq\n")
    measure = pm.rND(group=f"tsv:{labels}")
    with pytest.warns(pm.DegenerateQueryWarning, match=re.escape(
            f"{measure}: 6 of 9 considered documents have no group in resource 'tsv:{labels}' and were skipped (e.g. "
            "document 'd' of query 'q1'); 2 of 3 queries had nothing to measure and were left out")) as record:
        value = ir_measures.calc_aggregate([measure], QRELS, RUN.drop(columns="group"))[measure]
    assert len(record) == 1 and value == pytest.approx(rnd([True, False, False]))  # q1's a, b, c; q2 and q3: none
    with pytest.raises(pm.RunInputError, match=r"no group for document 'd' of query 'q1' in resource"):
        ir_measures.calc_aggregate([measure(missing="error")], QRELS, RUN.drop(columns="group"))


def test_unknown_resource_scheme():
    with pytest.raises(pm.sideinfo.SideInfoError, match="unknown side-information resource 'nope:x'"):
        ir_measures.calc_aggregate([pm.Duo(polarity="nope:x")], QRELS, RUN)


def test_gold_labels_of_a_beir_folder(data_dir):
    folder = data_dir / "procon"
    labels = pd.read_csv(folder / "labels.tsv", sep="\t", dtype=str)
    query = labels["query-id"].iloc[0]
    docs = labels[labels["query-id"] == query]
    run = pd.DataFrame({"query_id": query, "doc_id": docs["corpus-id"], "score": np.arange(len(docs), 0, -1.0)})
    qrels = pd.read_csv(folder / "qrels" / "test.tsv", sep="\t", dtype={"query-id": str, "corpus-id": str})
    qrels = qrels.rename(columns={"query-id": "query_id", "corpus-id": "doc_id", "score": "relevance"})
    value = per_query(pm.rKL(group=f"beir:{folder}", degenerate="default") @ 10, qrels[qrels.query_id == query], run)[query]
    top = docs["group"].to_numpy()[:10]
    assert value == pytest.approx(rkl(top == top[0]))


def test_side_values_of_the_wrong_kind_or_all_missing():
    with pytest.raises(pm.RunInputError, match="polarity values must be numbers"):
        ir_measures.calc_aggregate([pm.Duo], QRELS, RUN.assign(polarity=["left", "right"] * 5))
    with pytest.raises(pm.RunInputError, match="sequences of lengths \\[1, 2\\]"):
        ir_measures.calc_aggregate([pm.Duo], QRELS, RUN.assign(polarity=[[0.1]] + [[0.2, 0.3]] * 9))
    nothing = RUN.assign(polarity=pd.Series([None] * len(RUN), dtype=object), group=pd.NA)
    assert per_query(pm.Duo, QRELS, nothing) == {}
    assert set(per_query(pm.Duo(degenerate="default"), QRELS, nothing).values()) == {0.5}
    with pytest.warns(pm.DegenerateQueryWarning, match=r"Duo: 9 of 9 considered documents have no polarity in the run's "
                                                       r"'polarity' column and were skipped \(e\.g\. document 'a' of query "
                                                       r"'q1'\); 3 of 3 queries had nothing to measure and were left out "
                                                       r"\(no value, not in the mean\): 3: no documents"):
        assert np.isnan(ir_measures.calc_aggregate([pm.Duo], QRELS, nothing)[pm.Duo])
    assert set(per_query(pm.rND(degenerate="default"), QRELS, nothing).values()) == {0.0}
    with pytest.raises(pm.RunInputError, match="no group for document 'a' of query 'q1'"):
        ir_measures.calc_aggregate([pm.rND(missing="error")], QRELS, nothing)
    float32 = RUN.assign(polarity=RUN["polarity"].astype(np.float32))
    float32.loc[0, "polarity"] = np.float32("nan")
    assert per_query(pm.Duo @ 10, QRELS, float32)["q1"] == pytest.approx(duo([0.8, -0.7, -0.9, 0.1]), abs=1e-6)


def test_tsv_resources_with_several_axes_or_bad_columns(tmp_path):
    axes = tmp_path / "axes.tsv"
    axes.write_text("corpus-id\tx\ty\n" + "".join(f"{d}\t{0.1 * i}\t{-0.2 * i}\n" for i, d in enumerate("abcde")))
    bare = RUN[RUN.query_id == "q1"].drop(columns=["polarity", "group"])
    values = per_query(pm.Duo(polarity=f"tsv:{axes}", axes="mean") @ 5, QRELS, bare)
    expected = duo(np.array([[0.1 * i, -0.2 * i] for i in range(5)])).mean()
    assert values["q1"] == pytest.approx(expected)
    mixed = tmp_path / "mixed.tsv"
    mixed.write_text("corpus-id\tx\tlabel\na\t0.1\tpro\n")
    with pytest.raises(pm.sideinfo.SideInfoError, match="several value columns must all be numeric"):
        ir_measures.calc_aggregate([pm.Duo(polarity=f"tsv:{mixed}")], QRELS, bare)


@pytest.mark.parametrize("name,content,message", [
    ("short_row", "corpus-id\tpolarity\na\t0.1\nb\n", r"short_row\.tsv:3: expected 2 tab-separated fields"),
    ("empty_id", "corpus-id\tpolarity\na\t0.1\n\t0.2\n", r"empty_id\.tsv:3: empty 'corpus-id'"),
    ("empty_value", "corpus-id\tpolarity\na\t\n", r"empty_value\.tsv:2: empty 'polarity'"),
    ("twice", "corpus-id\tpolarity\na\t0.1\nb\t0.2\na\t0.3\n", r"twice\.tsv:4: document 'a' already has a value on line 2"),
    ("twice_by_query", "qid\tdocno\tpolarity\nq1\ta\t0.1\nq2\ta\t0.2\nq1\ta\t0.3\n",
     r"twice_by_query\.tsv:4: \(query, document\) \('q1', 'a'\) already has a value on line 2"),
    ("no_doc_column", "id\tpolarity\na\t0.1\n", r"no_doc_column\.tsv:1: needs a document id column"),
    ("header_twice", "corpus-id\tx\tx\na\t0.1\t0.2\n", r"header_twice\.tsv:1: the header names column 'x' twice"),
    ("empty", "", r"empty\.tsv:1: expected a header line"),
    ("axes_with_text", "corpus-id\tx\ty\na\t0.1\t0.2\nb\t0.3\tn/a\n",
     r"axes_with_text\.tsv:3: several value columns must all be numeric.*'y' is 'n/a'"),
])
def test_tsv_resource_errors_name_file_and_line(tmp_path, name, content, message):
    path = tmp_path / f"{name}.tsv"
    path.write_text(content)
    bare = RUN.drop(columns=["polarity", "group"])
    with pytest.raises(pm.sideinfo.SideInfoError, match=message):
        ir_measures.calc_aggregate([pm.Duo(polarity=f"tsv:{path}")], QRELS, bare)


def test_resources_of_the_wrong_kind_say_what_to_name(tmp_path, data_dir):
    labels = tmp_path / "kinds_labels.tsv"
    labels.write_text("corpus-id\tgroup\na\tp\nb\t0.5\nc\tq\n")
    bare = RUN.drop(columns=["polarity", "group"])
    # a label file named for polarity: the first cell that is not a number, with its line
    with pytest.raises(pm.RunInputError, match=r"provides document labels, but polarity= needs scores .*"
                                               r"kinds_labels\.tsv:2: 'group' is 'p', not a finite number.*"
                                               r"name a resource of numbers"):
        ir_measures.calc_aggregate([pm.Duo(polarity=f"tsv:{labels}")], QRELS, bare)
    # a label file named as text= was once read as the documents' text
    with pytest.raises(pm.RunInputError, match=r"provides document labels, but text= needs text.*corpus:DIR"):
        ir_measures.calc_aggregate([pm.TExFAIR(text=f"tsv:{labels}") @ 3], QRELS, bare)
    with pytest.raises(pm.RunInputError, match=r"provides document labels, but text= needs text"):
        ir_measures.calc_aggregate([pm.TExFAIR(text=f"beir:{data_dir / 'procon'}") @ 3], QRELS, bare)
    with pytest.raises(pm.RunInputError, match=r"provides document scores, but text= needs text"):
        numbers = tmp_path / "kinds_numbers.tsv"
        numbers.write_text("corpus-id\tx\na\t1\n")
        ir_measures.calc_aggregate([pm.TExFAIR(text=f"tsv:{numbers}") @ 3], QRELS, bare)
    with pytest.raises(pm.RunInputError, match=r"kinds_axes\.tsv' gives 2 values per document; group needs one label per"):
        axes = tmp_path / "kinds_axes.tsv"
        axes.write_text("corpus-id\tx\ty\n" + "".join(f"{d}\t1\t0\n" for d in "abcde"))
        ir_measures.calc_aggregate([pm.rND(group=f"tsv:{axes}")], QRELS, bare)
    # numeric labels stay usable as labels, and numbers that read as labels match as numbers
    binary = tmp_path / "kinds_binary.tsv"
    binary.write_text("corpus-id\tgroup\na\t1\nb\t0\nc\t1\nd\t0\ne\t0\n")
    q1 = bare[bare.query_id == "q1"]
    assert per_query(pm.rND(group=f"tsv:{binary}", protected="1") @ 5, QRELS, q1)["q1"] == pytest.approx(
        rnd([True, False, True, False, False]))


def test_conversion_errors_name_measure_query_document_and_origin():
    run = RUN.assign(polarity=pd.Series([0.9, 0.8, "left", -0.9, 0.1, 1.0, -1.0, 1.0, -1.0, 0.5], dtype=object))
    with pytest.raises(pm.RunInputError, match=r"Duo.*polarity values must be numbers or sequences of numbers; "
                                               r"document 'c' of query 'q1' has 'left' in the run's 'polarity' column"):
        ir_measures.calc_aggregate([pm.Duo], QRELS, run)
    ragged = RUN.assign(polarity=pd.Series([[0.1, 0.2]] * 3 + [[0.3]] + [[0.1, 0.2]] * 6, dtype=object))
    with pytest.raises(pm.RunInputError, match=r"sequences of lengths \[1, 2\]: document 'a' of query 'q1' has 2 "
                                               r"number\(s\), document 'd' of query 'q1' 1 number\(s\)"):
        ir_measures.calc_aggregate([pm.Duo], QRELS, ragged)
    nested = RUN.assign(polarity=pd.Series([[[0.1]]] * 10, dtype=object))
    with pytest.raises(pm.RunInputError, match=r"document 'a' of query 'q1' has \[\[0.1\]\]"):
        ir_measures.calc_aggregate([pm.Duo], QRELS, nested)


NO_DOCUMENTS = "1: no documents (e.g. 'q3')"  # q3 is judged but not in RUN


@pytest.mark.parametrize("measure, run, causes", [
    (pm.Duo(rel=1) @ 10, RUN, ["1: fewer than 3 documents (e.g. 'q2')", NO_DOCUMENTS]),
    (pm.Duo @ 10, RUN.assign(polarity=np.where(RUN.query_id == "q2", 0.3, RUN.polarity)), ["1: all polarities equal (e.g. 'q2')", NO_DOCUMENTS]),
    (pm.Duo(step=4) @ 10, RUN, ["1: no depth k = 4, 8, ... below the list length (e.g. 'q2')", NO_DOCUMENTS]),
    (pm.rND @ 10, RUN.assign(group=np.where(RUN.query_id == "q1", "x", RUN.group)), ["1: one group only (e.g. 'q1')", NO_DOCUMENTS]),
    (pm.rND(protected="z") @ 10, RUN.assign(group=np.where(RUN.doc_id == "f", "z", RUN.group)),
     ["1: no document of the protected group 'z' (e.g. 'q1')", NO_DOCUMENTS]),
])
def test_degenerate_warning_counts_the_causes_that_occurred(measure, run, causes):
    with pytest.warns(pm.DegenerateQueryWarning) as record:
        ir_measures.calc_aggregate([measure], QRELS, run)
    message = str(next(w.message for w in record if issubclass(w.category, pm.DegenerateQueryWarning)))
    for cause in causes:
        assert cause in message
    assert message.count(": ") == len(causes) + 2  # the measure's prefix, the outcome, then one entry per cause


def test_degenerate_queries_are_left_out_and_counted_or_given_the_default():
    excluded = pm.Duo(rel=1) @ 10
    assert pm.Duo(rel=1, degenerate="exclude") @ 10 == excluded  # the default, omitted from the name
    counted = ir_measures.parse_measure("Measured(of=\"Duo(rel=1,degenerate='exclude')@10\")")
    assert counted == pm.Measured(of=excluded) and str(counted) == "Measured(of='Duo(rel=1)@10')"
    defaulted = pm.Duo(rel=1, degenerate="default") @ 10
    with pytest.warns(pm.DegenerateQueryWarning) as record:
        values = {(str(m.measure), m.query_id): m.value
                  for m in ir_measures.iter_calc([excluded, counted, defaulted], QRELS, RUN)}
    messages = sorted(str(w.message) for w in record)
    assert len(messages) == 2
    assert messages[0].startswith("Duo(rel=1)@10: 2 of 3 queries had nothing to measure and were left out (no value, "
                                  "not in the mean): ") and "Measured(of='Duo(rel=1)@10') counts" in messages[0]
    assert messages[1].startswith("Duo(rel=1,degenerate='default')@10: 2 of 3 queries had nothing to measure and got "
                                  "0.5, counted in the mean")
    q1 = values[(str(defaulted), "q1")]
    assert {q for (m, q) in values if m == str(excluded)} == {"q1"} and values[(str(excluded), "q1")] == q1
    assert [values[(str(counted), q)] for q in ("q1", "q2", "q3")] == [1.0, 0.0, 0.0]
    assert not any(np.isnan(v) for v in values.values())  # no NaN, as from any ir_measures measure
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        means = ir_measures.calc_aggregate([excluded, counted, defaulted, nDCG @ 10], QRELS, RUN)
        metrics = list(ir_measures.iter_calc([excluded, nDCG @ 10], QRELS, RUN))  # through ir_measures' fallback
    assert means[excluded] == pytest.approx(q1)  # the mean over the one measured query
    assert means[counted] == 1
    assert means[defaulted] == pytest.approx((q1 + 0.5 + 0.5) / 3)  # the documented default is unchanged
    assert sorted(m.query_id for m in metrics if m.measure == excluded) == ["q1"]
    assert sorted(m.query_id for m in metrics if m.measure == nDCG @ 10) == ["q1", "q2", "q3"]


def test_measured_needs_a_pairmeasures_measure():
    with pytest.raises(ValueError, match="Measured needs of="):
        ir_measures.calc_aggregate([pm.Measured], QRELS, RUN)
    with pytest.raises(ValueError, match="of='nDCG@10' is not a pairmeasures measure"):
        pm.Measured(of="nDCG@10")
    with pytest.raises(ValueError, match="Duo: cutoff=0 is out of range"):
        pm.Measured(of="Duo@0")


class _Faulty(pm.PairMeasure):
    """A plugin-like measure returning whatever the test sets in ``OUTPUT``."""

    __name__ = "Faulty"
    NAME = __name__
    SUPPORTED_PARAMS = dict(pm.measures.COMMON_PARAMS)
    OUTPUT = None

    def compute(self, lists):
        return type(self).OUTPUT(lists.query_ids.size)


@pytest.mark.parametrize("output, message", [
    (lambda n: pm.MeasureValues(values=np.zeros(n - 1), degenerate=np.zeros(n - 1, bool)), r"values has shape \(2,\) for 3 queries"),
    (lambda n: pm.MeasureValues(values=np.full(n, np.nan), degenerate=np.zeros(n, bool)), r"value nan for query 'q1' \(3 of 3 not finite\)"),
    (lambda n: pm.MeasureValues(values=np.full(n, np.nan), degenerate=np.ones(n, bool)), r"value nan for query 'q1'"),
    (lambda n: pm.MeasureValues(values=np.zeros(n), degenerate=np.zeros(n)), r"degenerate must be booleans"),
    (lambda n: pm.MeasureValues(values=np.zeros(n), degenerate=np.zeros(n, bool), causes=np.array(["x"])), r"causes has shape"),
    (lambda n: np.zeros(n), r"evaluate returned a ndarray, not a pm\.MeasureValues"),
])
def test_the_provider_checks_every_measures_output(output, message):
    _Faulty.OUTPUT = staticmethod(output)
    faulty = _Faulty(degenerate="default")  # NaN is a value only for a query the measure leaves out
    with pytest.raises(pm.MeasureOutputError, match=rf"Faulty\(degenerate='default'\) \(from {__name__}\): {message}"):
        ir_measures.calc_aggregate([faulty], QRELS, RUN)


def test_a_measure_may_give_nan_to_degenerate_queries_it_excludes():
    _Faulty.OUTPUT = staticmethod(lambda n: pm.MeasureValues(values=np.array([1.0, np.nan, 3.0]),
                                                             degenerate=np.array([False, True, False])))
    with pytest.warns(pm.DegenerateQueryWarning, match=r"1: nothing to measure \(e\.g\. 'q2'\)"):
        assert ir_measures.calc_aggregate([_Faulty(degenerate="exclude")], QRELS, RUN)[_Faulty(degenerate="exclude")] == 2.0


def test_float_ids_are_an_error_that_says_to_read_ids_as_text():
    qrels = pd.DataFrame({"query_id": ["1", "2"], "doc_id": ["10", "11"], "relevance": [1, 1]})
    run = frame([(1.0, "10", 2.0, 1.0, "x"), (1.0, "12", 1.0, -1.0, "y"), (2.0, "11", 1.0, 0.5, "x")])
    with pytest.raises(pm.RunInputError, match=r"Duo@10: the query_id column of the run holds floats \(e\.g\. 1\.0.*dtype"):
        ir_measures.calc_aggregate([pm.Duo @ 10], qrels, run)
    float_docs = run.assign(query_id=["1", "1", "2"], doc_id=[10.0, 12.0, 11.0])
    with pytest.raises(pm.RunInputError, match="doc_id column of the run holds floats .e.g. 10.0"):
        ir_measures.calc_aggregate([pm.Duo @ 10], qrels, float_docs)
    float_qrels = qrels.assign(query_id=[1.0, 2.0])
    with pytest.raises(ValueError, match="rKL: the query_id column of the qrels holds floats"):
        ir_measures.calc_aggregate([pm.rKL], float_qrels, run.assign(query_id=["1", "1", "2"]))


def test_missing_ids_are_an_error_naming_the_row_not_a_dropped_row():
    run = RUN.copy()
    run.loc[1, "query_id"] = None
    with pytest.raises(pm.RunInputError, match="Duo@10: the run has a missing query_id at row 1 .doc_id 'b'"):
        list(ir_measures.iter_calc([pm.Duo @ 10], QRELS, run))
    run = RUN.copy()
    run.loc[6, "doc_id"] = np.nan
    with pytest.raises(pm.RunInputError, match="rND: the run has a missing doc_id at row 6 .query_id 'q2'"):
        ir_measures.calc_aggregate([pm.rND], QRELS, run)
    qrels = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", None], "relevance": [1, 1]})
    with pytest.raises(ValueError, match="the qrels has a missing doc_id at row 1 .query_id 'q1'"):
        ir_measures.calc_aggregate([pm.rND], qrels, RUN)


@pytest.mark.parametrize("label", ["relevant", None, 1.5])
def test_relevance_labels_that_are_not_integers_name_query_and_document(label):
    qrels = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "relevance": [1, label]})
    with pytest.raises(ValueError, match="relevance of document 'b' of query 'q1' is .*must be integers"):
        ir_measures.calc_aggregate([pm.Duo(rel=1)], qrels, RUN)


def test_empty_qrels_are_nothing_to_evaluate_against():
    empty = pd.DataFrame({"query_id": [], "doc_id": [], "relevance": []}, dtype=object)
    for qrels in (empty, [], {}):
        with pytest.raises(ValueError, match="rKL@5: the qrels are empty, so there is nothing to evaluate against"):
            ir_measures.calc_aggregate([pm.rKL @ 5], qrels, RUN)
    import pyterrier as pt  # a batch of unjudged topics gets empty qrels from pt.Experiment: not an error

    run = RUN.rename(columns={"query_id": "qid", "doc_id": "docno"})
    topics = pd.DataFrame({"qid": ["q1", "q9"], "query": ["x", "y"]})
    qrels = pd.DataFrame({"qid": ["q1"], "docno": ["a"], "label": [1]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = pt.Experiment([pt.Transformer.from_df(run)], topics, qrels, eval_metrics=[pm.rKL @ 5], names=["s"],
                              batch_size=1)
    assert table["rKL@5"].iloc[0] == per_query(pm.rKL @ 5, [ir_measures.Qrel("q1", "a", 1)])["q1"]


def test_a_protected_group_no_document_has_is_an_error_listing_the_groups_seen():
    run = RUN.assign(group=["con", "pro"] * 5)
    with pytest.raises(pm.RunInputError, match=r"rKL\(protected='CON'\)@5: no document has group 'CON'; groups seen: 'con', 'pro'"):
        ir_measures.calc_aggregate([pm.rKL(protected="CON") @ 5], QRELS, run)
    only_in_q1 = RUN.assign(group=["con"] + ["pro"] * 9)  # present in one query: the others are degenerate
    with pytest.warns(pm.DegenerateQueryWarning):
        ir_measures.calc_aggregate([pm.rKL(protected="con") @ 5], QRELS, only_in_q1)


def test_star_import_leaves_the_standard_library_math_alone():
    import math as stdlib_math

    namespace: dict = {}
    exec("import math\nfrom pairmeasures import *", namespace)
    assert namespace["math"] is stdlib_math
    assert "math" not in pm.__all__ and pm.math.__name__ == "pairmeasures.math"
    import pairmeasures.math

    assert pm.math is pairmeasures.math
    assert {"Duo", "TExFAIR", "Lexicon", "CounterfactualSubstitution", "clear_caches"} <= set(namespace)


def test_warnings_about_the_data_point_at_the_users_call(tmp_path):
    with pytest.warns(pm.DegenerateQueryWarning) as record:
        ir_measures.calc_aggregate([pm.Duo @ 10], QRELS, RUN)
    (tmp_path / "omega.tsv").write_text("corpus-id\tomega\na\t0.5\n")  # FaiRR counts the others as neutral
    with pytest.warns(pm.MissingSideInfoWarning) as missing:
        ir_measures.calc_aggregate([pm.FaiRR(omega=f"tsv:{tmp_path / 'omega.tsv'}") @ 10], QRELS, RUN)
    for warning in [*record, *missing]:
        assert warning.filename == __file__, f"{warning.category.__name__} points at {warning.filename}:{warning.lineno}"


def test_the_degenerate_warning_of_signed_duo_says_what_the_queries_got():
    with pytest.warns(pm.DegenerateQueryWarning, match=r"2 of 3 queries had nothing to measure and got 0\.5 times the "
                                                       r"sign of the signed raw sum \(0 when nothing is summed\)"):
        values = per_query_warned(pm.Duo(rel=1, signed=True, degenerate="default") @ 10)
    assert values["q2"] == 0.0 and values["q3"] == 0.0  # fewer than 3 documents / none: nothing summed


def per_query_warned(measure):
    return {m.query_id: m.value for m in ir_measures.iter_calc([measure], QRELS, RUN)}


def test_ties_system_reads_a_trec_files_rank_field(tmp_path):
    """A TREC run's rank field is the order the system showed: read as the run's rank column, and used by
    ties='system' where scores tie. A line without a number there is an error naming it (issue 31: one such line
    once dropped the order of the whole run)."""
    from pairmeasures.io.runfiles import read_run_file

    (tmp_path / "polarity.tsv").write_text("query-id\tcorpus-id\tpolarity\n" + "".join(
        f"q1\t{d}\t{p}\n" for d, p in (("d1", -1.0), ("d2", 0.9), ("d3", 1.0))))
    qrels = pd.DataFrame({"query_id": "q1", "doc_id": ["d1", "d2", "d3"], "relevance": 1})
    measure = pm.Duo(polarity=f"tsv:{tmp_path / 'polarity.tsv'}", ties="system") @ 3
    ranked = tmp_path / "ranked.trec"  # lines d1, d2, d3, all tied; the system's ranks say d3, d1, d2
    ranked.write_text("q1 Q0 d1 2 1.0 s\nq1 Q0 d2 3 1.0 s\nq1 Q0 d3 1 1.0 s\n")
    run = read_run_file(str(ranked))
    assert list(run["rank"]) == [2, 3, 1]
    assert ir_measures.calc_aggregate([measure], qrels, run)[measure] == pytest.approx(duo([1.0, -1.0, 0.9]))
    unranked = tmp_path / "unranked.trec"
    unranked.write_text("q1 Q0 d1 x 1.0 s\nq1 Q0 d2 3 1.0 s\nq1 Q0 d3 1 1.0 s\n")
    with pytest.raises(ValueError, match=r"unranked.trec:1: rank 'x' \(the fourth field\) is not a number"):
        read_run_file(str(unranked))
