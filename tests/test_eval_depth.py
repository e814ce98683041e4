"""The audit evaluates each run cut to the deepest rank its measures read (apps/curves.py ``reads_depth`` and
``top_rows``): every per-query value must be exactly the one of the whole run. Checked on real runs (BM25 top 1000
of pair/procon and pair/grep-biasir, the published MS MARCO gender runs) and, for every pairmeasures measure that
declares a depth, by brute force on random runs with many ties, under both tie policies."""

from __future__ import annotations

import warnings
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from pairmeasures.audit.curves import cutoff_curves, reads_depth, top_rows
from pairmeasures.audit.evaluation import per_query
from pairmeasures.measures.parsing import parse_measures
from pairmeasures.measures.provider import provider

TERMS = "terms='gender-specific',tokenizer='whitespace'"
#: Every built-in measure family that declares how deep it reads, with the columns of the random runs.
PAIR = ["Duo@{k}", "Duo(step=2)@{k}", "Duo(signed=True,ties='trec_eval')@{k}", "rND@{k}", "rKL@{k}", "rRD@{k}",
        "rKL(ties='trec_eval')@{k}", "EXP@{k}", "EXPU@{k}", "EXPRU@{k}", "ERBE@{k}", "ERBP@{k}", "ERBR@{k}",
        "NDKL@{k}", "ARP@{k}", "IAA@{k}", "AWRF(form='groups')@{k}", "AWRF@{k}", "FaiRR@{k}", f"RaB({TERMS})@{{k}}",
        f"ARaB({TERMS})@{{k}}", "TExFAIR@{k}", f"TExFAIR({TERMS})@{{k}}", f"TED({TERMS})@{{k}}", "PRF@{k}",
        "nPRF@{k}", "Measured(of='rKL@{k}')", "Duo(rel=1)@{k}", "rKL(missing='skip')@{k}"]
#: ir_measures measures cut at their cut-off (trec_eval's order: score, then document id).
TREC = ["nDCG@{k}", "RR@{k}", "P@{k}", "R@{k}", "AP@{k}", "Judged@{k}", "Success@{k}", "RR(rel=2)@{k}"]
#: Measures that read below their cut-off, or have none: evaluated on the whole run.
WHOLE = ["AP", "NFaiRR@{k}", "NDKL(target='retrieved')@{k}", "nDCG(judged_only=True)@{k}", "Rprec"]
WORDS = ["he", "she", "his", "her", "man", "woman", "table", "river"]


def whole_values(run: pd.DataFrame, qrels: pd.DataFrame, measures: dict) -> dict:
    """``{(measure, query): value}`` of each measure on the whole run, evaluated on its own through ir_measures."""
    frame = run.rename(columns={"qid": "query_id", "docno": "doc_id"})
    values = {}
    for shown, measure in measures.items():
        for metric in ir_measures.iter_calc([measure], qrels, frame):
            if not (isinstance(metric.value, float) and np.isnan(metric.value)):
                values[(shown, str(metric.query_id))] = float(metric.value)
    return values


def audit_values(run: pd.DataFrame, qrels: pd.DataFrame, measures: dict) -> dict:
    table = per_query({"system": run}, qrels, measures)
    return {(m, q): v for m, q, v in zip(table["measure"], table["qid"], table["value"])}


def parsed(names: list) -> dict:
    return dict(zip(names, parse_measures(names)))


@st.composite
def runs(draw):
    """A run of 1-4 queries with 0-14 documents each, scores from {0, 1, 2} (many ties), the system's order among
    equal scores in a ``rank`` column or the row order, rows shuffled; group, polarity, ctr and text columns; qrels."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rows, judged = [], []
    for q in range(draw(st.integers(1, 4))):
        n = int(rng.integers(0, 15))
        docs = rng.permutation(40)[:n]
        scores = rng.integers(0, 3, n).astype(float)
        shown = np.lexsort((rng.random(n), -scores))
        rank = np.empty(n, dtype=int)
        rank[shown] = np.arange(n)
        for d, score, r in zip(docs, scores, rank):
            rows.append((f"q{q}", f"d{d}", score, int(r), [None, "female", "male"][int(rng.integers(0, 3))],
                         float(rng.integers(-2, 3)), float(rng.random()), " ".join(rng.choice(WORDS, 4))))
        judged += [(f"q{q}", f"d{d}", int(rng.integers(0, 3))) for d in rng.permutation(40)[:int(rng.integers(1, 20))]]
    run = pd.DataFrame(rows, columns=["qid", "docno", "score", "rank", "group", "polarity", "ctr", "text"])
    run = run.sample(frac=1, random_state=int(rng.integers(0, 1000))).reset_index(drop=True)
    if draw(st.booleans()):
        run = run.sort_values(["qid", "rank"]).drop(columns="rank").reset_index(drop=True)  # the row order says it
    qrels = pd.DataFrame(judged, columns=["query_id", "doc_id", "relevance"]).drop_duplicates(["query_id", "doc_id"])
    return run, qrels


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], phases=[Phase.explicit, Phase.generate])
@given(runs(), st.integers(1, 6))
def test_each_measure_cut_to_its_depth_gives_the_values_of_the_whole_run(case, k):
    run, qrels = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in [*PAIR, *TREC, *WHOLE]:
            measures = parsed([name.format(k=k)])
            assert audit_values(run, qrels, measures) == whole_values(run, qrels, measures), name
        everything = parsed([n.format(k=k) for n in [*PAIR, *TREC, *WHOLE]])
        assert audit_values(run, qrels, everything) == whole_values(run, qrels, everything)


def test_the_declared_depths():
    for name in PAIR + TREC:
        measure = parse_measures([name.format(k=7)])[0]
        assert reads_depth(measure) == 7, name
    for name in WHOLE:
        assert reads_depth(parse_measures([name.format(k=7)])[0]) is None, name


def test_top_rows_keeps_every_row_tied_with_the_last_kept():
    run = pd.DataFrame({"query_id": ["a"] * 5 + ["b"] * 2, "doc_id": list("vwxyzvw"),
                        "score": [3.0, 2.0, 2.0, 2.0, 1.0, 5.0, 4.0]})
    assert top_rows(run, 2)["doc_id"].tolist() == ["v", "w", "x", "y", "v", "w"]
    assert top_rows(run, 1)["doc_id"].tolist() == ["v", "v"]
    assert top_rows(run, None) is run and top_rows(run, 5) is run
    with_nan = run.assign(score=[3.0, np.nan, 2.0, 2.0, 1.0, 5.0, 4.0])
    assert top_rows(with_nan, 1) is with_nan  # the evaluation says what is wrong with the run


def bm25_run(name: str, data_dir: Path):
    from pairmeasures.audit.runs import annotate
    from pairmeasures.datasets.profile import load_profile
    from pairmeasures.pipelines.retrieval import bm25

    profile = load_profile(data_dir / name)
    topics = pd.DataFrame({"qid": list(profile.queries), "query": list(profile.queries.values())})
    run = annotate(bm25(profile.corpus, num_results=1000).transform(topics), profile)
    # Duo's polarity: a number from each passage's own text (the audit embeds it; any column does for the cut)
    run["polarity"] = [(len(t) % 7 - 3) / 3 for t in run["text"]]
    return profile, run


@pytest.mark.parametrize("name", ["procon", "grep-biasir"])
def test_the_audits_measures_on_bm25_top_1000(name, data_dir):
    from pairmeasures.audit.plan import default_measures

    profile, run = bm25_run(name, data_dir)
    names = default_measures(profile) + ["AP", "R@1000", "RR@10", "nDCG"]
    if profile.terms:
        names += [f"ARaB({TERMS})@10", "Rprec"]  # NFaiRR@10 (a default): the run's background, uncut
    measures = parsed(names)
    frame = run.rename(columns={"qid": "query_id", "docno": "doc_id"})
    assert len(top_rows(frame, 10)) < len(frame) / 2  # the cut is real
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cut, whole = audit_values(run, profile.qrels, measures), whole_values(run, profile.qrels, measures)
        for shown, measure in measures.items():  # each at its own depth
            alone = audit_values(run, profile.qrels, {shown: measure})
            assert alone == {key: value for key, value in whole.items() if key[0] == shown}, shown
    assert cut == whole
    assert {m for m, _ in cut} == set(names)


def test_cutoff_curves_on_bm25_top_1000(data_dir):
    profile, run = bm25_run("grep-biasir", data_dir)
    families, ks = ["Duo", "rKL", "TExFAIR"], range(1, 51)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        curves = cutoff_curves({"bm25": run}, profile.qrels, families, ks)
        keys = [(f, k) for f in families for k in ks]
        grid = [ir_measures.parse_measure(f"{f}@{k}")(degenerate="exclude") for f, k in keys]
        whole = [v for _, _, v in provider.evaluator(grid, profile.qrels).values(
            run.rename(columns={"qid": "query_id", "docno": "doc_id"}))]
    counts = [int(np.count_nonzero(~np.isnan(v))) for v in whole]
    expected = [(f, k, n, float(np.nansum(v)) / n) for (f, k), v, n in zip(keys, whole, counts) if n]
    got = list(zip(curves["measure"], curves["k"].tolist(), curves["n"].tolist(), curves["value"].tolist()))
    assert got == expected and len(got) > 100


def test_the_published_msmarco_runs(data_dir, msmarco_miniature):
    """The MS MARCO gender sets' published top-1000 runs (real scores, with ties) against the miniature's qrels."""
    qrels = pd.DataFrame([line.split() for line in msmarco_miniature.judgements.splitlines()],
                         columns=["query_id", "iteration", "doc_id", "relevance"]).astype({"relevance": int})
    measures = parsed(["RR@10", "nDCG@10", "R@100", "P@10", "Judged@10", "AP", "nDCG@1"])
    for system, run in msmarco_miniature.runs.items():
        frame = run.rename(columns={"qid": "query_id", "docno": "doc_id"})
        assert len(top_rows(frame, 10)) < len(frame) / 2, system
        assert audit_values(run, qrels, measures) == whole_values(run, qrels, measures), system
