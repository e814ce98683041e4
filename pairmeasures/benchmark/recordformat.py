"""The record format of a results folder (docs/leaderboard.md, "Records"): its keys, where each record and its run
lie (:func:`record_path`, :func:`record_folder_name`, :func:`run_path`), what makes a record valid
(:func:`check_record`), how it is written (:func:`dump_record`) and read (:func:`read_record_file`). Writing under
the folder's lock and reading whole folders: :mod:`pairmeasures.benchmark.records`.

A record is valid when it has every key of :data:`KEYS`, its ``measures``, ``n`` and ``per_query`` agree (each mean
is the mean of its non-null per-query values to 1e-9, ``n`` their count), and it is strict JSON (no NaN).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import re
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FORMAT", "KEYS", "MARKER", "MARKER_FORMAT", "PER_QUERY_DIGITS", "check_record", "dump_record",
           "is_results_folder", "read_record_file", "record_folder_name", "record_path", "run_path", "run_sha256",
           "run_text", "same_result", "stored_per_query", "stored_run_sha256", "validate_record"]

FORMAT = 1
#: Every key of a record.
KEYS = ("format", "system", "task", "suite", "kind", "spec", "measures", "n", "per_query", "run_sha256", "request",
        "pins", "versions", "created")
#: The file that marks a results folder.
MARKER = ".pairmeasures-results.json"
MARKER_FORMAT = "pairmeasures-results"
_TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def record_folder_name(name: str) -> str:
    """A filesystem-safe folder for the system ``name``: ``[A-Za-z0-9._-]`` kept, every other run of characters
    (and leading dots) becomes ``-``; when anything was replaced, ``-`` and the first 8 hex digits of the name's
    sha256 are appended, so that two names never share a folder (``bm25>>dense`` -> ``bm25-dense-<8 hex>``)."""
    safe = _UNSAFE.sub("-", name)
    stripped = safe.lstrip(".")
    if stripped != safe:
        safe = "-" + stripped
    if safe == name and safe:
        return safe
    return f"{safe}-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:8]}".lstrip("-") or "system"


def record_path(results_dir: str | os.PathLike, system: str, task: str) -> Path:
    """Where the record of ``system`` on ``task`` lies in ``results_dir``."""
    if not _TASK_ID.match(task):
        raise ValueError(f"task id {task!r} cannot name a record file: use words of letters, digits, '.', '_' and '-' "
                         "separated by '/'")
    return Path(results_dir) / record_folder_name(system) / f"{task}.json"


def run_path(record_file: str | os.PathLike) -> Path:
    """The stored run beside a record file (``<task>.run.gz``)."""
    record_file = Path(record_file)
    return record_file.with_name(record_file.name.removesuffix(".json") + ".run.gz")


def run_text(run: "str | pd.DataFrame", tag: str = "pairmeasures") -> str:
    """A run as TREC text: text as it is; a frame with ``qid``, ``docno``, ``rank``, ``score`` as PyTerrier's
    ``pt.io.write_results`` writes it (``qid Q0 docno rank score tag``, the rank as it is), scores exactly."""
    if isinstance(run, str):
        return run if not run or run.endswith("\n") else run + "\n"
    missing = [c for c in ("qid", "docno", "rank", "score") if c not in run.columns]
    if missing:
        raise ValueError(f"the run lacks the columns {', '.join(missing)}: give a frame with qid, docno, rank, score "
                         "or the run's TREC text")
    lines = (f"{q} Q0 {d} {int(r)} {float(s)!r} {tag}\n"
             for q, d, r, s in zip(run["qid"].astype(str), run["docno"].astype(str), run["rank"], run["score"]))
    return "".join(lines)


def run_sha256(text: str) -> str:
    """The sha256 of a run's text (UTF-8): a record's ``run_sha256``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_record(record: Any) -> Optional[str]:
    """Why ``record`` (a parsed record) is not a valid record, or None when it is."""
    return validate_record(record)[0]


def validate_record(record: Any, known_ids: Optional[dict] = None) -> tuple[Optional[str], dict]:
    """Why ``record`` (parsed) is not valid (None when it is), and its per-query values as float64 arrays aligned with
    its ``query_ids`` (NaN: null, a query not measured). ``known_ids``: task -> a query list already found valid,
    not checked again when the record's list equals it."""
    problem = _check_fields(record)
    if problem:
        return problem, {}
    return _check_values(record["measures"], record["n"], record["per_query"], (known_ids or {}).get(record["task"]))


def _check_fields(record: Any) -> Optional[str]:
    if not isinstance(record, dict):
        return "not a JSON object"
    absent = [key for key in KEYS if key not in record]
    if absent:
        return f"lacks {', '.join(absent)}"
    if record["format"] != FORMAT:
        return f"format {record['format']!r}, not {FORMAT}: written by another version of pairmeasures"
    if not isinstance(record["system"], str) or not record["system"]:
        return "system is not a name"
    if not isinstance(record["task"], str) or not _TASK_ID.match(record["task"]):
        return f"task {record['task']!r} is not a task id"
    suite = record["suite"]
    if not isinstance(suite, dict) or not all(isinstance(suite.get(k), str) for k in ("name", "version")):
        return "suite is not {\"name\": ..., \"version\": ...}"
    if record["kind"] not in ("system", "submission"):
        return f"kind {record['kind']!r} is neither 'system' nor 'submission'"
    if record["spec"] is not None and not isinstance(record["spec"], str):
        return "spec is neither a string nor null"
    if not isinstance(record["run_sha256"], str) or not _SHA256.match(record["run_sha256"]):
        return "run_sha256 is not a sha256"
    for key in ("request", "versions"):
        if not isinstance(record[key], dict):
            return f"{key} is not an object"
    if not isinstance(record["created"], str) or not record["created"]:
        return "created is not a time"
    pins = record["pins"]
    if not isinstance(pins, dict) or not isinstance(pins.get("dataset_files"), dict) or \
            not isinstance(pins.get("measures"), list) or not isinstance(pins.get("depth"), int):
        return "pins is not {\"dataset_files\": {...}, \"measures\": [...], \"depth\": N}"
    return None


def _check_values(measures: Any, n: Any, per_query: Any, known: Optional[list]) -> tuple[Optional[str], dict]:
    if not isinstance(measures, dict) or not all(v is None or _number(v) for v in measures.values()):
        return "measures is not an object of numbers", {}
    if not isinstance(n, dict) or set(n) != set(measures) or \
            not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in n.values()):
        return "n does not give a query count for each measure", {}
    if not isinstance(per_query, dict) or not isinstance(per_query.get("query_ids"), list) or \
            not isinstance(per_query.get("values"), dict):
        return "per_query is not {\"query_ids\": [...], \"values\": {...}}", {}
    ids, values = per_query["query_ids"], per_query["values"]
    if ids != known and (set(map(type, ids)) - {str} or len(set(ids)) != len(ids)):
        return "per_query query_ids are not distinct strings", {}
    if set(values) != set(measures):
        return "per_query values do not name the measures of measures", {}
    arrays = {}
    for measure, column in values.items():
        problem, arrays[measure] = _check_column(measure, column, len(ids), measures[measure], n[measure])
        if problem:
            return problem, {}
    return None, arrays


def _check_column(measure: str, column: Any, length: int, mean: Any, count: int) -> tuple[Optional[str], Any]:
    if not isinstance(column, list) or len(column) != length:
        return f"{measure}: {len(column) if isinstance(column, list) else 'no'} per-query values for {length} queries", None
    try:
        array = np.array(column, dtype=np.float64)  # null -> nan
    except (TypeError, ValueError):
        return f"{measure}: a per-query value is not a number", None
    measured = array[~np.isnan(array)]
    if len(measured) != length - column.count(None) or not np.isfinite(measured).all():
        return f"{measure}: a per-query value is not a finite number", None
    if len(measured) != count:
        return f"{measure}: n is {count} but {len(measured)} queries have a value", None
    if count == 0:
        return (None if mean is None else f"{measure}: a mean of {mean} over no query"), array
    if mean is None or abs(float(measured.mean()) - mean) > 1e-9 * max(1.0, abs(mean)):
        return f"{measure}: the mean {mean} is not the mean of its per-query values ({float(measured.mean())!r})", None
    return None, array


#: The significant digits of a stored per-query value: 15 (``DBL_DIG``: a decimal of 15 digits survives a double
#: unchanged; the value moves by at most 5e-15 of itself). Numbers of 16-17 digits, as ``repr`` writes most
#: doubles, take JSON readers twice as long to parse, and reading records is most of a board's build; the means are
#: stored in full.
PER_QUERY_DIGITS = 15


def stored_per_query(per_query: dict) -> dict:
    """``per_query`` as a record stores it: the values with :data:`PER_QUERY_DIGITS` significant digits."""
    digits = f".{PER_QUERY_DIGITS}g"
    return {"query_ids": list(per_query["query_ids"]),
            "values": {m: [None if v is None else float(format(v, digits)) for v in column]
                       for m, column in per_query["values"].items()}}


def dump_record(record: dict) -> str:
    """A record as the JSON text written to disk: one key a line, each per-query list on one line."""
    lines = []
    for key, value in record.items():
        if key == "per_query":
            inner = ",\n".join(f"    {json.dumps(k)}: {json.dumps(v, separators=(',', ':'), allow_nan=False)}"
                               for k, v in value.items())
            text = "{\n" + inner + "\n  }"
        else:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        lines.append(f"  {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def is_results_folder(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` carries the results folder's marker."""
    try:
        marker = json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("format") == MARKER_FORMAT


def same_result(a: dict, b: dict) -> bool:
    """Whether two records (parsed) hold the same result: equal in every key but ``created`` and ``versions``."""
    keep = [k for k in KEYS if k not in ("created", "versions")]
    return all(a.get(k) == b.get(k) for k in keep)


def stored_run_sha256(path: Path) -> Optional[str]:
    """The sha256 of the uncompressed run in ``path``, or None when it is absent or not gzip."""
    try:
        digest = hashlib.sha256()
        with gzip.open(path, "rb") as stream:
            for chunk in iter(lambda: stream.read(1 << 20), b""):
                digest.update(chunk)
        return digest.hexdigest()
    except (OSError, EOFError, zlib.error):
        return None


def _strict_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def read_record_file(path: Path, known_ids: Optional[dict] = None) -> tuple[Optional[dict], dict, str]:
    """``(record, per-query arrays, "")`` for the valid record in ``path``, else ``(None, {}, why not)``: absent,
    unreadable, not UTF-8, truncated or not strict JSON, or what :func:`check_record` finds (``known_ids``: as
    :func:`validate_record` takes it)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, {}, "absent"
    except OSError as error:
        return None, {}, f"cannot be read ({error.strerror})"
    try:
        record = json.loads(raw.decode("utf-8"), parse_constant=_strict_constant)
    except UnicodeDecodeError:
        return None, {}, "not UTF-8 text"
    except ValueError as error:
        return None, {}, f"truncated or not JSON ({error})"
    problem, arrays = validate_record(record, known_ids)
    return (None, {}, problem) if problem else (record, arrays, "")
