"""What the conversions of public source files into the mirror layout (the layout of ``shared/data``) share.

Each dataset family's module has its ``convert_*(sources, target)``, which reads the downloaded
files in the folder ``sources`` and writes the resource ``target`` (a folder, or a single file) as
``shared/data/README.md`` describes it: BEIR layout, text cleaning, documents with empty text
dropped with their judgements, queries left without documents dropped. A source that does not
look as expected raises :class:`DatasetError` naming the file. Here: :func:`clean_text`, readers
of JSON and CSV sources, and the writers of JSON Lines, TSV and BEIR folders.
"""

from __future__ import annotations

import csv
import json
import re
import unicodedata
from pathlib import Path
from typing import Iterable, Sequence

from ..io.beir import LABELS_HEADER, QRELS_HEADER
from ._resources import DatasetError

_INVISIBLE = {"Cc", "Cf", "Co", "Cs"}
_LINE_BREAKS = str.maketrans({"\r": "\n", "\u2028": "\n", "\u2029": "\n", "\t": " "})



def clean_text(text: str, multiline: bool = False) -> str:
    """Line breaks unified, invisible characters removed, runs of spaces collapsed, ends stripped;
    ``multiline`` keeps paragraph breaks (at most one empty line), else breaks become spaces."""
    text = text.replace("\r\n", "\n").translate(_LINE_BREAKS)
    text = "".join(c for c in text if c == "\n" or unicodedata.category(c) not in _INVISIBLE)
    if not multiline:
        return re.sub(" {2,}", " ", text.replace("\n", " ")).strip()
    lines = [re.sub(" {2,}", " ", line).strip() for line in text.split("\n")]
    return re.sub("\n{3,}", "\n\n", "\n".join(lines)).strip()


def load_json(path: Path):
    try:
        with path.open(encoding="utf-8") as handle:
            return json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: not the expected JSON ({exc}); delete it to download it again") from exc


def field(path: Path, record: dict, name: str, where: str):
    try:
        return record[name]
    except (KeyError, TypeError):
        raise DatasetError(f"{path}: {where} has no {name!r} field; the source format has changed") from None


def csv_rows(path: Path, columns: Sequence[str]) -> list[dict]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        absent = [c for c in columns if c not in (reader.fieldnames or [])]
        if absent:
            raise DatasetError(f"{path}: no column {', '.join(absent)} (found {reader.fieldnames}); "
                               "the source format has changed")
        return list(reader)


def write_jsonl(path: Path, records: Iterable[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def write_tsv(path: Path, header: Sequence[str], rows: Iterable[Sequence]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        handle.write("\t".join(header) + "\n")
        for row in rows:
            handle.write("\t".join(str(value) for value in row) + "\n")


def write_beir(target: Path, corpus: list[dict], queries: list[dict], judgements: list[tuple],
               labels: Sequence[tuple]) -> None:
    """BEIR files and labels from records; queries without any judged document are left out."""
    judged = {query_id for query_id, _, _ in judgements}
    write_jsonl(target / "corpus.jsonl", corpus)
    write_jsonl(target / "queries.jsonl", (q for q in queries if q["_id"] in judged))
    write_tsv(target / "qrels" / "test.tsv", QRELS_HEADER, judgements)
    write_tsv(target / "labels.tsv", LABELS_HEADER, labels)
