"""DuoGreedy and the most/least biased orderings: brute force on small lists, properties, PyTerrier."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ir_measures import nDCG

import pairmeasures as pm
from pairmeasures.demo import load_toy
from pairmeasures.math import (
    duo,
    duo_bounds,
    duo_extreme_order,
    duo_extreme_orders,
    duo_raw,
    duogreedy_lists,
    duogreedy_order,
)

scores = st.lists(st.floats(-1, 1, allow_nan=False).map(lambda x: round(x, 2)), min_size=1, max_size=7)


def close(a, b):
    return abs(a - b) <= 1e-9 * (1 + abs(b))


def raw_of_every_ordering(p: np.ndarray, step: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """All orderings of ``p`` and their raw sums over depths ``step, 2 step, ...``, by brute force in one array pass."""
    orders = np.array(list(itertools.permutations(range(p.size))), dtype=np.int64).reshape(-1, p.size)
    ranked = p[orders]
    depth = np.arange(1, p.size + 1)
    var = np.cumsum(ranked ** 2, axis=1) / depth - (np.cumsum(ranked, axis=1) / depth) ** 2
    weights = np.where((depth > 1) & (depth < p.size) & (depth % step == 0), 1 / np.log2(np.maximum(depth, 2)), 0.0)
    return orders, (np.maximum(var, 0.0) * weights).sum(axis=1)


@settings(max_examples=150, deadline=None)
@given(scores, st.integers(1, 2))
def test_extreme_orders_attain_the_bounds(p, step):
    p = np.array(p)
    low, high = duo_bounds(p, step)
    most_diverse = duo_extreme_order(p, step, "max")
    least_diverse = duo_extreme_order(p, step, "min")
    assert sorted(most_diverse) == sorted(least_diverse) == list(range(p.size))
    assert close(duo_raw(p[most_diverse], step), high)
    assert close(duo_raw(p[least_diverse], step), low)


@settings(max_examples=100, deadline=None)
@given(scores, st.sampled_from([1, -1]))
def test_signed_orderings_are_the_least_diverse_toward_the_pole(p, pole):
    p = np.array(p)
    order = duo_extreme_order(p, which="min", pole=pole)
    on_side = pole * p > 0
    orders, raws = raw_of_every_ordering(p)
    allowed = on_side[orders[:, 0]] if on_side.any() else np.ones(len(orders), dtype=bool)
    assert close(duo_raw(p[order]), raws[allowed].min())
    if on_side.any():
        assert on_side[order[0]]


def test_batched_orders_match_single_lists():
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 9, size=40)
    offsets = np.r_[0, np.cumsum(lengths)]
    flat = rng.normal(size=offsets[-1])
    for which in ("max", "min"):
        order = duo_extreme_orders(flat, offsets, which=which)
        for q in range(lengths.size):
            rows = slice(offsets[q], offsets[q + 1])
            np.testing.assert_array_equal(order[rows] - offsets[q], duo_extreme_order(flat[rows], which=which))


@settings(max_examples=100, deadline=None)
@given(scores, st.integers(1, 8))
def test_lambda_one_is_the_identity(p, k):
    assert list(duogreedy_order(p, Lambda=1.0, k=k)) == list(range(len(p)))


def test_greedy_keeps_documents_below_k_in_place():
    p = np.array([0.9, 0.8, 0.7, -0.9, 0.1, -0.5, 0.3])
    order = duogreedy_order(p, Lambda=0.0, k=4)
    assert sorted(order[:4]) == [0, 1, 2, 3] and list(order[4:]) == [4, 5, 6]


def _random_lists(queries, n, seed, axes=None):
    rng = np.random.default_rng(seed)
    shape = (queries * n,) if axes is None else (queries * n, axes)
    return rng.normal(size=shape) + np.repeat(rng.normal(size=(queries,) + shape[1:]), n, axis=0)  # a lean per query


def test_duo_does_not_rise_as_lambda_falls_on_average():
    n, queries = 10, 300
    flat = _random_lists(queries, n, seed=2)
    offsets = np.arange(0, queries * n + 1, n)
    means = []
    for Lambda in (1.0, 0.75, 0.5, 0.25, 0.0):
        order = duogreedy_lists(flat, offsets, Lambda=Lambda, k=n)
        means.append(np.mean([duo(flat[order[offsets[q]:offsets[q + 1]]]) for q in range(queries)]))
    assert all(later <= earlier + 1e-12 for earlier, later in zip(means, means[1:])), means
    # Greedy's gap to the optimum (DUO = 0) at Lambda = 0 is 0 on these lists (docs/duogreedy.md).
    assert means[-1] < 1e-9


def test_several_axes_lower_the_most_biased_axis():
    n, queries = 8, 100
    flat = _random_lists(queries, n, seed=3, axes=2)
    offsets = np.arange(0, queries * n + 1, n)
    order = duogreedy_lists(flat, offsets, Lambda=0.0, k=n)
    before = np.mean([duo(flat[offsets[q]:offsets[q + 1]]).max() for q in range(queries)])
    after = np.mean([duo(flat[order[offsets[q]:offsets[q + 1]]]).max() for q in range(queries)])
    assert after < before / 2


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="Lambda must be"):
        pm.DuoGreedy(Lambda=1.5)
    with pytest.raises(ValueError, match="k must be"):
        pm.DuoGreedy(k=0)
    with pytest.raises(ValueError, match="mode='greedy' in between"):
        pm.DuoGreedy(Lambda=0.5, mode="exact")
    with pytest.raises(ValueError, match="pole"):
        duo_extreme_order([1.0, 2.0], which="max", pole=1)


# Transformers


@pytest.fixture(scope="module")
def toy():
    return load_toy()


def frame(polarity_by_query: dict[str, list], k_score=True) -> pd.DataFrame:
    rows = [{"qid": qid, "docno": f"{qid}-d{i}", "score": float(len(values) - i), "rank": i, "polarity": value, "extra": i}
            for qid, values in polarity_by_query.items() for i, value in enumerate(values)]
    return pd.DataFrame(rows)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False).map(lambda x: round(x, 2)), min_size=1, max_size=8), st.integers(1, 8))
def test_exact_mode_at_lambda_zero_reaches_duo_zero_by_brute_force(p, k):
    out = pm.DuoGreedy(Lambda=0, k=k, mode="exact")(frame({"q": p, "r": p[::-1]}))
    for _, group in out.groupby("qid"):
        top = group.sort_values("rank")["polarity"].to_numpy()[:k]
        low, high = duo_bounds(top)
        best = raw_of_every_ordering(top)[1].max()
        assert close(high, best) and close(duo_raw(top), best)
        assert duo(top) in (0.0, 0.5)  # 0.5 where every ordering scores the same


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False).map(lambda x: round(x, 2)), min_size=1, max_size=8), st.integers(1, 8),
       st.integers(2, 4))
def test_exact_mode_with_a_step_reaches_that_steps_duo_zero_by_brute_force(p, k, step):
    out = pm.DuoGreedy(Lambda=0, k=k, mode="exact", step=step)(frame({"q": p}))
    top = out.sort_values("rank")["polarity"].to_numpy()[:k]
    best = raw_of_every_ordering(top, step)[1].max()
    assert close(duo_raw(top, step), best) and close(duo_bounds(top, step)[1], best)
    assert duo(top, step) in (0.0, 0.5)  # 0.5 where every ordering scores the same
    assert sorted(out["docno"]) == sorted(frame({"q": p})["docno"])


def test_rank_cutoff_fuses_into_num_results_with_the_same_output():
    from pyterrier._ops import RankCutoff

    rng = np.random.default_rng(3)
    inp = frame({q: list(np.round(rng.normal(size=n), 3)) for q, n in (("a", 12), ("b", 3), ("c", 9))})
    for greedy in (pm.DuoGreedy(Lambda=0.3, k=6), pm.DuoGreedy(Lambda=0, k=8, mode="exact", step=2)):
        pipeline = greedy % 5
        fused = pipeline.compile()
        assert isinstance(fused, pm.DuoGreedy) and fused.num_results == 5 and fused.k == greedy.k
        assert isinstance(pipeline, pt.Transformer) and any(isinstance(t, RankCutoff) for t in pipeline._transformers)
        expected = pipeline(inp)
        pd.testing.assert_frame_equal(fused(inp), expected)
        assert expected.groupby("qid").size().to_dict() == {"a": 5, "b": 3, "c": 5}
        assert (fused % 7).compile() is fused and (fused % 2).compile().num_results == 2  # never relaxed
        assert pt.inspect.transformer_outputs(fused, list(inp.columns)) == list(greedy(inp).columns)
    with pytest.raises(ValueError, match="num_results must be a positive integer"):
        pm.DuoGreedy(num_results=0)
    with pytest.raises(ValueError, match="step must be a positive integer"):
        pm.DuoGreedy(step=0)
    assert repr(pm.DuoGreedy(0, 8, mode="exact", step=2) % 3).count("step=2") == 1
    assert repr((pm.DuoGreedy(0, 8, mode="exact", step=2) % 3).compile()).endswith("step=2, num_results=3)")


def test_transformer_keeps_columns_and_rewrites_rank_and_score():
    inp = frame({"q1": [0.9, 0.8, 0.2, -0.9, 0.1], "q2": [0.5, -0.5, 0.4]})
    out = pm.DuoGreedy(Lambda=0.0, k=3)(inp)
    assert list(out.columns) == list(inp.columns)
    q1 = out[out.qid == "q1"].sort_values("rank")
    assert list(q1["rank"]) == list(range(5)) and list(q1["score"]) == [5.0, 4.0, 3.0, 2.0, 1.0]
    assert list(q1["docno"])[3:] == ["q1-d3", "q1-d4"]
    assert list(q1["docno"]) == ["q1-d2", "q1-d0", "q1-d1", "q1-d3", "q1-d4"]  # 0.2: farthest from the mean
    unchanged = pm.DuoGreedy(Lambda=1.0, k=3)(inp)
    pd.testing.assert_frame_equal(unchanged[inp.columns], inp, check_dtype=False)


def test_several_axes_in_the_polarity_column():
    inp = frame({"q": [[0.9, 0.1], [0.8, 0.2], [-0.7, 0.3], [0.6, -0.9]]})
    out = pm.DuoGreedy(Lambda=0.0, k=4)(inp)
    assert sorted(out["docno"]) == sorted(inp["docno"])
    with pytest.raises(ValueError, match="one polarity axis"):
        pm.DuoGreedy(Lambda=0.0, k=4, mode="exact")(inp)


def test_missing_polarity_names_polarity_scorer_and_empty_frames_have_columns(toy):
    run = toy.runs["pro-first"]
    with pytest.raises(pt.validate.InputValidationError, match="PolarityScorer"):
        pm.DuoGreedy()(run.drop(columns="polarity"))
    assert pt.inspect.transformer_inputs(pm.DuoGreedy()) == [["qid", "docno", "polarity"]]
    empty = pm.DuoGreedy()(run.iloc[:0])
    assert set(empty.columns) == set(run.columns) and len(empty) == 0
    assert repr(pm.DuoGreedy(0.5, k=10)) == "DuoGreedy(Lambda=0.5, k=10, mode='greedy')"
    assert repr(pm.BiasedOrdering("most", pole=1)) == "BiasedOrdering('most', pole=1)"


def test_pipelines_in_experiment(toy):
    run = pt.Transformer.from_df(toy.runs["pro-first"])
    systems = [run, run >> pm.DuoGreedy(Lambda=0.0, k=5, mode="exact"), run >> pm.DuoGreedy(Lambda=0.5, k=5),
               run >> pm.BiasedOrdering("most", pole=-1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        table = pt.Experiment(systems, toy.topics, toy.qrels, eval_metrics=[nDCG @ 5, pm.Duo @ 5], names=["run", "exact", "greedy", "con"],
                              plan="tree")
    duo5 = table.set_index("name")["Duo@5"]
    assert duo5["exact"] == pytest.approx(0.0) and duo5["con"] == pytest.approx(1.0)
    assert duo5["exact"] <= duo5["greedy"] < duo5["run"]
    con = pm.BiasedOrdering("most", pole=-1)(toy.runs["pro-first"])
    assert (con.sort_values(["qid", "rank"]).groupby("qid")["polarity"].first() < 0).all()


def _two_queries(polarity_b):
    return pd.DataFrame({"qid": ["a"] * 4 + ["b"] * 4, "docno": [f"d{i}" for i in range(8)],
                         "score": [4.0, 3, 2, 1] * 2, "polarity": [1.0, 0.9, -1.0, -0.9, *polarity_b]})


@pytest.mark.parametrize("reranker", [pm.DuoGreedy(Lambda=0, k=4), pm.DuoGreedy(Lambda=0, k=4, mode="exact"),
                                      pm.BiasedOrdering("most", pole=-1)])
def test_a_query_without_polarity_keeps_its_input_order_and_is_reported(reranker):
    frame = _two_queries([np.nan] * 4)
    with pytest.warns(RuntimeWarning, match=r"1 queries have no polarity \(e.g. 'b'.*keep their input order"):
        out = reranker(frame)
    assert out[out["qid"] == "b"]["docno"].tolist() == ["d4", "d5", "d6", "d7"]
    assert out[out["qid"] == "a"]["docno"].tolist() != ["d0", "d1", "d2", "d3"]  # the scored query is reordered
    scored = reranker(frame[frame["qid"] == "a"])
    assert out[out["qid"] == "a"]["docno"].tolist() == scored["docno"].tolist()


def test_a_document_without_polarity_beside_scored_ones_is_an_error():
    with pytest.raises(ValueError, match=r"document 'd5' of query 'b' has no finite polarity \(NaN\) while other"):
        pm.DuoGreedy(Lambda=0, k=4)(_two_queries([0.5, np.nan, -0.5, 0.1]))
