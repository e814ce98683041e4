"""The shared ranked lists: one order for every measure, trec_eval's (score desc, then docno desc)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from pairmeasures.measures.ranked import QrelsLookup, build_ranked_lists

rows = st.lists(st.tuples(st.sampled_from(["q1", "q2", "q3", "q4"]), st.integers(0, 30), st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5])),
                min_size=0, max_size=60, unique_by=lambda r: (r[0], r[1]))


def expected_lists(run: pd.DataFrame, judged: list[str], depth):
    out = {}
    for q in judged:
        docs = run[run.query_id == q].sort_values(["score", "doc_id"], ascending=[False, False])
        out[q] = list(docs.doc_id)[: depth if depth is not None else None]
    return out


@settings(max_examples=200, deadline=None)
@given(rows, st.sampled_from([None, 1, 2, 3, 5, 8]), st.booleans(), st.integers(0, 2**16))
def test_order_matches_a_plain_sort(items, depth, presorted, seed):
    run = pd.DataFrame(items, columns=["query_id", "doc", "score"]).assign(doc_id=lambda f: "d" + f["doc"].astype(str))
    run = run.drop(columns="doc").assign(polarity=0.0)
    if presorted:  # as TREC files and PyTerrier results come
        run = run.sort_values(["query_id", "score"], ascending=[True, False], kind="stable")
    else:
        run = run.sample(frac=1.0, random_state=seed)
    judged = ["q3", "q1", "q2", "q9"]  # qrels order, with a query the run lacks
    lists = build_ranked_lists(run.reset_index(drop=True), np.array(judged, dtype=object), depth, ["polarity"])
    got = {q: list(lists.doc_ids[a:b]) for q, a, b in zip(lists.query_ids, lists.offsets[:-1], lists.offsets[1:])}
    assert got == expected_lists(run, judged, depth)
    assert np.all(lists.ranks == np.concatenate([np.arange(n) for n in lists.lengths] or [np.zeros(0, int)]))


def test_select_and_head_keep_order_and_offsets():
    run = pd.DataFrame({"query_id": ["a", "a", "a", "b", "b"], "doc_id": list("vwxyz"), "score": [5, 4, 3, 2, 1.0]})
    lists = build_ranked_lists(run, np.array(["a", "b"], dtype=object), None, [], QrelsLookup(
        pd.DataFrame({"query_id": ["a", "b"], "doc_id": ["w", "z"], "relevance": [2, 1]})))
    assert list(lists.relevance[np.isfinite(lists.relevance)]) == [2.0, 1.0]
    top = lists.head(2)
    assert list(top.doc_ids) == ["v", "w", "y", "z"] and list(top.offsets) == [0, 2, 4]
    judged = lists.select(lists.relevance >= 1)
    assert list(judged.doc_ids) == ["w", "z"] and list(judged.ranks) == [1, 1]


def expected_system_lists(run: pd.DataFrame, judged: list[str], depth, by_rank: bool):
    """The system's order: score descending, equal scores in the run's rank order (or its row order)."""
    out = {}
    run = run.assign(_row=np.arange(len(run)))
    for q in judged:
        docs = run[run.query_id == q].sort_values(["score", "rank" if by_rank else "_row"], ascending=[False, True],
                                                  kind="stable")
        out[q] = list(docs.doc_id)[: depth if depth is not None else None]
    return out


@settings(max_examples=200, deadline=None)
@given(rows, st.sampled_from([None, 1, 2, 3, 5, 8]), st.booleans(), st.booleans(), st.integers(0, 2**16))
def test_the_system_tie_policy_keeps_the_order_shown(items, depth, presorted, by_rank, seed):
    run = pd.DataFrame(items, columns=["query_id", "doc", "score"]).assign(doc_id=lambda f: "d" + f["doc"].astype(str))
    run = run.drop(columns="doc")
    if presorted:
        run = run.sort_values(["query_id", "score"], ascending=[True, False], kind="stable")
    else:
        run = run.sample(frac=1.0, random_state=seed)
    run = run.reset_index(drop=True)
    if by_rank:  # a rank the system gave, unrelated to row order and document ids
        run["rank"] = np.random.default_rng(seed).permutation(len(run))
    judged = ["q3", "q1", "q2", "q9"]
    lists = build_ranked_lists(run, np.array(judged, dtype=object), depth, [], ties="system")
    got = {q: list(lists.doc_ids[a:b]) for q, a, b in zip(lists.query_ids, lists.offsets[:-1], lists.offsets[1:])}
    assert got == expected_system_lists(run, judged, depth, by_rank)


def test_a_rank_column_that_is_not_a_number_is_named():
    import pytest

    from pairmeasures.measures.ranked import RunInputError

    run = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, 1.0], "rank": [0, "first"]})
    with pytest.raises(RunInputError, match="rank column.*document 'b' of query 'q'"):
        build_ranked_lists(run, np.array(["q"], dtype=object), None, [], ties="system")
    build_ranked_lists(run, np.array(["q"], dtype=object), None, [])  # trec_eval's order does not read it
