"""A run file, a qrels file or a resource that cannot be right never becomes a number (issue 23): each is an error
naming the file and line (or the measure, query and document) and what to do, or, where the value is right, a
warning naming the cause and the count. The command line is driven as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest

import pairmeasures as pm

ROOT = Path(__file__).resolve().parents[1]
BOM = "\ufeff"

QRELS = "q1 0 a 2\nq1 0 b 1\nq1 0 c 0\nq1 0 d 1\nq2 0 e 1\nq2 0 f 0\n"
RUN = "q1 Q0 a 1 4.0 s\nq1 Q0 c 2 3.0 s\nq1 Q0 b 3 2.0 s\nq1 Q0 d 4 1.0 s\nq2 Q0 e 1 2 s\nq2 Q0 f 2 1 s\n"
TSV_RUN = ("query_id\tdoc_id\tscore\tgroup\nq1\ta\t4\tpro\nq1\tb\t3\tcon\nq1\tc\t2\tpro\nq1\td\t1\tcon\n"
           "q2\te\t2\tpro\nq2\tf\t1\tcon\n")
BEIR_QRELS = "query-id\tcorpus-id\tscore\n" + "".join(
    f"{q}\t{d}\t{r}\n" for q, _, d, r in (line.split() for line in QRELS.splitlines()))
GROUPS = "corpus-id\tgroup\na\tpro\nb\tcon\nc\tpro\nd\tcon\ne\tpro\nf\tcon\n"


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pairmeasures", *args], capture_output=True, text=True, timeout=300,
                          env=env)


def write(folder: Path, name: str, text: str, bom: bool = False) -> str:
    (folder / name).write_text((BOM if bom else "") + text, encoding="utf-8")
    return str(folder / name)


def values(result: subprocess.CompletedProcess) -> list[list[str]]:
    assert result.returncode == 0, result.stderr
    return [line.split("\t") for line in result.stdout.splitlines()]


def warning_lines(result: subprocess.CompletedProcess, category: str = "InputWarning") -> list[str]:
    return [line for line in result.stderr.splitlines() if f": {category}: " in line]


# --- byte order marks ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["TREC run", "TREC qrels", "TSV run", "BEIR qrels", "tsv: resource"])
def test_a_byte_order_mark_is_read_as_nothing_in_every_reader(tmp_path, kind):
    """A UTF-8 BOM (as Windows editors write) once became part of the first query id, detaching the first line's
    query: q1's nDCG@5 went from 0.9360 to 0.5706 with q1 split in two. Every reader now reads it as nothing."""
    plain, marked = tmp_path / "plain", tmp_path / "marked"
    results = []
    for folder, bom in ((plain, False), (marked, True)):
        folder.mkdir()
        trec_qrels = write(folder, "qrels.txt", QRELS, bom and kind == "TREC qrels")
        beir_qrels = write(folder, "qrels.tsv", BEIR_QRELS, bom and kind == "BEIR qrels")
        trec_run = write(folder, "run.txt", RUN, bom and kind == "TREC run")
        tsv_run = write(folder, "run.tsv", TSV_RUN, bom and kind == "TSV run")
        groups = write(folder, "groups.tsv", GROUPS, bom and kind == "tsv: resource")
        qrels = beir_qrels if kind == "BEIR qrels" else trec_qrels
        run = tsv_run if kind == "TSV run" else trec_run
        results.append(values(cli("eval", qrels, run, "nDCG@5", f"rND(group='tsv:{groups}')@4", "-q", "--format", "tsv")))
    without, with_bom = results
    assert [row[0] for row in with_bom] == ["q1", "q1", "q2", "all", "all"]  # q2's two documents: rND left it out
    assert [row[2] for row in with_bom] == [row[2] for row in without]


def test_a_byte_order_mark_in_jsonl_term_lists_and_query_id_files(tmp_path):
    from pairmeasures.io.beir import read_records
    from pairmeasures.io.runfiles import read_query_ids
    from pairmeasures.sideinfo.termlists import Lexicon

    records = write(tmp_path, "corpus.jsonl", '{"_id": "a", "text": "one"}\n{"_id": "b", "text": "two"}\n', bom=True)
    assert list(read_records(records)) == ["a", "b"]
    terms = write(tmp_path, "terms.csv", "term,group\nhe,male\nshe,female\n", bom=True)
    assert Lexicon.load(terms).terms == ("he", "she")  # the header is recognised, not read as the term 'term'
    ids = write(tmp_path, "ids.txt", "q1\nq2\n", bom=True)
    assert read_query_ids(ids) == {"q1", "q2"}


# --- qrels -----------------------------------------------------------------------------------------------------------

def test_contradictory_judgements_are_an_error_naming_the_file_and_both_lines(tmp_path):
    """The same query and document judged 2 and then 0: the last judgement silently won."""
    qrels = write(tmp_path, "qrels.txt", QRELS + "q1 0 a 0\n")
    result = cli("eval", qrels, write(tmp_path, "run.txt", RUN), "nDCG@5")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == (f"pairmeasures eval: error: {qrels}:7: query 'q1' and document 'a' are judged 0 "
                                     "here and 2 on line 1: keep one judgement per query and document")


def test_a_judgement_listed_twice_alike_warns_with_the_count_and_counts_once(tmp_path):
    run = write(tmp_path, "run.txt", RUN)
    once = values(cli("eval", write(tmp_path, "qrels.txt", QRELS), run, "nDCG@5", "--format", "tsv"))
    twice = cli("eval", write(tmp_path, "twice.txt", QRELS + "q1 0 a 2\nq2 0 e 1\n"), run, "nDCG@5", "--format", "tsv")
    assert values(twice) == once
    assert warning_lines(twice) == [f"pairmeasures eval: InputWarning: QRELS file '{tmp_path}/twice.txt' judges 2 "
                                    "(query, document) pair(s) again with the same relevance (e.g. query 'q1', document "
                                    "'a' on lines 1 and 7); each counts once"]


@pytest.mark.parametrize("name,text,message", [
    ("empty.txt", "", "empty.txt: holds no judgements"),
    ("blank.txt", "\n\n", "blank.txt: holds no judgements"),
    ("header.tsv", "query-id\tcorpus-id\tscore\n", "header.tsv: has a header but no judgements"),
])
def test_a_qrels_file_without_judgements_is_an_error(tmp_path, name, text, message):
    """An empty qrels file printed a blank value and exited 0."""
    result = cli("eval", write(tmp_path, name, text), write(tmp_path, "run.txt", RUN), "nDCG@5")
    assert result.returncode == 2 and result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"pairmeasures eval: error: {tmp_path}/{message}")


# --- runs ------------------------------------------------------------------------------------------------------------

def test_a_run_that_shares_no_query_with_the_qrels_is_an_error_naming_both_files(tmp_path):
    """It scored 0.0000 for every measure."""
    qrels = write(tmp_path, "qrels.txt", QRELS)
    run = write(tmp_path, "run.txt", RUN.replace("q1", "Q1").replace("q2", "Q2"))
    result = cli("eval", qrels, run, "nDCG@5", "rND(group='tsv:" + write(tmp_path, "g.tsv", GROUPS) + "')@4")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == (
        f"pairmeasures eval: error: RUN file '{run}' and QRELS file '{qrels}' share no query id (the run's: 'Q1', 'Q2'; "
        "the qrels': 'q1', 'q2'), so every measure would score 0: evaluate a run of the judged queries (ids are "
        "compared as text)")


def test_a_run_that_shares_some_queries_with_the_qrels_warns_with_counts(tmp_path):
    qrels = write(tmp_path, "qrels.txt", QRELS + "q3 0 g 1\n")
    run = write(tmp_path, "run.txt", RUN.replace("q2", "q9"))
    result = cli("eval", qrels, run, "nDCG@5", "-q", "--format", "tsv")
    assert [row[:2] for row in values(result)] == [["q1", "nDCG@5"], ["q2", "nDCG@5"], ["q3", "nDCG@5"],
                                                    ["all", "nDCG@5"]]
    assert warning_lines(result) == [
        f"pairmeasures eval: InputWarning: RUN file '{run}' has no results for 2 of the 3 queries judged in QRELS file "
        f"'{qrels}' (e.g. 'q2', 'q3'); they count as empty rankings (0 for relevance measures)",
        f"pairmeasures eval: InputWarning: 1 of the 2 queries of RUN file '{run}' are not judged in QRELS file "
        f"'{qrels}' (e.g. 'q9'); they are left out"]


@pytest.mark.parametrize("name,text,message", [
    ("empty.run", "", "empty.run: holds no results"),
    ("header.tsv", "query_id\tdoc_id\tscore\n", "header.tsv: holds no results"),
])
def test_a_run_file_without_results_is_an_error(tmp_path, name, text, message):
    result = cli("eval", write(tmp_path, "qrels.txt", QRELS), write(tmp_path, name, text), "nDCG@5")
    assert result.returncode == 2 and result.stderr.startswith(f"pairmeasures eval: error: {tmp_path}/{message}")


def test_an_empty_cell_of_a_tsv_run_is_an_error_naming_file_line_and_column(tmp_path):
    """An empty group cell became a group named '' (rND@4 1.0000 for q1, as if the run were least fair)."""
    run = write(tmp_path, "run.tsv", TSV_RUN.replace("q1\tc\t2\tpro", "q1\tc\t2\t"))
    result = cli("eval", write(tmp_path, "qrels.txt", QRELS), run, "rND@4")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"pairmeasures eval: error: {run}:4: empty 'group' cell (1 in that column): give "
                                    "every ranked document a value in every column")


def test_a_run_or_qrels_that_is_a_folder_says_so(tmp_path):
    result = cli("eval", write(tmp_path, "qrels.txt", QRELS), str(tmp_path), "nDCG@5")
    assert result.returncode == 2
    assert result.stderr.strip() == f"pairmeasures eval: error: RUN '{tmp_path}' is a folder, not a file: name the run " \
                                    "file inside it"


# --- measure strings and resources -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text,message", [
    ("Duo@-1", "Duo: cutoff=-1 is out of range; cutoff must be an int in [1, 10000000]"),
    ("Duo(step=-1)", "Duo: step=-1 is out of range; step must be an int in [1, 10000000]"),
    ("Duo@abc", "Duo: invalid cutoff='abc'; expected ranking cutoff"),
    ("Duo(axes=max)@5", "text values need quotes: write axes='max'"),
])
def test_string_measure_parameters_get_the_measures_own_message(tmp_path, text, message):
    """ir_measures' parser reads neither negative numbers nor bare words: the string form got its generic 'problem
    parsing measure' where pm.Duo(step=-1) gets ours."""
    with pytest.raises(ValueError, match=r"^Duo: step=-1 is out of range"):
        pm.Duo(step=-1)
    result = cli("eval", write(tmp_path, "qrels.txt", QRELS), write(tmp_path, "run.txt", RUN), text)
    assert result.returncode == 2 and result.stderr.startswith(f"pairmeasures eval: error: measure {text!r}: {message}")
    assert "problem parsing measure" not in result.stderr
    demo = cli("demo", "--measures", text)
    assert demo.returncode == 2 and demo.stderr.startswith(f"pairmeasures demo: error: {message}")


def test_list_valued_group_labels_name_the_measure_query_and_document():
    """A bare 'TypeError: unhashable type: list' before."""
    qrels = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["a", "b", "c"], "relevance": [1, 1, 1]})
    run = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["a", "b", "c"], "score": [3.0, 2, 1],
                        "group": ["pro", ["con", "pro"], "pro"]})
    for measure in (pm.rKL @ 3, pm.rND @ 3, pm.EXP @ 3):
        with pytest.raises(pm.RunInputError, match=rf"^{measure}: the group of document 'b' of query 'q1' in the run's "
                                                   r"'group' column is a list \(\['con', 'pro'\]\); a group is one label"):
            ir_measures.calc_aggregate([measure], qrels, run)


def test_a_tsv_resource_that_is_a_folder_says_so(tmp_path):
    """It said the folder 'does not exist'."""
    result = cli("eval", write(tmp_path, "qrels.txt", QRELS), write(tmp_path, "run.txt", RUN),
                 f"rKL(group='tsv:{tmp_path}')@4")
    assert result.returncode == 2
    assert f"side-information file '{tmp_path}' is a folder, not a file: name the TSV file inside it" in result.stderr


def test_a_term_list_with_a_byte_that_is_not_utf8_names_the_file_line_and_byte(tmp_path):
    from pairmeasures.sideinfo.termlists import Lexicon

    path = tmp_path / "terms.csv"
    path.write_bytes("term,group\nhe,male\n".encode() + b"sh\xe9,female\n")
    with pytest.raises(pm.sideinfo.SideInfoError, match=rf"^{path}:3: not UTF-8 text \(invalid continuation byte at "
                                                        r"byte 2\)"):
        Lexicon.load(str(path))
    qrels = pd.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "relevance": [1]})
    run = pd.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "score": [1.0], "text": ["he said"]})
    with pytest.raises(pm.sideinfo.SideInfoError, match=rf"{path}:3: not UTF-8 text"):
        ir_measures.calc_aggregate([pm.TExFAIR(terms=str(path)) @ 1], qrels, run)


def test_an_empty_run_text_for_pca_names_the_query_and_document(tmp_path):
    """An empty text in the run once failed as 'text 26 is empty' naming neither query nor document. A document the
    folder has is embedded from the folder (as a missing text is); one it lacks is named, with the cause."""
    (tmp_path / "qrels").mkdir()
    texts = {"a": "Cars pollute the air.", "b": "Cars give people freedom.", "c": "Trains are cleaner.",
             "d": "Cars are fast and fun."}
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in texts.items()))
    (tmp_path / "queries.jsonl").write_text('{"_id": "cars", "text": "Cars?"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"cars\t{d}\t1\n" for d in texts))
    qrels = pd.DataFrame({"query_id": ["cars"], "doc_id": ["a"], "relevance": [1]})
    measure = pm.Duo(polarity=f"pca:{tmp_path}") @ 4
    run = pd.DataFrame({"query_id": ["cars"] * 4, "doc_id": list("abcd"), "score": [4.0, 3, 2, 1],
                        "text": list(texts.values())})
    expected = ir_measures.calc_aggregate([measure], qrels, run)[measure]
    assert ir_measures.calc_aggregate([measure], qrels, run.assign(text=[texts["a"], "", " ", texts["d"]]))[measure] == \
        pytest.approx(expected)
    elsewhere = run.assign(doc_id=["a", "b", "x9", "d"], text=[texts["a"], texts["b"], "", texts["d"]])
    with pytest.raises(pm.RunInputError, match=r"no polarity for document 'x9' of query 'cars' in resource 'pca:.*' \(the "
                                               r"text of document 'x9' for query 'cars' is empty: nothing to embed\)"):
        ir_measures.calc_aggregate([measure(missing="error")], qrels, elsewhere)
    with pytest.warns(pm.MissingSideInfoWarning, match=r"1 of 4 considered documents have no polarity .* and were skipped "
                                                       r"\(e\.g\. document 'x9' of query 'cars'\)"):
        ir_measures.calc_aggregate([measure], qrels, elsewhere)  # by default skipped, and said


def test_validate_polarity_refuses_a_negative_anchor_within_before_embedding(tmp_path):
    """--anchor-within -3 was refused only after every document was embedded (minutes)."""
    result = cli("validate-polarity", str(tmp_path / "nowhere"), "--anchors", "negated-query", "--anchor-within", "-3")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().endswith("pairmeasures validate-polarity: error: argument --anchor-within: expected 0 "
                                          "(off) or a positive number of principal axes, got '-3'")
    from pairmeasures.sideinfo.polarity import PolarityModel

    with pytest.raises(ValueError, match="anchor_within must be 0 .*got -3"):
        PolarityModel(embedder=None, anchor_within=-3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="anchor_within must be 0 .*got -3"):
        pm.validate_polarity(tmp_path / "nowhere", anchor_within=-3)  # before reading anything


def test_group_labels_that_are_numbers_stay_labels():
    """Group labels that are numbers (numpy scalars included) stay labels: the check refuses only containers."""
    qrels = pd.DataFrame({"query_id": ["q1"] * 4, "doc_id": list("abcd"), "relevance": [1, 1, 1, 1]})
    run = pd.DataFrame({"query_id": ["q1"] * 4, "doc_id": list("abcd"), "score": [4.0, 3, 2, 1],
                        "group": np.array([1, 0, 1, 0], dtype=object)})
    assert ir_measures.calc_aggregate([pm.rKL @ 4], qrels, run)[pm.rKL @ 4] >= 0


@pytest.mark.parametrize("name,header,message", [
    ("labels.tsv", "query-id\tcorpus-id\tgroup", "has a header but no labels"),
    ("qrels/test.tsv", "query-id\tcorpus-id\tscore", "has a header but no judgements"),
])
def test_a_header_only_labels_or_qrels_file_of_a_beir_folder_is_named(tmp_path, name, header, message):
    """A labels.tsv with its header only loaded 0 labels silently: every group measure then had nothing to measure."""
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "a", "text": "one"}\n{"_id": "b", "text": "two"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "Q?"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\ta\t1\nq1\tb\t1\n")
    (tmp_path / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\nq1\ta\tpro\nq1\tb\tcon\n")
    (tmp_path / name).write_text(header + "\n")
    with pytest.raises(pm.sideinfo.SideInfoError, match=rf"{tmp_path / name}: {message}"):
        pm.sideinfo.resolve(f"beir:{tmp_path}")
