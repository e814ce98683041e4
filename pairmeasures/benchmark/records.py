"""Benchmark records: one JSON file per (system, task) in a results folder, written under the folder's lock, read
back checked (docs/leaderboard.md, "Records").

A results folder ``DIR`` holds ``DIR/<system>/<task>.json`` (:func:`record_path`; ``<system>`` is
:func:`record_folder_name` of the system, ``<task>`` the task id with its ``/`` kept as folders) and beside each
record ``<task>.run.gz``, the run it was evaluated from (TREC format, gzip). ``DIR/.pairmeasures-results.json``
marks the folder (written with the first record), ``DIR/.results.lock`` serialises writers. Nothing in a results
folder is ever deleted: a record replaced with ``replace=True`` is first kept as
``<task>.replaced-<UTC time>.json`` (its run as ``<task>.replaced-<UTC time>.run.gz``), which no reader counts.

A record is valid (:func:`check_record`) when it has every key of the format, its ``measures``, ``n`` and
``per_query`` agree (each mean is the mean of its non-null per-query values to 1e-9, ``n`` their count) and, where
its run is checked, the run file hashes to ``run_sha256``. :func:`read_records` names every file that is not
(damaged, truncated, inconsistent, misplaced) and leaves it out.
"""

from __future__ import annotations

import gzip
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

import numpy as np

from .._atomic import write_atomically
from .._exclusive import Lock
from .recordformat import (
    FORMAT,
    KEYS,
    MARKER,
    MARKER_FORMAT,
    check_record,
    dump_record,
    is_results_folder,
    read_record_file,
    record_folder_name,
    record_path,
    run_path,
    run_sha256,
    run_text,
    same_result,
    stored_per_query,
    stored_run_sha256,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FORMAT", "KEYS", "LOCK_WAIT_S", "MARKER", "Record", "RecordConflictError", "check_record",
           "is_results_folder", "read_records", "record_folder_name", "record_path", "run_path", "run_sha256",
           "run_text", "write_record"]

#: How long a writer waits for another to finish writing into the same results folder, in seconds.
LOCK_WAIT_S = 120.0


class RecordConflictError(ValueError):
    """A results folder already holds a different record for the same (system, task)."""


def _stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def write_record(results_dir: str | os.PathLike, record: dict, run: "str | pd.DataFrame", replace: bool = False,
                 *, option: str = "--results") -> Path:
    """Write ``record`` and its ``run`` (TREC text, or a frame: :func:`run_text`) into the results folder
    ``results_dir`` under its lock, atomically (the run first, then the record); return the record's path.

    ``run_sha256`` and ``created`` are filled in when absent; a given ``run_sha256`` must be the run's. Per-query
    values are stored with 15 significant digits (:data:`~.recordformat.PER_QUERY_DIGITS`), the means in full. The folder is
    created and marked on first write; a folder that is neither a results folder nor empty is refused. The same
    record written again changes nothing. A different record of the same (system, task) is a
    :class:`RecordConflictError` naming both, unless ``replace``: the earlier record and run are then kept as
    ``<task>.replaced-<UTC time>.json`` / ``.run.gz`` before the new ones are written (nothing is deleted).
    ``option`` names the folder in messages."""
    record = dict(record)
    text = run_text(run)
    digest = run_sha256(text)
    record.setdefault("format", FORMAT)
    if record.get("run_sha256") in (None, ""):
        record["run_sha256"] = digest
    if not record.get("created"):
        record["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    who = f"the record of {record.get('system')!r} on {record.get('task')!r}"
    problem = check_record(record)
    if problem:
        raise ValueError(f"{who} is not valid: {problem}")
    if record["run_sha256"] != digest:
        raise ValueError(f"{who}: its run_sha256 {record['run_sha256'][:12]}… is not the sha256 of the run given "
                         f"({digest[:12]}…)")
    record = {**{key: record[key] for key in KEYS}, "per_query": stored_per_query(record["per_query"])}
    folder = Path(results_dir).expanduser().absolute()
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{option} {str(folder)!r} is a file: name a results folder")
    folder.mkdir(parents=True, exist_ok=True)
    lock = Lock(folder / "results", f"{option} {str(folder)!r}", option)
    lock.acquire(wait=LOCK_WAIT_S)
    try:
        _mark(folder, option)
        return _put(folder, record, text, replace, who, option)
    finally:
        lock.release()


def _mark(folder: Path, option: str) -> None:
    if is_results_folder(folder):
        return
    others = sorted(name for name in os.listdir(folder) if name != ".results.lock")
    if others:
        raise ValueError(f"{option} {str(folder)!r} is not a results folder (it has no {MARKER}) and is not empty "
                         f"(it holds {others[0]!r}): name a new or empty folder, or one that benchmark run wrote")
    marker = {"format": MARKER_FORMAT, "version": FORMAT, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_atomically(folder / MARKER, json.dumps(marker, indent=2) + "\n")


def _put(folder: Path, record: dict, text: str, replace: bool, who: str, option: str) -> Path:
    target = record_path(folder, record["system"], record["task"])
    stored = run_path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    earlier, _, reason = read_record_file(target)
    stamp = _stamp()
    if earlier is not None and same_result(earlier, record):  # written before: only a run lost since is written again
        if stored_run_sha256(stored) != record["run_sha256"]:
            if stored.exists():
                _keep_aside(stored, stamp)
            write_atomically(stored, gzip.compress(text.encode("utf-8"), mtime=0))
        return target
    if target.exists():
        if not replace:
            what = (f"a different record of {record['system']!r} on {record['task']!r}, {target} (run sha256 "
                    f"{earlier['run_sha256'][:12]}…, created {earlier['created']})" if earlier is not None else
                    f"a damaged record of {record['system']!r} on {record['task']!r}, {target} ({reason})")
            raise RecordConflictError(
                f"{option} {str(folder)!r} already holds {what}; the new one has run sha256 "
                f"{record['run_sha256'][:12]}…, created {record['created']}: pass --replace (replace=True) to write it, "
                f"the earlier one then kept beside it as {target.name.removesuffix('.json')}.replaced-<time>.json")
        _keep_aside(target, stamp)
        if stored.exists():
            _keep_aside(stored, stamp)
    elif stored.exists() and stored_run_sha256(stored) != record["run_sha256"]:
        _keep_aside(stored, stamp)  # a run whose record was never written (an interrupted writer): kept, not lost
    write_atomically(stored, gzip.compress(text.encode("utf-8"), mtime=0))
    write_atomically(target, dump_record(record))
    return target


def _keep_aside(path: Path, stamp: str) -> Path:
    """Copy ``path`` to ``<task>.replaced-<stamp>[-N].json`` / ``.run.gz`` beside it (a name not yet taken)."""
    base, suffix = (path.name.removesuffix(".run.gz"), ".run.gz") if path.name.endswith(".run.gz") else \
        (path.name.removesuffix(".json"), ".json")
    number = 1
    while True:
        aside = path.with_name(f"{base}.replaced-{stamp}{'' if number == 1 else f'-{number}'}{suffix}")
        if not os.path.lexists(aside):
            break
        number += 1
    write_atomically(aside, path.read_bytes())
    return aside


@dataclass
class Record:
    """A valid record read from ``path`` in the results folder ``root``: ``data`` (its JSON without ``per_query``),
    ``query_ids`` and ``values`` (measure -> float64 array aligned with ``query_ids``, NaN where a query was not
    measured)."""

    path: Path
    root: Path
    data: dict
    query_ids: Sequence[str]
    values: dict

    @property
    def system(self) -> str:
        return self.data["system"]

    @property
    def task(self) -> str:
        return self.data["task"]

    @property
    def measures(self) -> dict:
        return self.data["measures"]

    @property
    def n(self) -> dict:
        return self.data["n"]

    @property
    def pins(self) -> dict:
        return self.data["pins"]

    def same_as(self, other: "Record") -> bool:
        """Whether ``other`` holds the same result (its time written and versions aside)."""
        return same_result(self.data, other.data) and list(self.query_ids) == list(other.query_ids) and \
            all(np.array_equal(self.values[m], other.values[m], equal_nan=True) for m in self.values)


def read_records(dirs: Iterable[str | os.PathLike], *, check_runs: bool = False) -> tuple[list[Record], list]:
    """The valid records of the results folders ``dirs``, and ``(file, reason)`` for each record file left out
    (damaged, truncated, inconsistent, or not where its system and task put it). ``check_runs``: also hash each
    stored run against its record's ``run_sha256`` (a missing run file is then a reason too). A folder that is not a
    results folder is a ValueError; two different records of one (system, task) are a
    :class:`RecordConflictError` naming both files; the same record in two folders is read once."""
    records: dict = {}
    problems: list = []
    shared_ids: dict = {}
    for folder in map(Path, dirs):
        if not folder.is_dir():
            raise ValueError(f"results folder {str(folder)!r} does not exist" if not folder.exists() else
                             f"{str(folder)!r} is a file: name a results folder")
        if not is_results_folder(folder):
            raise ValueError(f"{str(folder)!r} is not a results folder (it has no {MARKER}): name a folder that "
                             "benchmark run or benchmark submit wrote")
        for path in sorted(_record_files(folder)):
            record, reason = _load(folder, path, check_runs, shared_ids)
            if record is None:
                problems.append((path, reason))
                continue
            key = (record.system, record.task)
            if key in records:
                if not records[key].same_as(record):
                    raise RecordConflictError(
                        f"two different records of system {record.system!r} on task {record.task!r}: "
                        f"{records[key].path} and {path}: keep one of them (or give their folders to separate builds)")
                continue
            records[key] = record
    return list(records.values()), problems


def _record_files(folder: Path) -> Iterable[Path]:
    """The record files of a results folder: ``*.json`` under its system folders, no hidden file, no kept-aside one."""
    for root, subfolders, files in os.walk(folder):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        if Path(root) == folder:
            continue
        for name in files:
            if name.endswith(".json") and not name.startswith(".") and ".replaced-" not in name:
                yield Path(root) / name


def _load(folder: Path, path: Path, check_runs: bool, shared_ids: dict) -> tuple[Optional[Record], str]:
    data, values, reason = read_record_file(path, shared_ids)
    if data is None:
        return None, reason
    expected = record_path(folder, data["system"], data["task"])
    if expected != path:
        return None, (f"it holds system {data['system']!r} on task {data['task']!r}, whose record belongs in "
                      f"{expected.relative_to(folder)}")
    if check_runs:
        stored = run_path(path)
        if not stored.exists():
            return None, f"its run {stored.name} is missing"
        digest = stored_run_sha256(stored)
        if digest != data["run_sha256"]:
            return None, (f"its run {stored.name} is damaged (not gzip)" if digest is None else
                          f"its run {stored.name} has sha256 {digest[:12]}…, not the record's {data['run_sha256'][:12]}…")
    per_query = data.pop("per_query")
    ids = per_query["query_ids"]
    known = shared_ids.get(data["task"])
    if known is not None and known == ids:
        ids = known  # the same query list as another record of the task: one copy in memory
    else:
        shared_ids[data["task"]] = ids
    return Record(path, folder, data, ids, values), ""

