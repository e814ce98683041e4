"""The provider evaluates the cut-offs of one measure family together (PairMeasure.evaluate_cutoffs): every value
must be what the measure gives alone, through ir_measures.iter_calc as pt.Experiment calls it."""

from __future__ import annotations

import warnings

import ir_measures
import numpy as np
import pandas as pd
import pytest

import pairmeasures as pm

MEASURES = ["Duo@5", "rKL@3", "Duo@10", "TExFAIR@4", "rKL@8", "Duo(step=2)@10", "TED(rel=1)@6", "TED(rel=1)@12",
            "TExFAIR@12", "rND(protected='pro')@7", "rND(protected='pro')@2", "Measured(of='Duo@5')", "RaB@4",
            "RaB@9", "nDCG@5"]


def run_and_qrels(seed: int):
    rng = np.random.default_rng(seed)
    queries, docs = 7, 14
    words = np.array(["he", "she", "his", "her", "the", "plan"], dtype=object)
    run = pd.DataFrame({
        "query_id": np.repeat([f"q{i}" for i in range(queries)], docs),
        "doc_id": [f"d{j}" for j in range(queries * docs)],
        "score": rng.random(queries * docs),
        "polarity": rng.normal(size=queries * docs),
        "group": rng.choice(["pro", "con"], queries * docs),
        "text": [" ".join(row) for row in words[rng.integers(0, words.size, size=(queries * docs, 6))]],
    })
    qrels = run[["query_id", "doc_id"]].assign(relevance=rng.choice([0, 1, 2], len(run)))
    return run, qrels


@pytest.mark.parametrize("seed", [0, 1])
def test_measures_evaluated_together_equal_each_alone(seed):
    run, qrels = run_and_qrels(seed)
    measures = [ir_measures.parse_measure(m) for m in MEASURES]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        together = {(str(m.measure), m.query_id): m.value for m in ir_measures.iter_calc(measures, qrels, run)}
        each = {}
        for measure in measures:
            alone = {(str(m.measure), m.query_id): m.value for m in ir_measures.iter_calc([measure], qrels, run)}
            assert alone or str(measure) == "rND(protected='pro')@2", measure  # a top 2 without 'pro' is left out
            each.update(alone)
            for key, value in alone.items():
                assert together[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    assert together.keys() == each.keys()  # the same queries left out together as alone
    assert len(together) > (len(measures) - 1) * 7 * 0.8


def test_a_missing_protected_group_in_the_top_k_still_fails_at_that_cutoff():
    run, qrels = run_and_qrels(2)
    run["group"] = np.where(run.groupby("query_id").cumcount() < 3, "con", run["group"])
    run["score"] = -run.groupby("query_id").cumcount().astype(float)  # the first three of each query rank first
    with pytest.raises(ValueError, match="no document has group 'pro'"):
        ir_measures.calc_aggregate([pm.rND(protected="pro") @ 3, pm.rND(protected="pro") @ 10], qrels, run)
    ir_measures.calc_aggregate([pm.rND(protected="pro") @ 10], qrels, run)  # at 10 the group is there


@pytest.mark.parametrize("seed", [3, 4])
def test_families_at_every_cutoff_equal_each_alone_bit_for_bit(seed):
    """Duo, EXP, ARP and NDKL at cut-offs 1..12 together (Duo's lists of one width in one pass, the group labels
    coded once and numbered again for each cut-off) give each measure's very own values, also where labels
    written 1, 1.0 and '1' are one group."""
    run, qrels = run_and_qrels(seed)
    rng = np.random.default_rng(seed)
    run["group"] = pd.Series(rng.choice(np.array([1, 1.0, "1", "con", "x"], dtype=object), len(run)), dtype=object)
    measures = [ir_measures.parse_measure(f"{family}@{k}") for family in ("Duo", "EXP", "ARP", "NDKL")
                for k in range(1, 13)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        together = {(str(m.measure), m.query_id): m.value for m in ir_measures.iter_calc(measures, qrels, run)}
        for measure in measures:
            for m in ir_measures.iter_calc([measure], qrels, run):
                assert np.float64(together[(str(m.measure), m.query_id)]).tobytes() == np.float64(m.value).tobytes()
