"""The papers' reference code takes a run in the order given, and so does ``ties='system'``, the default.

FairnessRetrievalResults (``read_retrievalresults_from_runfile``) and GenderBias_IR (step 2) read a run file line by
line and rank each query's documents in that order, whatever their scores; FairRankTune takes the ranking it is
handed. Fed the golden rankings with every score tied (only the order of the rows ranks them), the default
reproduces every reference value, while ``ties='trec_eval'`` (document id, descending) measures another ranking."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import ir_measures
import pandas as pd
import pytest
from conftest import golden_number, load_golden

import pairmeasures as pm

RAB_CASES = load_golden("rab.json")
FAIRR_CASES = load_golden("fairr.json")


def tied_run(lists: dict) -> pd.DataFrame:
    """A run from ``{qid: [(doc_id, text), ...]}``, each list in the reference's order, every score the same."""
    rows = [(q, d, 1.0, t) for q, docs in lists.items() for d, t in docs]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "text"])


def judged(qids) -> pd.DataFrame:
    return pd.DataFrame({"query_id": list(qids), "doc_id": "judged", "relevance": 1})


def per_query(measure, qrels, run) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}


def rab_lists(case) -> tuple[dict, dict]:
    """The case's ranked documents as text (``{qid: [(doc_id, text)]}``) and its gendered words."""
    words = {"she": "female", "he": "male"}
    lists = {}
    for qid, documents in case["inputs"]["queries"].items():
        lists[qid] = []
        for i, document in enumerate(documents):
            tokens = ["filler"] * document["other_tokens"]
            for group in ("female", "male"):
                for word, count in document[group].items():
                    words[word] = group
                    tokens += [word] * count
            lists[qid].append((f"{qid}-{i}", " ".join(tokens)))
    return lists, words


def rab_differences(ties: dict, tmp_path) -> tuple[int, int]:
    """(values compared, values that differ from GenderBias_IR's) over every golden RaB/ARaB case."""
    compared = differ = 0
    for number, case in enumerate(RAB_CASES):
        lists, words = rab_lists(case)
        terms = tmp_path / f"terms{number}.csv"
        terms.write_text("term,group\n" + "".join(f"{w},{g}\n" for w, g in words.items()))
        run, qrels = tied_run(lists), judged(lists)
        for variant in ("tc", "tf", "bool"):
            for t in case["params"]["at_ranks"]:
                for name, measure in (("RaB", pm.RaB), ("ARaB", pm.ARaB)):
                    values = per_query(measure(terms=str(terms), variant=variant, **ties) @ t, qrels, run)
                    for qid, documents in lists.items():
                        if documents:
                            female, male = (golden_number(v) for v in
                                            case["expected"]["per_query"][qid][variant][name][str(t)][1:])
                            compared += 1
                            differ += values[qid] != pytest.approx(male - female, abs=1e-9)
    return compared, differ


def test_rab_reference_reads_the_run_in_its_order(tmp_path):
    compared, differ = rab_differences({}, tmp_path)
    assert compared > 100 and differ == 0
    assert rab_differences({"ties": "trec_eval"}, tmp_path)[1] > compared // 4


def fairr_differences(ties: dict, tmp_path) -> tuple[int, int]:
    """(values compared, values that differ from FairnessRetrievalResults') over every golden FaiRR/NFaiRR case."""
    compared = differ = 0
    for number, case in enumerate(FAIRR_CASES):
        groups = list(case["inputs"]["groups_portion"])
        words = {group: f"word{group}" for group in groups}
        terms = tmp_path / f"groups{number}.tsv"
        terms.write_text("term\tgroup\n" + "".join(f"{w}\t{g}\n" for g, w in words.items()))
        texts = {d: " ".join(" ".join([words[g]] * c) for g, c in counts.items() if c) or "neutral"
                 for d, counts in case["inputs"]["documents"].items()}
        targets = ",".join(f"{g}={share!r}" for g, share in case["inputs"]["groups_portion"].items())
        options = dict(terms=str(terms), targets=targets, tau=case["params"]["tau"], **ties)
        rankings = case["inputs"]["rankings"]
        run = tied_run({q: [(str(d), texts[str(d)]) for d in ranking] for q, ranking in rankings.items()})
        for k in case["params"]["cutoffs"]:
            fairr = per_query(pm.FaiRR(**options) @ k, judged(rankings), run)
            nfairr = per_query(pm.NFaiRR(**options) @ k, judged(rankings), run)
            for qid, ranking in rankings.items():
                expected = case["expected"]["per_query"][qid]
                compared += 1
                differ += fairr[qid] != pytest.approx(expected["FaiRR"][str(k)], abs=1e-9)
                if {str(d) for d in ranking} == {str(d) for d in case["inputs"]["background"].get(qid, [])}:
                    reference = golden_number(expected["NFaiRR"][str(k)])  # the default background: the run's
                    if math.isfinite(reference):
                        compared += 1
                        differ += nfairr.get(qid, math.nan) != pytest.approx(reference, abs=1e-9)
    return compared, differ


def test_fairr_reference_reads_the_run_in_its_order(tmp_path):
    compared, differ = fairr_differences({}, tmp_path)
    assert compared > 30 and differ == 0
    assert fairr_differences({"ties": "trec_eval"}, tmp_path)[1] > compared // 4


def test_eval_of_a_tied_run_file_gives_the_reference_values(tmp_path):
    """``pairmeasures eval`` on a run file whose scores all tie, lines in the reference's order: its RaB values."""
    case = RAB_CASES[1]
    lists, words = rab_lists(case)
    (tmp_path / "terms.csv").write_text("term,group\n" + "".join(f"{w},{g}\n" for w, g in words.items()))
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 judged 1\n" for q in lists))
    (tmp_path / "run.tsv").write_text("query_id\tdoc_id\tscore\ttext\n" + "".join(
        f"{q}\t{d}\t1.0\t{text}\n" for q, docs in lists.items() for d, text in docs))
    measure = f"RaB(terms='{tmp_path / 'terms.csv'}',variant='tf')@10"
    done = subprocess.run([sys.executable, "-m", "pairmeasures", "eval", str(tmp_path / "qrels.txt"),
                           str(tmp_path / "run.tsv"), measure, "-q", "-p", "12", "--format", "tsv"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = {line.split("\t")[0]: float(line.split("\t")[2]) for line in done.stdout.splitlines()}
    for qid in lists:
        female, male = (golden_number(v) for v in case["expected"]["per_query"][qid]["tf"]["RaB"]["10"][1:])
        assert got[qid] == pytest.approx(male - female, abs=1e-9), qid
