"""The board as data: the records of one or more results folders sorted against a suite (:func:`assemble`).

A record goes on the board of its task when its pins are the suite's (the same dataset files, measures and depth:
:func:`pairmeasures.benchmark.suites.same_pins`); any other record (another dataset file, another measure
definition or depth, a task the suite does not have) is kept apart in :attr:`Board.other`, never ranked or tested
with the others. A record on the board that lacks a value of one of its task's measures is shown, with the missing
measure named (:attr:`TaskBoard.missing`); that value counts as missing in ranks and tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from ..benchmark.records import Record
from ..benchmark.suites import Suite, Task, builtin_suites, load_suite, same_pins
from .stats import mean_ranks, paired_tests, ranks

__all__ = ["Board", "TaskBoard", "assemble", "pin_differences", "suite_of"]


@dataclass
class TaskBoard:
    """One task of the board: ``records`` (system -> record on the suite's pins, in board order), ``missing``
    (system -> the task's measures it has no value of), ``ranks`` (measure -> system -> rank, every system of the
    board), ``tests`` (measure -> system -> :class:`Test` against the baseline), ``other`` (records of this task on
    other pins, with why)."""

    task: Task
    facts: dict
    records: dict = field(default_factory=dict)
    missing: dict = field(default_factory=dict)
    ranks: dict = field(default_factory=dict)
    tests: dict = field(default_factory=dict)
    other: list = field(default_factory=list)

    def mean(self, system: str, measure: str) -> Optional[float]:
        """The system's mean of ``measure`` on this task, or None."""
        record = self.records.get(system)
        return None if record is None else record.measures.get(measure)

    def count(self, system: str, measure: str) -> Optional[int]:
        """How many queries the system's record measured with ``measure``, or None."""
        record = self.records.get(system)
        return None if record is None else record.n.get(measure)

    @property
    def relevance(self) -> Optional[str]:
        """The task's first relevance measure (the y axis of its scatters), or None."""
        return next((m for m, f in self.facts.items() if not f.bias), None)


@dataclass
class Board:
    """The whole board: the ``suite``, its ``tasks`` (:class:`TaskBoard`, the suite's order), ``systems`` (every
    system with a record on the suite's pins, by overview rank), ``overview_ranks`` (``"relevance"``/``"bias"`` ->
    system -> the mean rank over tasks of the overview's measures), ``aggregate`` (measure -> system -> mean rank
    over the tasks that have it), ``measure_tasks`` (measure -> those tasks), ``other`` ((record, why) kept apart),
    ``left_out`` ((file, reason) of damaged records)."""

    suite: Suite
    tasks: list
    systems: list
    overview_ranks: dict
    aggregate: dict
    measure_tasks: dict
    facts: dict
    other: list
    left_out: list

    def task(self, task_id: str) -> TaskBoard:
        return next(t for t in self.tasks if t.task.id == task_id)


def suite_of(records: Sequence[Record], suite: Optional[str] = None) -> Suite:
    """The suite to build against: ``suite`` (a built-in name or a TOML file) when given, else the built-in suite
    every record names (a ValueError when they name several, or one that is not built in)."""
    if suite is not None:
        return load_suite(suite)
    named = sorted({(r.data["suite"]["name"], r.data["suite"]["version"]) for r in records})
    if not named:
        raise ValueError("no records to build a board from: give results folders that benchmark run or benchmark "
                         "submit wrote into")
    if len(named) > 1:
        listed = ", ".join(f"{n} version {v}" for n, v in named)
        raise ValueError(f"the records name several suites ({listed}): pass --suite to choose the one to build; the "
                         "records of the others are shown apart when their pins differ")
    name, version = named[0]
    if name not in builtin_suites():
        raise ValueError(f"the records name the suite {name!r}, which is not built in ({', '.join(builtin_suites())}): "
                         "pass --suite FILE with its TOML file")
    found = load_suite(name)
    if found.version != version:
        raise ValueError(f"the records name {name} version {version}, and the built-in {name} is version "
                         f"{found.version}: pass --suite FILE with that version's TOML file")
    return found


def pin_differences(record: Record, task: Task) -> str:
    """Why a record's pins are not its task's, in words (the dataset files, measures and depth that differ)."""
    pins, wanted = record.pins, task.pins()
    parts = []
    theirs, ours = dict(pins.get("dataset_files", {})), wanted["dataset_files"]
    for name in sorted(set(theirs) | set(ours)):
        if theirs.get(name) != ours.get(name):
            if name not in theirs:
                parts.append(f"no pin of {name}")
            elif name not in ours:
                parts.append(f"{name} is not a file of the suite's task")
            else:
                parts.append(f"another {name} (sha256 {str(theirs[name])[:12]}…, the suite's {ours[name][:12]}…)")
    extra = sorted(set(pins.get("measures", [])) - set(wanted["measures"]))
    lacking = sorted(set(wanted["measures"]) - set(pins.get("measures", [])))
    if extra:
        parts.append(f"measures not in the suite: {', '.join(extra)}")
    if lacking:
        parts.append(f"without the suite's {', '.join(lacking)}")
    if pins.get("depth") != wanted["depth"]:
        parts.append(f"depth {pins.get('depth')}, the suite's {wanted['depth']}")
    return "; ".join(parts) or "other pins"


def assemble(records: Sequence[Record], suite: Suite, left_out: Sequence = ()) -> Board:
    """Sort ``records`` against ``suite`` and compute ranks, mean ranks and tests (see the module docstring)."""
    tasks = {t.id: TaskBoard(t, t.facts()) for t in suite.tasks}
    other = []
    for record in sorted(records, key=lambda r: (r.task, r.system)):
        board = tasks.get(record.task)
        if board is None:
            other.append((record, f"task {record.task!r} is not a task of {suite.name} version {suite.version}"))
        elif not same_pins(record.pins, board.task.pins()):
            reason = pin_differences(record, board.task)
            other.append((record, reason))
            board.other.append((record, reason))
        else:
            board.records[record.system] = record
            absent = [m for m in board.task.measures if record.measures.get(m) is None]
            if absent:
                board.missing[record.system] = absent
    systems = sorted({s for t in tasks.values() for s in t.records})
    facts: dict = {}
    for board in tasks.values():
        facts.update(board.facts)
        positions = _alignment(board)
        for measure, fact in board.facts.items():
            board.ranks[measure] = ranks({s: board.mean(s, measure) for s in board.records}, fact.direction, systems)
            board.tests[measure] = _tests(board, measure, positions)
    overview = _overview_ranks(list(tasks.values()), systems)
    measure_tasks = {m: [t.task.id for t in tasks.values() if t.ranks.get(m)] for m in facts}  # tasks that rank it
    aggregate = {m: mean_ranks([t.ranks[m] for t in tasks.values() if m in t.ranks], systems) for m in facts}
    order = sorted(systems, key=lambda s: (overview["bias"].get(s, float("inf")),
                                           overview["relevance"].get(s, float("inf")), s))
    return Board(suite, list(tasks.values()), order, overview, aggregate, measure_tasks, facts, other, list(left_out))


def _overview_ranks(tasks: list, systems: list) -> dict:
    """Mean ranks over tasks of each task's first overview measure of each kind (relevance, bias)."""
    found = {}
    for kind, bias in (("relevance", False), ("bias", True)):
        per_task = []
        for board in tasks:
            measure = next((m for m in board.task.overview if board.facts[m].bias == bias), None)
            if measure is not None and board.ranks.get(measure):
                per_task.append(board.ranks[measure])
        found[kind] = mean_ranks(per_task, systems)
    return found


def _alignment(board: TaskBoard) -> dict:
    """For each record of the task, the positions of its queries in the baseline record's list (-1: not there), or
    None when its list is the baseline's."""
    baseline = board.records.get(board.task.baseline)
    if baseline is None:
        return {}
    order = baseline.query_ids
    index: Optional[dict] = None
    found: dict = {}
    for system, record in board.records.items():
        if record.query_ids is order or list(record.query_ids) == list(order):
            found[system] = None
            continue
        if index is None:
            index = {q: i for i, q in enumerate(order)}
        found[system] = np.array([index.get(q, -1) for q in record.query_ids], dtype=np.int64)
    return found


def _tests(board: TaskBoard, measure: str, positions: dict) -> dict:
    """The paired tests of ``measure`` on one task against its baseline, over the baseline record's queries."""
    baseline = board.records.get(board.task.baseline)
    if baseline is None or measure not in baseline.values:
        return {}
    size = len(baseline.query_ids)
    aligned = {}
    for system, record in board.records.items():
        if measure not in record.values:
            continue
        where = positions[system]
        if where is None:
            aligned[system] = record.values[measure]
            continue
        column = np.full(size, np.nan)
        known = where >= 0
        column[where[known]] = record.values[measure][known]
        aligned[system] = column
    return paired_tests(aligned, board.task.baseline)
