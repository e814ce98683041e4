"""The queries a fit set is generated for: from a dataset id, a BEIR folder, a queries.jsonl or a TSV file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Optional, Union

__all__ = ["read_queries"]

#: First-column names that mark the first line of a queries TSV file as its header.
_ID_HEADERS = ("query-id", "query_id", "qid", "_id", "id")


def read_queries(source: Union[str, os.PathLike, Mapping], data: Optional[str] = None) -> tuple[dict, str]:
    """``({query id: text}, description of the source)``.

    ``source``: a mapping; a BEIR-layout folder (its ``queries.jsonl``); a ``.jsonl`` file (``_id``, ``text``);
    a ``.tsv``/``.txt`` file of ``id<TAB>text`` lines (a first line whose first field is ``query-id``,
    ``qid``, ``_id`` or ``id`` is a header); else a dataset id (``pair/procon``; ``data``: a mirror folder).
    """
    from ..io.beir import DataFileError, existing, numbered_lines, read_records

    if isinstance(source, Mapping):
        texts, name = {str(q): t for q, t in source.items()}, "a mapping given in Python"
    else:
        path = Path(source).expanduser()
        if path.is_dir():
            file = existing(path, "queries.jsonl")
            texts, name = {q: r["text"] for q, r in read_records(file).items()}, str(file.resolve())
        elif path.is_file() and path.name.endswith((".jsonl", ".jsonl.gz")):
            texts, name = {q: r["text"] for q, r in read_records(path).items()}, str(path.resolve())
        elif path.is_file():
            texts, name = {}, str(path.resolve())
            for number, line in numbered_lines(path):
                if not line.strip():
                    continue
                fields = line.split("\t")
                if len(fields) != 2:
                    raise DataFileError(path, number, f"expected 2 tab-separated fields (query id, text), found {len(fields)}")
                if number == 1 and fields[0].strip().lower() in _ID_HEADERS:
                    continue
                if fields[0] in texts:
                    raise DataFileError(path, number, f"query id {fields[0]!r} appears twice")
                texts[fields[0]] = fields[1]
        else:
            texts, name = _dataset_queries(str(source), data), str(source)
    for query_id, text in texts.items():
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{name}: query {query_id!r} has no text")
    if not texts:
        raise ValueError(f"{name}: no queries")
    return texts, name


def _dataset_queries(dataset_id: str, data: Optional[str]) -> dict:
    """The queries of an ir_datasets dataset (``pair/...`` from the mirror folder ``data`` when given)."""
    from .. import datasets
    from ..sideinfo import SideInfoError
    from ..sideinfo.irds import load_dataset

    try:
        dataset = datasets.load(dataset_id, data) if data is not None else load_dataset(dataset_id)
    except (KeyError, SideInfoError) as exc:
        raise ValueError(f"--queries {dataset_id!r} is neither a file, a folder nor a dataset id ({exc})") from None
    if "text" not in dataset.queries_cls()._fields:
        raise ValueError(f"dataset {dataset_id!r}: its queries have no 'text' field ({', '.join(dataset.queries_cls()._fields)})")
    return {query.query_id: query.text for query in dataset.queries_iter()}
