"""A dataset's mirror files read into typed, checked records, once: :class:`DatasetSpec` (what a
dataset family module declares), :class:`Tables` (the records), :func:`load_tables`, and the
record checks and qrels/labels readers that the family modules' builders share.

:func:`load_tables` locates the files, then returns the records parsed in this process for the
same files (same paths, sizes and modification times), else those pickled in the cache by an
earlier process, else parses them (every problem named with file and line) and pickles them.
"""

from __future__ import annotations

import gc
import hashlib
import logging
import os
import pickle
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Optional, Sequence

from .._atomic import write_atomically
from .._owned import discard
from ..io.beir import DataFileError, read_labels, read_qrels
from ..io.memo import Memo
from ._irdsfiles import IrdsFile
from ._records import GroupLabel, Qrel
from ._resources import DatasetError, Location, Resource, cache_root, locate

#: Bumped whenever records or parsing change, so that pickles of older versions are not used
#: (2: the record classes moved to the dataset family modules).
FORMAT_VERSION = 2

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


@dataclass(frozen=True)
class DatasetSpec:
    """One registered dataset: its resources, how its records are built, its record types.

    ``documents_from``: the ir_datasets dataset supplying documents and qrels (restricted to this
    dataset's queries) instead of ``build``; ``documents_files``: ir_datasets' own files it then reads (checked
    before ir_datasets is asked for them, which would download what is missing). ``default_text``: the document field(s) read when a user names
    none (``"title+text"`` where the wording that matters is often in the title). ``term_list``: the
    :class:`~pairmeasures.sideinfo.termlists.Lexicon` whose term measures apply (``"gender"``), or None.
    ``measures``: the measure strings an audit evaluates when a user names none, where the dataset's papers report
    their own (empty: the audit chooses by the dataset's labels and term list). ``published_runs``: the run files
    its papers published (a :class:`Resource` of ``NAME.run`` files; ``pairmeasures audit --systems published``), or
    None.
    """

    id: str
    resources: tuple[Resource, ...]
    build: Callable[[Sequence[Location]], Tables]
    doc_cls: Optional[type]
    query_info_cls: Optional[type]
    qrels_defs: dict
    documents_from: str = ""
    default_text: str = "text"
    term_list: Optional[str] = None
    documents_files: tuple[IrdsFile, ...] = ()
    measures: tuple[str, ...] = ()
    published_runs: Optional[Resource] = None


_PARSED = Memo("parsed datasets")


def load_tables(spec: DatasetSpec, data: Optional[str | os.PathLike] = None) -> Tables:
    """The records of ``spec``'s files found from ``data`` (see :func:`locate`), parsed at most once."""
    locations = [locate(resource, data, spec.id) for resource in spec.resources]
    key = _fingerprint(spec, locations)
    slot = (spec.id, tuple(str(location.path) for location in locations))
    return _PARSED.get(slot, key, lambda: _read_pickle(spec, key) or _parse(spec, locations, key))


def tables_key(spec: DatasetSpec, data: Optional[str | os.PathLike] = None) -> str:
    """The key :func:`load_tables` gives the records of ``spec``'s files found from ``data``, read from the files'
    paths, sizes and times without parsing them: it changes when a file does."""
    return _fingerprint(spec, [locate(resource, data, spec.id) for resource in spec.resources])


def resource_files(location: Location) -> list[Path]:
    """The files of a located resource: the file itself, or the folder's required and present optional files."""
    resource = location.resource
    if not resource.files:
        return [location.path]
    present = [location.path / name for name in resource.optional if (location.path / name).is_file()]
    return [location.file(name) for name in resource.files] + present


def _fingerprint(spec: DatasetSpec, locations: Sequence[Location]) -> str:
    stats = [(str(path.resolve()), path.stat().st_size, path.stat().st_mtime_ns)
             for location in locations for path in resource_files(location)]
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
    except Exception as exc:  # damaged (UnpicklingError, EOFError, ValueError, OverflowError, MemoryError, ...), or
        # written by other code (AttributeError, ImportError): a copy, parsed again from the files it came from
        _log.info("ignoring the unreadable parsed copy of %s (%s: %s)", spec.id, type(exc).__name__, exc)
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
        write_atomically(path, pickle.dumps(tables, protocol=pickle.HIGHEST_PROTOCOL))
        # earlier versions of this dataset's parsed copy: its exact name with another key (a glob would also take
        # the copies of datasets whose id begins with this one's, e.g. pair/wiki-balance/synthetic's)
        pattern = re.compile(rf"{re.escape(spec.id.replace('/', '-'))}-[0-9a-f]{{20}}\.pickle")
        for stale in path.parent.iterdir():
            if stale != path and pattern.fullmatch(stale.name):
                discard(stale)
    except OSError as exc:
        _log.info("not keeping the parsed copy of %s (%s)", spec.id, exc)


def strings(*names: str):
    """A record check: the fields ``names`` hold text."""
    def check(record_id: str, record: dict) -> Optional[str]:
        wrong = [n for n in names if not isinstance(record.get(n), str)]
        return f"record {record_id!r}: {', '.join(wrong)} must be text" if wrong else None
    return check


def folder_qrels(folder: Location, queries, corpus) -> tuple:
    path = folder.file("qrels/test.tsv")
    return tuple(Qrel(query_id, doc_id, score) for _, query_id, doc_id, score in read_qrels(path, queries, corpus))


def folder_labels(folder: Location, queries, corpus) -> tuple:
    path = folder.file("labels.tsv")
    return tuple(GroupLabel(query_id, doc_id, group) for _, query_id, doc_id, group in read_labels(path, queries, corpus))
