"""Strict reading of BEIR-layout files: every problem names the file and the line.

A BEIR-layout folder holds ``corpus.jsonl`` and ``queries.jsonl`` (one JSON object per line, each
with an ``_id``), ``qrels/test.tsv`` (header ``query-id  corpus-id  score``) and optionally
``labels.tsv`` (header ``query-id  corpus-id  group``). Where a plain file is absent, its gzip
copy (``corpus.jsonl.gz``, as the Hugging Face releases ship) is read instead.

:func:`read_beir` reads such a folder into a :class:`BeirFolder`, every document in memory (for
``validate-polarity`` and training sets); :class:`~pairmeasures.io.beirfolder.StoredFolder` reads it
with the same checks but serves the documents from an on-disk store (the ``beir:``, ``corpus:`` and ``pca:``
resources, polarity fit sets and ``open_corpus``); the registered datasets use the same line readers.
Side files with any header (``tsv:`` resources) are read by :func:`read_table`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Container, Iterator, Mapping, Optional, Sequence

from .errors import SideInfoError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DataFileError", "numbered_lines", "json_record", "LABELS_HEADER", "QRELS_HEADER", "TEXT_FIELDS", "BeirFolder", "check_text_field",
           "existing", "iter_jsonl", "record_text", "read_records", "iter_tsv", "read_table", "read_pairs", "read_qrels", "read_labels",
           "read_beir", "fit_pairs", "fit_frame"]

QRELS_HEADER = ("query-id", "corpus-id", "score")
LABELS_HEADER = ("query-id", "corpus-id", "group")

#: Which document field(s) of a BEIR corpus to embed or count terms in.
TEXT_FIELDS = ("text", "title", "title+text")


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


def numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Numbered lines without their line break; decoding and decompression errors name the line. A UTF-8 byte
    order mark (as Windows editors write) is not part of the first line."""
    import gzip
    import zlib

    compressed = path.suffix == ".gz"
    number = 0
    with (gzip.open(path, "rb") if compressed else path.open("rb")) as raw:
        try:
            for number, data in enumerate(raw, start=1):
                try:
                    line = data.decode("utf-8-sig" if number == 1 else "utf-8")
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
    for number, line in numbered_lines(path):
        if line.strip():
            yield number, json_record(path, number, line)


def json_record(path: Path, number: int, line: str) -> dict:
    """The JSON object on line ``number`` of ``path``, or a :class:`DataFileError` naming the line."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataFileError(path, number, f"not a JSON object ({exc.msg} at column {exc.colno}); "
                                          "the file may be truncated or damaged") from exc
    if not isinstance(record, dict):
        raise DataFileError(path, number, f"expected a JSON object, got {type(record).__name__}")
    return record


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
    lines = numbered_lines(path)
    first = next(lines, None)
    expected = "\t".join(header)
    if first is None or first[1] != expected:
        found = "an empty file" if first is None else repr(first[1])
        raise DataFileError(path, 1, f"expected the header {expected!r} (tab-separated), found {found}")
    return _rows(path, lines, header)


def _rows(path: Path, lines: Iterator[tuple[int, str]], header: Sequence[str]) -> Iterator[tuple[int, list[str]]]:
    """The non-blank lines after the header, split at tabs; each must have one field per header column."""
    for number, line in lines:
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            raise DataFileError(path, number, f"expected {len(header)} tab-separated fields "
                                              f"({', '.join(header)}), found {len(fields)}")
        yield number, fields


def read_table(path: str | os.PathLike) -> tuple[list[str], list[int], dict[str, list[str]]]:
    """The column names, the line numbers of the rows, and the cells of each column, of a tab-separated
    file whose first line names its columns (blank lines are skipped).

    Raises :class:`DataFileError` for a missing header, an empty or repeated column name, and a row
    whose number of fields differs from the header's.
    """
    path = Path(path)
    lines = numbered_lines(path)
    first = next(lines, None)
    if first is None or not first[1].strip():
        raise DataFileError(path, 1, "expected a header line of tab-separated column names, found "
                                     + ("an empty file" if first is None else "an empty line"))
    header = first[1].split("\t")
    for position, name in enumerate(header):
        if not name.strip():
            raise DataFileError(path, 1, f"column {position + 1} of the header has no name")
        if name in header[:position]:
            raise DataFileError(path, 1, f"the header names column {name!r} twice")
    numbers, texts = [], []
    for number, line in lines:
        if line:
            numbers.append(number)
            texts.append(line)
    tabs = len(header) - 1
    wrong = next((row for row, line in enumerate(texts) if line.count("\t") != tabs), None)
    if wrong is not None:
        found = texts[wrong].count("\t") + 1
        raise DataFileError(path, numbers[wrong], f"expected {len(header)} tab-separated fields ({', '.join(header)}), "
                                                  f"found {found}")
    cells = "\t".join(texts).split("\t") if texts else []
    return header, numbers, {name: cells[position::len(header)] for position, name in enumerate(header)}


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


def read_qrels(path: str | os.PathLike, queries: Optional[Container[str]] = None,
               documents: Optional[Container[str]] = None) -> list[tuple[int, str, str, int]]:
    """Rows ``(line, query id, document id, score)`` of a ``qrels`` TSV (:data:`QRELS_HEADER`) with
    integer scores; the checks of :func:`read_pairs` apply."""
    rows = []
    for number, query_id, doc_id, score in read_pairs(path, QRELS_HEADER, queries, documents):
        if not re.fullmatch(r"-?\d+", score):
            raise DataFileError(path, number, f"score {score!r} is not an integer")
        rows.append((number, query_id, doc_id, int(score)))
    if not rows:
        raise DataFileError(path, None, "has a header but no judgements: write one line per judged document "
                                        f"({', '.join(QRELS_HEADER)}, tab-separated)")
    return rows


def read_labels(path: str | os.PathLike, queries: Optional[Container[str]] = None,
                documents: Optional[Container[str]] = None) -> list[tuple[int, str, str, str]]:
    """Rows ``(line, query id, document id, group)`` of a ``labels.tsv`` (:data:`LABELS_HEADER`) with
    non-empty groups; the checks of :func:`read_pairs` apply."""
    rows = read_pairs(path, LABELS_HEADER, queries, documents)
    if not rows:
        raise DataFileError(path, None, "has a header but no labels: write one line per labelled document "
                                        f"({', '.join(LABELS_HEADER)}, tab-separated), or remove the file")
    empty = next((number for number, _, _, group in rows if not group.strip()), None)
    if empty is not None:
        raise DataFileError(path, empty, "empty group")
    return rows


def check_text_field(text: str) -> str:
    """``text`` if it names document fields (:data:`TEXT_FIELDS`), else a ValueError."""
    if text not in TEXT_FIELDS:
        raise ValueError(f"text must be one of {TEXT_FIELDS}, got {text!r}")
    return text


def record_text(record: Mapping, text: str = "text") -> str:
    """The ``text`` field(s) of a document record with a ``text`` and maybe a ``title`` (one of
    :data:`TEXT_FIELDS`); an empty title falls back to the text."""
    if text == "title":
        return record.get("title") or record["text"]
    if text == "title+text":
        return f"{record['title']} {record['text']}".strip() if record.get("title") else record["text"]
    return record["text"]


@dataclass
class BeirFolder:
    """A BEIR-layout folder read into memory: corpus, queries, qrels and (optional) gold labels.

    ``qrels`` has the columns ``query_id``, ``doc_id``, ``relevance``; ``labels`` the columns
    ``query_id``, ``doc_id``, ``group``. Every judged or labelled document is in ``corpus``.
    """

    path: Path
    corpus: dict
    queries: dict
    qrels: "pd.DataFrame"
    labels: Optional["pd.DataFrame"]

    def document_text(self, doc_id: str, text: str = "text") -> str:
        """The ``text`` field(s) of a document (one of :data:`TEXT_FIELDS`); an empty title falls back to the text."""
        return record_text(self.corpus[doc_id], text)

    def fit_frame(self, text: str = "text") -> "pd.DataFrame":
        """One row per (query, fit document): ``qid``, ``docno``, ``text``, and ``label`` (the gold
        group) when the folder has labels; without labels, the judged relevant documents."""
        check_text_field(text)
        pairs = fit_pairs(self.qrels, self.labels)
        return fit_frame(pairs, [self.document_text(d, text) for d in pairs["doc_id"]], self.labels is not None)


def fit_pairs(qrels: "pd.DataFrame", labels: Optional["pd.DataFrame"]) -> "pd.DataFrame":
    """The (query, fit document) pairs of a BEIR-layout folder: its labels (``query_id``, ``doc_id``, ``group``),
    else its judged relevant documents (``group`` None)."""
    if labels is not None:
        return labels
    return qrels[qrels["relevance"] > 0].assign(group=None)


def fit_frame(pairs: "pd.DataFrame", texts: list, labelled: bool) -> "pd.DataFrame":
    """The fit frame of :func:`fit_pairs`' ``pairs`` with each document's text (``qid``, ``docno``, ``text``, and
    ``label`` when ``labelled``)."""
    import pandas as pd

    frame = pd.DataFrame({"qid": pairs["query_id"].to_numpy(), "docno": pairs["doc_id"].to_numpy(),
                          "text": texts, "label": pairs["group"].to_numpy()})
    return frame if labelled else frame.drop(columns="label")


def _text_fields(required: Sequence[str], optional: Sequence[str] = ()) -> Callable[[str, dict], Optional[str]]:
    """A record check: the fields ``required`` hold text, and so do the fields ``optional`` where set."""
    def check(record_id: str, record: dict) -> Optional[str]:
        wrong = [n for n in required if not isinstance(record[n], str)]
        wrong += [n for n in optional if record.get(n) is not None and not isinstance(record[n], str)]
        return f"record {record_id!r}: {', '.join(wrong)} must be text" if wrong else None
    return check


def _required(folder: Path, name: str) -> Path:
    try:
        return existing(folder, name)
    except FileNotFoundError:
        raise FileNotFoundError(f"{str(folder)!r} is not a BEIR-layout folder: it has no {name} (nor {name}.gz)") from None


def read_beir(folder: str | os.PathLike) -> BeirFolder:
    """Read ``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv`` and ``labels.tsv`` (if present), each
    possibly gzipped, with every problem named by file and line (:class:`DataFileError`).

    Qrels and labels must name queries of ``queries.jsonl`` and documents of ``corpus.jsonl``.
    """
    import pandas as pd

    path = Path(folder).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"{str(path)!r} does not exist or is not a folder; a BEIR-layout folder holds corpus.jsonl, "
                                "queries.jsonl and qrels/test.tsv")
    corpus_path, queries_path, qrels_path = (_required(path, name)
                                             for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"))
    corpus = read_records(corpus_path, ("_id", "text"), _text_fields(("text",), ("title",)))
    queries = read_records(queries_path, ("_id", "text"), _text_fields(("text",)))
    columns = ["line", "query_id", "doc_id"]
    qrels = pd.DataFrame(read_qrels(qrels_path, queries, corpus), columns=[*columns, "relevance"])
    qrels = qrels.drop(columns="line").astype({"relevance": "int64"})
    labels = None
    try:
        labels_path = existing(path, "labels.tsv")
    except FileNotFoundError:
        pass
    else:
        labels = pd.DataFrame(read_labels(labels_path, queries, corpus), columns=[*columns, "group"]).drop(columns="line")
    return BeirFolder(path=path, corpus=corpus, queries=queries, qrels=qrels, labels=labels)
