"""Audit statistics: the paired bootstrap against scipy and brute force, summaries of pt.Experiment output, breakdowns."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pairmeasures.analysis import BootstrapWarning, SmallCellWarning, breakdown, paired_bootstrap, summarize
from pairmeasures.analysis import bootstrap as bootstrap_module


def brute_force(values, baseline, resamples, confidence, seed, step):
    """One resample at a time with the same draws (``step`` resamples per draw call): means over measured draws,
    resamples without one dropped, percentile interval."""
    rng = np.random.default_rng(seed)
    systems, queries = values.shape
    draws = np.concatenate([rng.integers(0, queries, (min(step, resamples - s), queries))
                            for s in range(0, resamples, step)])
    alpha = (1 - confidence) / 2

    def interval(rows):
        stats = []
        for row in rows:
            kept = [np.nanmean(row[d]) for d in draws if not np.isnan(row[d]).all()]
            stats.append(np.quantile(kept, [alpha, 1 - alpha]) if kept else [np.nan, np.nan])
        return np.array(stats)

    out = {"mean": np.array([np.nanmean(r) if not np.isnan(r).all() else np.nan for r in values])}
    out["low"], out["high"] = interval(values).T
    if baseline is not None:
        differences = values - values[baseline]
        differences[baseline] = np.nan
        out["diff"] = np.array([np.nanmean(r) if not np.isnan(r).all() else np.nan for r in differences])
        out["diff_low"], out["diff_high"] = interval(differences).T
    return out


def test_matches_scipy_paired_percentile_bootstrap():
    from scipy import stats

    values = np.random.default_rng(3).random((3, 40))
    for confidence in (0.95, 0.8):
        ours = paired_bootstrap(values, baseline=0, resamples=3000, confidence=confidence, seed=7)
        for s in range(3):
            # scipy draws its resample indices with the same call on the same generator: identical resamples
            mean = stats.bootstrap((values[s],), np.mean, n_resamples=3000, method="percentile",
                                   confidence_level=confidence, rng=np.random.default_rng(7)).confidence_interval
            assert (ours["low"][s], ours["high"][s]) == pytest.approx(tuple(mean), rel=1e-12)
            if s:
                diff = stats.bootstrap((values[s], values[0]), lambda a, b, axis: np.mean(a - b, axis=axis),
                                       paired=True, n_resamples=3000, method="percentile",
                                       confidence_level=confidence, rng=np.random.default_rng(7))
                assert (ours["diff_low"][s], ours["diff_high"][s]) == pytest.approx(
                    tuple(diff.confidence_interval), rel=1e-12)
                assert ours["diff"][s] == pytest.approx(np.mean(values[s] - values[0]), rel=1e-12)
        assert ours["mean"] == pytest.approx(values.mean(axis=1), rel=1e-12)
        assert list(ours["n"]) == [40, 40, 40]


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 9)),
                  elements=st.one_of(st.floats(-5, 5), st.just(np.nan))),
       st.integers(0, 3), st.integers(0, 2**32 - 1))
def test_nan_handling_matches_brute_force(values, baseline, seed):
    baseline = baseline if baseline < len(values) else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BootstrapWarning)
        ours = paired_bootstrap(values, baseline=baseline, resamples=150, seed=seed)
    expected = brute_force(values, baseline, 150, 0.95, seed, step=150)
    for key, value in expected.items():
        np.testing.assert_allclose(ours[key], value, rtol=1e-9, atol=1e-12, err_msg=key)
    assert list(ours["n"]) == list((~np.isnan(values)).sum(axis=1))


def test_chunks_over_resamples(monkeypatch):
    values = np.random.default_rng(0).random((2, 30))
    values[1, :20] = np.nan
    monkeypatch.setattr(bootstrap_module, "_CHUNK_BYTES", 24 * 30 * 7)  # 7 resamples per chunk
    ours = paired_bootstrap(values, baseline=1, resamples=100, seed=4)
    expected = brute_force(values, 1, 100, 0.95, 4, step=7)
    for key, value in expected.items():
        np.testing.assert_allclose(ours[key], value, rtol=1e-9, err_msg=key)


def test_query_draws_counted_in_blocks_and_kept_give_the_same_bits(monkeypatch):
    """The counts are drawn and counted a block of resamples at a time and kept for the next call with the same seed,
    resamples and queries (an audit resamples every measure with one seed): the very counts one draw of all the
    resamples gives, and the same intervals, bit for bit."""
    from pairmeasures.io.memo import clear_caches

    values = np.random.default_rng(2).random((3, 40))
    values[2, :9] = np.nan
    drawn = np.random.default_rng(5).integers(0, 40, (300, 40))
    expected = np.stack([np.bincount(row, minlength=40) for row in drawn]).astype(np.float64)
    clear_caches()
    fresh = paired_bootstrap(values, baseline=0, resamples=300, seed=5)
    kept = paired_bootstrap(values, baseline=0, resamples=300, seed=5)
    monkeypatch.setattr(bootstrap_module, "_BLOCK_DRAWS", 40 * 7)  # 7 resamples a block
    assert np.array_equal(bootstrap_module._draw_counts(np.random.default_rng(5), 300, 40), expected)
    clear_caches()
    blocks = paired_bootstrap(values, baseline=0, resamples=300, seed=5)
    for key in fresh:
        assert fresh[key].tobytes() == kept[key].tobytes() == blocks[key].tobytes()


def test_deterministic_under_seed():
    values = np.random.default_rng(1).random((4, 50))
    first, again = (paired_bootstrap(values, baseline=2, resamples=500, seed=11) for _ in range(2))
    other = paired_bootstrap(values, baseline=2, resamples=500, seed=12)
    for key in first:
        np.testing.assert_array_equal(first[key], again[key])
    assert not np.array_equal(first["low"], other["low"])


def test_constant_row_has_zero_width_interval():
    values = np.vstack([np.full(25, 0.1), np.random.default_rng(2).random(25)])
    values[0, 3] = np.nan
    result = paired_bootstrap(values, resamples=1000)
    assert result["mean"][0] == result["low"][0] == result["high"][0] == 0.1
    assert result["low"][1] < result["mean"][1] < result["high"][1]


def test_few_usable_resamples_warn_and_unmeasured_rows_are_nan():
    values = np.random.default_rng(5).random((3, 20))
    values[1, 1:] = np.nan  # one measured query: about 36% of resamples never draw it
    values[2] = np.nan
    with pytest.warns(BootstrapWarning) as caught:
        result = paired_bootstrap(values, baseline=0, resamples=2000, names=["a", "b", "c"])
    messages = " | ".join(str(w.message) for w in caught)
    assert "nothing measured for c" in messages
    assert "mean of b (1," in messages and "2,000)" in messages
    assert result["n"][2] == 0 and np.isnan([result[k][2] for k in ("mean", "low", "high", "diff")]).all()
    assert result["low"][1] == result["high"][1] == values[1, 0]


@pytest.mark.parametrize("kwargs,message", [
    ({"values": np.zeros(5)}, "values must be a (systems, queries) array"),
    ({"values": np.zeros((2, 0))}, "shape (2, 0)"),
    ({"values": np.array([[1.0, np.inf]])}, "infinite"),
    ({"resamples": 0}, "resamples must be a positive integer; got 0"),
    ({"resamples": 10.5}, "got 10.5"),
    ({"confidence": 1.0}, "confidence must lie strictly between 0 and 1 (e.g. 0.95); got 1.0"),
    ({"confidence": 95}, "got 95"),
    ({"baseline": 3}, "baseline must be a row index in 0..2 of values; got 3"),
    ({"baseline": -1}, "got -1"),
    ({"names": ["a"]}, "names has 1 entries but values has 3 rows"),
])
def test_bad_arguments_name_the_parameter(kwargs, message):
    arguments = {"values": np.zeros((3, 4)), **kwargs}
    with pytest.raises(ValueError) as error:
        paired_bootstrap(**arguments)
    assert message in str(error.value)


@pytest.fixture(scope="module")
def experiment_frame():
    """pt.Experiment(perquery=True) over two systems: nDCG@3 on every query, Duo@3 leaving q4 out (one document)."""
    import pyterrier as pt
    from ir_measures import nDCG

    import pairmeasures as pm

    rng = np.random.default_rng(0)
    qids = [f"q{i}" for i in range(12)]
    topics = pd.DataFrame({"qid": qids, "query": "x"})
    rows, qrels = [], []
    for q in qids:
        docs = [f"{q}-d{j}" for j in range(1 if q == "q4" else 5)]
        qrels += [(q, d, int(rng.integers(0, 2))) for d in docs]
        for system in ("a", "b"):
            scores = rng.random(len(docs))
            rows += [(system, q, d, s, p) for d, s, p in zip(docs, scores, rng.uniform(-1, 1, len(docs)))]
    run = pd.DataFrame(rows, columns=["system", "qid", "docno", "score", "polarity"])
    qrels = pd.DataFrame(qrels, columns=["qid", "docno", "label"])
    systems = [pt.Transformer.from_df(run[run.system == s].drop(columns="system")) for s in ("a", "b")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        table = pt.Experiment(systems, topics, qrels, eval_metrics=[nDCG @ 3, pm.Duo @ 3],
                              names=["a", "b"], perquery=True)
    assert not table["value"].isna().any() and len(table) == 2 * (12 + 11)  # q4 has no Duo@3 row
    return table, qids


def test_summarize_experiment_output(experiment_frame):
    table, qids = experiment_frame
    per_query = table.rename(columns={"name": "system"})
    summary = summarize(per_query, baseline="a", resamples=2000, topics=qids)
    DUO = "Duo@3"  # ir_measures' name, as pt.Experiment shows it
    assert list(summary.columns) == ["system", "measure", "mean", "n", "excluded", "low", "high", "diff",
                                     "diff_low", "diff_high", "common_mean", "common_n"]
    summary = summary.set_index(["system", "measure"])
    duo = per_query[per_query.measure == DUO].pivot(index="qid", columns="system", values="value")
    assert summary.loc[("b", DUO), "n"] == len(duo) == 11 and summary.loc[("b", DUO), "excluded"] == 1
    assert summary.loc[("a", "nDCG@3"), "excluded"] == 0
    assert summary.loc[("b", DUO), "mean"] == pytest.approx(duo["b"].mean())
    assert summary.loc[("b", DUO), "common_n"] == 11 and summary.loc[("b", DUO), "common_mean"] == pytest.approx(duo["b"].mean())
    assert summary.loc[("b", DUO), "diff"] == pytest.approx((duo["b"] - duo["a"]).mean())
    assert np.isnan(summary.loc[("a", "nDCG@3"), ["diff", "diff_low", "diff_high"]].to_numpy(dtype=float)).all()
    for row in summary.itertuples():
        assert row.low <= row.mean <= row.high
    b = summary.loc[("b", DUO)]
    assert b["diff_low"] <= b["diff"] <= b["diff_high"]
    # the same draws as paired_bootstrap on the (system, query) matrix of that measure
    direct = paired_bootstrap(duo[["a", "b"]].to_numpy().T, baseline=0, resamples=2000)
    assert b["diff_low"] == direct["diff_low"][1] and b["low"] == direct["low"][1]


def test_summarize_compares_systems_on_the_queries_every_system_measured():
    """Each system's mean is over the queries it measured (what eval gives for its run); common_mean is over the
    queries every system measured, the figure to compare rows by when they measured different queries."""
    frame = pd.DataFrame({"system": ["a"] * 3 + ["b"] * 2, "qid": ["1", "2", "3", "1", "3"], "measure": "m",
                          "value": [1.0, 5.0, 3.0, 2.0, 4.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BootstrapWarning)
        summary = summarize(frame, resamples=200).set_index("system")
    assert summary.loc["a", "mean"] == pytest.approx(3.0) and summary.loc["b", "mean"] == pytest.approx(3.0)
    assert summary.loc["a", "common_mean"] == pytest.approx(2.0) and summary.loc["b", "common_mean"] == pytest.approx(3.0)
    assert list(summary["common_n"]) == [2, 2] and list(summary["n"]) == [3, 2]


def test_summarize_names_what_to_fix(experiment_frame):
    table, qids = experiment_frame
    with pytest.raises(ValueError, match=r"lacks the column\(s\) system.*rename\(columns=\{'name': 'system'\}\)"):
        summarize(table)
    unjudged = table.rename(columns={"name": "system"})
    unjudged.loc[unjudged.index[0], "value"] = np.nan  # as pt.Experiment(perquery=True) shows a topic without qrels
    with pytest.raises(ValueError, match="value is not a finite number .*drop those rows"):
        summarize(unjudged)
    per_query = table.rename(columns={"name": "system"})
    with pytest.raises(ValueError, match=r"baseline 'c' is not a system of per_query; its systems are \['a', 'b'\]"):
        summarize(per_query, baseline="c")
    with pytest.raises(ValueError, match=r"1 qid\(s\) not among topics, e.g. \['q9'\]"):
        summarize(per_query, topics=[q for q in qids if q != "q9"])
    with pytest.raises(ValueError, match=r"repeated \(system, qid, measure\)"):
        summarize(pd.concat([per_query, per_query.head(1)]))
    with pytest.raises(TypeError, match="pandas DataFrame"):
        summarize(per_query.to_dict())


def test_summarize_without_baseline_and_a_system_missing_a_measure():
    frame = pd.DataFrame({"system": ["a", "a", "b", "a"], "qid": ["1", "2", "1", "1"],
                          "measure": ["m", "m", "m", "k"], "value": [1.0, 2.0, 3.0, 0.5]})
    with pytest.warns(BootstrapWarning) as caught:
        summary = summarize(frame, resamples=100).set_index(["system", "measure"])
    assert {str(w.message).split(":")[0] for w in caught} == {
        "nothing measured for b on k", "fewer than 95% of the resamples drew a measured query for the mean of b on m (67 of 100)"}
    assert {w.filename for w in caught} == {__file__}  # shown at the caller's line
    assert summary.loc[("b", "k"), "n"] == 0 and summary.loc[("b", "k"), "excluded"] == 2
    assert summary.loc[("a", "m"), "mean"] == 1.5 and summary["diff"].isna().all()


def per_query_frame(values):
    return pd.DataFrame([(s, q, m, v) for (s, q, m), v in values.items()], columns=["system", "qid", "measure", "value"])


def test_breakdown_counts_queries_in_every_cell_they_belong_to():
    rng = np.random.default_rng(0)
    qids = [f"q{i}" for i in range(30)]
    values = {(s, q, m): float(rng.random()) for s in ("a", "b") for q in qids for m in ("Duo@10", "nDCG@10")}
    del values[("b", "q0", "Duo@10")]  # excluded for b only
    groups = {q: (["health", "law"] if i < 10 else ["law"] if i < 25 else []) for i, q in enumerate(qids[:28])}
    with pytest.warns(SmallCellWarning) as caught:
        cells = breakdown(per_query_frame(values), groups, field="domain", min_size=10)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "(none) / a / Duo@10: n=5" in message and "health / b / Duo@10: n=9" in message and "law" not in message
    assert list(cells.columns) == ["field", "value", "system", "measure", "mean", "n"]
    assert set(cells["field"]) == {"domain"} and list(dict.fromkeys(cells["value"])) == ["health", "law", "(none)"]
    cells = cells.set_index(["value", "system", "measure"])
    assert cells.loc[("law", "a", "Duo@10"), "n"] == 25 and cells.loc[("(none)", "b", "nDCG@10"), "n"] == 5
    health = [values[("b", q, "Duo@10")] for q in qids[1:10]]
    assert cells.loc[("health", "b", "Duo@10"), "mean"] == pytest.approx(np.mean(health))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        breakdown(per_query_frame(values), {q: "law" for q in qids}, field="domain", min_size=5)


def test_breakdown_rejects_bad_arguments():
    frame = per_query_frame({("a", "q", "m"): 1.0})
    with pytest.raises(ValueError, match="min_size must be a positive integer; got 0"):
        breakdown(frame, {}, field="domain", min_size=0)
    with pytest.raises(TypeError, match="groups must map a qid"):
        breakdown(frame, [("q", "x")], field="domain")
    with pytest.raises(TypeError, match=r"groups\['q'\] is 3: each qid maps to a list of 'domain' values"):
        breakdown(frame, {"q": 3}, field="domain")


def test_importing_the_statistics_stays_light():
    code = ("import sys, pairmeasures, pairmeasures.analysis; "
            "print(sorted(m for m in ('pandas', 'pyterrier', 'torch', 'matplotlib', 'scipy') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
