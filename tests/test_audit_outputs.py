"""What a user reads from ``pairmeasures audit``, run as a user runs it (a subprocess in a working folder, relative
paths, a pipe or a narrow terminal): the printed leaderboard fits the width with its marks and counts, the report
compares means only over the same queries and says which statistics are corrected, and the files record paths
relative to the output folder unless ``--absolute-paths``."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import unicodedata
from html import unescape as html_unescape
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
QUERIES = [f"q{i}" for i in range(1, 9)]
MEASURES = ("nDCG@10", "rKL@10", "rND@10")


def width(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """A working folder holding a BEIR folder ``data`` (8 queries, two relevant and two other documents each, labelled
    pro/con) and two run files: ``full.run`` ranks every query, balanced on q1 and q2 (rKL@10 0) and one-sided
    elsewhere; ``part.run`` ranks q1 one-sided and q2 balanced, nothing else. So part's bias means (2 queries) are
    lower than full's (8 queries), while on the 2 queries both measured full's are lower."""
    root = tmp_path_factory.mktemp("work")
    data = root / "data"
    (data / "qrels").mkdir(parents=True)
    docs = {q: [(f"{q}d{j}", "pro" if j % 2 == 0 else "con") for j in range(4)] for q in QUERIES}
    (data / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": f"text of {d} {g}"}) + "\n"
                                               for q in QUERIES for d, g in docs[q]))
    (data / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": f"query {q}"}) + "\n" for q in QUERIES))
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{1 if j < 2 else 0}\n" for q in QUERIES for j, (d, _) in enumerate(docs[q])))
    (data / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q in QUERIES for d, g in docs[q]))

    def run(name: str, order: dict) -> None:
        (root / name).write_text("".join(f"{q} Q0 {d} {r} {10 - r} t\n" for q, ranked in order.items()
                                         for r, d in enumerate(ranked)))

    def balanced(q):
        return [f"{q}d0", f"{q}d1", f"{q}d2", f"{q}d3"]  # pro con pro con

    def one_sided(q):
        return [f"{q}d0", f"{q}d2", f"{q}d1", f"{q}d3"]  # pro pro con con

    run("full.run", {q: balanced(q) if q in ("q1", "q2") else one_sided(q) for q in QUERIES})
    run("part.run", {"q1": one_sided("q1"), "q2": balanced("q2")})
    return root


def audit(work: Path, *args: str, columns=None, out: str = "audit", measures=MEASURES) -> subprocess.CompletedProcess:
    """The audit of the two runs in ``work``, typed with relative paths, stdout a pipe (``columns``: COLUMNS)."""
    env = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(work / "cache"), "PYTHONPATH": str(ROOT)}
    env.pop("COLUMNS", None)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    done = subprocess.run([sys.executable, "-m", "pairmeasures", "audit", "--dataset", "data", "--systems",
                           "run:full.run", "run:part.run", "--names", "full", "part", "--measures", *measures,
                           "--resamples", "300", "--no-tradeoff", "--out", out, *args],
                          capture_output=True, text=True, timeout=600, env=env, cwd=work)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def first(work) -> subprocess.CompletedProcess:
    return audit(work)


def table_lines(stdout: str) -> list:
    """The printed table's lines (before the first line of the legend)."""
    lines = stdout.split("\n\n† ")[0].split("\n\nDuo axis")[0].splitlines()
    return [line for line in lines if line.strip()]


def test_the_printed_leaderboard_fits_a_pipe_with_marks_counts_and_the_common_means_where_they_differ(work, first):
    """Piped (no terminal, no COLUMNS): at most 100 columns; each mean with † where summary.csv's corrected test
    rejects, a bias mean with its (n), the means over the queries both systems measured only where a system measured
    other queries too; and where the whole table is. leaderboard.md keeps every column."""
    lines = first.stdout.splitlines()
    assert lines and max(map(width, lines)) <= 100 and all(line == line.rstrip() for line in lines), first.stdout
    summary = pd.read_csv(work / "audit" / "summary.csv").set_index(["system", "measure"])
    table = table_lines(first.stdout)
    assert table[0].split() == ["system", "nDCG@10", "↑", "rKL@10", "↓", "(n)", "on", "2", "rND@10", "↓", "(n)", "on", "2"]
    rows = {line.split()[0]: line for line in table[1:]}
    assert set(rows) == {"full", "part"}
    for system, line in rows.items():
        for measure in MEASURES:
            row = summary.loc[(system, measure)]
            mark = "†" if row["reject"] else ""
            assert f"{row['mean']:.4f}{mark}" in line, (system, measure, line)
            if measure != "nDCG@10":
                assert f"({int(row['n'])})" in line
    assert rows["part"].split()[1] == f"{summary.loc[('part', 'nDCG@10'), 'mean']:.4f}†"  # nDCG@10 0.94 -> 0.24
    assert first.stdout.count("†") == int(summary["reject"].sum()) + 1  # the marks, and the legend's one
    # full measured 8 queries, part the 2 both measured: full's common mean shown, part's is its mean ('=')
    assert rows["full"].split()[-1] == f"{summary.loc[('full', 'rND@10'), 'common_mean']:.4f}" == "0.0000"
    assert rows["part"].split()[-1] == "=" and rows["part"].split()[-4] == "="
    assert "† differs from full's mean (paired t-test over the queries every system measured, holm-corrected" in \
        " ".join(first.stdout.split())
    assert "Every column, with intervals: audit/leaderboard.md; the report: audit/report.html" in first.stdout
    whole = (work / "audit" / "leaderboard.md").read_text()
    assert "| rND@10 n |" in whole and "| rND@10 ↓ on 2 common queries |" in whole and "|" not in first.stdout


def test_a_narrow_terminal_gets_blocks_of_columns_and_every_number_whole(work, first):
    """COLUMNS=30: a block per measure, each with the systems again, no line wider; COLUMNS=12: narrower than one
    measure, which then stands alone in its block, its numbers whole (never cut)."""
    done = audit(work, columns=30, out="narrow")
    table = done.stdout.split("\n\n† ")[0]
    blocks = table.split("\n\n")
    assert len(blocks) == 3 and all(block.splitlines()[0].startswith("system ") for block in blocks), done.stdout
    assert [block.splitlines()[0].split()[1] for block in blocks] == list(MEASURES)
    assert max(width(line) for line in done.stdout.splitlines()) <= 30  # the legend wraps too
    summary = pd.read_csv(work / "narrow" / "summary.csv")
    assert all(f"{mean:.4f}" in table for mean in summary["mean"])
    narrow = audit(work, "--force", columns=12, out="narrow")
    assert narrow.stdout.split("\n\n† ")[0].split("\n\n") == blocks  # too narrow for any: one measure a block
    assert json.loads((work / "narrow" / "leaderboard.json").read_text())["measures"].keys() == set(MEASURES)


def test_the_whole_table_is_printed_on_request(work, first):
    done = audit(work, "--format", "markdown", out="markdown")
    assert done.stdout.startswith("| system | nDCG@10 ↑ |") and "| rKL@10 ↓ on 2 common queries |" in done.stdout
    assert done.stdout.split("\n\nArrows:")[0] + "\n" == (work / "markdown" / "leaderboard.md").read_text()


def test_a_measure_that_measured_no_query_is_a_column_of_nothing_not_a_traceback(work):
    """rKL@2 on these rankings: every top 2 of part and full holds one group or is tied, so no query is measured;
    the leaderboard shows it measured on 0 queries (it used to end in a KeyError)."""
    done = audit(work, measures=("nDCG@10", "rKL@2"), out="unmeasured")
    table = table_lines(done.stdout)
    assert table[0].split() == ["system", "nDCG@10", "↑", "rKL@2", "↓", "(n)"]
    assert all(line.split()[-2:] == ["-", "(0)"] for line in table[1:]), done.stdout
    board = json.loads((work / "unmeasured" / "leaderboard.json").read_text())
    assert board["measures"]["rKL@2"]["measured"] == {"full": 0, "part": 0}
    assert board["systems"]["full"]["rKL@2"] is None and "Traceback" not in done.stderr


def section(html: str, heading: str) -> str:
    found = re.search(rf"<section>\n<h2>{re.escape(heading)}</h2>(.*?)</section>", html, re.DOTALL)
    assert found, heading
    return found.group(1)


def tables(html: str) -> dict:
    """``{caption: table html}`` of a section."""
    return {re.search(r"<caption>(.*?)</caption>", part).group(1): part for part in html.split("<table>")[1:]}


def test_the_report_bolds_only_means_over_the_same_queries(work, first):
    """part measured rKL@10 and rND@10 on 2 queries, full on 8: part's lower means are not bold as the best; the
    means over the 2 queries both measured are, where full is fairer."""
    html = (work / "audit" / "report.html").read_text(encoding="utf-8")
    board = tables(section(html, "Leaderboard"))
    summary = pd.read_csv(work / "audit" / "summary.csv").set_index(["system", "measure"])
    assert summary.loc[("part", "rKL@10"), "mean"] < summary.loc[("full", "rKL@10"), "mean"]  # the trap
    assert summary.loc[("full", "rKL@10"), "common_mean"] < summary.loc[("part", "rKL@10"), "common_mean"]
    assert "<strong>" not in board["Bias between gold-label groups"]
    common = board["Bias over the 2 queries every system measured, to compare across rows"]
    full = re.search(r"<tr><td>full</td>(.*?)</tr>", common).group(1)
    assert full.count("<strong>0.0000</strong>") == 2 and "<strong>" not in common.split("<td>part</td>")[1]
    assert "<strong>" in board["Relevance"]  # nDCG@10: every system measured every query
    words = " ".join(section(html, "Leaderboard").split())
    assert "where they did not (rKL@10, rND@10), means over different queries are not compared" in words


def test_the_report_says_which_statistics_are_corrected(work, first):
    html = (work / "audit" / "report.html").read_text(encoding="utf-8")
    statistics = section(html, "Statistics")
    assert "(p: the t-test's, uncorrected; p holm-corrected: after the correction, † at most 0.05)" in \
        html_unescape(statistics) and '<th class=num scope="col">p holm-corrected</th>' in statistics
    assert "The 95% intervals are per comparison: none is corrected for the other comparisons" in statistics
    summary = pd.read_csv(work / "audit" / "summary.csv")
    tested = summary[summary["system"] == "part"].set_index("measure")
    p, corrected = tested.loc["nDCG@10", "p_value"], tested.loc["nDCG@10", "p_corrected"]
    assert f"{corrected:.4f}<sup>†</sup>" in statistics and f"<td class=num>{p:.4f}</td>" in statistics
    hint = re.search(r'title="([^"]*)">0\.2400<sup>†</sup>', section(html, "Leaderboard"))  # part's nDCG@10
    assert hint and f"t-test p = {p:.2g} uncorrected, {corrected:.2g} holm-corrected" in hint.group(1)


def test_intervals_and_tests_that_disagree_are_named_with_their_reason():
    """A difference whose per-comparison interval excludes 0 but whose corrected test is not significant (the case
    of Grep-BiasIR's rRD@10, p 0.063 and interval [-0.0391, -0.0003]) is named with both numbers and why."""
    from pairmeasures.apps.audit.report_tables import mixed_signals_text

    nan = math.nan
    rows = [dict(system="base", measure="m", diff=nan, diff_low=nan, diff_high=nan, p_value=nan, p_corrected=nan,
                 reject=False),
            dict(system="a", measure="m", diff=-0.0188, diff_low=-0.0391, diff_high=-0.0003, p_value=0.063,
                 p_corrected=0.13, reject=False),
            dict(system="b", measure="m", diff=0.05, diff_low=0.01, diff_high=0.09, p_value=0.03, p_corrected=0.06,
                 reject=False),
            dict(system="a", measure="n", diff=0.2, diff_low=0.1, diff_high=0.3, p_value=1e-6, p_corrected=2e-6,
                 reject=True)]
    text = mixed_signals_text(pd.DataFrame(rows), "base", "holm")
    assert "corrected with holm for the 2 systems compared with base on each measure" in text
    assert ("1 difference whose interval excludes 0 and whose uncorrected p is at most 0.05 has no †, as the "
            "correction allows for the other comparisons and the interval does not (e.g. m of b: difference +0.0500 "
            "[+0.0100, +0.0900], p = 0.03 uncorrected, 0.06 holm-corrected)") in text
    assert ("1 difference whose interval excludes 0 has an uncorrected p above 0.05: the paired t-test and the "
            "percentile bootstrap differ") in text and "p = 0.063 uncorrected, 0.13 holm-corrected" in text
    agreeing = mixed_signals_text(pd.DataFrame(rows[:1] + rows[3:]), "base", "holm")
    assert agreeing.endswith("Here they agree: † marks exactly the differences whose interval excludes 0.")


def test_the_files_record_paths_relative_to_the_output_folder_or_absolute_on_request(work, first):
    """Typed with relative paths in a working folder: manifest.json (cwd, the folder dataset), leaderboard.json and
    the report's provenance name no absolute path of this machine; --absolute-paths writes them absolute, and the
    audit still recognises its own earlier output to replace it."""
    out = work / "audit"
    here = str(work.resolve())
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["cwd"] == ".." and manifest["paths"].startswith("relative to this folder")
    assert manifest["dataset"]["id"] == manifest["dataset"]["source"] == "../data"
    assert json.loads((out / "leaderboard.json").read_text())["dataset"] == "../data"
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Dataset ../data (a folder, relative to this report&#x27;s folder)" in html
    for name in ("manifest.json", "leaderboard.json", "report.html", "leaderboard.md", "summary.csv"):
        assert here not in (out / name).read_text(encoding="utf-8"), name
        assert str(work) not in (out / name).read_text(encoding="utf-8"), name
    assert (out / manifest["cwd"] / "data" / "corpus.jsonl").is_file()  # read from the output folder, they lead there
    assert (out / manifest["dataset"]["source"] / "corpus.jsonl").is_file()

    audit(work, "--force", "--absolute-paths")  # over the earlier audit: it is still recognised as one
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["cwd"] == here and manifest["paths"] == "absolute"
    assert manifest["dataset"]["source"] == str((work / "data").resolve())
    assert f"Dataset {(work / 'data').resolve()} (a folder, its absolute path)" in \
        (out / "report.html").read_text(encoding="utf-8")


def test_path_records_use_the_home_folder_and_the_package_where_nothing_else_is_shared(monkeypatch, tmp_path):
    from pairmeasures.analysis.manifest import PathRecord

    monkeypatch.setenv("HOME", "/home-of-test/user")
    record = PathRecord(Path("/elsewhere/audits/out"))
    assert record("/home-of-test/user/data/grep") == "~/data/grep"  # nothing shared with the output folder but /
    assert record("/elsewhere/data/grep") == "../../data/grep"
    assert record("/srv/data") == "../../../srv/data"
    import pairmeasures

    demo = Path(pairmeasures.__file__).parent / "demo" / "debates"
    assert record(demo) == "<pairmeasures>/demo/debates"
    assert PathRecord(Path("/elsewhere/out"), absolute=True)("/home-of-test/user/x") == "/home-of-test/user/x"
    assert PathRecord()(tmp_path) == str(tmp_path.resolve())  # no output folder known: absolute
    for written in ("~/data/grep", "../../data/grep", "../../../srv/data", "<pairmeasures>/demo/debates"):
        assert record(record.locate(written)) == written  # read back as the path of this machine it names
    assert record.locate("../../data/grep") == Path("/elsewhere/data/grep") and record.locate("/srv/x") == Path("/srv/x")
    assert record.locate("<pairmeasures>/demo/debates") == demo.resolve()
