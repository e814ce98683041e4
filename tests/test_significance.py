"""paired_tests reproduces pt.Experiment's p-values and rejections from per-query values measured once."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import pairmeasures  # noqa: F401  (registers the measures with ir_measures)
from pairmeasures.analysis import paired_tests

pt = pytest.importorskip("pyterrier")


def _data(seed: int, queries: int = 40, docs: int = 12):
    """Random qrels, gold groups and three runs; the third system ranks one document for a few queries, which
    rKL then excludes (one group), so the measures are tested over different query sets."""
    rng = np.random.default_rng(seed)
    qids = [f"q{i:02d}" for i in range(queries)]
    qrels = pd.DataFrame([(q, f"{q}d{j}", int(rng.integers(0, 3))) for q in qids for j in range(docs)],
                         columns=["qid", "docno", "label"])
    groups = {(q, f"{q}d{j}"): ("a" if rng.random() < .5 else "b") for q in qids for j in range(docs)}
    runs = []
    for system in range(3):
        rows = []
        for q in qids:
            depth = 1 if system == 2 and q in qids[:5] else docs
            for rank, j in enumerate(rng.permutation(docs)[:depth]):
                rows.append((q, f"{q}d{j}", float(docs - rank), groups[(q, f"{q}d{j}")]))
        runs.append(pd.DataFrame(rows, columns=["qid", "docno", "score", "group"]))
    return qids, qrels, runs


def _per_query(runs, qrels, measures) -> pd.DataFrame:
    import ir_measures

    from pairmeasures.measures.base import DegenerateQueryWarning

    rows = []
    warnings.simplefilter("ignore", DegenerateQueryWarning)  # pytest restores the filters after each test
    for name, run in zip(["base", "x", "y"], runs):
        for metric in ir_measures.iter_calc(measures, qrels.rename(columns={"qid": "query_id", "docno": "doc_id",
                                                                            "label": "relevance"}),
                                            run.rename(columns={"qid": "query_id", "docno": "doc_id"})):
            if not math.isnan(metric.value):
                rows.append((name, metric.query_id, str(metric.measure), metric.value))
    return pd.DataFrame(rows, columns=["system", "qid", "measure", "value"])


@pytest.mark.parametrize("seed,correction", [(0, "holm"), (1, "bonferroni"), (2, "fdr_bh")])
def test_p_values_and_rejections_equal_pt_experiment(seed, correction):
    import ir_measures

    qids, qrels, runs = _data(seed)
    measures = [ir_measures.parse_measure("nDCG@10"), ir_measures.parse_measure("rKL(degenerate='exclude')@10")]
    tests = paired_tests(_per_query(runs, qrels, measures), "base", correction).set_index(["system", "measure"])
    for measure in measures:
        measured = set(tests.xs(str(measure), level="measure")["n"])
        assert len(measured) == 1
        n = measured.pop()
        # pt.Experiment on the queries every system measured (all for nDCG, fewer for rKL)
        per_query = _per_query(runs, qrels, [measure])
        counts = per_query.groupby("qid")["system"].nunique()
        common = sorted(q for q, c in counts.items() if c == 3)
        assert len(common) == n and (n == len(qids)) == (str(measure) == "nDCG@10")
        topics = pd.DataFrame({"qid": common, "query": "x"})
        table = pt.Experiment([pt.Transformer.from_df(r, uniform=False) for r in runs], topics,
                              qrels[qrels["qid"].isin(common)], eval_metrics=[measure], names=["base", "x", "y"],
                              baseline=0, correction=correction).set_index("name")
        for system in ("x", "y"):
            assert tests.loc[(system, str(measure)), "p_value"] == table.loc[system, f"{measure} p-value"]
            assert tests.loc[(system, str(measure)), "reject"] == bool(table.loc[system, f"{measure} reject"])
            # the adjusted p-value, pt.Experiment's "p-value corrected": reject exactly where it is at most alpha
            corrected = tests.loc[(system, str(measure)), "p_corrected"]
            assert corrected == pytest.approx(table.loc[system, f"{measure} p-value corrected"], rel=1e-12)
            assert corrected >= tests.loc[(system, str(measure)), "p_value"]
            assert tests.loc[(system, str(measure)), "reject"] == (corrected <= 0.05)
    assert tests["p_value"].between(0, 1).all()


@pytest.mark.parametrize("seed", range(4))
def test_t_test_and_corrections_equal_scipy_and_statsmodels_bit_for_bit(seed):
    """The t-test and the Holm and Bonferroni corrections are computed without scipy.stats and statsmodels: the very
    numbers those give, on differences of every kind (none, constant, tied, 0/1 values, two queries)."""
    from scipy import stats
    from statsmodels.stats.multitest import multipletests

    from pairmeasures.analysis.significance import ttest_rel_p

    rng = np.random.default_rng(seed)
    for trial in range(300):
        n = int(rng.choice([2, 3, 7, 40, 907]))
        a, b = rng.normal(size=n), rng.normal(size=n)
        b = [b, a.copy(), a - 0.25, np.round(b, 1), rng.integers(0, 2, n).astype(float)][trial % 5]
        a = rng.integers(0, 2, n).astype(float) if trial % 5 == 4 else a
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # scipy's warnings on constant differences
            expected = stats.ttest_rel(a, b).pvalue
        assert np.float64(ttest_rel_p(a, b)).tobytes() == np.float64(expected).tobytes()
    for correction in ("holm", "bonferroni", "Holm", "fdr_bh"):
        values = rng.normal(size=(5, 30)) * rng.uniform(0.01, 1, (5, 1)) + rng.uniform(0, 0.6, (5, 1))
        frame = pd.DataFrame([(f"s{s}", f"q{q}", "m", values[s, q]) for s in range(5) for q in range(30)],
                             columns=["system", "qid", "measure", "value"])
        tests = paired_tests(frame, "s0", correction)
        reject, corrected = multipletests(tests["p_value"].to_numpy(), alpha=0.05, method=correction)[:2]
        assert tests["p_corrected"].to_numpy().tobytes() == corrected.tobytes()
        assert list(tests["reject"]) == list(reject)


def test_bad_input_names_what_to_fix():
    frame = pd.DataFrame({"system": ["a", "b"], "qid": ["1", "1"], "measure": ["m", "m"], "value": [1.0, 2.0]})
    with pytest.raises(ValueError, match="baseline 'c' is not a system"):
        paired_tests(frame, "c")
    with pytest.raises(ValueError, match="lacks the columns"):
        paired_tests(frame.drop(columns=["qid"]), "a")
    with pytest.raises(ValueError, match="correction 'nope'"):
        paired_tests(pd.concat([frame, frame.assign(qid="2", value=[3.0, 1.0])]), "a", "nope")


def test_fewer_than_two_common_queries_give_no_test():
    frame = pd.DataFrame({"system": ["a", "b", "a"], "qid": ["1", "1", "2"], "measure": "m", "value": [1.0, 2.0, 3.0]})
    assert paired_tests(frame, "a").empty


def test_scores_by_query_gives_ir_measures_the_frame_values():
    import ir_measures

    from pairmeasures.audit.curves import scores_by_query

    _, qrels, runs = _data(3)
    qrels = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    frame = runs[2].rename(columns={"qid": "query_id", "docno": "doc_id"}).sample(frac=1, random_state=0)
    measures = [ir_measures.parse_measure(m) for m in ("nDCG@10", "R@100", "P@5", "AP")]
    def values(run) -> dict:
        return {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}

    expected = values(frame)
    assert len(expected) == 4 * 40 and values(scores_by_query(frame)) == expected
