"""Every benchmark script runs from its usage line on a fresh clone: ``python benchmarks/NAME.py --help`` exits 0 and
prints its usage, without the data folder (PAIRMEASURES_DATA unset) and without writing anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))


def test_the_benchmarks_are_found():
    assert "embedding_speed.py" in SCRIPTS and "scale.py" in SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_benchmark_answers_help_without_data(script, tmp_path):
    environment = {k: v for k, v in os.environ.items() if k != "PAIRMEASURES_DATA"}
    results = BENCHMARKS / "results"
    before = {p.name: p.stat().st_mtime_ns for p in results.iterdir()} if results.is_dir() else {}
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--help"], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{script} --help: {done.stderr[-2000:]}"
    assert "usage:" in done.stdout.lower(), done.stdout[:500]
    assert ({p.name: p.stat().st_mtime_ns for p in results.iterdir()} if results.is_dir() else {}) == before
