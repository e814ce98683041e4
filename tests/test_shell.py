"""The shell as ir_measures users type it (issue 24): ``pairmeasures eval`` with the ir_measures command's flags and
output, its readers (fast, and as strict as before), ``--version``, ``datasets export`` and one line naming the extra
a command lacks. Commands run as a user runs them, in a subprocess. What training does as a user types it
(train-polarity's --max-steps, --resume and Ctrl-C, train-ibbr skipping queries without negatives) is in
test_train_polarity.py and test_train_ibbr.py, which train; seme material's warnings in test_seme_material.py."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import ir_measures
import pytest

from pairmeasures.io.beir import DataFileError
from pairmeasures.io.runfiles import load_qrels_file, load_run_file, read_run_file

ROOT = Path(__file__).resolve().parents[1]
QRELS = "q1 0 a 2\nq1 0 b 1\nq1 0 c 0\nq1 0 d 1\nq2 0 e 1\nq2 0 f 0\nq10 0 g 1\n"
RUN = ("q1 Q0 a 1 4.0 s\nq1 Q0 c 2 3.0 s\nq1 Q0 b 3 2.0 s\nq1 Q0 d 4 1.0 s\nq2 Q0 f 1 2 s\nq2 Q0 e 2 1 s\n"
       "q10 Q0 x 1 5 s\nq10 Q0 g 2 4.5 s\n")
GROUPS = "corpus-id\tgroup\na\tpro\nb\tcon\nc\tpro\nd\tcon\ne\tpro\nf\tcon\ng\tpro\nx\tcon\n"


def run(*args: str, module: str = "pairmeasures") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture
def files(tmp_path) -> tuple[str, str, str]:
    for name, text in (("qrels.txt", QRELS), ("run.txt", RUN), ("groups.tsv", GROUPS)):
        (tmp_path / name).write_text(text)
    return str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt"), str(tmp_path / "groups.tsv")


# --- eval, as the ir_measures command -------------------------------------------------------------------------------

@pytest.mark.parametrize("flags", [[], ["-q"], ["--by_query", "--no_summary"], ["-p", "-1"], ["-p", "2"],
                                   ["-o", "jsonl"], ["-q", "--output_format", "jsonl"], ["-q", "-n", "-p", "6"]])
def test_eval_prints_what_the_ir_measures_command_prints(files, flags):
    qrels, run_file, _ = files
    ours = run("eval", qrels, run_file, "nDCG@10 P@2", "AP", *flags)
    theirs = run(qrels, run_file, "nDCG@10 P@2", "AP", *flags, module="ir_measures")
    assert ours.returncode == 0 and theirs.returncode == 0, ours.stderr + theirs.stderr
    if "-q" in flags or "--by_query" in flags:  # ir_measures prints queries in its providers' order; ours are sorted
        assert sorted(ours.stdout.splitlines()) == sorted(theirs.stdout.splitlines())
        if "jsonl" not in flags:
            assert [line.split("\t")[0] for line in ours.stdout.splitlines()][:3] == ["q1"] * 3
    else:
        assert ours.stdout == theirs.stdout


def test_eval_bias_measures_next_to_relevance_as_tsv_jsonl_and_tables(files):
    qrels, run_file, groups = files
    rkl = f"rKL(group='tsv:{groups}', protected='con')@4"  # a space inside the measure: still one measure
    tsv = run("eval", qrels, run_file, f"nDCG@10 {rkl}", "-q")
    assert tsv.returncode == 0, tsv.stderr
    lines = [line.split("\t") for line in tsv.stdout.splitlines()]
    shown = str(ir_measures.parse_measure(rkl))  # as ir_measures writes it
    # every ranking of q2's and q10's two documents scores the same rKL: left out (degenerate='exclude'), no line
    assert [line[:2] for line in lines] == [[q, m] for q in ("q1", "q10", "q2", "all") for m in ("nDCG@10", shown)
                                            if q in ("q1", "all") or m == "nDCG@10"]
    assert "2 of 3 queries had nothing to measure" in tsv.stderr and "'q2', 'q10'" in tsv.stderr
    records = [json.loads(line) for line in run("eval", qrels, run_file, rkl, "-o", "jsonl").stdout.splitlines()]
    assert list(records[0]) == ["measure", "value"] and records[0]["measure"] == shown
    assert records[0]["value"] == pytest.approx(float(lines[-1][2]), abs=5e-5)
    table = run("eval", qrels, run_file, "nDCG@10", "--format", "markdown").stdout
    assert table.splitlines()[:3] == ["| measure | value |", "|:---|---:|", f"| nDCG@10 | {lines[-2][2]} |"]
    only_ours = run("eval", qrels, run_file, rkl, "--provider", "pairmeasures")
    assert only_ours.stdout == run("eval", qrels, run_file, rkl).stdout


@pytest.mark.parametrize("args,message", [
    (["nDCG@10", "-n"], "-n/--no_summary leaves the means out of the per-query lines: give it with -q/--by_query"),
    (["nDCG@10", "Duo@5", "--provider", "pytrec_eval"], "--provider pytrec_eval does not compute Duo@5: leave "
                                                        "--provider out to let each measure find its provider"),
    (["nDCG@10", "--provider", "nope"], "--provider 'nope': no such provider; choose one of accuracy, "),
    (["nDCG@10", "-p", "-2"], "-p/--places must be -1 (every digit, as Python prints the value) or 0 to 20"),
])
def test_eval_flag_misuse_is_one_line(files, args, message):
    qrels, run_file, _ = files
    done = run("eval", qrels, run_file, *args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"pairmeasures eval: error: {message}") and done.stderr.count("\n") == 1


def test_eval_reads_qrels_from_an_ir_datasets_id(data_mirror, tmp_path):
    qrels = data_mirror / "procon" / "qrels" / "test.tsv"
    judged = [line.split("\t") for line in qrels.read_text().splitlines()[1:]]
    run_file = tmp_path / "run.txt"
    run_file.write_text("".join(f"{q} Q0 {d} {i} {-i} s\n" for i, (q, d, _) in enumerate(judged)))
    by_id = run("eval", "pair/procon", str(run_file), "nDCG@10", "P@5")
    assert by_id.returncode == 0, by_id.stderr
    assert by_id.stdout == run("eval", str(qrels), str(run_file), "nDCG@10", "P@5").stdout
    missing = run("eval", "pair/nope", str(run_file), "nDCG@10")
    assert missing.stderr == ("pairmeasures eval: error: QRELS file 'pair/nope' does not exist, and no ir_datasets "
                              "dataset has that id\n")


# --- the readers ----------------------------------------------------------------------------------------------------

def reference(path: Path) -> tuple[dict, dict]:
    return ir_measures.util.RunConverter(ir_measures.read_trec_run(str(path))).as_dict_of_dict(), {}


@pytest.mark.parametrize("name,text", [
    ("plain.run", RUN),
    ("blank-lines-crlf-tabs.run", "\n" + RUN.replace(" ", "\t", 3).replace("\n", "\r\n", 4) + "\n   \n"),
    ("not-adjacent.run", RUN + "q1 Q0 e 9 0.5 s\nq1 Q0 h 10 0.25 s\n"),  # q1's lines, then q2's, then q1's again
    ("unicode.run", RUN.replace("a ", "ä ").replace("q2", "q\u00a02x")),  # a no-break space splits a field in two
    ("big.run", "".join(f"q{i // 997} Q0 d{i} {i % 997} {1 / (1 + i % 997):.6f} tag\n" for i in range(60_000))),
])
def test_the_block_reader_reads_what_ir_measures_reads(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    try:
        expected = ir_measures.util.RunConverter(ir_measures.read_trec_run(str(path))).as_dict_of_dict()
    except ValueError:  # ir_measures cannot unpack a line with a seventh field: ours names it
        with pytest.raises(DataFileError, match=r"unicode.run:5: expected 6 fields of a TREC run line"):
            load_run_file(str(path))
        return
    assert load_run_file(str(path), columns=False).nested() == expected
    assert load_run_file(str(path)).nested() == expected
    frame = read_run_file(str(path))
    assert len(frame) == sum(1 for line in text.splitlines() if line.strip())
    assert list(frame.columns) == ["query_id", "doc_id", "score", "rank"]
    compressed = tmp_path / f"{name}.gz"
    compressed.write_bytes(gzip.compress(("\ufeff" + text).encode("utf-8")))  # with a byte order mark
    assert load_run_file(str(compressed)).nested() == expected
    qrels = tmp_path / f"{name}.qrels"
    qrels.write_text("".join(f"{q} 0 {d} {int(s) % 3}\n" for q, docs in expected.items() for d, s in docs.items()))
    assert load_qrels_file(str(qrels)).nested() == ir_measures.util.QrelsConverter(
        ir_measures.read_trec_qrels(str(qrels))).as_dict_of_dict()


@pytest.mark.parametrize("line,message", [
    ("q99 Q0 d99000 998 0.25 s", "query 'q99' ranks document 'd99000' twice, with score 0.25 here and 1000.0 on line "
                                 "99001"),  # issue 31
    ("q9 Q0 d9 1 2.0", "expected 6 fields of a TREC run line (query Q0 doc rank score tag), found 5"),
    ("q9 Q0 d9 1 nan s", "score 'nan' is not a finite number"),
    ("q9 Q0 d9 1 2,5 s", "score '2,5' is not a finite number"),
])
def test_a_bad_line_deep_in_a_large_run_is_named(tmp_path, line, message):
    lines = [f"q{i // 1000} Q0 d{i} {i % 1000} {1000 - i % 1000} s" for i in range(120_000)]  # several blocks
    lines[99_998] = line
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines) + "\n")
    for columns in (True, False):
        with pytest.raises(DataFileError, match=rf"run.txt:99999: {re.escape(message)}"):
            load_run_file(str(path), columns=columns)
    path.write_bytes(path.read_bytes().replace(b"d99997 ", b"d\xff99997 "))
    with pytest.raises(DataFileError, match=r"run.txt:99998: not UTF-8 text"):
        load_run_file(str(path))


# --- the rest of the shell ------------------------------------------------------------------------------------------

def test_version():
    from pairmeasures import __version__

    done = run("--version")
    assert done.returncode == 0 and done.stdout == f"pairmeasures {__version__}\n"


def test_datasets_export_is_ir_datasets_export_with_the_pair_datasets(data_mirror):
    irds = [sys.executable, "-c", "import pairmeasures, ir_datasets; ir_datasets.main_cli()", "export"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    plain = subprocess.run([*irds[:2], "import ir_datasets; ir_datasets.main_cli()", "export", "pair/procon",
                            "queries"], capture_output=True, text=True, env=env)
    assert plain.returncode != 0 and "KeyError" in plain.stderr  # the ir_datasets command never imports pairmeasures
    for args in (["queries"], ["qrels"], ["docs", "--format", "jsonl", "--fields", "doc_id", "title"]):
        ours = run("datasets", "export", "pair/procon", *args)
        documented = subprocess.run([*irds, "pair/procon", *args], capture_output=True, text=True, env=env)
        assert ours.returncode == 0 and ours.stdout == documented.stdout and ours.stdout, ours.stderr
    assert run("datasets", "export", "pair/procon", "queries").stdout.startswith(
        "videogames\tViolent Video Games Contribute to Youth Violence\n")
    refused = run("datasets", "export", "pair/procon", "docpairs")
    assert refused.stderr == "pairmeasures datasets: error: pair/procon has no docpairs; it has docs, queries, qrels\n"


BLOCKED = """import importlib.abc, sys
blocked = set(sys.argv[1].split(","))
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Blocker())
from pairmeasures.apps.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("blocked,args,message", [
    ("flask", ["seme", "serve", "material.json", "--db", "x.db"],
     "pairmeasures seme serve: needs flask: pip install 'pairmeasures[seme]'"),
    ("datasets,accelerate", ["train-polarity", "folder", "--out", "model"],
     "pairmeasures train-polarity: needs datasets, accelerate: pip install 'pairmeasures[train]'"),
    ("datasets", ["train-ibbr", "folder", "--out", "model"],
     "pairmeasures train-ibbr: needs datasets: pip install 'pairmeasures[train]'"),
    ("openai", ["generate-fitset", "--queries", "q.txt", "--out", "fit", "--endpoint", "http://127.0.0.1:9", "--model",
                "m"], "pairmeasures generate-fitset: needs openai: pip install 'pairmeasures[llm]'"),
    ("scipy", ["eval", "qrels.txt", "run.txt", "nDCG@10"], None),  # eval needs no extra
])
def test_a_missing_extra_is_named_in_one_line_before_any_work(files, tmp_path, blocked, args, message):
    done = subprocess.run([sys.executable, "-c", BLOCKED, blocked, *args], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if message is None:
        assert done.returncode == 0, done.stderr
        return
    assert (done.returncode, done.stderr) == (2, message + "\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["groups.tsv", "qrels.txt", "run.txt"]  # nothing written


def test_a_module_missing_mid_command_names_its_extra(tmp_path):
    """The audit's dense stages import pyterrier-dr when they are built, after the index."""
    from pairmeasures.apps.cli import _missing_module
    from pairmeasures.apps.extras import needs_message

    try:
        try:
            raise ModuleNotFoundError("No module named 'pyterrier_dr'", name="pyterrier_dr")
        except ImportError as exc:
            raise ImportError("the bi-encoder stages need pyterrier-dr") from exc
    except ImportError as exc:
        assert needs_message([_missing_module(exc)], "audit") == "needs pyterrier-dr: pip install 'pairmeasures[audit]'"
    assert needs_message(["torch"]) == "needs torch: pip install 'pairmeasures[embed]'"


def test_extras_follow_pyproject():
    """Every requirement of every extra in pyproject.toml is a module of that extra (or of one it includes)."""
    from pairmeasures.apps.extras import EXTRAS, INCLUDES, distribution

    tomllib = pytest.importorskip("tomllib", reason="Python 3.11's TOML reader")
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra in EXTRAS:
        own = {distribution(m) for m in EXTRAS[extra]}
        for requirement in declared[extra]:
            name = requirement.split(">")[0].split("=")[0].split("[")[0].strip()
            if name == "pairmeasures":
                assert requirement.split("[")[1].rstrip("]").split(",") == list(INCLUDES[extra])
            else:
                assert name in own, (extra, name)


@pytest.mark.parametrize("command", ["train-polarity", "train-ibbr"])
def test_resume_without_a_checkpoint_is_one_line_and_writes_nothing(tmp_path, command):
    done = subprocess.run([sys.executable, "-m", "pairmeasures", command, "folder", "--out", "model", "--resume"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (done.returncode, done.stderr) == (2, f"pairmeasures {command}: error: --resume: no checkpoint in "
                                                 f"{tmp_path / 'model.checkpoints'}; train with --checkpoint-every N "
                                                 "first\n")
    assert list(tmp_path.iterdir()) == []


def test_max_steps_and_epochs_are_one_or_the_other(tmp_path):
    done = run("train-polarity", str(tmp_path), "--out", str(tmp_path / "model"), "--epochs", "1", "--max-steps", "3")
    assert done.returncode == 2 and done.stderr.splitlines()[-1] == (
        "pairmeasures train-polarity: error: argument --max-steps: not allowed with argument --epochs")
