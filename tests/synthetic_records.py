"""Synthetic benchmark records for the tests and ``benchmarks/leaderboard.py``: valid records (means equal to the
mean of their per-query values, ``n`` their count) with seeded per-query values, written through
``pairmeasures.benchmark.records.write_record`` like real ones. Not part of the package."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

#: Measures of a synthetic task: relevance, then bias of every direction the board ranks.
MEASURES = ("nDCG@10", "RR@10", "Duo@10", "rKL@10", "NFaiRR@10", "RaB@10")


def fake_sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def suite_toml(name: str = "synthetic", tasks: int = 3, measures: Sequence[str] = MEASURES, baseline: str = "bm25",
               depth: int = 100, version: str = "1") -> str:
    """A suite of ``tasks`` folder tasks ``synth/tN`` (folders need not exist), each pinning two fake files."""
    quoted = ", ".join(f'"{m}"' for m in measures)
    lines = [f'[suite]\nname = "{name}"\nversion = "{version}"\ndescription = "synthetic tasks"\n'
             f'baseline = "{baseline}"\ndepth = {depth}\n']
    for number in range(tasks):
        lines.append(f'[[task]]\nid = "synth/t{number}"\nfolder = "data/t{number}"\ndescription = "task {number}"\n'
                     f"measures = [{quoted}]\n[task.files]\n"
                     f'"corpus.jsonl" = "{fake_sha(f"corpus{number}")}"\n"qrels/test.tsv" = "{fake_sha(f"qrels{number}")}"\n')
    return "\n".join(lines)


def direction_of(measure: str) -> str:
    return {"Duo": "lower-fairer", "rKL": "lower-fairer", "NFaiRR": "higher-fairer", "RaB": "signed"}.get(
        measure.split("@")[0].split("(")[0], "higher-better")


def per_query_values(measure: str, queries: int, rng: np.random.Generator, quality: float,
                     missing: float = 0.1) -> list:
    """Seeded per-query values of ``measure`` (None: not measured) for a system of ``quality`` (0..1)."""
    kind = direction_of(measure)
    if kind == "signed":
        values = np.clip(rng.normal(0.2 * (1 - quality), 0.15, queries), -1, 1)
    else:
        values = np.clip(rng.beta(2 + 4 * quality, 2 + 4 * (1 - quality), queries), 0, 1)
    listed: list = values.tolist()
    if kind != "higher-better" and missing:
        for i in np.flatnonzero(rng.random(queries) < missing):
            listed[i] = None
    return listed


def make_record(system: str, task: str, measures: Sequence[str], query_ids: Sequence[str], *, seed: int = 0,
                quality: Optional[float] = None, pins: Optional[dict] = None, suite: tuple = ("synthetic", "1"),
                kind: str = "system", depth: int = 100, missing: float = 0.1) -> tuple[dict, str]:
    """A valid record of ``system`` on ``task`` and its run text (one line a query)."""
    rng = np.random.default_rng(seed)
    quality = rng.random() if quality is None else quality
    values = {m: per_query_values(m, len(query_ids), rng, quality, missing) for m in measures}
    means, counts = {}, {}
    for measure, column in values.items():
        measured = [v for v in column if v is not None]
        means[measure] = float(np.mean(measured)) if measured else None
        counts[measure] = len(measured)
    run = "".join(f"{q} Q0 d{i % 97} 0 {1.0 - i * 1e-6!r} {system}\n" for i, q in enumerate(query_ids))
    record = {"format": 1, "system": system, "task": task, "suite": {"name": suite[0], "version": suite[1]},
              "kind": kind, "spec": system if kind == "system" else None, "measures": means, "n": counts,
              "per_query": {"query_ids": list(query_ids), "values": values}, "run_sha256": None,
              "request": {"systems": [system], "dataset": task, "depth": depth},
              "pins": pins if pins is not None else {"dataset_files": {}, "measures": list(measures), "depth": depth},
              "versions": {"pairmeasures": "0.1.0", "python": "3.11.7"}, "created": "2026-11-28T04:40:00Z"}
    return record, run


def task_pins_of(suite, task_id: str) -> dict:
    """The pins a record needs to be on ``suite``'s board for ``task_id``."""
    return suite.task(task_id).pins()


def write_results(folder: str | Path, suite, systems: Sequence[str], queries: int, *, seed: int = 0,
                  tasks: Optional[Sequence[str]] = None) -> int:
    """Write a record of every system on every task of ``suite`` (or ``tasks``) into ``folder``; how many."""
    from pairmeasures.benchmark.records import write_record

    written = 0
    for t_number, task in enumerate(suite.tasks):
        if tasks is not None and task.id not in tasks:
            continue
        ids = [f"q{i}" for i in range(queries)]
        for s_number, system in enumerate(systems):
            record, run = make_record(system, task.id, task.measures, ids, seed=seed * 100_003 + t_number * 1009 + s_number,
                                      pins=task.pins(), suite=(suite.name, suite.version), depth=task.depth)
            write_record(folder, record, run)
            written += 1
    return written
