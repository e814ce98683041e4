"""pairmeasures adapts ir_measures and pt.Experiment to measures that leave queries out
(``pairmeasures/compat/``): the adaptations are invisible to every other measure, checked in fresh
interpreters with and without ``import pairmeasures``; and ``pt.Experiment(..., batch_size=N)`` gives the numbers it
gives without batches, in each of PyTerrier's plans."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from ir_measures import nDCG

import pairmeasures as pm

#: Every way a user evaluates ir_measures' own measures and one of their own (``Odd``: NaN on q2) through ir_measures
#: and PyTerrier, printed as JSON (numbers as ``repr``, so NaN compares equal and 0.1 differs from 0.1000001).
#: ``without``: pairmeasures never imported; ``with``: imported, and every adaptation installed by evaluating its
#: measures first; ``mixed``: as ``with``, and pairmeasures measures evaluated in every call, before the others
#: (their columns and metrics are left out of what is printed); Duo@3 leaves out q1, system a's first query.
BATTERY = r"""
import json, sys, warnings
import numpy as np, pandas as pd
mode = sys.argv[1]
if mode != "without":
    import pairmeasures as pm
import ir_measures
import pyterrier as pt
from ir_measures import AP, P, RR, nDCG

def odd(qrels, run):
    return float("nan") if run["query_id"].iloc[0] == "q2" else float(len(run)) / 10
Odd = ir_measures.define_byquery(odd, name="Odd")
MEASURES = [Odd, nDCG @ 5, P @ 2, AP, RR]
OURS = [pm.Duo @ 3, pm.Measured(of="Duo@3"), pm.rKL(protected="x")] if mode != "without" else []
QIDS = ["q1", "q2", "q3", "q4"]
topics = pd.DataFrame({"qid": QIDS, "query": ["a", "b", "c", "d"]})
qrels = pd.DataFrame([(q, f"{q}d{i}", (i * 7 + int(q[1])) % 3) for q in QIDS for i in range(6)],
                     columns=["qid", "docno", "label"])

def run(seed):
    rng = np.random.default_rng(seed)
    rows = []
    for q in QIDS:
        n = 2 if q == "q4" or (q, seed) == ("q1", 0) else 6  # two documents, which Duo@3 leaves out
        for i in range(n):
            rows.append((q, f"{q}d{rng.integers(0, 9)}", float(rng.integers(0, 4)), float(rng.normal()),
                         "x" if rng.random() < 0.5 else "y"))
    frame = pd.DataFrame(rows, columns=["qid", "docno", "score", "polarity", "group"]).drop_duplicates(["qid", "docno"])
    return pt.model.add_ranks(frame)

RUNS = {"a": run(0), "b": run(1), "c": run(2)}

def value(v):
    return repr(float(v)) if isinstance(v, (float, int, np.floating, np.integer)) and not isinstance(v, bool) else repr(v)

def ours(name):
    return any(name.startswith(str(m)) for m in OURS)

def frame(table):
    table = table.data if hasattr(table, "data") else table
    if "measure" in table.columns:  # per query: the rows of the other measures, in order
        table = table[~table["measure"].map(ours)]
    columns = [c for c in table.columns if not ours(c)]
    return {"columns": columns, "rows": [[value(v) for v in row] for row in table[columns].itertuples(index=False)]}

def metrics(seq):
    return [(m.query_id, str(m.measure), value(m.value)) for m in seq if not ours(str(m.measure))]

def noted(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return {"result": result, "warnings": [f"{w.category.__name__}: {w.message}" for w in caught
                                           if w.category.__name__ not in ("DegenerateQueryWarning", "MissingSideInfoWarning")]}

def experiment(**options):
    return pt.Experiment(options.pop("systems", list(RUNS.values())), topics, qrels,
                         eval_metrics=(OURS if mode == "mixed" else []) + MEASURES, names=list(RUNS), **options)

if mode != "without":  # every adaptation installed, as after a user's first evaluation of our measures
    pt.Experiment([RUNS["a"]], topics, qrels, eval_metrics=[nDCG @ 5] + OURS, names=["a"])
    ir_measures.calc_aggregate([nDCG @ 5] + OURS, pt.model.to_ir_measures(qrels), pt.model.to_ir_measures(RUNS["a"]))

def counting(values, baseline):  # a test that shows what it was given: how many pairs, how many NaN
    return 0.0, float(len(values)) + 1000.0 * float(np.isnan(values).sum() + np.isnan(baseline).sum())

transformers = [pt.Transformer.from_df(r) for r in RUNS.values()]
every = (OURS if mode == "mixed" else []) + MEASURES  # ours first: a column of theirs after one of ours
evaluations = {
    "means": lambda: frame(experiment()),
    "t-test": lambda: frame(experiment(baseline=0)),
    "wilcoxon, corrected": lambda: frame(experiment(baseline=1, test="wilcoxon", correction="bonferroni")),
    "test given": lambda: frame(experiment(baseline=0, test=counting)),
    "rounded": lambda: frame(experiment(baseline=0, round=3)),
    "per query": lambda: frame(experiment(perquery=True)),
    "both": lambda: [frame(part) for part in experiment(perquery="both", baseline=None)],
    "dicts": lambda: [{name: {k: value(v) for k, v in row.items() if not ours(k)} for name, row in experiment(dataframe=False).items()},
                      {s: {q: {k: value(v) for k, v in row.items() if not ours(k)} for q, row in rows.items()}
                       for s, rows in experiment(perquery=True, dataframe=False).items()}],
    "batches": lambda: frame(experiment(systems=transformers, batch_size=2, baseline=0)),
    "tree": lambda: frame(experiment(systems=transformers, plan="tree", verbose=False, baseline=0)),
    "tree in batches": lambda: frame(experiment(systems=transformers, plan="tree", verbose=False, batch_size=2,
                                                perquery=True)),
    "Evaluate": lambda: [{k: value(v) for k, v in pt.Evaluate(RUNS["a"], qrels, every).items() if not ours(k)},
                         {q: {k: value(v) for k, v in row.items() if not ours(k)}
                          for q, row in pt.Evaluate(RUNS["a"], qrels, every, perquery=True).items()}],
}

class Cut(pt.Transformer):  # a parameter for GridScan: the depth of run a
    def __init__(self, k):
        self.k = k

    def __repr__(self):
        return "Cut()"

    def transform(self, topics):
        return RUNS["a"][RUNS["a"].qid.isin(topics.qid)].groupby("qid").head(self.k)

cut = Cut(2)
evaluations.update({
    "GridScan": lambda: frame(pt.GridScan(cut, {cut: {"k": [2, 4]}}, topics, qrels, every, verbose=False)),
    "GridScan in batches": lambda: frame(pt.GridScan(cut, {cut: {"k": [3]}}, topics, qrels, every, batch_size=2,
                                                     verbose=False)),
})
irm_qrels, irm_run = pt.model.to_ir_measures(qrels), pt.model.to_ir_measures(RUNS["b"])
evaluations.update({
    "iter_calc": lambda: metrics(ir_measures.iter_calc(every, irm_qrels, irm_run)),
    "calc_aggregate": lambda: sorted((str(m), value(v)) for m, v in ir_measures.calc_aggregate(every, irm_qrels, irm_run).items() if not ours(str(m))),
    "calc": lambda: metrics(ir_measures.calc(every, irm_qrels, irm_run).per_query),
    "evaluator": lambda: metrics(ir_measures.evaluator(every, irm_qrels).iter_calc(irm_run)),
})
print(json.dumps({name: noted(call) for name, call in evaluations.items()}))
"""


def battery(mode: str) -> dict:
    environment = {**os.environ, "PYTHONHASHSEED": "0"}  # ir_measures orders measures as a set: one order for all
    done = subprocess.run([sys.executable, "-c", BATTERY, mode], capture_output=True, text=True, timeout=600,
                          env=environment)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def without_pairmeasures() -> dict:
    return battery("without")


def test_other_measures_are_untouched_by_importing_pairmeasures(without_pairmeasures):
    """Every value, mean, p-value, count, column, row, order and warning of ir_measures' measures and a user's own
    (define_byquery, NaN on one query: its p-value stays NaN) is what it is without pairmeasures, once pairmeasures
    has adapted ir_measures and PyTerrier to its measures."""
    got = battery("with")
    assert got.keys() == without_pairmeasures.keys()
    for name, expected in without_pairmeasures.items():
        assert got[name] == expected, name
    t_test = without_pairmeasures["t-test"]["result"]
    p_value = t_test["columns"].index("Odd p-value")
    assert [row[p_value] for row in t_test["rows"]][1:] == ["nan", "nan"]  # NaN on q2: PyTerrier's NaN test
    given = without_pairmeasures["test given"]["result"]
    assert [row[given["columns"].index("Odd p-value")] for row in given["rows"]][1:] == ["2004.0", "2004.0"]


def normalised(result):
    """A battery result without the order of columns, rows and metrics (a measure added to a call reorders them)."""
    if isinstance(result, dict) and set(result) == {"columns", "rows"}:
        columns = result["columns"]
        return sorted(json.dumps(dict(sorted(zip(columns, row))), sort_keys=True) for row in result["rows"])
    if isinstance(result, list) and result and all(isinstance(item, list) and len(item) == 3 for item in result):
        return sorted(map(tuple, result))
    if isinstance(result, list):
        return [normalised(item) for item in result]
    return json.dumps(result, sort_keys=True)


def test_other_measures_keep_their_numbers_beside_pairmeasures_measures(without_pairmeasures):
    """With Duo, Measured and rKL evaluated in the same calls, the other measures' values, means, p-values (the
    define_byquery one's stays NaN) and +/- counts are those they have alone."""
    got = battery("mixed")
    for name, expected in without_pairmeasures.items():
        assert normalised(got[name]["result"]) == normalised(expected["result"]), name
        extra = list(got[name]["warnings"])  # and scipy's about our measures' tests
        for warning in expected["warnings"]:
            assert warning in extra, (name, warning)
            extra.remove(warning)


# --- pt.Experiment(batch_size=N) ----------------------------------------------------------------------------------

JUDGED = ["q1", "q2", "q3", "q4", "q5"]


def batch_inputs():
    """Topics with two unjudged ones (u1, u2: batches of only unjudged topics at batch_size=1 and 2), q2 without the
    protected group 'x' in either system, and q5 with two documents (Duo@3 leaves it out)."""
    order = ["q1", "q2", "u1", "u2", "q3", "q4", "q5"]
    topics = pd.DataFrame({"qid": order, "query": [f"topic {q}" for q in order]})
    qrels = pd.DataFrame([(q, f"{q}-{i}", i % 3) for q in JUDGED for i in range(6)], columns=["qid", "docno", "label"])

    def run(seed):
        rng = np.random.default_rng(seed)
        rows = [(q, f"{q}-{i}", float(rng.integers(0, 3)), float(rng.normal()),
                 "y" if q == "q2" else str(rng.choice(["x", "y"])))
                for q in order for i in rng.permutation(2 if q == "q5" else 6)]
        return pt.model.add_ranks(pd.DataFrame(rows, columns=["qid", "docno", "score", "polarity", "group"]))

    return topics, qrels, {"first": run(1), "second": run(2)}


def measures():
    duo = pm.Duo @ 3
    return [pm.rKL(protected="x") @ 4, pm.rND(protected="x"), duo, pm.Measured(of=duo),
            pm.Duo(degenerate="default") @ 3, nDCG @ 5]


def evaluate(runs, topics, qrels, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        warnings.simplefilter("ignore", UserWarning)  # PyTerrier: topics not found in qrels
        return pt.Experiment([pt.Transformer.from_df(run) for run in runs.values()], topics, qrels,
                             eval_metrics=measures(), names=list(runs), verbose=False, **options)


@pytest.mark.parametrize("plan", ["linear", "tree"])
def test_batches_give_the_numbers_of_the_whole_run_in_every_plan(plan):
    """A batch of only unjudged topics, a batch without the protected group: the same means, p-values, counts and
    per-query values as without batches (no error for the empty qrels or the missing group of one batch)."""
    topics, qrels, runs = batch_inputs()
    assert (runs["first"][runs["first"].qid == "q2"].group != "x").all()
    whole = evaluate(runs, topics, qrels, plan=plan, baseline=0).set_index("name")
    per_query = evaluate(runs, topics, qrels, plan=plan, perquery=True)
    assert whole.loc["first", "Measured(of='Duo@3')"] == 4  # q5 left out
    assert not np.isnan(whole.loc["second", "Duo@3 p-value"])
    assert "q2" not in set(per_query[per_query.measure == "rKL(protected='x')@4"].qid)  # no 'x': left out
    for batch_size in (1, 2, 3):
        batched = evaluate(runs, topics, qrels, plan=plan, baseline=0, batch_size=batch_size).set_index("name")
        pd.testing.assert_frame_equal(batched[whole.columns], whole)
        batched = evaluate(runs, topics, qrels, plan=plan, perquery=True, batch_size=batch_size)
        pd.testing.assert_frame_equal(batched.sort_values(["name", "qid", "measure"], ignore_index=True),
                                      per_query.sort_values(["name", "qid", "measure"], ignore_index=True))


@pytest.mark.parametrize("plan", ["linear", "tree"])
def test_a_group_no_batch_has_is_the_error_it_is_without_batches(plan):
    """The second system has no document of group 'x' at all: the experiment fails naming the measure and the groups
    seen, with and without batches, in both plans; a system holding it in one batch only is measured."""
    topics, qrels, runs = batch_inputs()
    second = runs["second"].assign(group="y")
    runs["second"] = second.assign(group=np.where(second.qid == "q4", "z", "y"))
    message = r"rKL\(protected='x'\)@4: no document has group 'x'; groups seen: 'y', 'z'\. Name one of them"
    for batch_size in (None, 1, 3):
        with pytest.raises(pm.RunInputError, match=message):
            evaluate(runs, topics, qrels, plan=plan, batch_size=batch_size)
    runs["second"] = second.assign(group=np.where(second.qid == "q4", "x", "y"))  # 'x' in q4's batch alone
    whole = evaluate(runs, topics, qrels, plan=plan, perquery=True)
    batched = evaluate(runs, topics, qrels, plan=plan, perquery=True, batch_size=1)
    pd.testing.assert_frame_equal(batched.sort_values(["name", "qid", "measure"], ignore_index=True),
                                  whole.sort_values(["name", "qid", "measure"], ignore_index=True))


def test_evaluate_per_query_shows_no_value_for_a_query_left_out():
    """pt.Evaluate(..., perquery=True) has no value for a query a measure left out (as pt.Experiment has no row),
    where a relevance measure still has one; its means leave the query out."""
    topics, qrels, runs = batch_inputs()
    duo, ndcg = pm.Duo @ 3, nDCG @ 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        table = pt.Evaluate(runs["first"], qrels, [duo, ndcg], perquery=True)
        alone = pt.Evaluate(runs["first"], qrels, [duo], perquery=True)
        means = pt.Evaluate(runs["first"], qrels, [duo, ndcg])
    assert str(duo) not in table["q5"] and str(ndcg) in table["q5"] and "q5" not in alone
    measured = [row[str(duo)] for row in table.values() if str(duo) in row]
    assert len(measured) == 4 and not np.isnan(measured).any()
    assert means[str(duo)] == pytest.approx(np.mean(measured))


def test_means_beside_per_query_values_keep_every_column_in_place():
    """perquery='both': the means are those of perquery=False, column by column, when a system's first query is one
    a measure left out (PyTerrier reads each system's means by position)."""
    topics, qrels, runs = batch_inputs()
    topics = topics[topics.qid.isin(JUDGED)]  # PyTerrier's means of perquery='both' are NaN with an unjudged topic
    runs["first"] = runs["first"][(runs["first"].qid != "q1") | runs["first"].docno.isin(["q1-0", "q1-1"])]
    plain = evaluate(runs, topics, qrels)
    both = evaluate(runs, topics, qrels, perquery="both")
    pd.testing.assert_frame_equal(both[0], plain)
    assert "q1" not in set(both[1][(both[1].name == "first") & (both[1].measure == "Duo@3")].qid)
