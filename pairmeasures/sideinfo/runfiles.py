"""Qrels and run files as a user names them on the command line, read strictly (a problem names the file and
line): TREC qrels or BEIR qrels TSV; TREC runs or tab-separated runs whose header names the columns (side
columns such as ``polarity`` and ``group`` included). Either may be gzipped."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import numpy as np

from .beir import QRELS_HEADER, DataFileError, numbered_lines, read_qrels, read_table

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["read_qrels_file", "read_run_file", "read_query_ids"]

_QUERY_KEYS = ("query_id", "qid", "query-id")
_DOC_KEYS = ("doc_id", "docno", "corpus-id")


def _existing(path: str, role: str) -> Path:
    file = Path(path).expanduser()
    if not file.is_file():
        raise FileNotFoundError(f"{role} file {path!r} does not exist" if not file.exists()
                                else f"{role} {path!r} is not a file")
    return file


def _header(path: Path) -> list[str]:
    first = next((line for _, line in numbered_lines(path) if line.strip()), "")
    return first.split("\t")


def read_qrels_file(path: str) -> pd.DataFrame:
    """Qrels as ``query_id, doc_id, relevance``: a TREC qrels file or a BEIR qrels TSV."""
    import pandas as pd

    file = _existing(path, "QRELS")
    if _header(file) == list(QRELS_HEADER):
        rows = [row[1:] for row in read_qrels(file)]
    else:
        rows = []
        for number, fields in _trec_lines(file, "qrels", "query iteration doc relevance"):
            try:
                relevance = int(fields[3])
            except ValueError:
                raise DataFileError(file, number, f"relevance {fields[3]!r} is not an integer") from None
            rows.append((fields[0], fields[2], relevance))
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])


def read_run_file(path: str) -> pd.DataFrame:
    """A run as ``query_id, doc_id, score`` and any side columns: a TREC run file, or a TSV with a header."""
    file = _existing(path, "RUN")
    header = _header(file)
    if any(k in header for k in _QUERY_KEYS) and any(k in header for k in _DOC_KEYS):
        return _read_run_table(file)
    import pandas as pd

    rows = []
    hint = "; a file with side columns needs a header line naming query_id, doc_id and score (tab-separated)"
    for number, fields in _trec_lines(file, "run", "query Q0 doc rank score tag", hint):
        rows.append((fields[0], fields[2], _score(file, number, fields[4])))
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def _trec_lines(file: Path, kind: str, layout: str, hint: str = "") -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of each non-blank line of a whitespace-separated TREC ``kind`` file whose lines
    have the fields ``layout`` names; another number of fields is an error naming the line."""
    expected = len(layout.split())
    for number, line in numbered_lines(file):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != expected:
            raise DataFileError(file, number, f"expected {expected} fields of a TREC {kind} line ({layout}), found "
                                              f"{len(fields)}{hint}")
        yield number, fields


def _score(file: Path, number: int, text: str) -> float:
    try:
        score = float(text)
    except ValueError:
        score = math.nan
    if not math.isfinite(score):
        raise DataFileError(file, number, f"score {text!r} is not a finite number")
    return score


def _read_run_table(file: Path) -> pd.DataFrame:
    import pandas as pd

    header, numbers, columns = read_table(file)
    query_key = next(k for k in _QUERY_KEYS if k in header)
    doc_key = next(k for k in _DOC_KEYS if k in header)
    if "score" not in header:
        raise DataFileError(file, 1, f"a run needs a 'score' column; found {header}")
    frame = pd.DataFrame({"query_id": columns[query_key], "doc_id": columns[doc_key]})
    frame["score"] = [_score(file, number, text) for number, text in zip(numbers, columns["score"])]
    for name in header:
        if name in (query_key, doc_key, "score"):
            continue
        values = pd.to_numeric(pd.Series(columns[name]), errors="coerce").to_numpy()
        # a column of finite numbers is scores (polarity); anything else stays text (group labels, text)
        frame[name] = values if np.isfinite(values).all() else np.asarray(columns[name], dtype=object)
    return frame


def read_query_ids(path: str | os.PathLike) -> set[str]:
    """Query ids, one per line (blank lines and ``#`` comments ignored): e.g. the held-out split of a training run."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise FileNotFoundError(f"query id file {str(file)!r} does not exist: give a file of query ids, one a line")
    lines = (line.split("#", 1)[0].strip() for line in file.read_text(encoding="utf-8").splitlines())
    return {line for line in lines if line}
