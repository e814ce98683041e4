"""The board's data beside its pages: ``leaderboard.json`` (``suite``, ``tasks``, ``systems``: system -> task ->
measure -> mean, with counts, ranks, tests, provenance, the records kept apart and those left out) and
``leaderboard.csv`` (one row per system, task and measure)."""

from __future__ import annotations

import csv
import io
import math
from typing import Optional

from .board import Board
from .overview import record_location
from .pages import task_page
from .stats import ALPHA, CORRECTION

__all__ = ["board_csv", "board_json"]

CSV_COLUMNS = ("system", "kind", "task", "measure", "mean", "n", "direction", "rank", "p_value", "p_holm",
               "significant", "baseline", "pins", "run_sha256", "created", "record")


def _number(value: Optional[float]) -> Optional[float]:
    return None if value is None or not math.isfinite(value) else value


def board_json(board: Board) -> dict:
    """The board as JSON data (the issue's keys ``suite``, ``tasks``, ``systems`` first)."""
    suite = board.suite
    tasks = {}
    systems: dict = {s: {} for s in board.systems}
    counts: dict = {s: {} for s in board.systems}
    ranks: dict = {s: {} for s in board.systems}
    tests: dict = {s: {} for s in board.systems}
    provenance: dict = {s: {} for s in board.systems}
    for task in board.tasks:
        spec = task.task
        tasks[spec.id] = {"dataset": spec.dataset if not spec.folder else None, "folder": spec.folder,
                          "description": spec.description, "paper": spec.paper, "baseline": spec.baseline,
                          "depth": spec.depth, "measures": list(spec.measures), "overview": list(spec.overview),
                          "directions": {m: f.direction for m, f in task.facts.items()},
                          "bias": {m: f.bias for m, f in task.facts.items()}, "pins": spec.pins(),
                          "ir_datasets": list(spec.ir_datasets), "page": f"tasks/{task_page(spec.id)}",
                          "records": len(task.records), "missing": task.missing}
        for system, record in task.records.items():
            systems[system][spec.id] = {m: _number(record.measures.get(m)) for m in spec.measures}
            counts[system][spec.id] = {m: record.n.get(m) for m in spec.measures}
            ranks[system][spec.id] = {m: task.ranks[m][system] for m in spec.measures if task.ranks.get(m)}
            tests[system][spec.id] = {m: {"p": test.p, "p_holm": test.p_holm, "significant": test.significant,
                                          "n": test.n, "difference": test.difference}
                                      for m in spec.measures if (test := task.tests.get(m, {}).get(system))}
            provenance[system][spec.id] = _provenance(record)
    return {"suite": {"name": suite.name, "version": suite.version, "description": suite.description,
                      "baseline": suite.baseline, "depth": suite.depth},
            "tasks": tasks, "systems": systems, "n": counts, "ranks": ranks,
            "overview_ranks": board.overview_ranks, "aggregate_ranks": board.aggregate,
            "aggregate_tasks": board.measure_tasks,
            "significance": {"test": "two-sided paired t-test (scipy.stats.ttest_rel) over the queries both measured",
                             "correction": CORRECTION, "alpha": ALPHA, "tests": tests},
            "provenance": provenance,
            "other_pins": [{"system": r.system, "task": r.task, "why": why, "measures": r.measures, "n": r.n,
                            **_provenance(r)} for r, why in board.other],
            "left_out": [{"file": str(path), "reason": reason} for path, reason in board.left_out]}


def _provenance(record) -> dict:
    data = record.data
    return {"kind": data["kind"], "spec": data["spec"], "suite": data["suite"], "run_sha256": data["run_sha256"],
            "created": data["created"], "versions": data["versions"], "pins": data["pins"],
            "request": data["request"], "record": record_location(record)}


def board_csv(board: Board) -> str:
    """One row per system, task and measure of the board, then the records on other pins (``pins`` = ``other``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for task in board.tasks:
        for system in board.systems:
            record = task.records.get(system)
            if record is None:
                continue
            for measure, facts in task.facts.items():
                test = task.tests.get(measure, {}).get(system)
                writer.writerow(_row(record, measure, facts.direction, task.ranks.get(measure, {}).get(system), test,
                                     task.task.baseline, "suite"))
    for record, _ in board.other:
        for measure in record.measures:
            writer.writerow(_row(record, measure, "", None, None, "", "other"))
    return out.getvalue()


def _row(record, measure, direction, rank, test, baseline, pins) -> list:
    def cell(value):
        return "" if value is None else repr(value) if isinstance(value, float) else value

    mean = record.measures.get(measure)
    return [record.system, record.data["kind"], record.task, measure, cell(mean), cell(record.n.get(measure)),
            direction, cell(rank), cell(test.p if test else None), cell(test.p_holm if test else None),
            "" if test is None or test.p is None else str(test.significant).lower(), baseline, pins,
            record.data["run_sha256"], record.data["created"], record_location(record)]
