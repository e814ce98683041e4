"""An on-disk store of a BEIR-layout folder's ``corpus.jsonl``: documents served by id, never held whole.

:func:`folder_store` reads ``corpus.jsonl`` (or ``corpus.jsonl.gz``) once per version of the file (its size and
time) into an SQLite file under the pairmeasures cache folder (``corpora/``), checking every line as
:func:`~pairmeasures.io.beir.read_beir` does, and hashing the file's bytes in the same pass (the sha256 a
manifest records); later calls and processes open that file, after checking it once per process (its bytes
against the digest in its name, the corpus's sha256 against the one it records): a damaged or stale store is
rebuilt, with a warning naming it. A :class:`DocStore` answers lookups by id
(:meth:`~DocStore.get_many`, :meth:`~DocStore.texts`, ``in``), streams the documents in file order and counts
them, in memory that does not grow with the corpus.

Why SQLite: it is in the standard library (no new dependency), the embedding cache already uses it, it looks up
arbitrary string ids through a B-tree in pages it reads on demand, builds in bounded memory, and a build written to
a temporary file and renamed is atomic. ir_datasets' lz4 docstore fits collections whose records have a fixed
shape (a NamedTuple); a BEIR folder's records carry any fields (``title``, ``categories``, ``metadata`` ...).
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import json
import os
import re
import sqlite3
import tempfile
import threading
import warnings
import zlib
from pathlib import Path
from typing import IO, Iterable, Iterator, Optional

from .._owned import discard, put_in_place
from .beir import DataFileError, json_record, record_text
from .memo import CacheWarning, cache_root, sha256_file

__all__ = ["DocStore", "STORE_FORMAT", "folder_store", "stores_folder"]

#: Version of the store's layout; a change makes earlier stores unused (they are rebuilt). 2: the file's name ends
#: with the first 16 hex digits of the sha256 of its own bytes, checked when it is opened.
STORE_FORMAT = 2

#: Ids per SQL statement when looking documents up (below SQLite's limit of bound variables).
_CHUNK = 500


def stores_folder() -> Path:
    """Where corpus stores live: ``corpora/`` in the pairmeasures cache folder (``$PAIRMEASURES_CACHE_DIR``)."""
    return cache_root() / "corpora"


class _Hashing:
    """A binary file object that hashes the bytes read through it (so a gzip file is hashed as stored)."""

    def __init__(self, raw: IO[bytes]):
        self.raw, self.digest = raw, hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.digest.update(data)
        return data

    def readline(self, size: int = -1) -> bytes:
        data = self.raw.readline(size)
        self.digest.update(data)
        return data

    def __iter__(self):
        return iter(self.readline, b"")


def _records(path: Path, handle) -> Iterator[tuple[int, str, dict]]:
    """``(line, id, record)`` of each non-blank line of ``corpus.jsonl`` with the checks of ``read_beir``."""
    number = 0
    try:
        for number, data in enumerate(handle, start=1):
            try:
                line = data.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise DataFileError(path, number, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
            if not line.strip():
                continue
            record = json_record(path, number, line)
            absent = [name for name in ("_id", "text") if name not in record]
            if absent:
                raise DataFileError(path, number, f"record has no {', '.join(repr(a) for a in absent)} field")
            record_id = str(record["_id"])
            if not record_id:
                raise DataFileError(path, number, "record has an empty '_id'")
            wrong = ["text"] if not isinstance(record["text"], str) else []
            wrong += ["title"] if record.get("title") is not None and not isinstance(record["title"], str) else []
            if wrong:
                raise DataFileError(path, number, f"record {record_id!r}: {', '.join(wrong)} must be text")
            yield number, record_id, record
    except (EOFError, OSError, zlib.error) as exc:
        if path.suffix != ".gz":
            raise
        raise DataFileError(path, number + 1, f"compressed data is corrupt or cut short ({exc})") from exc


def _build(source: Path, root: Path, stem: str) -> Path:
    """Write the store of ``source`` (a ``corpus.jsonl``, maybe gzipped) into ``root`` as ``<stem>-<digest>.sqlite``
    (``digest``: of the store's own bytes): into a temporary file beside it, renamed when complete."""
    handle, temporary = tempfile.mkstemp(dir=root, prefix=f".{stem}-", suffix=".building")
    os.close(handle)
    try:
        db = sqlite3.connect(temporary)
        try:
            db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                             "CREATE TABLE docs (line INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, text TEXT NOT NULL,"
                             " title TEXT, extra TEXT);"
                             "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);")
            with open(source, "rb") as raw:
                hashing = _Hashing(raw)
                lines = gzip.GzipFile(fileobj=hashing, mode="rb") if source.suffix == ".gz" else hashing  # type: ignore[call-overload]
                for number, record_id, record in _records(source, lines):
                    title = record.get("title")  # a text title in its column; a null one stays in the record
                    rest = {k: v for k, v in record.items() if k != "text" and not (k == "title" and title is not None)}
                    try:
                        db.execute("INSERT INTO docs VALUES (?, ?, ?, ?, ?)",
                                   (number, record_id, record["text"], title, json.dumps(rest, ensure_ascii=False)))
                    except sqlite3.IntegrityError:
                        (first,) = db.execute("SELECT line FROM docs WHERE id = ?", (record_id,)).fetchone()
                        raise DataFileError(source, number, f"id {record_id!r} already appears on line {first}") from None
                while hashing.read(1 << 20):  # bytes after the gzip stream's end still belong to the file's hash
                    pass
            count = db.execute("SELECT count(*) FROM docs").fetchone()[0]
            db.executemany("INSERT INTO meta VALUES (?, ?)", [("format", str(STORE_FORMAT)), ("count", str(count)),
                                                              ("sha256", hashing.digest.hexdigest()),
                                                              ("source", str(source))])
            db.commit()
        finally:
            db.close()
        os.chmod(temporary, 0o644)  # as a file the user wrote, not mkstemp's private 0600
        target = root / f"{stem}-{sha256_file(temporary)[:16]}.sqlite"
        put_in_place(temporary, target)
    finally:
        if os.path.exists(temporary):
            discard(temporary)
    return target


class DocStore:
    """The documents of one version of a ``corpus.jsonl``, in an SQLite file written by :func:`folder_store`.

    Records are the file's JSON objects (``_id``, ``text``, optional ``title`` and any other fields). Safe to use
    from several threads and, after a fork, from the child (each opens its own connection)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._local = threading.local()
        meta = dict(self._db().execute("SELECT key, value FROM meta").fetchall())
        self.count = int(meta["count"])
        #: The sha256 of the corpus file's bytes, computed while the store was built.
        self.sha256 = meta["sha256"]

    def __getstate__(self) -> dict:
        return {"path": self.path, "count": self.count, "sha256": self.sha256}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None or self._local.pid != os.getpid():
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            db.execute("PRAGMA query_only=ON")
            self._local.db, self._local.pid = db, os.getpid()
        return db

    def __len__(self) -> int:
        return self.count

    def __contains__(self, doc_id: object) -> bool:
        return self._db().execute("SELECT 1 FROM docs WHERE id = ?", (doc_id,)).fetchone() is not None

    def _select(self, columns: str, doc_ids: Iterable[str]) -> Iterator[tuple]:
        wanted = list(dict.fromkeys(doc_ids))
        db = self._db()
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start:start + _CHUNK]
            yield from db.execute(f"SELECT {columns} FROM docs WHERE id IN ({','.join('?' * len(chunk))})", chunk)

    def present(self, doc_ids: Iterable[str]) -> set:
        """The ids among ``doc_ids`` that are documents of the store."""
        return {row[0] for row in self._select("id", doc_ids)}

    def get_many(self, doc_ids: Iterable[str]) -> dict:
        """``{id: record}`` of the documents among ``doc_ids`` that the store has."""
        return {row[0]: _record(*row[1:]) for row in self._select("id, text, title, extra", doc_ids)}

    def texts(self, doc_ids: Iterable[str], text: str = "text") -> dict:
        """``{id: text field(s)}`` (see :func:`~pairmeasures.io.beir.record_text`) of the documents among
        ``doc_ids`` that the store has, without parsing their other fields."""
        return {row[0]: record_text({"text": row[1], "title": row[2]}, text) for row in self._select("id, text, title", doc_ids)}

    def __iter__(self) -> Iterator[tuple[str, dict]]:
        """``(id, record)`` of every document, in file order, streamed (its own connection: iterating while looking
        documents up is fine; a consumer in another thread, such as PISA's indexer, too)."""
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        try:
            for row in db.execute("SELECT id, text, title, extra FROM docs ORDER BY line"):
                yield row[0], _record(*row[1:])
        finally:
            db.close()


    def iter_texts(self, text: str = "text") -> Iterator[str]:
        """The ``text`` field(s) of every document (see :meth:`texts`), in file order, streamed on a connection of its
        own without parsing the documents' other fields."""
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        try:
            for row in db.execute("SELECT text, title FROM docs ORDER BY line"):
                yield record_text({"text": row[0], "title": row[1]}, text)
        finally:
            db.close()


def _record(text: str, title: Optional[str], extra: str) -> dict:
    record = json.loads(extra)
    record["text"] = text
    if title is not None:
        record["title"] = title
    return record


_LOCK = threading.Lock()


def folder_store(corpus_file: Path, name: str, version: str) -> DocStore:
    """The :class:`DocStore` of ``corpus_file`` at ``version`` (a key of its size and time), built on first use into
    :func:`stores_folder` as ``<name>-<version>-v<format>-<digest>.sqlite``; stores of the same ``name`` for other
    versions are removed. Malformed lines raise :class:`~pairmeasures.io.beir.DataFileError` naming the file
    and line.

    A store found there is checked before it is used (once per process while neither file changes): its bytes
    against the digest in its name (a store damaged, cut short or written to since it was built), and the sha256 of
    the corpus it was built from against the file's (a corpus changed behind the same size and time). One that fails
    is rebuilt, with a :class:`~pairmeasures.io.memo.CacheWarning` naming it."""
    root = stores_folder()
    with _LOCK:
        try:
            return DocStore(_built(root, Path(corpus_file), name, version))
        except PermissionError:  # a cache folder that cannot be written: a store in the temporary folder
            fallback = Path(tempfile.gettempdir()) / f"pairmeasures-corpora-{os.getuid() if hasattr(os, 'getuid') else 0}"
            return DocStore(_built(fallback, Path(corpus_file), name, version))


#: Stores checked in this process: path -> (the store's and the corpus's stats when they were found sound).
_CHECKED: dict = {}


def _built(root: Path, corpus_file: Path, name: str, version: str) -> Path:
    stem = f"{name}-{version}-v{STORE_FORMAT}"
    for found in sorted(root.glob(f"{glob.escape(stem)}-*.sqlite")):
        problem = _problem(found, corpus_file)
        if problem is None:
            return found
        warnings.warn(f"the corpus store {found} {problem}; it is removed and built again from {corpus_file}",
                      CacheWarning, stacklevel=3)
        _discard(found)
    root.mkdir(parents=True, exist_ok=True)
    target = _build(corpus_file, root, stem)
    for stale in root.glob(f"{glob.escape(name)}-*.sqlite"):  # other versions of the corpus (not this version's:
        if _STORE_NAME.fullmatch(stale.name[len(name) + 1:]) and not stale.name.startswith(f"{stem}-"):  # in use)
            _discard(stale)
    return target


#: What follows ``<name>-`` in the name of a store :func:`_build` wrote (this format or an earlier one).
_STORE_NAME = re.compile(r"[0-9a-f]{16}-v[0-9]+(-[0-9a-f]{16})?\.sqlite")


def _problem(store: Path, corpus_file: Path) -> Optional[str]:
    """Why ``store`` cannot serve ``corpus_file`` (its bytes are not those it was built with, it is not a store, or
    it holds another version of the file), or None. Costs reading both files once per process while they are
    unchanged (about 2 ms a MB)."""
    stats = (_stat(store), _stat(corpus_file))
    if _CHECKED.get(store) == stats:
        return None
    digest = store.stem.rsplit("-", 1)[-1]
    if sha256_file(store)[:len(digest)] != digest:
        return "is damaged (its bytes changed since it was built: cut short, overwritten or edited)"
    try:
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        return f"cannot be read ({exc})"
    if meta.get("format") != str(STORE_FORMAT) or "sha256" not in meta:
        return "is not a store of this version of pairmeasures"
    if meta["sha256"] != sha256_file(corpus_file):
        return (f"holds other documents than {corpus_file} (the file changed but kept its size and time, or the store "
                "was copied from another corpus)")
    _CHECKED[store] = stats
    return None


def _stat(path: Path) -> tuple:
    found = path.stat()
    return (found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino)


def _discard(store: Path) -> None:
    """Delete a corpus store of this cache: a ``<name>-<version>-v<format>-<digest>.sqlite`` file under
    :func:`stores_folder` (or its fallback), this command's own cache entry, written by :func:`_build` (or by an
    earlier version of it) and rebuilt from ``corpus.jsonl`` whenever it is missing. Nothing else is deleted here.
    (The one place a corpus store is removed: for the house policy on deleting, STYLE.md "Deleting, moving,
    replacing".)"""
    _CHECKED.pop(store, None)
    discard(store)
