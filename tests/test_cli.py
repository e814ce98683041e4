"""The command line as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pairmeasures", *args], capture_output=True, text=True, timeout=300)


def test_demo_prints_a_markdown_table():
    result = cli("demo")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("| name"))
    assert header == "| name | nDCG@5 | Duo@5 | Duo(signed=True)@5 | rND@5 | rKL@5 |"
    rows = {line.split("|")[1].strip(): line for line in lines if line.startswith("| ") and line != header}
    assert set(rows) == {"relevance-first", "pro-first", "interleaved"}
    assert "| 1.0000 |" in rows["pro-first"]


def test_demo_as_json_and_csv():
    result = cli("demo", "--format", "json", "--measures", "Duo@5", "rRD(protected='con')@5", "--quiet")
    assert result.returncode == 0, result.stderr
    records = {r["name"]: r for r in json.loads(result.stdout)}
    assert records["pro-first"]["Duo@5"] == 1.0
    assert records["pro-first"]["rRD(protected='con')@5"] == 1.0
    csv = cli("demo", "--format", "csv", "--quiet")
    assert csv.stdout.splitlines()[0] == "name,nDCG@5,Duo@5,Duo(signed=True)@5,rND@5,rKL@5"


def test_bad_measure_is_one_clear_line():
    result = cli("demo", "--measures", "Duo(axes='median')@5")
    assert result.returncode == 2
    assert result.stderr.strip() == "pairmeasures demo: error: Duo: invalid axes='median'; expected aggregate over polarity axes: the most biased axis (max) or the mean (one of ['max', 'mean'])"


def test_help_explains_commands():
    result = cli("--help")
    assert result.returncode == 0
    assert "demo" in result.stdout and "measures" in result.stdout
    assert "evaluate three toy systems" in result.stdout
    measures = cli("measures", "--format", "csv")
    assert measures.returncode == 0 and "Duo," in measures.stdout and "rRD," in measures.stdout


def test_help_lists_every_measure_family():
    result = cli("--help")
    assert "measure families" in result.stdout
    for line in ("duo                    Duo", "group                  rND, rKL, rRD", "rab                    RaB, ARaB"):
        assert line in result.stdout
    assert "eval" in result.stdout


def test_measures_table_has_direction_and_range():
    result = cli("measures", "--format", "json")
    assert result.returncode == 0, result.stderr
    rows = {r["measure"]: r for r in json.loads(result.stdout)}
    assert (rows["Duo"]["direction"], rows["Duo"]["range"]) == ("lower-fairer", "[0, 1]")
    assert rows["TExFAIR"]["direction"] == "higher-fairer" and rows["RaB"]["direction"] == "signed"


def test_one_measure_explained():
    result = cli("measures", "Duo(signed=True)@10")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith("## Duo(signed=True)@10: Discounted Uniformity of Opinions")
    assert "- direction: `signed`" in text and "- range: [-1, 1]" in text and "Ziems" in text
    assert "| step | int | 1 | an int in [1, 10000000] |" in text
    assert "| axes | str | 'max' | 'max', 'mean' |" in text
    assert "ir_measures.parse_measure('Duo(signed=True)@10')" in text
    info = json.loads(cli("measures", "Measured", "--format", "json").stdout)
    assert info["parameters"][0]["default"] == "required" and info["direction"] == "neither"
    assert info["shell_example"] == "pairmeasures eval QRELS RUN \"Measured(of='Duo(rel=4)@10')\""
    rows = cli("measures", "rKL", "--format", "csv").stdout.splitlines()
    assert rows[0] == "measure,direction,range,parameter,type,default,choices,description"
    assert rows[1].startswith("rKL,lower-fairer,\"[0, 1]\",cutoff (@k),int")


def test_every_measure_example_parses():
    import ir_measures

    from pairmeasures.apps.catalogue import describe, registered

    for measure in registered():
        example = describe(measure)["example"]
        assert ir_measures.parse_measure(eval(example.split("(", 1)[1][:-1])).NAME == measure.NAME


def test_unknown_measure_names_close_ones():
    result = cli("measures", "rnd")
    assert result.returncode == 2
    assert result.stderr.strip() == ("pairmeasures measures: error: no measure named 'rnd'; did you mean rND or rRD or NDKL? "
                                     "'pairmeasures measures' lists them all")
    relevance = cli("measures", "nDCG@10")
    assert relevance.returncode == 2 and "ir_measures relevance measure" in relevance.stderr


QRELS = "q1 0 a 2\nq1 0 b 1\nq1 0 c 0\nq1 0 d 1\nq2 0 e 1\nq2 0 f 0\n"
RUN = "q1 Q0 a 1 4.0 s\nq1 Q0 c 2 3.0 s\nq1 Q0 b 3 2.0 s\nq1 Q0 d 4 1.0 s\nq2 Q0 e 1 2 s\nq2 Q0 f 2 1 s\n"
POLARITY = "corpus-id\tpolarity\na\t1\nb\t-1\nc\t0.5\nd\t-0.5\ne\t1\nf\t-1\n"


def trec_files(tmp_path):
    for name, text in (("qrels.txt", QRELS), ("run.txt", RUN), ("polarity.tsv", POLARITY)):
        (tmp_path / name).write_text(text)
    return tmp_path / "qrels.txt", tmp_path / "run.txt", tmp_path / "polarity.tsv"


@pytest.mark.filterwarnings("ignore::pairmeasures.DegenerateQueryWarning")
def test_eval_trec_files_with_a_resource(tmp_path):
    import ir_measures

    import pairmeasures  # noqa: F401  registers Duo

    qrels, run, polarity = trec_files(tmp_path)
    duo = f"Duo(polarity='tsv:{polarity}')@10"
    result = cli("eval", str(qrels), str(run), "nDCG@10", duo, "--format", "json")
    assert result.returncode == 0, result.stderr
    values = {r["measure"]: r["value"] for r in json.loads(result.stdout)}
    assert list(values) == ["nDCG@10", duo]  # in the order given
    expected = ir_measures.calc_aggregate([ir_measures.parse_measure(m) for m in ("nDCG@10", duo)],
                                          ir_measures.read_trec_qrels(QRELS), ir_measures.read_trec_run(RUN))
    assert values == pytest.approx({str(m): v for m, v in expected.items()})
    # q2 has two documents: one warning line on stderr, naming the measure
    warning_lines = [line for line in result.stderr.splitlines() if "DegenerateQueryWarning" in line]
    assert len(warning_lines) == 1 and duo in warning_lines[0]


def test_eval_per_query_from_a_tsv_run_with_side_columns(tmp_path):
    qrels, _, _ = trec_files(tmp_path)
    run = tmp_path / "run.tsv"
    run.write_text("query_id\tdoc_id\tscore\tgroup\tpolarity\nq1\ta\t4\tpro\t1\nq1\tb\t3\tpro\t1\nq1\tc\t2\tcon\t-1\n"
                   "q1\td\t1\tcon\t-1\nq2\te\t2\tpro\t1\nq2\tf\t1\tcon\t-1\n")
    result = cli("eval", str(qrels), str(run), "rND@4", "Duo@4", "-q", "--format", "tsv")
    assert result.returncode == 0, result.stderr
    lines = [line.split("\t") for line in result.stdout.splitlines()]
    # q2 has two documents: nothing to measure, so no line (left out, said on stderr), and not in the means
    assert [line[:2] for line in lines] == [["q1", "rND@4"], ["q1", "Duo@4"], ["all", "rND@4"], ["all", "Duo@4"]]
    assert lines[0][2] == "1.0000" and lines[1][2] == "1.0000"  # pro, pro, con, con: the least fair ordering
    assert lines[2][2] == "1.0000" and lines[3][2] == "1.0000"  # the means over the one query measured
    assert "DegenerateQueryWarning: rND@4: 1 of 2 queries had nothing to measure and were left out" in result.stderr
    documented = cli("eval", str(qrels), str(run), "rND(degenerate='default')@4", "-q", "--format", "tsv")
    assert [line.split("\t")[0] for line in documented.stdout.splitlines()] == ["q1", "q2", "all"]


@pytest.mark.parametrize("args,message", [
    (["qrels.txt", "missing.txt", "nDCG@10"], "pairmeasures eval: error: RUN file '{tmp}/missing.txt' does not exist"),
    (["qrels.txt", "run.txt", "Dou@10"], "pairmeasures eval: error: measure 'Dou@10': no measure named 'Dou'; did you "
                                         "mean Duo? ('pairmeasures measures' lists the bias measures)"),
    (["qrels.txt", "polarity.tsv", "nDCG@10"], "pairmeasures eval: error: {tmp}/polarity.tsv:1: expected 6 fields of a "
                                               "TREC run line (query Q0 doc rank score tag), found 2; a file with side "
                                               "columns needs a header line naming query_id, doc_id and score "
                                               "(tab-separated)"),
    (["qrels.txt", "run.txt", "Duo(polarity='tsv:{tmp}/nope.tsv')@10"], "pairmeasures eval: error: "
     "Duo(polarity='tsv:{tmp}/nope.tsv')@10: side-information file '{tmp}/nope.tsv' does not exist"),
])
def test_eval_errors_are_one_line(tmp_path, args, message):
    trec_files(tmp_path)
    result = cli("eval", *[str(tmp_path / a) if a.endswith((".txt", ".tsv")) else a.format(tmp=tmp_path) for a in args])
    assert result.returncode == 2
    assert result.stderr.strip() == message.format(tmp=tmp_path)
    assert result.stdout == ""


def test_eval_reads_beir_qrels(data_dir, tmp_path):
    folder = data_dir / "procon"
    qrels = [line.split("\t") for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    run = tmp_path / "run.tsv"  # an oracle run: the judged documents by relevance
    run.write_text("query_id\tdoc_id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in qrels))
    result = cli("eval", str(folder / "qrels" / "test.tsv"), str(run), "nDCG@10", f"rKL(group='beir:{folder}')@10",
                 "--format", "csv")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "measure,value" and lines[1] == "nDCG@10,1.0000"
    assert lines[2].startswith(f"rKL(group='beir:{folder}')@10,")


def test_every_command_is_a_module_of_one_shape_and_explains_itself():
    import argparse
    import inspect
    import pkgutil

    from pairmeasures.apps import commands
    from pairmeasures.apps.cli import COMMANDS

    assert list(COMMANDS)[:3] == ["demo", "measures", "eval"] and "seme" in COMMANDS
    steps = {"benchmark_run"}  # the run and submit steps of `benchmark` (its STEPS table), not a command
    assert {m.__name__ for m in COMMANDS.values()} == {f"{commands.__name__}.{m.name}"
                                                       for m in pkgutil.iter_modules(commands.__path__)
                                                       if m.name not in steps}  # no orphan
    for name, module in COMMANDS.items():
        assert inspect.ismodule(module), name
        assert isinstance(module.HELP, str) and isinstance(module.DESCRIPTION, str), name
        assert list(inspect.signature(module.add_arguments).parameters) == ["parser"], name
        assert list(inspect.signature(module.run).parameters) == ["args"], name
        module.add_arguments(argparse.ArgumentParser())
    for name in COMMANDS:  # as a user runs it
        result = cli(name, "--help")
        assert result.returncode == 0 and result.stderr == "", (name, result.stderr)
        assert result.stdout.startswith(f"usage: pairmeasures {name} ") and COMMANDS[name].DESCRIPTION[:40] in \
            " ".join(result.stdout.split()), name
    for step in ("material", "serve", "export", "analyze"):
        result = cli("seme", step, "--help")
        assert result.returncode == 0 and result.stdout.startswith(f"usage: pairmeasures seme {step} "), step
