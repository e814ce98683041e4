"""The term-based measures through the real APIs (ir_measures, pt.Experiment), from text."""

from __future__ import annotations

import math
import warnings

import ir_measures
import numpy as np
import pandas as pd
import pytest
from conftest import golden_number, load_golden

import pairmeasures as pm
from pairmeasures.math import neutrality, texfair

RAB_CASES = load_golden("rab.json")
FAIRR_CASES = load_golden("fairr.json")


def per_query(measure, qrels, run, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run, **kwargs)}


def run_from(lists: dict) -> pd.DataFrame:
    """A run frame from {qid: [(docno, text), ...]} in rank order."""
    rows = [(q, d, float(len(docs) - i), t) for q, docs in lists.items() for i, (d, t) in enumerate(docs)]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "text"])


def qrels_for(qids) -> pd.DataFrame:
    return pd.DataFrame({"query_id": list(qids), "doc_id": "judged", "relevance": 1})


# --- parsing and parameters ------------------------------------------------------------------

def test_term_measures_parse_and_check_parameters_where_written():
    assert ir_measures.parse_measure("TExFAIR(rbdf=False)@10") == pm.TExFAIR(rbdf=False) @ 10
    assert ir_measures.parse_measure("RaB(variant='bool')@5") == pm.RaB(variant="bool") @ 5
    assert repr(pm.NFaiRR(tau=2) @ 10) == "NFaiRR(tau=2)@10"
    with pytest.raises(ValueError, match="sum to 1.2"):
        pm.TExFAIR(targets="female=0.5,male=0.7")
    with pytest.raises(ValueError, match="unknown: \\['x'\\]"):
        pm.AWRF(targets="female=0.5,x=0.5")
    with pytest.raises(ValueError, match="contrast='male-other'"):
        pm.RaB(contrast="male-other")
    with pytest.raises(ValueError, match="component='neutral'"):
        pm.ARaB(component="neutral")
    with pytest.raises(ValueError, match="background='collection'.*text='corpus:DIR'"):
        pm.NFaiRR(background="collection")
    with pytest.raises(ValueError, match="neither a built-in list"):
        pm.FaiRR(terms="/no/such/list.tsv")


@pytest.mark.parametrize("name", ["TExFAIR", "TED", "AWRF", "FaiRR", "NFaiRR", "RaB", "ARaB"])
def test_a_term_list_with_one_group_is_an_error_where_the_measure_is_written(name, tmp_path):
    terms = tmp_path / "women.csv"
    terms.write_text("term,group\nshe,female\nher,female\n")
    with pytest.raises(ValueError, match=f"{name}.*term list .*women.csv' has only the group 'female'.*at least two"):
        ir_measures.parse_measure(f"{name}(terms='{terms}')@10")


# --- RaB / ARaB against the reference, from text ---------------------------------------------

def _rab_texts(case):
    words = {"she": "female", "he": "male"}  # so that a case without gendered words has a term list
    lists = {}
    for qid, documents in case["inputs"]["queries"].items():
        lists[qid] = []
        for i, document in enumerate(documents):
            tokens = []
            for group in ("female", "male"):
                for word, count in document[group].items():
                    words[word] = group
                    tokens += [word] * count
            tokens += ["filler"] * document["other_tokens"]
            lists[qid].append((f"{qid}-{i}", " ".join(tokens)))
    return lists, words


@pytest.mark.parametrize("case", RAB_CASES, ids=lambda c: c["id"])
def test_rab_arab_from_text_match_reference(case, tmp_path):
    lists, words = _rab_texts(case)
    terms = tmp_path / "terms.csv"
    terms.write_text("term,group\n" + "".join(f"{w},{g}\n" for w, g in words.items()))
    run, qrels = run_from(lists), qrels_for(lists)
    for variant in ("tc", "tf", "bool"):
        for t in case["params"]["at_ranks"]:
            for name, measure in (("RaB", pm.RaB), ("ARaB", pm.ARaB)):
                values = {component: per_query(measure(terms=str(terms), variant=variant, component=component) @ t, qrels, run)
                          for component in ("bias", "female", "male")}
                for qid in lists:
                    expected = [golden_number(v) for v in case["expected"]["per_query"][qid][variant][name][str(t)]]
                    if not lists[qid]:  # the reference gives NaN for a query without results: left out here
                        assert all(math.isnan(v) for v in expected) and qid not in values["bias"]
                        continue
                    assert values["bias"][qid] == pytest.approx(expected[2] - expected[1], abs=1e-9)
                    assert values["female"][qid] == pytest.approx(expected[1], abs=1e-9)
                    assert values["male"][qid] == pytest.approx(expected[2], abs=1e-9)


def test_rab_is_positive_when_male_leaning_and_ibbr_variant():
    run = run_from({"q": [("a", "he and his father"), ("b", "she"), ("c", "nothing")]})
    qrels = qrels_for(["q"])
    assert per_query(pm.RaB(variant="tc") @ 3, qrels, run)["q"] == pytest.approx((3 - 1) / 3)
    assert per_query(pm.RaB(variant="tc", contrast="female-male") @ 3, qrels, run)["q"] == pytest.approx(-(3 - 1) / 3)
    # IBBR: each word once -> ln 1 = 0 everywhere; "he he" gives ln 2
    run = run_from({"q": [("a", "he he and she"), ("b", "nothing")]})
    assert per_query(pm.RaB(variant="ibbr") @ 2, qrels, run)["q"] == pytest.approx(math.log(2) / 2)


# --- FaiRR / NFaiRR against the reference, from text ------------------------------------------

def _fairr_setup(case, tmp_path):
    groups = list(case["inputs"]["groups_portion"])
    words = {g: f"word{g}" for g in groups}
    terms = tmp_path / "groups.tsv"
    terms.write_text("term\tgroup\n" + "".join(f"{w}\t{g}\n" for g, w in words.items()))
    texts = {d: " ".join(" ".join([words[g]] * c) for g, c in counts.items() if c) or "neutral"
             for d, counts in case["inputs"]["documents"].items()}
    targets = ",".join(f"{g}={share!r}" for g, share in case["inputs"]["groups_portion"].items())
    return str(terms), texts, targets


@pytest.mark.parametrize("case", FAIRR_CASES, ids=lambda c: c["id"])
def test_fairr_and_nfairr_from_text_match_reference(case, tmp_path):
    terms, texts, targets = _fairr_setup(case, tmp_path)
    params = dict(terms=terms, targets=targets, tau=case["params"]["tau"])
    lists = {q: [(str(d), texts[str(d)]) for d in ranking] for q, ranking in case["inputs"]["rankings"].items()}
    run, qrels = run_from(lists), qrels_for(lists)
    for k in case["params"]["cutoffs"]:
        fairr = per_query(pm.FaiRR(**params) @ k, qrels, run)
        nfairr = per_query(pm.NFaiRR(**params) @ k, qrels, run)
        for qid, ranking in case["inputs"]["rankings"].items():
            expected = case["expected"]["per_query"][qid]
            assert fairr[qid] == pytest.approx(expected["FaiRR"][str(k)], abs=1e-9)
            # NFaiRR's default background is what the run retrieved; where the reference's
            # background set is exactly that, the values agree.
            if set(ranking) == set(case["inputs"]["background"].get(qid, [])):
                reference = golden_number(expected["NFaiRR"][str(k)])
                assert nfairr[qid] == pytest.approx(reference if math.isfinite(reference) else 0.0, abs=1e-9)


def test_precomputed_omega_resource_and_missing_documents_count_as_neutral(tmp_path):
    table = tmp_path / "omega.tsv"
    table.write_text("corpus-id\tomega\na\t0.5\nb\t0.0\n")
    run = pd.DataFrame({"query_id": "q", "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = qrels_for(["q"])
    with pytest.warns(pm.MissingSideInfoWarning, match="1 of 3 considered documents have no omega.*'c'"):
        value = per_query(pm.FaiRR(omega=f"tsv:{table}") @ 3, qrels, run)["q"]
    assert value == pytest.approx(0.5 + 0.0 + 1.0 / 2.0)  # c: omega = 1 (published intent)
    with pytest.raises(pm.RunInputError, match="no omega for document 'c' of query 'q'.*missing='skip' or 'neutral'"):
        per_query(pm.FaiRR(omega=f"tsv:{table}", missing="error") @ 3, qrels, run)
    assert per_query(pm.FaiRR(omega=f"tsv:{table}", missing="skip") @ 3, qrels, run)["q"] == pytest.approx(0.5)


def test_nfairr_background_is_everything_the_run_retrieved():
    run = run_from({"q": [("a", "she she"), ("b", "he he"), ("c", "neutral"), ("d", "he and she")]})
    qrels = qrels_for(["q"])
    omega = [0.0, 0.0, 1.0, 1.0]
    fairr_2 = 0.0
    ideal_2 = 1.0 + 1.0 / math.log2(3)
    assert per_query(pm.NFaiRR @ 2, qrels, run)["q"] == pytest.approx(fairr_2 / ideal_2)
    assert per_query(pm.NFaiRR @ 4, qrels, run)["q"] == pytest.approx(
        (1 / 2 + 1 / math.log2(5)) / (1 + 1 / math.log2(3)))
    # the background does not depend on other measures' cutoffs in the same evaluation
    both = ir_measures.calc_aggregate([pm.NFaiRR @ 2, pm.FaiRR @ 1], qrels, run)
    assert both[pm.NFaiRR @ 2] == pytest.approx(0.0) and both[pm.FaiRR @ 1] == 0.0
    assert omega == list(neutrality([[2, 0], [0, 2], [0, 0], [1, 1]], [0.5, 0.5]))


def test_nfairr_zero_ideal_warns_and_is_left_out_or_zero():
    run = run_from({"q": [("a", "she she"), ("b", "he he")], "r": [("c", "neutral")]})
    with pytest.warns(pm.DegenerateQueryWarning, match=r"NFaiRR@2: 1 of 2 queries .*left out .*: 1: IFaiRR <= 0 .*\(e\.g\. 'q'\)"):
        values = {m.query_id: m.value for m in ir_measures.iter_calc([pm.NFaiRR @ 2], qrels_for(["q", "r"]), run)}
    assert values == {"r": 1.0}
    documented = pm.NFaiRR(degenerate="default") @ 2
    with pytest.warns(pm.DegenerateQueryWarning, match=r"1 of 2 queries .*got 0\.0, counted in the mean: 1: IFaiRR <= 0"):
        values = {m.query_id: m.value for m in ir_measures.iter_calc([documented], qrels_for(["q", "r"]), run)}
    assert values == {"q": 0.0, "r": 1.0}


def test_nfairr_collection_background(data_dir):
    corpus = f"corpus:{data_dir / 'grep-biasir'}?fields=title+text"
    run = pd.DataFrame({"query_id": "1", "doc_id": ["1", "2", "3"], "score": [3.0, 2.0, 1.0]})
    qrels = qrels_for(["1"])
    fairr = per_query(pm.FaiRR(text=corpus) @ 3, qrels, run)["1"]
    nfairr = per_query(pm.NFaiRR(text=corpus, background="collection") @ 3, qrels, run)["1"]
    # The collection has at least three neutral documents, so its ideal is the full discount.
    assert nfairr == pytest.approx(fairr / (1 + 1 / math.log2(3) + 1 / 2))


@pytest.mark.usefixtures("data_mirror")
def test_text_from_an_ir_datasets_dataset_equals_text_from_the_folder(data_dir):
    run = pd.DataFrame({"query_id": "1", "doc_id": ["1", "2", "3", "4"], "score": [4.0, 3.0, 2.0, 1.0]})
    qrels = qrels_for(["1"])
    folder = f"corpus:{data_dir / 'grep-biasir'}?fields=title+text"
    measures = [pm.TExFAIR(text=folder) @ 4, pm.TExFAIR(text="irds:pair/grep-biasir?fields=title+text") @ 4,
                pm.NFaiRR(text=folder, background="collection") @ 4,
                pm.NFaiRR(text="irds:pair/grep-biasir?fields=title+text", background="collection") @ 4]
    values = ir_measures.calc_aggregate(measures, qrels, run)
    assert values[measures[0]] == values[measures[1]] < 1  # the documents are gendered variants
    assert values[measures[2]] == values[measures[3]]  # the collection's ideal from either source
    with pytest.raises(ValueError, match="no field.*'body'"):
        ir_measures.calc_aggregate([pm.TExFAIR(text="irds:pair/grep-biasir?fields=body") @ 4], qrels, run)
    with pytest.raises(pm.RunInputError, match="provides document text and labels, but polarity= needs scores"):
        ir_measures.calc_aggregate([pm.Duo(polarity="irds:pair/grep-biasir") @ 4], qrels, run)


# --- TExFAIR, TED, AWRF ----------------------------------------------------------------------

def test_texfair_from_text_equals_math_and_separates_figure_1_lists():
    female, male = "she told her sister about it", "he told his brother about it"
    alternating = run_from({"q": [("f1", female), ("m1", male), ("f2", female), ("m2", male)]})
    segregated = run_from({"q": [("f1", female), ("f2", female), ("m1", male), ("m2", male)]})
    qrels = qrels_for(["q"])
    measures = [pm.TExFAIR @ 4, pm.FaiRR @ 4]
    fair = ir_measures.calc_aggregate(measures, qrels, alternating)
    unfair = ir_measures.calc_aggregate(measures, qrels, segregated)
    assert fair[pm.FaiRR @ 4] == unfair[pm.FaiRR @ 4] == 0.0  # every document is one-sided
    assert fair[pm.TExFAIR @ 4] > unfair[pm.TExFAIR @ 4]
    counts = [[3, 0], [0, 3], [3, 0], [0, 3]]
    assert fair[pm.TExFAIR @ 4] == pytest.approx(texfair(counts, [6, 6, 6, 6], [0.5, 0.5]))
    ted = ir_measures.calc_aggregate([pm.TED @ 4, pm.AWRF @ 4, pm.TED(rbdf=False) @ 4], qrels, alternating)
    assert ted[pm.TED @ 4] == pytest.approx(1 - fair[pm.TExFAIR @ 4])
    assert ted[pm.AWRF @ 4] == pytest.approx(ted[pm.TED(rbdf=False) @ 4])  # TED is an AWRF instance


def test_texfair_with_unequal_targets_and_no_group_terms():
    run = run_from({"q": [("a", "she"), ("b", "he")], "n": [("c", "nothing at all")]})
    qrels = qrels_for(["q", "n"])
    values = per_query(pm.TExFAIR(targets="female=0.3,male=0.7") @ 2, qrels, run)
    assert values["n"] == pytest.approx(2 * (1 - 0.3))  # no group term: nothing biased, max TED - 0
    with pytest.warns(pm.DegenerateQueryWarning, match=r"TED\(rbdf=False\)@2: 1 of 2"):
        list(ir_measures.iter_calc([pm.TED(rbdf=False) @ 2], qrels, run))


def test_awrf_share_alignment_counts_neutral_documents_as_balanced():
    run = run_from({"q": [("a", "she"), ("b", "nothing")]})
    qrels = qrels_for(["q"])
    exposure = per_query(pm.AWRF(weights="uniform") @ 2, qrels, run)["q"]
    share = per_query(pm.AWRF(alignment="share", weights="uniform") @ 2, qrels, run)["q"]
    assert exposure == pytest.approx(1.0)  # only female exposure
    assert share == pytest.approx(abs(0.75 - 0.5) * 2)  # (1, 0) and (1/2, 1/2) average to (3/4, 1/4)


# --- bad input -------------------------------------------------------------------------------

def test_missing_text_column_says_how_to_add_it():
    run = pd.DataFrame({"query_id": "q", "doc_id": ["a"], "score": [1.0]})
    with pytest.raises(pm.RunInputError, match=r"TExFAIR@5 reads the run's 'text' column, which it lacks.*"
                                               r"pt\.text\.get_text.*TExFAIR\(text='corpus:DIR' \| 'irds:DATASET'\)"):
        ir_measures.calc_aggregate([pm.TExFAIR @ 5], qrels_for(["q"]), run)


def test_missing_and_non_string_texts_name_the_document():
    run = run_from({"q": [("a", "she"), ("b", None)]})
    with pytest.raises(pm.RunInputError, match="no text for document 'b' of query 'q'.*missing='skip' or 'neutral'"):
        ir_measures.calc_aggregate([pm.TExFAIR(missing="error") @ 5], qrels_for(["q"]), run)
    with pytest.warns(pm.MissingSideInfoWarning, match="TExFAIR@5: 1 of 2 considered documents have no text in the run's "
                                                       "'text' column and were skipped"):
        ir_measures.calc_aggregate([pm.TExFAIR @ 5], qrels_for(["q"]), run)
    run = run_from({"q": [("a", "she"), ("b", 42)]})
    with pytest.raises(pm.RunInputError, match="text of document 'b' of query 'q'.*is a int, not a string"):
        ir_measures.calc_aggregate([pm.RaB @ 5], qrels_for(["q"]), run)


def test_empty_documents_are_neutral_and_have_no_length():
    run = run_from({"q": [("a", ""), ("b", "   "), ("c", "she")]})
    values = ir_measures.calc_aggregate([pm.TExFAIR @ 3, pm.FaiRR @ 3, pm.RaB(variant="tc") @ 3], qrels_for(["q"]), run)
    assert values[pm.FaiRR @ 3] == pytest.approx(1 + 1 / math.log2(3) + 1 / 2)  # "she" alone: 1 <= tau
    assert values[pm.RaB(variant="tc") @ 3] == pytest.approx(-1 / 3)
    assert values[pm.TExFAIR @ 3] == pytest.approx(texfair([[0, 0], [0, 0], [1, 0]], [0, 0, 1], [0.5, 0.5]))


def test_the_reference_tokenizer_is_a_named_option():
    run = run_from({"q": [("a", "her, she said")]})
    words = per_query(pm.RaB(variant="tc") @ 1, qrels_for(["q"]), run)["q"]
    whitespace = per_query(pm.RaB(variant="tc", tokenizer="whitespace") @ 1, qrels_for(["q"]), run)["q"]
    assert (words, whitespace) == (-2.0, -1.0)  # "her," is no token of the reference split


# --- PyTerrier ---------------------------------------------------------------------------------

def test_experiment_on_grep_biasir_with_pisa_bm25(data_dir, tmp_path):
    pt = pytest.importorskip("pyterrier")
    from pyterrier_pisa import PisaIndex

    from pairmeasures.sideinfo.polarity import read_beir

    folder = data_dir / "grep-biasir"
    data = read_beir(folder)
    index = PisaIndex(str(tmp_path / "grep.pisa"), text_field="text")
    index.index({"docno": d, "text": data.document_text(d, "title+text")} for d in data.corpus)
    topics = pd.DataFrame({"qid": list(data.queries), "query": [q["text"] for q in data.queries.values()]})
    qrels = data.qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
    text = f"corpus:{folder}?fields=title+text"
    measures = [ir_measures.nDCG @ 5, pm.TExFAIR(text=text) @ 5, pm.NFaiRR(text=text) @ 5, pm.RaB(text=text) @ 5,
                pm.ARaB(text=text) @ 5, pm.AWRF(text=text) @ 5, pm.TED(text=text) @ 5]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        table = pt.Experiment([index.bm25(num_results=10)], topics, qrels, eval_metrics=measures, names=["BM25"])
        run = index.bm25(num_results=10)(topics).rename(columns={"qid": "query_id", "docno": "doc_id"})
        direct = ir_measures.calc_aggregate(measures, data.qrels, run)
    row = table.iloc[0]
    for measure in measures:  # pt.Experiment gives what ir_measures gives on the pipeline's own results
        assert row[str(measure)] == pytest.approx(direct[measure]), measure
    assert 0 < row["nDCG@5"] < 1 and 0 < row[str(pm.TExFAIR(text=text) @ 5)] < 1
    assert row[str(pm.TED(text=text) @ 5)] == pytest.approx(1 - row[str(pm.TExFAIR(text=text) @ 5)])


def test_crbo_end_to_end_with_pisa(data_dir, tmp_path):
    pytest.importorskip("pyterrier")
    from pyterrier_pisa import PisaIndex

    from pairmeasures.math import rbo
    from pairmeasures.pipelines.counterfactual import CounterfactualText, counterfactual_rbo, crbo
    from pairmeasures.sideinfo.polarity import read_beir

    data = read_beir(data_dir / "grep-biasir")
    corpus = [{"docno": d, "text": data.document_text(d, "title+text")} for d in data.corpus]
    topics = pd.DataFrame({"qid": list(data.queries), "query": [q["text"] for q in data.queries.values()]})
    built = []

    def build(documents):
        index = PisaIndex(str(tmp_path / f"index-{len(built)}"), text_field="text")
        index.index(documents)
        built.append(index)
        return index.bm25(num_results=10)

    # Grep-BiasIR's queries are gender-neutral and swapping keeps every document's length, so
    # BM25 scores every document the same on both corpora: CRBO is exactly 1.
    neutral = counterfactual_rbo(build, corpus, topics, p=0.9, depth=10)
    assert len(neutral.per_query) == len(topics) and np.allclose(neutral.per_query["crbo"], 1.0)
    # A gendered query word ("she" is a PISA stopword) makes BM25 prefer the other variant on the counterfactual corpus.
    gendered = counterfactual_rbo(build, corpus, topics.assign(query=topics["query"] + " woman"), p=0.9, depth=10)
    def top(results, qid):  # trec_eval's order: score descending, ties by document id descending
        return results[results.qid == qid].sort_values(["score", "docno"], ascending=False).docno.tolist()[:10]

    expected = [rbo(top(gendered.original, q), top(gendered.counterfactual, q), 0.9) for q in gendered.per_query.qid]
    assert np.allclose(gendered.per_query["crbo"], expected)
    assert 0.2 < gendered.mean < 0.95
    assert np.allclose(crbo(gendered.original, gendered.original)["crbo"], 1.0)
    swapped = CounterfactualText()(pd.DataFrame({"qid": ["1"], "docno": ["d"], "text": ["She and her son"]}))
    assert swapped["text"].tolist() == ["He and his daughter"]


def test_crbo_orders_as_trec_eval_and_rejects_duplicates():
    from pairmeasures.math import rbo
    from pairmeasures.pipelines.counterfactual import crbo

    original = pd.DataFrame({"qid": "1", "docno": ["a", "b", "c"], "score": [1.0, 1.0, 0.5]})  # tie: b before a
    swapped = pd.DataFrame({"qid": ["1", "1", "2"], "docno": ["c", "a", "x"], "score": [2.0, 1.0, 1.0]})
    table = crbo(original, swapped, depth=3)
    assert table["qid"].tolist() == ["1", "2"]
    assert table["crbo"].tolist() == [pytest.approx(rbo(["b", "a", "c"], ["c", "a"], 0.9)), 0.0]
    with pytest.raises(pm.RunInputError, match="ranks the same document twice"):
        crbo(pd.concat([original, original]), swapped)


def test_the_term_measures_live_one_family_per_module():
    from pairmeasures.measures import awrf, fairr, rab, termbase, texfair

    homes = {"TExFAIR": texfair, "TED": texfair, "AWRF": awrf, "FaiRR": fairr, "NFaiRR": fairr, "RaB": rab,
             "ARaB": rab}
    for name, home in homes.items():
        assert type(getattr(pm, name)).__module__ == home.__name__
        assert isinstance(getattr(pm, name), termbase.TermMeasure)
