"""pt.Experiment reports relevance and bias side by side, with baselines and per-query output."""

from __future__ import annotations

import io
import itertools
import json
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from ir_measures import nDCG

import pairmeasures as pm
from pairmeasures.datasets import DATASET_IDS
from pairmeasures.demo import load_toy
from pairmeasures.math import duo


@pytest.fixture(scope="module")
def toy():
    return load_toy()


def experiment(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        return pt.Experiment(*args, **kwargs)


def test_experiment_with_baseline(toy):
    names = list(toy.runs)
    systems = [pt.Transformer.from_df(toy.runs[n]) for n in names]
    table = experiment(systems, toy.topics, toy.qrels, eval_metrics=[nDCG @ 5, pm.Duo @ 5, pm.rKL @ 5],
                       names=names, baseline=0).set_index("name")
    assert {"Duo@5", "rKL@5", "Duo@5 p-value", "rKL@5 +", "nDCG@5"} <= set(table.columns)
    assert table.loc["pro-first", "Duo@5"] == pytest.approx(1.0)
    assert table.loc["interleaved", "Duo@5"] < 0.2 < table.loc["relevance-first", "Duo@5"]
    assert table.loc["interleaved", "rKL@5"] == pytest.approx(0.0)


def test_experiment_per_query_matches_math(toy):
    run = toy.runs["relevance-first"]
    table = experiment([run], toy.topics, toy.qrels, eval_metrics=[pm.Duo @ 5], names=["rf"], perquery=True)
    for qid, value in table.set_index("qid")["value"].items():
        top = run[run.qid == qid].sort_values("score", ascending=False)["polarity"].to_numpy()[:5]
        assert value == pytest.approx(duo(top))


def test_experiment_in_batches_and_with_string_measures(toy):
    import ir_measures

    metrics = [ir_measures.parse_measure(m) for m in ("Duo(step=2)@5", "rND@5", "nDCG@5")]
    whole = experiment([toy.runs["pro-first"]], toy.topics, toy.qrels, eval_metrics=metrics, names=["p"])
    batched = experiment([toy.runs["pro-first"]], toy.topics, toy.qrels, eval_metrics=metrics, names=["p"],
                         batch_size=1)
    pd.testing.assert_frame_equal(whole[sorted(whole.columns)], batched[sorted(batched.columns)])


def test_validation_names_the_missing_side_column(toy):
    bare = pt.Transformer.from_df(toy.runs["pro-first"][["qid", "docno", "score"]])
    with pytest.raises(ValueError, match="polarity"):
        pt.Experiment([bare], toy.topics, toy.qrels, eval_metrics=[pm.Duo @ 5], validate="error")
    full = pt.Transformer.from_df(toy.runs["pro-first"])
    experiment([full], toy.topics, toy.qrels, eval_metrics=[pm.Duo @ 5], validate="error")


def test_transformer_adding_side_columns_feeds_the_measure(toy):
    documents = toy.documents.set_index("docno")

    class AddPolarity(pt.Transformer):
        def transform(self, results):
            return results.assign(polarity=documents.loc[results["docno"], "polarity"].to_numpy()
                                  if len(results) else np.zeros(0))

    pipeline = pt.Transformer.from_df(toy.runs["pro-first"][["qid", "docno", "score", "rank"]]) >> AddPolarity()
    table = experiment([pipeline], toy.topics, toy.qrels, eval_metrics=[pm.Duo @ 5], names=["p"], validate="error")
    assert table["Duo@5"].iloc[0] == pytest.approx(1.0)


class CountingRun(pt.Transformer):
    """Returns a fixed run and counts how often it was asked to."""

    def __init__(self, run):
        self.run, self.calls = run, 0

    def transform(self, topics):
        self.calls += 1
        return self.run[self.run.qid.isin(topics.qid)]


@pytest.mark.parametrize("validate", ["error", "warn"])
def test_a_missing_resource_fails_before_the_pipeline_runs(toy, tmp_path, validate):
    pipeline = CountingRun(toy.runs["pro-first"])
    missing = tmp_path / "no-such-groups.tsv"
    with pytest.raises(pm.sideinfo.SideInfoError, match=r"rND\(group='tsv:.*no-such-groups\.tsv'\)@5: .*does not exist"):
        pt.Experiment([pipeline], toy.topics, toy.qrels, eval_metrics=[nDCG @ 5, pm.rND(group=f"tsv:{missing}") @ 5],
                      validate=validate)
    assert pipeline.calls == 0


def test_a_resource_of_the_wrong_kind_fails_before_the_pipeline_runs(toy, tmp_path):
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "she said"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "who"}\n')
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    pipeline = CountingRun(toy.runs["pro-first"])
    with pytest.raises(pm.RunInputError, match=r"Duo\(polarity='corpus:.*'\)@5: resource .* provides document text, "
                                               r"but polarity= needs scores"):
        pt.Experiment([pipeline], toy.topics, toy.qrels, eval_metrics=[pm.Duo(polarity=f"corpus:{tmp_path}") @ 5],
                      validate="error")
    assert pipeline.calls == 0


def test_experiment_leaves_degenerate_queries_out_and_counts_the_measured_ones():
    """A query a measure leaves out has no row with perquery=True (no NaN), is out of the mean, the +/- counts and
    the baseline test (over the queries both systems measured), whatever else is measured alongside."""
    from scipy import stats

    topics = pd.DataFrame({"qid": ["q1", "q2", "q3", "q4"], "query": ["a", "b", "c", "d"]})
    qrels = pd.DataFrame({"qid": ["q1"] * 3 + ["q2"] * 3 + ["q3"] * 3 + ["q4"], "docno": list("abcdefghij"),
                          "label": [1] * 10})
    polarity = dict(zip("abcdefghij", [1.0, -1.0, 0.5, 0.9, 0.1, -0.8, -0.2, 0.7, 0.3, 0.0]))

    def run(order):
        rows = [(q, d, float(len(docs) - i)) for q, docs in order.items() for i, d in enumerate(docs)]
        frame = pd.DataFrame(rows, columns=["qid", "docno", "score"])
        return frame.assign(polarity=frame.docno.map(polarity))

    # q4 has one judged document: nothing to measure in either system.
    first = run({"q1": "abc", "q2": "def", "q3": "ghi", "q4": "j"})
    second = run({"q1": "cab", "q2": "fde", "q3": "igh", "q4": "j"})
    duo5 = pm.Duo(rel=1) @ 5
    measured = pm.Measured(of=duo5)
    defaulted = pm.Duo(rel=1, degenerate="default") @ 5
    metrics = [duo5, measured, defaulted, nDCG @ 5]
    names = ["first", "second"]
    for only_ours in (False, True):
        table = experiment([first, second], topics, qrels, eval_metrics=metrics[:3] if only_ours else metrics,
                           names=names, perquery=True)
        assert not table["value"].isna().any()  # no NaN, as from any ir_measures measure
        assert sorted(table[table.measure == str(duo5)].qid.unique()) == ["q1", "q2", "q3"]  # q4 left out
    values = table.pivot_table(index=["name", "qid"], columns="measure", values="value")
    assert values.loc[("first", "q4"), str(measured)] == 0 and values.loc[("first", "q4"), str(defaulted)] == 0.5
    means = experiment([first, second], topics, qrels, eval_metrics=metrics, names=names, baseline=0).set_index("name")
    mine = values.loc["first", str(duo5)].dropna()
    assert means.loc["first", str(duo5)] == pytest.approx(mine.mean())
    assert means.loc["first", str(duo5)] != pytest.approx(means.loc["first", str(defaulted)])
    assert means.loc["first", str(measured)] == 3
    theirs = values.loc["second", str(duo5)].dropna()
    expected = stats.ttest_rel(theirs.to_numpy(), mine.to_numpy())[1]
    assert means.loc["second", f"{duo5} p-value"] == pytest.approx(expected)  # over the queries both measured
    assert means.loc["second", f"{duo5} +"] + means.loc["second", f"{duo5} -"] <= 3
    assert np.isfinite(means.loc["second", "nDCG@5 p-value"]) or means.loc["second", "nDCG@5"] == means.loc["first", "nDCG@5"]
    raw = experiment([first, second], topics, qrels, eval_metrics=metrics, names=names, perquery=True, dataframe=False)
    assert str(duo5) not in raw[0]["q4"] and raw[0]["q4"][str(measured)] == 0
    assert not any(np.isnan(v) for rows in raw.values() for row in rows.values() for v in row.values())
    both = experiment([first, second], topics, qrels, eval_metrics=metrics, names=names, perquery="both")
    assert not both[1]["value"].isna().any()  # the means took nothing away or added NaN to the per-query results
    assert both[0].set_index("name").loc["first", str(duo5)] == pytest.approx(mine.mean())
    batched = experiment([first, second], topics, qrels, eval_metrics=metrics, names=names, batch_size=1,
                         baseline=0).set_index("name")
    pd.testing.assert_frame_equal(batched[sorted(batched.columns)], means[sorted(means.columns)])


FIRST_EXPERIMENT = """
import sys, warnings
if sys.argv[1] == "pairmeasures first":
    import pairmeasures as pm
    assert "pyterrier" not in sys.modules
    import pyterrier as pt
else:
    import pyterrier as pt
    import pairmeasures as pm
from ir_measures import nDCG
from pairmeasures.demo import load_toy
toy, duo = load_toy(), pm.Duo(rel=2) @ 3
names = sys.argv[2:]
with warnings.catch_warnings():
    warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
    table = pt.Experiment([pt.Transformer.from_df(toy.runs[n]) for n in names], toy.topics, toy.qrels,
                          eval_metrics=[duo, pm.Measured(of=duo), nDCG @ 3], names=names)
print(table.set_index("name").to_json())
"""


@pytest.mark.parametrize("imports", ["pairmeasures first", "pyterrier first"])
def test_a_system_whose_every_query_is_left_out_keeps_its_values_under_their_columns(imports):
    """PyTerrier lines up each system's means by position: a system that has no value of a measure on any query
    (pro-first: its top 3 hold a document judged 1 for every query) must not shift the other system's columns,
    also in the first pt.Experiment of a fresh interpreter, whichever of pairmeasures and PyTerrier came first."""
    duo = pm.Duo(rel=2) @ 3
    counted = str(pm.Measured(of=duo))
    for names in (["interleaved", "pro-first"], ["pro-first", "interleaved"]):
        done = subprocess.run([sys.executable, "-c", FIRST_EXPERIMENT, imports, *names], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        table = pd.read_json(io.StringIO(done.stdout))
        assert table.loc["interleaved", counted] == 3 and table.loc["pro-first", counted] == 0
        assert 0 <= table.loc["interleaved", str(duo)] < 1 and np.isnan(table.loc["pro-first", str(duo)])
        assert 0 < table.loc["pro-first", "nDCG@3"] <= 1


def test_a_protected_group_no_document_has_is_an_error_but_a_batch_may_lack_it(toy):
    run = toy.runs["pro-first"].assign(group=lambda f: np.where((f.qid == "q1") & (f.group == "pro"), "PRO", f.group))
    system = pt.Transformer.from_df(run)
    with pytest.raises(pm.RunInputError, match=r"rKL\(protected='Pro'\)@5: no document has group 'Pro'; groups seen: "
                                               r"'PRO', 'con', 'pro'"):
        experiment([system], toy.topics, toy.qrels, eval_metrics=[pm.rKL(protected="Pro") @ 5])
    # pt.Experiment(batch_size=1) shows the evaluator one query at a time: q1's batch has no 'pro' document,
    # which is no error there; the query is degenerate (and said to be), the others are measured
    with pytest.warns(pm.DegenerateQueryWarning, match=r"1 of 1 queries .*no document of the protected group 'pro'") as record:
        per_query = pt.Experiment([system], toy.topics, toy.qrels, eval_metrics=[pm.rKL(protected="pro") @ 5],
                                  batch_size=1, perquery=True).set_index("qid")["value"]
    assert {warning.filename for warning in record} == {__file__}  # the warning names this call
    whole = experiment([system], toy.topics, toy.qrels, eval_metrics=[pm.rKL(protected="pro") @ 5],
                       perquery=True).set_index("qid")["value"]
    assert "q1" not in per_query.index and per_query.to_dict() == whole.to_dict()  # q1 left out, in both


def wiki_balance_natural_mirror(folder, data_dir):
    """The session's mirror plus a miniature Wiki-Balance Natural (not in the shared data)."""
    from conftest import build_mirror

    folder.mkdir()
    build_mirror(folder, data_dir)
    natural = folder / "wiki-balance-natural"
    (natural / "qrels").mkdir(parents=True)
    passages = {"765_0_1": "Abortion is a right.", "765_0_2": "Abortion is wrong.", "765_0_3": "Abortion laws vary."}
    (natural / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "Abortion", "text": t}) + "\n"
                                                  for d, t in passages.items()))
    (natural / "queries.jsonl").write_text(json.dumps({"_id": "765_0", "text": "abortion"}) + "\n")
    (natural / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"765_0\t{d}\t4\n" for d in passages))
    return folder


@pytest.mark.parametrize("dataset_id", DATASET_IDS)
def test_document_text_through_pyterrier_on_every_registered_dataset(dataset_id, data_dir, embedder, tmp_path,
                                                                     monkeypatch, request):
    """The documented path: pt.text.get_text, the dataset's text_loader and PolarityScorer(dataset=...).
    The MS MARCO query sets take their documents from ir_datasets' msmarco-passage (a miniature here);
    Wiki-Balance Natural is not in the shared data (a miniature mirror here)."""
    from pairmeasures.sideinfo.polarity import PolarityModel

    if dataset_id.startswith("pair/msmarco-passage/"):
        request.getfixturevalue("msmarco_miniature")
    if dataset_id == "pair/wiki-balance/natural":
        monkeypatch.setenv("PAIRMEASURES_DATA", str(wiki_balance_natural_mirror(tmp_path / "mirror", data_dir)))
    dataset = pt.get_dataset(f"irds:{dataset_id}")
    documents = list(itertools.islice(dataset.get_corpus_iter(verbose=False), 3))
    texts = [document["text"] for document in documents]
    results = pd.DataFrame({"qid": "q1", "docno": [document["docno"] for document in documents],
                            "score": [3.0, 2.0, 1.0], "rank": [0, 1, 2]})
    assert list(pt.text.get_text(dataset, "text")(results).text) == texts
    assert list(dataset.text_loader()(results).text) == texts  # every field annotated str, text among them
    model = PolarityModel(embedder=embedder)  # axes fitted on the three documents themselves
    scored = pm.PolarityScorer(model, dataset=dataset)(results)
    expected = pm.PolarityScorer(model)(results.assign(text=texts))
    pd.testing.assert_frame_equal(scored, expected)
    assert scored.polarity.notna().all()
