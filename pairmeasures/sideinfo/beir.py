"""Strict reading of BEIR-layout files: every problem names the file and the line.

A BEIR-layout folder holds ``corpus.jsonl`` and ``queries.jsonl`` (one JSON object per line, each
with an ``_id``), ``qrels/test.tsv`` (header ``query-id  corpus-id  score``) and optionally
``labels.tsv`` (header ``query-id  corpus-id  group``). Where a plain file is absent, its gzip
copy (``corpus.jsonl.gz``, as the Hugging Face releases ship) is read instead.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Container, Iterator, Optional, Sequence

from . import SideInfoError

__all__ = ["DataFileError", "LABELS_HEADER", "QRELS_HEADER", "existing", "iter_jsonl", "read_records", "iter_tsv",
           "read_pairs"]

QRELS_HEADER = ("query-id", "corpus-id", "score")
LABELS_HEADER = ("query-id", "corpus-id", "group")


class DataFileError(SideInfoError):
    """A data file is malformed. ``path`` and ``line`` (1-based, ``None`` for the whole file) say where."""

    def __init__(self, path: str | os.PathLike, line: Optional[int], problem: str):
        self.path, self.line, self.problem = Path(path), line, problem
        super().__init__(f"{self.path}:{line}: {problem}" if line else f"{self.path}: {problem}")


def existing(folder: str | os.PathLike, name: str) -> Path:
    """``folder/name``, else ``folder/name.gz``; FileNotFoundError naming both when neither exists."""
    path = Path(folder) / name
    for candidate in (path, path.with_name(path.name + ".gz")):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{path} (or {path.name}.gz) does not exist")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Numbered lines without their line break; decoding and decompression errors name the line."""
    import gzip
    import zlib

    compressed = path.suffix == ".gz"
    number = 0
    with (gzip.open(path, "rb") if compressed else path.open("rb")) as raw:
        try:
            for number, data in enumerate(raw, start=1):
                try:
                    line = data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DataFileError(path, number, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
                yield number, line.rstrip("\n").rstrip("\r")
        except (EOFError, OSError, zlib.error) as exc:
            if not compressed:
                raise
            raise DataFileError(path, number + 1, f"compressed data is corrupt or cut short ({exc})") from exc


def iter_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for each non-blank line of a JSON Lines file."""
    path = Path(path)
    for number, line in _lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFileError(path, number, f"not a JSON object ({exc.msg} at column {exc.colno}); "
                                              "the file may be truncated or damaged") from exc
        if not isinstance(record, dict):
            raise DataFileError(path, number, f"expected a JSON object, got {type(record).__name__}")
        yield number, record


def read_records(path: str | os.PathLike, required: Sequence[str] = ("_id", "text"),
                 check: Optional[Callable[[str, dict], Optional[str]]] = None) -> dict[str, dict]:
    """The records of a JSON Lines file by ``_id`` (as text), in file order.

    Raises :class:`DataFileError` for a line that is not a JSON object, lacks a ``required``
    field, has an empty id, repeats an id (naming the line that had it first), or fails ``check``
    (called with the id and the record, it returns a problem or None).
    """
    records: dict[str, dict] = {}
    first_line: dict[str, int] = {}
    for number, record in iter_jsonl(path):
        absent = [name for name in required if name not in record]
        if absent:
            raise DataFileError(path, number, f"record has no {', '.join(repr(a) for a in absent)} field")
        record_id = str(record["_id"])
        if not record_id:
            raise DataFileError(path, number, "record has an empty '_id'")
        if record_id in first_line:
            raise DataFileError(path, number, f"id {record_id!r} already appears on line {first_line[record_id]}")
        problem = check(record_id, record) if check is not None else None
        if problem:
            raise DataFileError(path, number, problem)
        first_line[record_id] = number
        records[record_id] = record
    return records


def iter_tsv(path: str | os.PathLike, header: Sequence[str]) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` for each row of a tab-separated file whose first line is ``header``."""
    path = Path(path)
    lines = _lines(path)
    first = next(lines, None)
    expected = "\t".join(header)
    if first is None or first[1] != expected:
        found = "an empty file" if first is None else repr(first[1])
        raise DataFileError(path, 1, f"expected the header {expected!r} (tab-separated), found {found}")
    for number, line in lines:
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            raise DataFileError(path, number, f"expected {len(header)} tab-separated fields "
                                              f"({', '.join(header)}), found {len(fields)}")
        yield number, fields


def read_pairs(path: str | os.PathLike, header: Sequence[str], queries: Optional[Container[str]] = None,
               documents: Optional[Container[str]] = None) -> list[tuple[int, str, str, str]]:
    """Rows ``(line, query id, document id, value)`` of a three-column TSV keyed by (query, document).

    Raises :class:`DataFileError` for a query id not in ``queries`` or a document id not in
    ``documents`` (when given), an empty id, and a pair listed twice.
    """
    rows = []
    first_line: dict[tuple[str, str], int] = {}
    for number, (query_id, doc_id, value) in iter_tsv(path, header):
        if not query_id or not doc_id:
            raise DataFileError(path, number, "empty query or document id")
        if queries is not None and query_id not in queries:
            raise DataFileError(path, number, f"query {query_id!r} is not among the queries")
        if documents is not None and doc_id not in documents:
            raise DataFileError(path, number, f"document {doc_id!r} is not in the corpus")
        if (query_id, doc_id) in first_line:
            raise DataFileError(path, number, f"query {query_id!r} and document {doc_id!r} are already paired "
                                              f"on line {first_line[query_id, doc_id]}")
        first_line[query_id, doc_id] = number
        rows.append((number, query_id, doc_id, value))
    return rows
