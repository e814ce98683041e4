"""Run files and measure strings that once became plausible numbers or tracebacks (issue 31): a document ranked
twice, a rank field that is not a number, and options checked late or not at all. Each is now one line naming the
file and line (or the query and document, or the option) and what to do. Commands run as a user runs them."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import ir_measures
import pandas as pd
import pytest

import pairmeasures as pm

ROOT = Path(__file__).resolve().parents[1]

QRELS = "q1 0 a 2\nq1 0 b 0\nq1 0 c 1\nq1 0 d 0\nq2 0 e 1\nq2 0 f 0\n"
RUN = "q1 Q0 a 1 4.0 s\nq1 Q0 b 2 3.0 s\nq1 Q0 c 3 2.0 s\nq1 Q0 d 4 1.0 s\nq2 Q0 e 1 2.0 s\nq2 Q0 f 2 1.0 s\n"
GROUPS = "corpus-id\tgroup\na\tpro\nb\tcon\nc\tpro\nd\tcon\ne\tpro\nf\tcon\n"


def pairmeasures(*args: str, cache: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if cache is not None:
        env["PAIRMEASURES_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, "-m", "pairmeasures", *args], capture_output=True, text=True, timeout=600,
                          env=env)


def refused(done: subprocess.CompletedProcess, *words: str) -> str:
    """The one error line of a command that failed, after checking that it names every word and printed no value."""
    assert done.returncode != 0 and not done.stdout, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture
def files(tmp_path) -> dict[str, str]:
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "groups.tsv").write_text(GROUPS)
    return {"qrels": str(tmp_path / "qrels.txt"), "groups": str(tmp_path / "groups.tsv"), "dir": str(tmp_path)}


def rnd(files: dict) -> str:
    return f"rND(group='tsv:{files['groups']}')@4"


# --- a document ranked twice ------------------------------------------------------------------------------------

@pytest.mark.parametrize("measure", ["nDCG@5", "bias"])
def test_a_document_ranked_twice_with_two_scores_names_the_file_both_lines_and_the_document(files, measure):
    """nDCG@5 went from 1.0 to 0.0 when a run ranked 'a' again, at the bottom: the last line won silently for the
    relevance measures (read as dicts), while the bias measures refused it. Both now stop at the file's line."""
    run = Path(files["dir"]) / "run.trec"
    run.write_text(RUN + "q1 Q0 a 5 0.0 s\n")
    done = pairmeasures("eval", files["qrels"], str(run), "nDCG@5" if measure == "nDCG@5" else rnd(files))
    refused(done, f"{run}:7:", "query 'q1' ranks document 'a' twice", "score 0.0 here and 4.0 on line 1",
            "keep one of the two lines")


def test_a_line_repeated_alike_is_refused_too_in_a_gzipped_run_with_queries_interleaved(files):
    """The same line twice (same document, same score) gives the document two places, which evaluators count
    differently (a dict keeps one, the bias measures' ranking both), as trec_eval refuses it: an error too. Found
    where a query's lines are not together, and in a gzipped file."""
    run = Path(files["dir"]) / "run.trec.gz"
    lines = RUN.splitlines(keepends=True)
    run.write_bytes(gzip.compress("".join([lines[4], *lines[:2], lines[5], *lines[2:4], lines[1]]).encode()))
    done = pairmeasures("eval", files["qrels"], str(run), "nDCG@5", "P@2")
    refused(done, f"{run}:7:", "ranks document 'b' twice, here and on line 3, with score 3.0 both times",
            "drop the repeated line")


def test_a_tsv_run_ranking_a_document_twice_names_its_lines(files):
    run = Path(files["dir"]) / "run.tsv"
    run.write_text("query_id\tdoc_id\tscore\tgroup\nq1\ta\t4\tpro\nq1\tb\t3\tcon\nq1\ta\t1\tpro\nq2\te\t1\tpro\n")
    done = pairmeasures("eval", files["qrels"], str(run), "nDCG@5", "rND@4")
    refused(done, f"{run}:4:", "ranks document 'a' twice, with score 1.0 here and 4.0 on line 2")


def test_the_library_readers_and_a_dataframe_run_refuse_a_document_ranked_twice(files):
    """read_run_file refuses as the commands do; a DataFrame given to a pairmeasures measure is refused wherever the
    second row is, below the cut-off too, naming the query, the document and both rows."""
    from pairmeasures.io.runfiles import load_run_file, read_run_file

    run = Path(files["dir"]) / "run.trec"
    run.write_text(RUN + "q1 Q0 a 5 0.0 s\n")
    for read in (read_run_file, lambda path: load_run_file(path, columns=False)):
        with pytest.raises(ValueError, match=r"run.trec:7: query 'q1' ranks document 'a' twice"):
            read(str(run))
    frame = pd.DataFrame({"query_id": ["q1"] * 5, "doc_id": list("abcda"), "score": [4.0, 3, 2, 1, 0],
                          "group": ["pro", "con", "pro", "con", "pro"]})
    qrels = pd.DataFrame({"query_id": "q1", "doc_id": list("abcd"), "relevance": [2, 0, 1, 0]})
    with pytest.raises(pm.RunInputError, match=r"twice for document 'a' of query 'q1' \(rows 0 and 4 of the frame, "
                                               r"scores 4.0 and 0.0\)"):
        ir_measures.calc_aggregate([pm.rND @ 2], qrels, frame)  # row 4 is below the cut-off


def test_an_audit_system_ranking_a_document_twice_is_named():
    """A system of the audit (a user's stage, say) whose run ranks a document twice is refused before any measure,
    naming the system, the query and the document, whatever the measures read."""
    from pairmeasures.audit.evaluation import per_query

    run = pd.DataFrame({"qid": ["q1", "q1", "q1"], "docno": ["a", "b", "a"], "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"query_id": "q1", "doc_id": ["a", "b"], "relevance": [1, 0]})
    with pytest.raises(ValueError, match=r"system 'mine': its run ranks document 'a' twice for query 'q1' \(scores "
                                         r"3.0 and 1.0\)"):
        per_query({"mine": run}, qrels, {"nDCG@1": ir_measures.parse_measure("nDCG@1")})


# --- the rank field -------------------------------------------------------------------------------------------

def test_a_rank_field_that_is_not_a_number_names_the_line(files):
    """One 'x' in the rank field once made the whole run fall back to its line order under ties='system' (Duo went
    from 0.1084 to 0.0). The bias measures read the field: an error naming the line. The relevance measures ignore
    it, as trec_eval does."""
    run = Path(files["dir"]) / "run.trec"
    run.write_text(RUN.replace("q1 Q0 b 2", "q1 Q0 b x"))
    refused(pairmeasures("eval", files["qrels"], str(run), "nDCG@5", rnd(files)),
            f"{run}:2: rank 'x' (the fourth field) is not a number", "ties='system'")
    done = pairmeasures("eval", files["qrels"], str(run), "nDCG@5")
    assert done.returncode == 0 and done.stdout.startswith("nDCG@5\t"), done.stderr


def test_a_rank_column_of_a_tsv_run_that_is_not_a_number_names_the_line(files):
    run = Path(files["dir"]) / "run.tsv"
    run.write_text("query_id\tdoc_id\tscore\trank\nq1\ta\t4\t1\nq1\tb\t4\t-\nq2\te\t1\t1\n")
    refused(pairmeasures("eval", files["qrels"], str(run), rnd(files)), f"{run}:3: rank '-'")


# --- options ----------------------------------------------------------------------------------------------------

def test_places_are_bounded(files):
    """-p 1000000000 printed a gigabyte per value."""
    run = Path(files["dir"]) / "run.trec"
    run.write_text(RUN)
    refused(pairmeasures("eval", files["qrels"], str(run), "nDCG@5", "-p", "1000000000"),
            "-p/--places must be -1", "or 0 to 20", "got 1000000000")
    value = pairmeasures("eval", files["qrels"], str(run), "nDCG@5", "-p", "20").stdout.split("\t")[1]
    assert len(value.strip().split(".")[1]) == 20


@pytest.mark.parametrize("text, words", [
    ("nDCG@5,P@3", ["measures are separated by spaces, not commas", "write nDCG@5 P@3"]),
    ("nDCG@5;P@3", ["measures are separated by spaces", "write nDCG@5 P@3"]),
    ("Duo(ties='system', ties='trec_eval')@10", ["ties is given twice ('system' and 'trec_eval')",
                                                 "give each parameter once"]),
    ("Duo(cutoff=5)@10", ["cutoff is given twice (5 and @10)"]),
    ("nDCG(ties='system')@5", ["nDCG has no parameter 'ties' (its parameters: cutoff, dcg, gains, judged_only)",
                               "leave it out"]),
    ("nDCG(dcg='x')@5", ["nDCG: invalid dcg='x'", "one of ['log2', 'exp-log2']"]),
])
def test_measure_strings_that_cannot_mean_one_thing_are_one_line(files, text, words):
    """A comma between measures, a parameter given twice (ir_measures keeps the last) and a parameter an
    ir_measures measure lacks (an AssertionError traceback when evaluated) are refused before the files are read."""
    refused(pairmeasures("eval", files["qrels"], "/no/such/run", text), f"measure {text!r}", *words)


def test_the_library_parser_of_the_commands_refuses_them_too():
    from pairmeasures.measures.parsing import parse_measure

    with pytest.raises(ValueError, match="ties is given twice"):
        parse_measure("rKL(ties='system', ties='trec_eval')@10")
    with pytest.raises(ValueError, match="nDCG has no parameter 'ties'"):
        parse_measure("nDCG(ties='trec_eval')@10")
    assert str(parse_measure("rKL(ties='trec_eval')@10")) == "rKL(ties='trec_eval')@10"


def test_pm_parse_measure_is_the_library_parser_that_refuses_a_repeated_parameter():
    """One policy for a parameter given twice: ir_measures' parser collects the parameters into a dict (the last value
    of a repeat; @k over cutoff=) before it calls the measure, so no measure can see the repeat; pm.parse_measure,
    the commands' parser, refuses it in Python too. ir_measures.parse_measure keeps the last value, as
    docs/getting-started.md says: this test fails when that changes, and the docs with it."""
    import ir_measures

    import pairmeasures as pm

    for text, message in (("Duo(ties='system', ties='trec_eval')@10", r"ties is given twice \('system' and 'trec_eval'\)"),
                          ("Duo(cutoff=5)@10", r"cutoff is given twice \(5 and @10\)"),
                          ("rKL(protected='a', protected='b')", "protected is given twice"),
                          ("nDCG(ties='system')@5", "nDCG has no parameter 'ties'")):
        with pytest.raises(ValueError, match=message):
            pm.parse_measure(text)
    assert pm.parse_measure("Duo(ties='trec_eval')@10") == pm.Duo(ties="trec_eval") @ 10
    assert "parse_measure" in pm.__all__ and pm.parse_measure is pm.measures.parse_measure
    assert ir_measures.parse_measure("Duo(ties='system', ties='trec_eval')@10") == pm.Duo(ties="trec_eval") @ 10
    assert ir_measures.parse_measure("Duo(cutoff=5)@10") == pm.Duo @ 10


# --- the audit --------------------------------------------------------------------------------------------------

@pytest.fixture
def dataset(tmp_path) -> Path:
    """A tiny BEIR folder: two queries, four documents each, pro/con labels."""
    root = tmp_path / "debates"
    (root / "qrels").mkdir(parents=True)
    docs = {"q1": ["a1", "a2", "a3", "a4"], "q2": ["b1", "b2", "b3", "b4"]}
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": f"argument {d}"}) + "\n"
                                               for ds in docs.values() for d in ds))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": f"debate {q}"}) + "\n" for q in docs))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{i % 2}\n" for q, ds in docs.items() for i, d in enumerate(ds)))
    (root / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\n" + "".join(
        f"{q}\t{d}\t{'pro' if i % 2 else 'con'}\n" for q, ds in docs.items() for i, d in enumerate(ds)))
    return root


def audit_lines(order: dict) -> str:
    return "".join(f"{q} Q0 {d} {r + 1} {10 - r} s\n" for q, ds in order.items() for r, d in enumerate(ds))


ORDER = {"q1": ["a1", "a2", "a3", "a4"], "q2": ["b2", "b1", "b4", "b3"]}


@pytest.mark.parametrize("problem, text, words", [
    ("twice", audit_lines(ORDER) + "q1 Q0 a1 9 1 s\n", [":9: query 'q1' ranks document 'a1' twice",
                                                         "score 1.0 here and 10.0 on line 1"]),
    ("rank", audit_lines(ORDER).replace("b1 2", "b1 two"), [":6: rank 'two' (the fourth field) is not a number"]),
])
def test_an_audit_of_such_a_run_file_names_the_system_file_and_line(dataset, tmp_path, problem, text, words):
    run = tmp_path / "system.run"
    run.write_text(text)
    out = tmp_path / "audit"
    done = pairmeasures("audit", "--dataset", str(dataset), "--systems", f"run:{run}", "--measures", "nDCG@4",
                        "--out", str(out), cache=tmp_path / "cache")
    refused(done, f"run:{run}", str(run), *words)
    assert not out.exists()


def test_an_audit_refuses_bad_measure_strings_before_any_work(dataset, tmp_path):
    run = tmp_path / "system.run"
    run.write_text(audit_lines(ORDER))
    for text, words in (("nDCG@4,rKL@4", ["write nDCG@4 rKL@4"]), ("nDCG(ties='system')@4", ["no parameter 'ties'"])):
        done = pairmeasures("audit", "--dataset", str(dataset), "--systems", f"run:{run}", "--measures", text,
                            "--out", str(tmp_path / "audit"), cache=tmp_path / "cache")
        refused(done, *words)


def test_a_run_file_whose_name_holds_the_stage_separator_is_named_in_quotes(dataset, tmp_path):
    """A run: file named with '>>' (or a parenthesis) could not be named in a spec: between quotes, it is read as
    written, and the audit measures it as the same run under a plain name."""
    odd, plain = tmp_path / "bm25>>ce (v2).run", tmp_path / "plain.run"
    for path in (odd, plain):
        path.write_text(audit_lines(ORDER))
    out = tmp_path / "audit"
    done = pairmeasures("audit", "--dataset", str(dataset), "--systems", f"run:'{odd}'", f"run:{plain}", "--names",
                        "odd", "plain", "--measures", "nDCG@4", "rKL@4", "--resamples", "100", "--no-tradeoff",
                        "--out", str(out), cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    values = pd.read_csv(out / "per_query.csv").pivot_table(index=["measure", "qid"], columns="system", values="value")
    pd.testing.assert_series_equal(values["odd"], values["plain"], check_names=False)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["systems"]["odd"]["spec"] == f"run:'{odd}'"
    unclosed = pairmeasures("audit", "--dataset", str(dataset), "--systems", f"run:'{odd}", "--out",
                            str(tmp_path / "never"), cache=tmp_path / "cache")
    refused(unclosed, "a ' is not closed", "run:'my>>run.trec'")
    assert "quote a PATH that holds '>>'" in pairmeasures("audit", "--help").stdout
