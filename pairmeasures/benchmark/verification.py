"""Recomputing the records of results folders from their stored runs: ``pairmeasures leaderboard verify DIR...`` and
:func:`verify` (docs/leaderboard.md, "Verify").

Every record is read back checked (:func:`~pairmeasures.benchmark.records.read_records` with its run hashed: a
damaged record or run is named, and counts as not verified); its task is rebuilt from its ``request`` (dataset,
text field, measures, depth), the data here is compared with its pins (other data cannot verify it: named), and its
stored run is evaluated again as ``benchmark run`` evaluated it (:func:`~pairmeasures.benchmark.taskrun.evaluate_run`).
Every mean, ``n`` and per-query value that differs from the stored one (beyond 1e-9 of its size: values are stored
with 15 significant digits; beyond 1e-5 for a measure that reads ``polarity``, which the task's embedding model
computes: :data:`MODEL_TOLERANCE`) is one line of drift. Each task's dataset is opened once.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

__all__ = ["TOLERANCE", "MODEL_TOLERANCE", "Verified", "verify", "tolerance"]

#: How far a recomputed value may lie from the stored one, relative to max(1, |value|).
TOLERANCE = 1e-9
#: The same for a measure that reads ``polarity`` (``Duo``): the task computes it with its embedding model, whose
#: float32 vectors differ in their last bits with the batch a text was embedded in (CPU kernels pick their blocking
#: by shape), so a value recomputed from a cold cache moves by up to some 1e-6 (5.4e-7 seen on ProCon's Duo@10). A
#: changed model, dataset or measure moves it by far more.
MODEL_TOLERANCE = 1e-5


@dataclass
class Verified:
    """What :func:`verify` found: how many records it ``checked`` and found the same (``same``), each line of
    ``drift`` and each record it could not verify (``unverified``: ``(file, why)``, damaged ones included)."""

    checked: int = 0
    same: int = 0
    drift: list = field(default_factory=list)
    unverified: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every record was recomputed to its stored values."""
        return not self.drift and not self.unverified

    def as_json(self) -> dict:
        return {"checked": self.checked, "same": self.same, "drift": list(self.drift),
                "unverified": [{"file": str(f), "why": w} for f, w in self.unverified]}


def _differs(stored, now, tolerance: float = TOLERANCE) -> bool:
    if stored is None or now is None:
        return (stored is None) != (now is None)
    return abs(float(stored) - float(now)) > tolerance * max(1.0, abs(float(stored)))


def tolerance(measure: str) -> float:
    """How far a recomputed value of ``measure`` (a measure string of a task) may lie from its stored one:
    :data:`MODEL_TOLERANCE` where it reads the run's ``polarity`` (a model's output), else :data:`TOLERANCE`."""
    from ..measures import PairMeasure
    from ..measures.parsing import parse_measure

    try:
        parsed = parse_measure(measure)
    except ValueError:
        return TOLERANCE
    if isinstance(parsed, PairMeasure) and "polarity" in (set(parsed.run_columns()) |
                                                           set(parsed.optional_run_columns())):
        return MODEL_TOLERANCE
    return TOLERANCE


def _task_of(request: dict):
    from .suites import Task

    return Task(request["task"], request["dataset"], bool(request["folder"]), tuple(request["measures"]),
                int(request["depth"]), "", dict(request["pins"]["dataset_files"]),
                tuple(request.get("ir_datasets", ())), text=request.get("text"))


def verify(dirs: Sequence[str | os.PathLike], *, data: Optional[str | os.PathLike] = None,
           report: Optional[Callable[[str], None]] = None) -> Verified:
    """Recompute every record of the results folders ``dirs`` from its stored run (the module docstring); ``data``:
    the datasets' mirror folder (default ``$PAIRMEASURES_DATA``); ``report``: a line per task as it is checked."""
    from .recordformat import run_path
    from .records import read_records
    from .suites import task_pins
    from .taskrun import data_advice, evaluate_run, open_task, run_frame

    records, left_out = read_records(dirs, check_runs=True)
    found = Verified(unverified=[(path, reason) for path, reason in left_out])
    groups: dict = {}
    for record in records:
        asked = record.data["request"]
        if not isinstance(asked, dict) or not all(k in asked for k in ("task", "dataset", "folder", "measures",
                                                                        "depth", "pins")):
            found.unverified.append((record.path, "its request does not say how it was made (dataset, measures, "
                                                  "depth, pins): not written by benchmark run or submit"))
            continue
        key = json.dumps([asked[k] for k in ("task", "dataset", "folder", "measures", "depth", "pins")] +
                         [asked.get("text")], sort_keys=True)
        groups.setdefault(key, []).append(record)
    for members in groups.values():
        task = _task_of(members[0].data["request"])
        here = task_pins(task, data)
        if not here.available or here.files != task.files:
            why = (f"the data of {task.id} is not here: {data_advice(task, here)}" if not here.available else
                   f"the data of {task.id} here is not the data it was made from "
                   f"({', '.join(here.differing()) or 'other files'} differ)")
            found.unverified += [(record.path, why) for record in members]
            continue
        if report:
            report(f"task {task.id}: recomputing {len(members)} records")
        opened = open_task(task, data)
        for record in members:
            text = gzip.decompress(run_path(record.path).read_bytes()).decode("utf-8")
            now = evaluate_run(opened, run_frame(text))
            found.checked += 1
            lines = _compare(record, now)
            found.drift += lines
            found.same += not lines
    return found


def _compare(record, now) -> list:
    lines = []
    where = str(record.path)
    if list(now.per_query["query_ids"]) != list(record.query_ids):
        return [f"{where}: its queries are not the task's queries here ({len(record.query_ids)} stored, "
                f"{len(now.per_query['query_ids'])} here)"]
    for measure in record.measures:
        if measure not in now.measures:
            lines.append(f"{where}: {measure}: not a measure of the task's request")
            continue
        allowed = tolerance(measure)
        if _differs(record.measures[measure], now.measures[measure], allowed):
            lines.append(f"{where}: {measure} mean: stored {record.measures[measure]!r}, recomputed "
                         f"{now.measures[measure]!r}")
        if record.n[measure] != now.n[measure]:
            lines.append(f"{where}: {measure} n: stored {record.n[measure]}, recomputed {now.n[measure]}")
        stored = record.values[measure]
        for qid, old, new in zip(record.query_ids, stored, now.per_query["values"][measure]):
            old = None if old != old else float(old)  # NaN: not measured
            if _differs(old, new, allowed):
                lines.append(f"{where}: {measure} query {qid}: stored {old!r}, recomputed {new!r}")
    return lines
