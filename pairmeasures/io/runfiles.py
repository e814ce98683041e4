"""Qrels and run files as a user names them on the command line, read strictly (a problem names the file and
line): TREC qrels or BEIR qrels TSV; TREC runs or tab-separated runs whose header names the columns (side
columns such as ``polarity`` and ``group`` included). Either may be gzipped.

TREC files are read in blocks of whole lines, split into columns at once; a block with anything unusual in it (a
line with another number of fields, a byte that is not UTF-8, a score that is not a number, a judgement given
twice) is read again line by line, which names the line. :class:`Qrels` and :class:`Run` hold the columns and give
them in the two shapes evaluators take: nested dicts (``{query: {document: value}}``, what pytrec_eval reads) and
a pandas DataFrame (what the pairmeasures provider reads, side columns included), each built when first asked for.
"""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Optional, Sequence

import numpy as np

from .beir import QRELS_HEADER, DataFileError, numbered_lines, read_qrels, read_table
from .errors import InputWarning
from .repeats import check_ranked_once, query_starts, repeated_pair

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Qrels", "Run", "read_qrels_file", "read_run_file", "load_qrels_file", "load_run_file", "read_query_ids",
           "check_shared_queries", "examples", "nest"]

_QUERY_KEYS = ("query_id", "qid", "query-id")
_DOC_KEYS = ("doc_id", "docno", "corpus-id")
#: Bytes read at once by the block reader (then completed to a whole line).
_BLOCK = 1 << 20


def nest(query_ids: Sequence[str], doc_ids: Sequence[str], values: Sequence) -> dict[str, dict[str, object]]:
    """``{query: {document: value}}`` of three parallel columns, as ``ir_measures`` builds it from a run (a document
    listed twice for a query keeps its last value: the readers refuse such a run first); rows of one query need not
    be adjacent."""
    query_ids, doc_ids, values = list(query_ids), list(doc_ids), list(values)
    bounds = query_starts(query_ids)
    if bounds is not None:
        return {query_ids[start]: dict(zip(doc_ids[start:end], values[start:end])) for start, end in
                zip(bounds[:-1], bounds[1:])}
    result: dict[str, dict[str, object]] = {}
    for query, doc, value in zip(query_ids, doc_ids, values):
        result.setdefault(query, {})[doc] = value
    return result


class Qrels:
    """Judgements as three parallel columns (query, document, relevance), each (query, document) once."""

    def __init__(self, query_ids: list[str], doc_ids: list[str], relevance: list[int]):
        self.query_ids, self.doc_ids, self.relevance = query_ids, doc_ids, relevance
        self._nested: Optional[dict] = None

    def __len__(self) -> int:
        return len(self.query_ids)

    def nested(self) -> dict:
        """``{query: {document: relevance}}``."""
        if self._nested is None:
            self._nested = nest(self.query_ids, self.doc_ids, self.relevance)
        return self._nested

    def queries(self) -> set[str]:
        """The judged query ids."""
        return set(self.nested())

    def frame(self) -> pd.DataFrame:
        """``query_id, doc_id, relevance``."""
        import pandas as pd

        return pd.DataFrame({"query_id": self.query_ids, "doc_id": self.doc_ids,
                             "relevance": np.asarray(self.relevance, dtype=np.int64)})


class Run:
    """A run: query, document and score columns, with the TREC rank field's numbers (``ranks``) or every column of a
    tab-separated run (``table``, a DataFrame); or, read for the nested dicts alone (:func:`load_run_file` with
    ``columns=False``), those dicts only."""

    def __init__(self, query_ids: list[str], doc_ids: list[str], scores: list[float],
                 ranks: Optional[Sequence[float]] = None, table: Optional[pd.DataFrame] = None,
                 nested: Optional[dict] = None):
        self.query_ids, self.doc_ids, self.scores, self.ranks, self.table = query_ids, doc_ids, scores, ranks, table
        self._nested = nested

    @classmethod
    def from_nested(cls, nested: dict) -> Run:
        """A run of nested dicts alone (its columns are made from them when asked for)."""
        return cls([], [], [], nested=nested)

    def __len__(self) -> int:
        return len(self.query_ids) or sum(map(len, (self._nested or {}).values()))

    def nested(self) -> dict:
        """``{query: {document: score}}``."""
        if self._nested is None:
            self._nested = nest(self.query_ids, self.doc_ids, self.scores)
        return self._nested

    def queries(self) -> set[str]:
        """The query ids the run ranks documents for."""
        return set(self.nested())

    def frame(self) -> pd.DataFrame:
        """``query_id, doc_id, score`` and the side columns; for a TREC run, its rank field as ``rank`` (the order
        the system showed, which ``ties='system'`` reads). A run read for its nested dicts alone gives the three
        columns."""
        if self.table is not None:
            return self.table
        import pandas as pd

        if not self.query_ids and self._nested:
            self.query_ids = [q for q, docs in self._nested.items() for _ in range(len(docs))]
            self.doc_ids = [d for docs in self._nested.values() for d in docs]
            self.scores = [s for docs in self._nested.values() for s in docs.values()]
        frame = pd.DataFrame({"query_id": self.query_ids, "doc_id": self.doc_ids,
                              "score": np.asarray(self.scores, dtype=np.float64)})
        if self.ranks is not None:
            rank = np.asarray(self.ranks, dtype=np.float64)
            frame["rank"] = rank.astype(np.int64) if (rank == np.round(rank)).all() else rank
        return frame


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
    return load_qrels_file(path).frame()


def load_qrels_file(path: str) -> Qrels:
    """A TREC qrels file or a BEIR qrels TSV as :class:`Qrels`. A (query, document) pair judged twice alike warns
    (:class:`InputWarning`) and counts once; judged twice differently, it is an error naming both lines."""
    file = _existing(path, "QRELS")
    if _header(file) == list(QRELS_HEADER):
        rows = read_qrels(file)  # a pair judged twice, or none, is an error there
        return Qrels([row[1] for row in rows], [row[2] for row in rows], [row[3] for row in rows])
    query_ids: list[str] = []
    doc_ids: list[str] = []
    relevance: list[int] = []
    try:
        for tokens in _token_blocks(file, 4):
            query_ids += tokens[0::4]
            doc_ids += tokens[2::4]
            relevance += map(int, tokens[3::4])
    except (_Unusual, ValueError):
        query_ids = []
    if query_ids:
        qrels = Qrels(query_ids, doc_ids, relevance)
        if sum(map(len, qrels.nested().values())) == len(qrels):  # no pair judged twice
            return qrels
    return _read_trec_qrels(file, path)  # names the line of a problem; warns about pairs judged twice alike


_NO_JUDGEMENTS = ("holds no judgements: a qrels file has one line per judged document (query iteration doc relevance, "
                  "or a BEIR qrels .tsv)")


def _read_trec_qrels(file: Path, path: str) -> Qrels:
    """TREC qrels line by line, naming the line of a problem."""
    query_ids, doc_ids, relevances = [], [], []
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
        query_ids.append(fields[0])
        doc_ids.append(fields[2])
        relevances.append(relevance)
    if repeated:
        (query_id, doc_id), line = repeated[0]
        warnings.warn(f"QRELS file {path!r} judges {len(repeated)} (query, document) pair(s) again with the same "
                      f"relevance (e.g. query {query_id!r}, document {doc_id!r} on lines {first[query_id, doc_id][0]} "
                      f"and {line}); each counts once", InputWarning, stacklevel=3)
    if not query_ids:
        raise DataFileError(file, None, _NO_JUDGEMENTS)
    return Qrels(query_ids, doc_ids, relevances)


def read_run_file(path: str) -> pd.DataFrame:
    """A run as ``query_id, doc_id, score`` and any side columns: a TREC run file (with its rank field as ``rank``:
    the order the system showed, which ``ties='system'`` reads), or a TSV with a header."""
    return load_run_file(path).frame()


def load_run_file(path: str, *, columns: bool = True) -> Run:
    """A TREC run file or a tab-separated run with a header as :class:`Run`. ``columns=False`` keeps only what the
    nested dicts need (no columns, no rank field): a TREC run then takes the memory ``ir_measures`` takes. A
    document ranked twice for a query (with the same score or not), and, read with its columns, a rank field that
    is not a number, are errors naming the file and line."""
    file = _existing(path, "RUN")
    header = _header(file)
    if any(k in header for k in _QUERY_KEYS) and any(k in header for k in _DOC_KEYS):
        table = _read_run_table(file)
        return Run(table["query_id"].tolist(), table["doc_id"].tolist(), table["score"].tolist(), table=table)
    run = _fast_run(file, columns)
    if run is not None:
        return run
    query_ids, doc_ids, scores, ranks, numbers = [], [], [], [], []
    hint = "; a file with side columns needs a header line naming query_id, doc_id and score (tab-separated)"
    for number, fields in _trec_lines(file, "run", "query Q0 doc rank score tag", hint):
        query_ids.append(fields[0])
        doc_ids.append(fields[2])
        scores.append(_score(file, number, fields[4]))
        if columns:
            ranks.append(_rank(file, number, fields[3]))
        numbers.append(number)
    if not query_ids:
        raise DataFileError(file, None, _NO_RESULTS)
    check_ranked_once(file, query_ids, doc_ids, scores, numbers)
    return Run(query_ids, doc_ids, scores, ranks=ranks) if columns else Run.from_nested(nest(query_ids, doc_ids, scores))


def _fast_run(file: Path, columns: bool) -> Optional[Run]:
    """A TREC run read a block at a time (:func:`_token_blocks`), or None when anything is unusual (the line-by-line
    reader then says where): a line with another number of fields, a score (or, with ``columns``, a rank) that is
    not a finite number, a document ranked twice for a query, no line."""
    query_ids: list[str] = []
    doc_ids: list[str] = []
    scores: list[float] = []
    ranks: list[float] = []
    nested: dict[str, dict] = {}
    rows = 0
    try:
        for tokens in _token_blocks(file, 6):
            values = list(map(float, tokens[4::6]))
            shown = list(map(float, tokens[3::6])) if columns else []
            if not np.isfinite(np.fromiter(values + shown, dtype=np.float64, count=len(values) + len(shown))).all():
                return None
            if columns:
                query_ids += tokens[0::6]
                doc_ids += tokens[2::6]
                scores += values
                ranks += shown
                continue
            rows += len(values)
            for query, docs in nest(tokens[0::6], tokens[2::6], values).items():  # a block at a time
                earlier = nested.get(query)
                if earlier is None:
                    nested[query] = docs
                else:
                    earlier.update(docs)
    except (_Unusual, ValueError):
        return None
    if columns:
        return Run(query_ids, doc_ids, scores, ranks=ranks) if query_ids and not repeated_pair(query_ids, doc_ids) \
            else None
    return Run.from_nested(nested) if nested and sum(map(len, nested.values())) == rows else None


_NO_RESULTS = ("holds no results: a run file has one line per ranked document (query Q0 doc rank score tag, or a "
               "tab-separated file with a header naming query_id, doc_id and score)")


class _Unusual(Exception):
    """A block the block reader leaves to the line-by-line reader."""


def _token_blocks(file: Path, width: int) -> Iterator[list[str]]:
    """The fields of a whitespace-separated file whose lines have ``width`` fields, a block of whole lines at a time,
    in one list per block (``width`` fields a line, blank lines left out); :class:`_Unusual` where a line has another
    number of fields or the file is not clean UTF-8 (or clean gzip), so that the line-by-line reader
    (:func:`_trec_lines`) says where. Lines are split as that reader splits them: at ``\\n``, then at whitespace, a
    byte order mark at the start dropped."""
    import codecs
    import gzip
    import zlib

    try:
        with (gzip.open(file, "rb") if file.suffix == ".gz" else file.open("rb")) as raw:
            first = True
            while True:
                block = raw.read(_BLOCK)
                if not block:
                    return
                block += raw.readline()
                if first and block.startswith(codecs.BOM_UTF8):
                    block = block[len(codecs.BOM_UTF8):]
                first = False
                text = block.decode("utf-8")
                if not _fields_per_line(block, text) <= {0, width}:
                    raise _Unusual()
                yield text.split()
    except (UnicodeDecodeError, EOFError, OSError, zlib.error):
        raise _Unusual() from None


#: The ASCII characters ``str.split()`` splits at.
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True


def _fields_per_line(block: bytes, text: str) -> set[int]:
    """The numbers of fields (as ``line.split()`` counts them) of the lines of ``text``, the UTF-8 ``block``; counted
    on the bytes where they are all ASCII."""
    codes = np.frombuffer(block, dtype=np.uint8)
    if codes.size == 0:
        return set()
    if codes.max() >= 0x80:  # maybe whitespace beyond ASCII: count as str.split does
        return {len(line.split()) for line in text.split("\n")}
    space = _SPACE[codes]
    starts = np.empty(codes.size, dtype=bool)  # where a field starts: not space, after space or at the start
    starts[0] = not space[0]
    np.greater(space[:-1], space[1:], out=starts[1:])
    breaks = np.flatnonzero(codes == 10) + 1
    lines = np.concatenate(([0], breaks[breaks < codes.size]))
    return set(np.unique(np.add.reduceat(starts, lines, dtype=np.int64)).tolist())


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


def _rank(file: Path, number: int, text: str) -> float:
    try:
        rank = float(text)
    except ValueError:
        rank = math.nan
    if not math.isfinite(rank):
        raise DataFileError(file, number, f"rank {text!r} (the fourth field) is not a number: give every line its rank "
                                          "(1, 2, ... in the order the system showed), which ties='system' reads")
    return rank


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
    check_ranked_once(file, columns[query_key], columns[doc_key], frame["score"].tolist(), numbers)
    for name in header:
        if name in (query_key, doc_key, "score"):
            continue
        values = pd.to_numeric(pd.Series(columns[name]), errors="coerce").to_numpy()
        if name == "rank" and not np.isfinite(values).all():
            bad = int(np.flatnonzero(~np.isfinite(values))[0])
            _rank(file, numbers[bad], columns[name][bad])
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


def check_shared_queries(judged: set[str], ranked: set[str], qrels_name: str, run_name: str) -> None:
    """A run and qrels that share no query id (``judged``: the qrels' query ids, ``ranked``: the run's) are a
    ValueError naming both and example ids (every measure would score 0); where they share only some, an
    :class:`InputWarning` per side says how many queries the run lacks (they count as empty rankings) and how many
    it has that are not judged (left out)."""
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
