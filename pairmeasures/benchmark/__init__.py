"""Benchmarks of bias next to relevance across datasets: suites (:mod:`.suites`: named, versioned TOML files of
tasks, the built-in ``pair-bias-v1``), the records of a results folder (:mod:`.records`: one JSON file per
(system, task), written under the folder's lock, read back checked), running systems across a suite
(:mod:`.runner`: :func:`run`), submitting run files (:mod:`.submission`) and recomputing records from their stored
runs (:mod:`.verification`), the three evaluating runs alike (:mod:`.taskrun`). docs/leaderboard.md describes them.

The names load on first use (``pm.benchmark.load_suite``), so ``import pairmeasures`` stays light.
"""

from __future__ import annotations

import importlib

__all__ = ["Record", "RecordConflictError", "RunSummary", "Suite", "SuiteError", "Task", "TaskPins", "Verified",
           "builtin_suites", "load_suite", "read_records", "record_folder_name", "run", "submit", "task_pins", "verify",
           "write_record"]

_LAZY = {**dict.fromkeys(("Suite", "SuiteError", "Task", "TaskPins", "builtin_suites", "load_suite", "task_pins"),
                         ".suites"),
         **dict.fromkeys(("Record", "RecordConflictError", "read_records", "record_folder_name", "write_record"),
                         ".records"),
         **dict.fromkeys(("RunSummary", "run"), ".runner"), "submit": ".submission",
         **dict.fromkeys(("Verified", "verify"), ".verification")}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))
