"""Qrels and run files as a user names them on the command line, read strictly (a problem names the file and
line): TREC qrels or BEIR qrels TSV; TREC runs or tab-separated runs whose header names the columns (side
columns such as ``polarity`` and ``group`` included). Either may be gzipped."""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

import numpy as np

from . import InputWarning
from .beir import QRELS_HEADER, DataFileError, numbered_lines, read_qrels, read_table

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["read_qrels_file", "read_run_file", "read_query_ids", "check_shared_queries", "examples"]

_QUERY_KEYS = ("query_id", "qid", "query-id")
_DOC_KEYS = ("doc_id", "docno", "corpus-id")


def _existing(path: str, role: str) -> Path:
    file = Path(path).expanduser()
    if not file.is_file():
        raise FileNotFoundError(f"{role} file {path!r} does not exist" if not file.exists() else
                                f"{role} {path!r} is a folder, not a file: name the {role.lower()} file inside it"
                                if file.is_dir() else f"{role} {path!r} is not a file")
    return file


def examples(ids: Iterable[str], count: int = 3) -> str:
    """A few ids of a set, quoted and in order, for a message: ``'q1', 'q2', 'q3'``."""
    return ", ".join(repr(i) for i in sorted(ids)[:count])


def _header(path: Path) -> list[str]:
    first = next((line for _, line in numbered_lines(path) if line.strip()), "")
    return first.split("\t")


def read_qrels_file(path: str) -> pd.DataFrame:
    """Qrels as ``query_id, doc_id, relevance``: a TREC qrels file or a BEIR qrels TSV."""
    import pandas as pd

    file = _existing(path, "QRELS")
    if _header(file) == list(QRELS_HEADER):
        rows = [row[1:] for row in read_qrels(file)]  # a pair judged twice is an error there, naming both lines
    else:
        rows = []
        first: dict[tuple[str, str], tuple[int, int]] = {}  # (query, document) -> (line, relevance)
        repeated: list[tuple[tuple[str, str], int]] = []  # the same judgement again: (pair, line)
        for number, fields in _trec_lines(file, "qrels", "query iteration doc relevance"):
            try:
                relevance = int(fields[3])
            except ValueError:
                raise DataFileError(file, number, f"relevance {fields[3]!r} is not an integer") from None
            pair = (fields[0], fields[2])
            if pair in first:
                line, earlier = first[pair]
                if earlier != relevance:
                    raise DataFileError(file, number, f"query {pair[0]!r} and document {pair[1]!r} are judged "
                                                      f"{relevance} here and {earlier} on line {line}: keep one "
                                                      "judgement per query and document")
                repeated.append((pair, number))
                continue
            first[pair] = (number, relevance)
            rows.append((fields[0], fields[2], relevance))
        if repeated:
            (query_id, doc_id), line = repeated[0]
            warnings.warn(f"QRELS file {path!r} judges {len(repeated)} (query, document) pair(s) again with the same "
                          f"relevance (e.g. query {query_id!r}, document {doc_id!r} on lines {first[query_id, doc_id][0]} "
                          f"and {line}); each counts once", InputWarning, stacklevel=2)
    if not rows:
        raise DataFileError(file, None, "holds no judgements: a qrels file has one line per judged document "
                                        "(query iteration doc relevance, or a BEIR qrels .tsv)")
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])


def read_run_file(path: str) -> pd.DataFrame:
    """A run as ``query_id, doc_id, score`` and any side columns: a TREC run file (with its rank field as ``rank``
    when every line has a number there: the order the system showed, which ``ties='system'`` reads), or a TSV with
    a header."""
    file = _existing(path, "RUN")
    header = _header(file)
    if any(k in header for k in _QUERY_KEYS) and any(k in header for k in _DOC_KEYS):
        return _read_run_table(file)
    import pandas as pd

    rows, ranks = [], []
    hint = "; a file with side columns needs a header line naming query_id, doc_id and score (tab-separated)"
    for number, fields in _trec_lines(file, "run", "query Q0 doc rank score tag", hint):
        rows.append((fields[0], fields[2], _score(file, number, fields[4])))
        ranks.append(fields[3])
    if not rows:
        raise DataFileError(file, None, _NO_RESULTS)
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    rank = pd.to_numeric(pd.Series(ranks), errors="coerce")
    if rank.notna().all():  # the rank field, where every line has a number there (trec_eval itself ignores it)
        frame["rank"] = rank.to_numpy()
    return frame


_NO_RESULTS = ("holds no results: a run file has one line per ranked document (query Q0 doc rank score tag, or a "
               "tab-separated file with a header naming query_id, doc_id and score)")


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
    if not numbers:
        raise DataFileError(file, None, _NO_RESULTS)
    for name in header:
        empty = np.flatnonzero(np.asarray(columns[name], dtype=object) == "")
        if empty.size:
            raise DataFileError(file, numbers[empty[0]], f"empty {name!r} cell ({empty.size} in that column): give "
                                                         "every ranked document a value in every column (to leave some "
                                                         "without one, drop the column and name a tsv: resource that "
                                                         "lists the others)")
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
    lines = (line.split("#", 1)[0].strip() for _, line in numbered_lines(file))
    return {line for line in lines if line}


def check_shared_queries(qrels: pd.DataFrame, run: pd.DataFrame, qrels_name: str, run_name: str) -> None:
    """A run and qrels (``query_id`` columns) that share no query id are a ValueError naming both and example ids
    (every measure would score 0); where they share only some, an :class:`InputWarning` per side says how many
    queries the run lacks (they count as empty rankings) and how many it has that are not judged (left out)."""
    judged, ranked = set(qrels["query_id"].astype(str)), set(run["query_id"].astype(str))
    if not judged & ranked:
        raise ValueError(f"{run_name} and {qrels_name} share no query id (the run's: {examples(ranked)}; the qrels': "
                         f"{examples(judged)}), so every measure would score 0: evaluate a run of the judged queries "
                         "(ids are compared as text)")
    lacking, unjudged = judged - ranked, ranked - judged
    if lacking:
        warnings.warn(f"{run_name} has no results for {len(lacking)} of the {len(judged)} queries judged in "
                      f"{qrels_name} (e.g. {examples(lacking)}); they count as empty rankings (0 for relevance "
                      "measures)", InputWarning, stacklevel=2)
    if unjudged:
        warnings.warn(f"{len(unjudged)} of the {len(ranked)} queries of {run_name} are not judged in {qrels_name} "
                      f"(e.g. {examples(unjudged)}); they are left out", InputWarning, stacklevel=2)
