"""A dataset's mirror files read into typed, checked records, once.

:func:`load_tables` locates the files, then returns the records parsed in this process for the
same files (same paths, sizes and modification times), else those pickled in the cache by an
earlier process, else parses them (every problem named with file and line) and pickles them.
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import os
import pickle
import re
import tempfile
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from ..sideinfo.beir import DataFileError, iter_tsv, read_labels, read_qrels, read_records
from ..sideinfo.memo import Memo
from ._records import (GrepBiasIRDoc, GrepBiasIRQueryInfo, GroupLabel, PerspectrumDoc, PerspectrumQueryInfo,
                       ProconDoc, ProconQueryInfo, Qrel, Query, WikiBalanceDoc, WikiBalanceNaturalDoc,
                       WikiBalanceQueryInfo)
from ._resources import DatasetError, Location, cache_root, locate

if TYPE_CHECKING:
    from ._catalogue import DatasetSpec

#: Bumped whenever records or parsing change, so that pickles of older versions are not used.
FORMAT_VERSION = 1

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Tables:
    """A dataset's records; ``key`` identifies the files they were read from."""

    queries: tuple
    docs: tuple = ()
    qrels: tuple = ()
    labels: Optional[tuple] = None
    query_info: tuple = ()
    key: str = ""


_PARSED = Memo("parsed datasets")


def load_tables(spec: DatasetSpec, data: Optional[str | os.PathLike] = None) -> Tables:
    """The records of ``spec``'s files found from ``data`` (see :func:`locate`), parsed at most once."""
    locations = [locate(resource, data, spec.id) for resource in spec.resources]
    key = _fingerprint(spec, locations)
    slot = (spec.id, tuple(str(location.path) for location in locations))
    return _PARSED.get(slot, key, lambda: _read_pickle(spec, key) or _parse(spec, locations, key))


def _files(location: Location) -> list[Path]:
    resource = location.resource
    if not resource.files:
        return [location.path]
    present = [location.path / name for name in resource.optional if (location.path / name).is_file()]
    return [location.file(name) for name in resource.files] + present


def _fingerprint(spec: DatasetSpec, locations: Sequence[Location]) -> str:
    stats = [(str(path.resolve()), path.stat().st_size, path.stat().st_mtime_ns)
             for location in locations for path in _files(location)]
    return hashlib.sha1(repr((FORMAT_VERSION, spec.id, stats)).encode()).hexdigest()[:20]


def _pickle_path(spec: DatasetSpec, key: str) -> Path:
    return cache_root() / ".parsed" / f"{spec.id.replace('/', '-')}-{key}.pickle"


def _read_pickle(spec: DatasetSpec, key: str) -> Optional[Tables]:
    collecting = gc.isenabled()
    gc.disable()  # unpickling creates many objects at once: cyclic collections in between are wasted work
    try:
        with _pickle_path(spec, key).open("rb") as handle:
            tables = pickle.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError) as exc:
        _log.info("ignoring the unreadable parsed copy of %s (%s)", spec.id, exc)
        return None
    finally:
        if collecting:
            gc.enable()
    return tables if isinstance(tables, Tables) and tables.key == key else None


def _parse(spec: DatasetSpec, locations: Sequence[Location], key: str) -> Tables:
    try:
        tables = replace(spec.build(locations), key=key)
    except DataFileError as exc:
        origin = next((loc for loc in locations if loc.path in (exc.path, *exc.path.parents)), None)
        advice = ("delete the folder to download it again" if origin is not None and origin.origin == "download cache"
                  else "fix or replace that file in the mirror (its layout: docs/datasets.md)")
        raise DatasetError(f"{spec.id}: {exc}\n{advice}") from exc
    _write_pickle(spec, key, tables)
    return tables


def _write_pickle(spec: DatasetSpec, key: str, tables: Tables) -> None:
    """Keep the parsed records for later processes (an optimisation: skipped where the cache is read-only)."""
    path = _pickle_path(spec, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, suffix=".tmp", delete=False) as handle:
            pickle.dump(tables, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(handle.name, path)
        for stale in path.parent.glob(f"{spec.id.replace('/', '-')}-*.pickle"):
            if stale != path:
                stale.unlink()
    except OSError as exc:
        _log.info("not keeping the parsed copy of %s (%s)", spec.id, exc)


def _strings(*names: str):
    """A record check: the fields ``names`` hold text."""
    def check(record_id: str, record: dict) -> Optional[str]:
        wrong = [n for n in names if not isinstance(record.get(n), str)]
        return f"record {record_id!r}: {', '.join(wrong)} must be text" if wrong else None
    return check


def _qrels(folder: Location, queries, corpus) -> tuple:
    path = folder.file("qrels/test.tsv")
    return tuple(Qrel(query_id, doc_id, score) for _, query_id, doc_id, score in read_qrels(path, queries, corpus))


def _labels(folder: Location, queries, corpus) -> tuple:
    path = folder.file("labels.tsv")
    return tuple(GroupLabel(query_id, doc_id, group) for _, query_id, doc_id, group in read_labels(path, queries, corpus))


def build_perspectrum(locations: Sequence[Location]) -> Tables:
    (folder,) = locations
    corpus = read_records(folder.file("corpus.jsonl"), ("_id", "text", "source"), _strings("text", "source"))
    queries = read_records(folder.file("queries.jsonl"), ("_id", "text", "split", "source", "topics"),
                           _strings("text", "split", "source"))
    return Tables(queries=tuple(Query(i, r["text"]) for i, r in queries.items()),
                  docs=tuple(PerspectrumDoc(i, r["text"], r["source"]) for i, r in corpus.items()),
                  qrels=_qrels(folder, queries, corpus), labels=_labels(folder, queries, corpus),
                  query_info=tuple(PerspectrumQueryInfo(i, r["split"], r["source"], tuple(r["topics"]))
                                   for i, r in queries.items()))


def build_procon(locations: Sequence[Location]) -> Tables:
    (folder,) = locations
    corpus = read_records(folder.file("corpus.jsonl"), ("_id", "title", "text", "query_id", "group"),
                          _strings("title", "text", "query_id", "group"))
    queries = read_records(folder.file("queries.jsonl"), ("_id", "text", "url"), _strings("text", "url"))
    return Tables(queries=tuple(Query(i, r["text"]) for i, r in queries.items()),
                  docs=tuple(ProconDoc(i, r["title"], r["text"], r["query_id"], r["group"]) for i, r in corpus.items()),
                  qrels=_qrels(folder, queries, corpus), labels=_labels(folder, queries, corpus),
                  query_info=tuple(ProconQueryInfo(i, r["url"]) for i, r in queries.items()))


def build_grep_biasir(locations: Sequence[Location]) -> Tables:
    (folder,) = locations
    fields = ("title", "text", "query_id", "group", "category")
    corpus = read_records(folder.file("corpus.jsonl"), ("_id", *fields), _strings(*fields))
    queries = read_records(folder.file("queries.jsonl"), ("_id", "text", "category", "expected_stereotype"),
                           _strings("text", "category", "expected_stereotype"))
    return Tables(queries=tuple(Query(i, r["text"]) for i, r in queries.items()),
                  docs=tuple(GrepBiasIRDoc(i, *(r[f] for f in fields)) for i, r in corpus.items()),
                  qrels=_qrels(folder, queries, corpus), labels=_labels(folder, queries, corpus),
                  query_info=tuple(GrepBiasIRQueryInfo(i, r["category"], r["expected_stereotype"])
                                   for i, r in queries.items()))


_SYNTHETIC_ID = re.compile(r"(-?\d+)_(\d+)_p([12])_d(\d+)")


def _synthetic_id(doc_id: str, record: dict) -> Optional[str]:
    if not _SYNTHETIC_ID.fullmatch(doc_id):
        return f"document id {doc_id!r} does not follow {{topic id}}_{{query index}}_p{{1|2}}_d{{n}}"
    return _strings("title", "text")(doc_id, record)


class Categories:
    """The topic -> domains table of Wiki-Balance (``wiki-balance-categories.tsv``)."""

    def __init__(self, path: Path):
        self.domains: dict[tuple[str, str], tuple] = {}
        self.titles: dict[str, list[str]] = {}
        for line, (topic_id, topic, domains) in iter_tsv(path, ("topic-id", "topic", "domains")):
            try:
                parsed = json.loads(domains)
            except json.JSONDecodeError:
                parsed = None
            if not isinstance(parsed, list) or not all(isinstance(d, str) for d in parsed):
                raise DataFileError(path, line, f"domains must be a JSON array of text, got {domains!r}")
            self.domains[topic_id, topic] = tuple(parsed)
            self.titles.setdefault(topic_id, []).append(topic)

    def topic(self, topic_id: str, document_titles: Sequence[str]) -> str:
        """A query's topic title: its documents' most frequent title that the table lists for the
        topic id; else the table's title when the id has exactly one; else the documents' most frequent title."""
        listed = self.titles.get(topic_id, [])
        frequent = [title for title, _ in Counter(document_titles).most_common()]
        chosen = next((t for t in frequent if t in listed), None)
        if chosen is None and len(listed) == 1:
            chosen = listed[0]
        return chosen if chosen is not None else (frequent[0] if frequent else "")


def _wiki_balance_info(queries: dict, qrels: tuple, titles: dict, categories: Categories) -> tuple:
    judged_titles: dict[str, list[str]] = {}
    for qrel in qrels:
        judged_titles.setdefault(qrel.query_id, []).append(titles[qrel.doc_id])
    info = []
    for query_id, record in queries.items():
        topic_id = str(record.get("topic_id") or query_id.rsplit("_", 1)[0])
        topic = str(record.get("topic") or categories.topic(topic_id, judged_titles.get(query_id, [])))
        info.append(WikiBalanceQueryInfo(query_id, topic_id, topic, categories.domains.get((topic_id, topic), ())))
    return tuple(info)


def build_wiki_balance_synthetic(locations: Sequence[Location]) -> Tables:
    folder, table = locations
    corpus = read_records(folder.file("corpus.jsonl"), ("_id", "title", "text"), _synthetic_id)
    queries = read_records(folder.file("queries.jsonl"), ("_id", "text"), _strings("text"))
    docs = []
    for doc_id, record in corpus.items():
        topic_id, query_index, perspective, _ = _SYNTHETIC_ID.fullmatch(doc_id).groups()
        docs.append(WikiBalanceDoc(doc_id, record["title"], record["text"], f"{topic_id}_{query_index}", topic_id,
                                   f"p{perspective}"))
    qrels = _qrels(folder, queries, corpus)
    by_id = {doc.doc_id: doc for doc in docs}
    labels = tuple(GroupLabel(q.query_id, q.doc_id, by_id[q.doc_id].perspective) for q in qrels
                   if by_id[q.doc_id].query_id == q.query_id)
    titles = {doc.doc_id: doc.title for doc in docs}
    return Tables(queries=tuple(Query(i, r["text"]) for i, r in queries.items()), docs=tuple(docs), qrels=qrels,
                  labels=labels, query_info=_wiki_balance_info(queries, qrels, titles, Categories(table.path)))


def build_wiki_balance_natural(locations: Sequence[Location]) -> Tables:
    folder, table = locations
    corpus = read_records(folder.file("corpus.jsonl"), ("_id", "title", "text"), _strings("title", "text"))
    queries = read_records(folder.file("queries.jsonl"), ("_id", "text"), _strings("text"))
    qrels = _qrels(folder, queries, corpus)
    labels = _labels(folder, queries, corpus) if (folder.path / "labels.tsv").is_file() else None
    titles = {doc_id: record["title"] for doc_id, record in corpus.items()}
    return Tables(queries=tuple(Query(i, r["text"]) for i, r in queries.items()),
                  docs=tuple(WikiBalanceNaturalDoc(i, r["title"], r["text"]) for i, r in corpus.items()),
                  qrels=qrels, labels=labels,
                  query_info=_wiki_balance_info(queries, qrels, titles, Categories(table.path)))


def gender_queries(file_name: str):
    """A builder reading one MS MARCO gender query list (``qid``, ``text``) of the ``msmarco-gender`` folder."""
    def build(locations: Sequence[Location]) -> Tables:
        (folder,) = locations
        path = folder.file(file_name)
        first_line: dict[str, int] = {}
        queries = []
        for line, (query_id, text) in iter_tsv(path, ("qid", "text")):
            if not query_id or not text:
                raise DataFileError(path, line, "empty query id or text")
            if query_id in first_line:
                raise DataFileError(path, line, f"query {query_id!r} already appears on line {first_line[query_id]}")
            first_line[query_id] = line
            queries.append(Query(query_id, text))
        return Tables(queries=tuple(queries))
    return build
