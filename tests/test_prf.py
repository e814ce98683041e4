"""PRF, nPRF (IBBR Eq. 2, 3) and |ΔA-PRF|: hand-worked cases, ties, degenerate queries, brute force, real APIs."""

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
from pairmeasures.math import prf_lists


def frame(lists: dict, column: str = "group") -> pd.DataFrame:
    """A run from {qid: [(doc, score, group-or-text), ...]}."""
    rows = [(q, d, float(s), g) for q, docs in lists.items() for d, s, g in docs]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score", column])


def judged(clicks: dict) -> pd.DataFrame:
    """Qrels from {qid: {doc: label}}."""
    rows = [(q, d, r) for q, docs in clicks.items() for d, r in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])


def per_query(measure, qrels, run) -> dict:
    """Judged query -> value; NaN for a query the measure left out (not yielded: no NaN comes from iter_calc)."""
    values = dict.fromkeys(qrels["query_id"], math.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        for metric in ir_measures.iter_calc([measure], qrels, run):
            assert not math.isnan(metric.value)
            values[metric.query_id] = metric.value
    return values


def brute_force(scores, clicked, in_group, normed=False) -> float:
    """Eq. 2 / Eq. 3 by the double sum, as written."""
    group = [j for j in range(len(scores)) if clicked[j] and in_group[j]]
    others = [k for k in range(len(scores)) if not clicked[k]]
    if not group or not others:
        return math.nan
    total = sum((scores[j] ** 2 if normed else 1.0) * (scores[j] >= scores[k]) for j in group for k in others)
    value = total / (len(group) * len(others))
    return math.sqrt(value) if normed else value


# --- hand-worked cases ---------------------------------------------------------------------------

RUN = frame({"q1": [("a", 0.9, "female"), ("b", 0.8, "male"), ("c", 0.6, "male"), ("d", 0.3, "neutral"),
                    ("e", 0.1, "female")],
             "q2": [("f", 0.5, "female"), ("g", 0.4, "male"), ("h", 0.2, "female")]})
QRELS = judged({"q1": {"c": 1, "e": 1, "a": 0}, "q2": {"h": 2, "f": 0}})


def test_hand_worked_prf_and_nprf():
    # q1: clicked c (male, 0.6) and e (female, 0.1); non-clicked a 0.9, b 0.8, d 0.3 (a judged 0, b and d
    # unjudged: all non-clicked). PRF_m = 1[.6>=.9] + 1[.6>=.8] + 1[.6>=.3] over 1*3 = 1/3; PRF_f = 0/3.
    # q2: clicked h (female, 0.2); non-clicked f 0.5, g 0.4: PRF_f = 0; no clicked male passage.
    male = per_query(pm.PRF(labels="group"), QRELS, RUN)
    female = per_query(pm.PRF(labels="group", of="female"), QRELS, RUN)
    assert male["q1"] == pytest.approx(1 / 3) and math.isnan(male["q2"])
    assert female == {"q1": 0.0, "q2": 0.0}
    # nPRF_m(q1) = sqrt(0.6^2 * 1 / 3); nPRF_f(q1) = sqrt(0) = 0.
    normed = per_query(pm.nPRF(labels="group"), QRELS, RUN)
    assert normed["q1"] == pytest.approx(math.sqrt(0.36 / 3)) and math.isnan(normed["q2"])
    # The mean leaves q2 out (degenerate='exclude' by default).
    with pytest.warns(pm.DegenerateQueryWarning, match=r"1 of 2 queries.*no clicked passage of group 'male'"):
        assert ir_measures.calc_aggregate([pm.PRF(labels="group")], QRELS, RUN)[pm.PRF(labels="group")] == \
            pytest.approx(1 / 3)


def test_two_clicked_passages_of_the_group_average_over_all_pairs():
    run = frame({"q": [("a", 4, "m"), ("b", 3, "f"), ("c", 2, "m"), ("d", 1, "f")]})
    # clicked a, c (group m); non-clicked b, d: pairs a>b, a>d, c<b, c>d: 3 of 4.
    qrels = judged({"q": {"a": 1, "c": 1}})
    assert per_query(pm.PRF(labels="group", of="m"), qrels, run) == {"q": 0.75}
    assert per_query(pm.nPRF(labels="group", of="m"), qrels, run)["q"] == pytest.approx(math.sqrt((16 * 2 + 4) / 4))


def test_ties_count_for_the_clicked_passage():
    run = frame({"q": [("a", 1.0, "m"), ("b", 1.0, "f"), ("c", 1.0, "m")]})
    qrels = judged({"q": {"c": 1}})  # ranked last among equals, still >= both non-clicked
    assert per_query(pm.PRF(labels="group", of="m"), qrels, run) == {"q": 1.0}
    result = prf_lists([2.0, 2.0, 2.0, 1.0], [True, False, True, False], [True, True, True, True], [0, 4])
    assert result.values[0] == 1.0


def test_cutoff_counts_only_the_top_k():
    # @2 keeps a and b: clicked c falls out, so q1 has no clicked male passage in the top 2.
    at2 = per_query(pm.PRF(labels="group") @ 2, QRELS, RUN)
    assert math.isnan(at2["q1"])
    at3 = per_query(pm.PRF(labels="group") @ 3, QRELS, RUN)
    assert at3["q1"] == 0.0  # c below a and b, the only non-clicked passages of the top 3


def test_rel_is_the_click_threshold_and_drops_nothing():
    # rel=2: only h is clicked; in q1 nothing is clicked.
    values = per_query(pm.PRF(labels="group", of="female", rel=2), QRELS, RUN)
    assert math.isnan(values["q1"]) and values["q2"] == 0.0


def test_only_clicked_passages_need_a_label():
    run = frame({"q": [("a", 2, None), ("b", 1, "m")]})
    qrels = judged({"q": {"b": 1}})
    assert per_query(pm.PRF(labels="group", of="m"), qrels, run) == {"q": 0.0}
    with pytest.raises(pm.RunInputError, match="no group for document 'a' of query 'q'"):
        per_query(pm.PRF(labels="group", of="m", missing="error"), judged({"q": {"a": 1}}), run)
    skipped = per_query(pm.PRF(labels="group", of="m"), judged({"q": {"a": 1, "b": 1}}), run)
    assert math.isnan(skipped["q"])  # a is left out, not made non-clicked: b has nothing to beat


def test_group_labels_compare_as_text():
    run = frame({"q": [("a", 2, 1), ("b", 1, -1)]})
    qrels = judged({"q": {"a": 1}})
    assert per_query(pm.PRF(labels="group", of="1"), qrels, run) == {"q": 1.0}
    assert per_query(pm.PRF(labels="group", of=1), qrels, run) == {"q": 1.0}


def test_labels_from_text_follow_ibbr_eq_1():
    # IBBR Eq. 1 sums ln(count) per word: "he he" (ln 2 > 0) is male; "he" alone has ln 1 = 0 and is neutral.
    run = frame({"q": [("n", 3, "the report"), ("m", 2, "he said he would"), ("f", 1, "she said she would"),
                       ("once", 0.5, "he said")]}, column="text")
    qrels = judged({"q": {"m": 1, "f": 1, "once": 1}})
    assert per_query(pm.PRF, qrels, run) == {"q": 0.0}  # m (2) below n (3), the only non-clicked passage
    assert per_query(pm.PRF(of="female"), qrels, run) == {"q": 0.0}
    # 'tc' labels by term counts: "he said" is male too, so the male group has two clicked passages.
    assert per_query(pm.PRF(variant="tc"), qrels, run) == {"q": 0.0}
    neutral_clicked = judged({"q": {"once": 1}})
    assert math.isnan(per_query(pm.PRF, neutral_clicked, run)["q"])
    assert per_query(pm.PRF(variant="tc"), neutral_clicked, run) == {"q": 0.0}


# --- degenerate queries ----------------------------------------------------------------------------

def test_degenerate_queries_are_named_by_cause_and_left_out_or_zero():
    run = frame({"none-clicked": [("a", 2, "m"), ("b", 1, "f")],
                 "other-group": [("c", 2, "m"), ("d", 1, "f")],
                 "all-clicked": [("e", 2, "m"), ("f", 1, "f")],
                 "measured": [("g", 2, "m"), ("h", 1, "f")]})
    qrels = judged({"none-clicked": {"a": 0}, "other-group": {"d": 1}, "all-clicked": {"e": 1, "f": 1},
                    "measured": {"g": 1}, "unretrieved": {"x": 1}})
    measure = pm.PRF(labels="group", of="m")
    with pytest.warns(pm.DegenerateQueryWarning) as caught:
        value = ir_measures.calc_aggregate([measure], qrels, run)[measure]
    assert value == 1.0  # only 'measured' counts
    text = str(caught[0].message)
    for cause in ("no clicked passage in the top k", "no clicked passage of group 'm'",
                  "no non-clicked passage in the top k", "no documents"):
        assert cause in text
    zero = pm.PRF(labels="group", of="m", degenerate="default")
    with pytest.warns(pm.DegenerateQueryWarning, match="got 0.0"):
        assert ir_measures.calc_aggregate([zero], qrels, run)[zero] == pytest.approx(1 / 5)


def test_parameters_fail_where_written():
    with pytest.raises(ValueError, match="of='other' is not a group of contrast='male-female'"):
        pm.PRF(of="other")
    with pytest.raises(ValueError, match="pass labels='group'"):
        pm.PRF(group="tsv:labels.tsv")
    with pytest.raises(ValueError, match="invalid labels='gold'"):
        pm.PRF(labels="gold")
    assert ir_measures.parse_measure("nPRF(labels='group',of='female')@10") == pm.nPRF(labels="group", of="female") @ 10


def test_a_run_without_group_labels_says_what_to_add():
    run = frame({"q": [("a", 1, "x")]}).drop(columns="group")
    with pytest.raises(pm.RunInputError, match="group"):
        ir_measures.calc_aggregate([pm.PRF(labels="group")], judged({"q": {"a": 1}}), run)


# --- brute force -------------------------------------------------------------------------------------

lists_strategy = st.lists(
    st.lists(st.tuples(st.integers(0, 4), st.booleans(), st.booleans()), min_size=0, max_size=7),
    min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(lists_strategy, st.booleans())
def test_prf_lists_equals_the_double_sum(lists, normed):
    scores = [float(s) / 2 for docs in lists for s, _, _ in docs]  # few values: many ties
    clicked = [c for docs in lists for _, c, _ in docs]
    in_group = [g for docs in lists for _, _, g in docs]
    offsets = np.concatenate([[0], np.cumsum([len(docs) for docs in lists])])
    result = prf_lists(scores, clicked, in_group, offsets, normed=normed)
    for q in range(len(lists)):
        part = slice(offsets[q], offsets[q + 1])
        expected = brute_force(scores[part], clicked[part], in_group[part], normed)
        if math.isnan(expected):
            assert math.isnan(result.values[q])
        else:
            assert result.values[q] == pytest.approx(expected, abs=1e-12)
        assert result.n_unclicked[q] == sum(not c for c in clicked[part])


def test_prf_lists_rejects_bad_input():
    with pytest.raises(ValueError, match="same length"):
        prf_lists([1.0, 2.0], [True], [True, True], [0, 2])
    with pytest.raises(ValueError, match="finite"):
        prf_lists([np.nan], [True], [True], [0, 1])


# --- |ΔA-PRF| ----------------------------------------------------------------------------------------

def test_delta_a_prf_hand_worked():
    # T_m = {q1} (PRF_m 1/3); T_f = {q1, q2} (PRF_f 0 and 0): ΔA-PRF = 1/3 - 0.
    result = pm.delta_a_prf(RUN, QRELS, labels="group")
    assert result.value == pytest.approx(1 / 3) and result.absolute == pytest.approx(1 / 3)
    assert result.means == {"male": pytest.approx(1 / 3), "female": 0.0}
    assert result.counts == {"male": 1, "female": 2} and result.left_out == {}
    flipped = pm.delta_a_prf(RUN, QRELS, labels="group", groups=("female", "male"))
    assert flipped.value == pytest.approx(-1 / 3) and flipped.absolute == result.absolute


def test_delta_a_prf_names_the_queries_left_out():
    run = pd.concat([RUN, frame({"q3": [("i", 1, "neutral"), ("j", 0, "male")], "q4": [("k", 1, "male")]})])
    qrels = pd.concat([QRELS, judged({"q3": {"i": 1}, "q4": {"k": 1}, "q5": {"z": 1}})])
    result = pm.delta_a_prf(run, qrels, labels="group")
    assert result.left_out == {"q3": "its clicked passages are of neither 'male' nor 'female'",
                               "q4": "no non-clicked passage in the top k", "q5": "no documents"}
    assert result.counts == {"male": 1, "female": 2}


def test_delta_a_prf_without_a_group_is_an_error_naming_why():
    qrels = judged({"q1": {"c": 1}})
    with pytest.raises(ValueError, match=r"no query has a clicked passage of group 'female'.*\(1: no clicked passage of group 'female'"):
        pm.delta_a_prf(RUN, qrels, labels="group")
    with pytest.raises(ValueError, match="sets of itself"):
        pm.delta_a_prf(RUN, QRELS, labels="group", of="male")


def test_delta_a_prf_bootstrap_draws_are_brute_force_resamples():
    """Each draw's ΔA-PRF equals the difference of the plain means over the drawn queries (repeats counted), and the
    interval is the draws' percentiles: deterministic under the seed."""
    from pairmeasures.measures.delta_prf import resampled_differences

    rng = np.random.default_rng(5)
    values = rng.random((7, 2))
    measured = rng.random((7, 2)) < 0.6
    measured[0], measured[1] = [True, False], [False, True]
    draws = resampled_differences(values, measured, 50, np.random.default_rng(1), chunk=8)
    again = np.random.default_rng(1)
    for start in range(0, 50, 8):
        for row, counts in enumerate(again.multinomial(7, np.full(7, 1 / 7), size=min(8, 50 - start))):
            drawn = np.repeat(np.arange(7), counts)
            picked = [values[drawn, g][measured[drawn, g]] for g in (0, 1)]
            expected = picked[0].mean() - picked[1].mean() if all(len(p) for p in picked) else np.nan
            assert np.allclose(draws[start + row], expected, equal_nan=True)
    run = pd.concat([RUN, frame({"q3": [("i", 1, "male"), ("j", 0, "female"), ("k", 2, "female")]})])
    qrels = pd.concat([QRELS, judged({"q3": {"i": 1}})])
    first = pm.delta_a_prf(run, qrels, labels="group", resamples=2000, seed=3)
    assert first.interval == pm.delta_a_prf(run, qrels, labels="group", resamples=2000, seed=3).interval
    low, high = first.interval
    assert low <= first.value <= high and low < high
    assert pm.delta_a_prf(run, qrels, labels="group").interval is None
    with pytest.raises(ValueError, match="resamples must be >= 0"):
        pm.delta_a_prf(run, qrels, labels="group", resamples=-1)


def test_delta_a_prf_cutoff_matches_the_measures():
    result = pm.delta_a_prf(RUN, QRELS, labels="group", cutoff=4)
    male = per_query(pm.PRF(labels="group") @ 4, QRELS, RUN)
    assert result.means["male"] == pytest.approx(np.nanmean(list(male.values())))


# --- through PyTerrier ---------------------------------------------------------------------------------

def test_experiment_reports_prf_next_to_relevance():
    pt = pytest.importorskip("pyterrier")
    from pairmeasures.demo import load_toy

    toy = load_toy()
    systems = [pt.Transformer.from_df(toy.runs[name]) for name in toy.runs]
    measures = [pm.PRF(labels="group", of="pro", rel=2) @ 5, pm.nPRF(labels="group", of="con", rel=2),
                ir_measures.nDCG @ 5]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        table = pt.Experiment(systems, toy.topics, toy.qrels, eval_metrics=measures, names=list(toy.runs))
        run = toy.runs["interleaved"].rename(columns={"qid": "query_id", "docno": "doc_id"})
        qrels = toy.qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
        direct = ir_measures.calc_aggregate(measures, qrels, run)
    table = table.set_index("name")
    for measure in measures:
        assert table.loc["interleaved", str(measure)] == pytest.approx(direct[measure], rel=1e-12)
    assert 0 <= direct[measures[0]] <= 1


# --- real data -------------------------------------------------------------------------------------------

def test_grep_biasir_bm25_delta_a_prf(data_dir, tmp_path):
    pytest.importorskip("pyterrier")
    from pyterrier_pisa import PisaIndex

    from pairmeasures.sideinfo.polarity import read_beir

    folder = data_dir / "grep-biasir"
    data = read_beir(folder)
    index = PisaIndex(str(tmp_path / "grep.pisa"), text_field="text")
    index.index({"docno": d, "text": data.document_text(d, "title+text")} for d in data.corpus)
    topics = pd.DataFrame({"qid": list(data.queries), "query": [q["text"] for q in data.queries.values()]})
    run = index.bm25(num_results=20)(topics).rename(columns={"qid": "query_id", "docno": "doc_id"})
    labels = f"beir:{folder}"
    # labels.tsv labels each query's own 6 passages; the other queries' passages BM25 retrieves are non-clicked
    # and need no label.
    gold = pm.delta_a_prf(run, data.qrels, labels="group", group=labels)
    # Every query has a relevant male and a relevant female variant: most queries are in both means (BM25 at
    # 20 retrieves a relevant variant for all but a few; 5 passages are labelled 'both').
    assert 100 <= gold.counts["male"] <= 117 and 100 <= gold.counts["female"] <= 117
    assert 0.8 < gold.means["male"] <= 1 and 0.8 < gold.means["female"] <= 1 and abs(gold.value) < 0.1
    assert set(gold.left_out.values()) <= {"no clicked passage in the top k", "no non-clicked passage in the top k",
                                           "its clicked passages are of neither 'male' nor 'female'"}
    measure = pm.PRF(labels="group", group=labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        mean = ir_measures.calc_aggregate([measure], data.qrels, run)[measure]
    assert mean == pytest.approx(gold.means["male"])
    text = pm.delta_a_prf(run, data.qrels, text=f"corpus:{folder}?fields=title+text")  # IBBR's labelling
    assert text.counts["male"] > 0 and text.counts["female"] > 0
