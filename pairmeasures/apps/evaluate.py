"""``pairmeasures eval``: the ``ir_measures`` command line with the pairmeasures measures and resources.

Reads qrels and a run strictly (a problem names the file and line), parses measure strings with
``ir_measures.parse_measure`` (relevance measures work too) and evaluates through
``ir_measures.calc_aggregate`` / ``iter_calc``.
"""

from __future__ import annotations

import difflib
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..measures import PairMeasure
from ..sideinfo.beir import QRELS_HEADER, DataFileError, _lines, read_qrels, read_table

if TYPE_CHECKING:
    import pandas as pd

_QUERY_KEYS = ("query_id", "qid", "query-id")
_DOC_KEYS = ("doc_id", "docno", "corpus-id")

#: What ``--help`` says about the files.
FILES_HELP = (
    "QRELS is a TREC qrels file (query iteration doc relevance) or a BEIR qrels .tsv (header "
    "query-id, corpus-id, score). RUN is a TREC run file (query Q0 doc rank score tag), or a "
    "tab-separated file whose header names query_id (or qid), doc_id (or docno) and score, and side "
    "columns the measures read (polarity, group, text). Either may be gzipped (.gz).")


def parse_measures(texts: list[str]) -> list:
    """Measures from measure strings, without repeats, in the order given; resources named in them are
    checked now. A ValueError names the first string that does not parse."""
    import ir_measures

    measures: list = []
    for text in texts:
        try:
            measure = ir_measures.parse_measure(text)
        except NameError:
            base = text.split("(")[0].split("@")[0].strip()
            close = difflib.get_close_matches(base, list(ir_measures.measures.registry), n=3, cutoff=0.5)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise ValueError(f"measure {text!r}: no measure named {base!r}{hint} ('pairmeasures measures' lists "
                             "the bias measures)") from None
        except ValueError as exc:
            raise ValueError(f"measure {text!r}: {exc}") from None
        if isinstance(measure, PairMeasure):
            measure.check_resources()
        if measure not in measures:
            measures.append(measure)
    return measures


def _existing(path: str, role: str) -> Path:
    file = Path(path).expanduser()
    if not file.is_file():
        raise FileNotFoundError(f"{role} file {path!r} does not exist" if not file.exists()
                                else f"{role} {path!r} is not a file")
    return file


def _header(path: Path) -> list[str]:
    first = next((line for _, line in _lines(path) if line.strip()), "")
    return first.split("\t")


def read_qrels_file(path: str) -> pd.DataFrame:
    """Qrels as ``query_id, doc_id, relevance``: a TREC qrels file or a BEIR qrels TSV."""
    import pandas as pd

    file = _existing(path, "QRELS")
    if _header(file) == list(QRELS_HEADER):
        rows = [row[1:] for row in read_qrels(file)]
    else:
        rows = []
        for number, line in _lines(file):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 4:
                raise DataFileError(file, number, f"expected 4 fields of a TREC qrels line (query iteration doc "
                                                  f"relevance), found {len(fields)}")
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
    for number, line in _lines(file):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 6:
            raise DataFileError(file, number, f"expected 6 fields of a TREC run line (query Q0 doc rank score tag), "
                                              f"found {len(fields)}; a file with side columns needs a header line "
                                              f"naming query_id, doc_id and score (tab-separated)")
        rows.append((fields[0], fields[2], _score(file, number, fields[4])))
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


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


def evaluate(qrels: pd.DataFrame, run: pd.DataFrame, measures: list, per_query: bool) -> pd.DataFrame:
    """Aggregates (``measure, value``, in the order given) or, with ``per_query``, one row per query and
    measure followed by the aggregates under query ``all``, as ``ir_measures -q`` prints them."""
    import ir_measures
    import pandas as pd

    if not per_query:
        results = ir_measures.calc_aggregate(measures, qrels, run)
        return pd.DataFrame({"measure": [str(m) for m in measures], "value": [results[m] for m in measures]})
    order = {m: i for i, m in enumerate(measures)}
    aggregators = {m: m.aggregator() for m in measures}
    rows = []
    for metric in ir_measures.iter_calc(measures, qrels, run):
        aggregators[metric.measure].add(metric.value)
        rows.append((metric.query_id, order[metric.measure], str(metric.measure), metric.value))
    rows.sort(key=lambda row: (row[0], row[1]))
    rows += [("all", order[m], str(m), aggregators[m].result()) for m in measures]
    return pd.DataFrame([(q, m, v) for q, _, m, v in rows], columns=["query_id", "measure", "value"])


def tsv(table: pd.DataFrame, digits: int = 4) -> str:
    """Tab-separated lines without a header, as the ``ir_measures`` command prints."""
    cells = [[f"{v:.{digits}f}" if isinstance(v, float) else str(v) for v in row] for row in table.itertuples(index=False)]
    return "".join("\t".join(row) + "\n" for row in cells)
