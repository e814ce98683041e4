"""The command line as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys


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
