"""A persistent cache of text embeddings, keyed by (model identity, normalisation, exact text).

One SQLite file (default ``~/.cache/pairmeasures/embeddings.sqlite``; ``PAIRMEASURES_CACHE_DIR``
or ``XDG_CACHE_HOME`` move it). Every write is a transaction, so an interrupted job leaves whole
entries or none; WAL journalling and a busy timeout let several processes read and write at
once. Vectors are stored as raw little-endian float32 bytes with their dimension and a CRC32,
never pickled: an entry whose length or checksum does not match is reported as missing, so the
caller recomputes and overwrites it instead of returning garbage.

A user's file is never moved or changed on a transient error: only a file that SQLite itself finds
is not a database, or damaged, is moved aside (kept, under a name unique to the process) and a
fresh one started. A locked, unopenable or failing file is an :class:`EmbeddingCacheError` naming
it; a read-only file or folder is used read-only; a directory, or an SQLite database of another
program, is an error and left untouched.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sqlite3
import threading
import time
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np

from .._owned import move_aside
from ..io.memo import CACHE_ENV, cache_root

__all__ = ["EmbeddingCache", "EmbeddingCacheError", "CacheStats", "default_cache_path", "text_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS models (
    model TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    text_key BLOB NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    crc INTEGER NOT NULL,
    PRIMARY KEY (model, text_key)
) WITHOUT ROWID;
"""

_BATCH = 500  # keys per SELECT where SQLite's limit on bound variables is unknown (Python < 3.11; 999 in old SQLite)
_MAX_BATCH = 8000  # keys per SELECT at most: larger batches read no faster
#: Bytes of vectors an :class:`EmbeddingCache` keeps in memory once read (about 80,000 vectors of 384 floats).
READ_LIMIT = 128 * 2**20


def _sqlite_header(path: Path) -> bool:
    """Whether ``path`` begins as every SQLite file does (a damaged cache may be moved aside; another file never)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\0"
    except OSError:
        return False


def default_cache_path() -> Path:
    """Where the embedding cache lives unless told otherwise (:data:`~pairmeasures.io.memo.CACHE_ENV` moves it)."""
    return cache_root() / "embeddings.sqlite"


def text_key(text: str) -> bytes:
    """The key of an exact text: SHA-256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).digest()


@dataclass(frozen=True)
class CacheStats:
    """What the cache holds: entries and dimensions per model, bytes on disk, and this session's
    hits, misses and corrupt entries found (which were recomputed by the caller)."""

    path: Path
    bytes_on_disk: int
    models: list
    hits: int
    misses: int
    corrupt: int

    def report(self) -> str:
        lines = [f"embedding cache {self.path} ({self.bytes_on_disk / 2**20:.1f} MiB)"]
        for model in self.models:
            lines.append(f"  {model['entries']:>9,} x {model['dim']}-d  {model['description']}  [{model['model'][:12]}]")
        if not self.models:
            lines.append("  (empty)")
        lines.append(f"  this session: {self.hits:,} hits, {self.misses:,} misses, {self.corrupt:,} corrupt entries recomputed")
        return "\n".join(lines)


class EmbeddingCacheError(RuntimeError):
    """The embedding cache file cannot be used; the message names it and says what to do."""


_OUR_TABLES = {"models", "embeddings"}
# SQLite's primary result codes (https://sqlite.org/rescode.html), read from an error with :func:`_error_code`.
_PERM, _BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 3, 5, 6, 8, 10, 11, 13, 14, 26
_DAMAGED = (_NOTADB, _CORRUPT)  # SQLite proves the file is not a sound database
_ADVICE = {
    _BUSY: "another process holds it longer than the timeout; try again, or pass a longer timeout",
    _LOCKED: "another connection holds it longer than the timeout; try again",
    _CANTOPEN: "check that its folder exists and can be read, and that the process has file descriptors left",
    _READONLY: "the file or its folder is read-only; make them writable or use another cache path",
    _PERM: "check the permissions of the file and its folder",
    _IOERR: "the disk reported an error (full, removed, or a network file system); check it",
    _FULL: "the disk is full; free space or use another cache path",
}


#: SQLite's fixed English text of each result code (``sqlite3_errstr``), for Python 3.10, whose errors carry no code.
_CODE_OF_MESSAGE = {
    "access permission denied": _PERM, "database is locked": _BUSY, "database table is locked": _LOCKED,
    "attempt to write a readonly database": _READONLY, "disk I/O error": _IOERR,
    "database disk image is malformed": _CORRUPT, "database or disk is full": _FULL,
    "unable to open database file": _CANTOPEN, "file is not a database": _NOTADB,
}


def _error_code(exc: sqlite3.Error) -> Optional[int]:
    """The primary SQLite result code of an error (Python 3.11+ reports it; before, SQLite's fixed message
    says it; ``None`` when neither does, so that no file is ever moved aside on a guess)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return _CODE_OF_MESSAGE.get(str(exc)) if code is None else code & 0xFF


_NAME_OF_CODE = {_PERM: "SQLITE_PERM", _BUSY: "SQLITE_BUSY", _LOCKED: "SQLITE_LOCKED", _READONLY: "SQLITE_READONLY",
                 _IOERR: "SQLITE_IOERR", _CORRUPT: "SQLITE_CORRUPT", _FULL: "SQLITE_FULL", _CANTOPEN: "SQLITE_CANTOPEN",
                 _NOTADB: "SQLITE_NOTADB"}


def _error_name(exc: sqlite3.Error) -> str:
    """SQLite's name of the error (``SQLITE_BUSY``...), else the exception's type."""
    code = _error_code(exc)
    return getattr(exc, "sqlite_errorname", None) or (_NAME_OF_CODE.get(code, "") if code is not None else "") or type(exc).__name__


class EmbeddingCache:
    """Get and put embedding vectors by (model key, text).

    One object can be shared by threads (one SQLite connection, used under a lock). A cache whose
    file or folder is read-only is used read-only: vectors found are returned, new ones are computed
    by the caller but not stored (one warning says so).
    """

    def __init__(self, path: Optional[os.PathLike | str] = None, timeout: float = 120.0):
        self.path = Path(path).expanduser() if path is not None else default_cache_path()
        #: How to move the cache elsewhere, for messages: the variable for the default location, else the argument.
        self._move = f"set {CACHE_ENV} to a writable folder" if path is None else "pass a writable cache path"
        self.timeout = timeout
        self.hits = self.misses = self.corrupt = 0
        self.read_only = False
        self._connection: Optional[sqlite3.Connection] = None
        self._opened = False
        self._lock = threading.RLock()
        #: Vectors read from the file and found whole (model -> key -> vector): a text asked for again (the documents
        #: every system re-ranks) is not read again; forgotten at READ_LIMIT bytes and when the file is cleared or replaced.
        self._read: dict[str, dict[bytes, np.ndarray]] = {}
        self._read_bytes = 0

    # -- connection -------------------------------------------------------------------------
    def _connect(self) -> Optional[sqlite3.Connection]:
        """The connection (opened on first use); ``None`` for a read-only location without a cache file."""
        with self._lock:
            if not self._opened:
                self._connection = self._open_checked()
                self._opened = True
            return self._connection

    def _open_checked(self) -> Optional[sqlite3.Connection]:
        if self.path.is_dir():
            raise EmbeddingCacheError(f"embedding cache {str(self.path)!r} is a directory; name a file, e.g. "
                                      f"{str(self.path / 'embeddings.sqlite')!r}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if not self.path.is_file():
                return self._read_only(f"its folder cannot be created ({exc})")
        if not os.access(self.path.parent, os.W_OK) or (self.path.exists() and not os.access(self.path, os.W_OK)):
            return self._read_only("the file or its folder is not writable")
        before = self._identity()
        try:
            return self._open()
        except sqlite3.DatabaseError as exc:
            if _error_code(exc) in _DAMAGED:
                return self._move_aside(exc, before)
            if _error_code(exc) in (_READONLY, _PERM) and self.path.is_file():
                return self._read_only(f"{_error_name(exc)}: {exc}")
            raise self._failure(exc, "open") from exc
        except OSError as exc:
            raise EmbeddingCacheError(f"cannot open embedding cache {str(self.path)!r}: {exc}") from exc

    def _open(self, uri: Optional[str] = None) -> sqlite3.Connection:
        """A connection to our database; a file that is another program's database is an error."""
        connection = sqlite3.connect(uri or self.path, timeout=self.timeout, isolation_level=None,
                                     check_same_thread=False, uri=uri is not None)
        try:
            tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and not _OUR_TABLES <= tables:
                raise EmbeddingCacheError(
                    f"{str(self.path)!r} is an SQLite database of another program (tables: {sorted(tables)}), not an "
                    "embedding cache; it was left untouched: pass another cache path or PAIRMEASURES_CACHE_DIR")
            if uri is None:
                self._use_wal(connection)
                connection.execute("PRAGMA synchronous=NORMAL")
                if not tables:  # one transaction: another process opening the file meanwhile sees all tables or none
                    connection.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}COMMIT;")
        except BaseException:
            connection.close()
            raise
        return connection

    def _use_wal(self, connection: sqlite3.Connection) -> None:
        """Switch a new file to WAL (a lasting property of the file). The switch takes an exclusive lock and SQLite
        reports it busy at once, without waiting, when another process opens the new file at the same moment: try
        again until the timeout."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    connection.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if _error_code(exc) != _BUSY or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _identity(self) -> Optional[tuple]:
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def _move_aside(self, exc: sqlite3.DatabaseError, before: Optional[tuple]) -> sqlite3.Connection:
        """Keep a file SQLite proved damaged under a name no other process uses, and start a new cache.

        If another process replaced the file meanwhile (its identity changed), the new file is opened instead.
        """
        if not _sqlite_header(self.path):
            raise EmbeddingCacheError(f"embedding cache {str(self.path)!r} is not an SQLite file ({exc}): it was left "
                                      "untouched; pass another cache path or PAIRMEASURES_CACHE_DIR") from exc
        if before is not None and self._identity() == before:
            broken = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-"
                                         f"{os.getpid()}-{secrets.token_hex(4)}")
            try:
                move_aside(self.path, broken)
                for suffix in ("-wal", "-shm"):  # a journal of the damaged file must not meet the new one
                    companion = self.path.with_name(self.path.name + suffix)
                    if companion.exists():
                        move_aside(companion, broken.with_name(broken.name + suffix))
            except OSError as error:
                raise EmbeddingCacheError(f"embedding cache {str(self.path)!r} is damaged ({exc}) and could not be "
                                          f"moved aside ({error}); move or delete it") from exc
            warnings.warn(f"embedding cache {str(self.path)!r} was unreadable ({_error_name(exc)}: {exc}); moved "
                          f"it to {str(broken)!r} and started a new one", RuntimeWarning, stacklevel=5)
        self._forget()  # nothing read from the old file stands for the new one
        try:
            return self._open()
        except sqlite3.DatabaseError as again:
            raise self._failure(again, "open") from again

    def _read_only(self, reason: str) -> Optional[sqlite3.Connection]:
        """Open an existing cache file read-only (``None`` without one); one warning says so."""
        self.read_only = True
        if not self.path.is_file():
            warnings.warn(f"embedding cache {str(self.path)!r} cannot be created ({reason}); embeddings are computed "
                          f"but not stored ({self._move} to keep them)", RuntimeWarning, stacklevel=5)
            return None
        from urllib.parse import quote

        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        try:
            try:
                connection = self._open(uri)
            except sqlite3.OperationalError as exc:  # a WAL file needs its -shm, which cannot be created here
                if _error_code(exc) != _CANTOPEN:
                    raise
                connection = self._open(uri + "&immutable=1")
        except sqlite3.DatabaseError as exc:
            raise self._failure(exc, "open read-only") from exc
        warnings.warn(f"embedding cache {str(self.path)!r} is read-only ({reason}): cached vectors are used, new ones "
                      f"are computed but not stored ({self._move} to keep them)", RuntimeWarning, stacklevel=5)
        return connection

    def _failure(self, exc: sqlite3.Error, doing: str) -> EmbeddingCacheError:
        """An error naming the file, SQLite's error and what to do; the file is left as it is."""
        code, name = _error_code(exc), _error_name(exc)
        advice = _ADVICE.get(code) if code is not None else None
        if code in _DAMAGED:
            advice = "the file is damaged; move or delete it (a new cache is started on next use)"
        return EmbeddingCacheError(f"embedding cache {str(self.path)!r}: could not {doing} ({name}: {exc})"
                                   + (f"; {advice}" if advice else "") + "; the file was left as it is")

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
            self._connection = None
            self._opened = False

    def __enter__(self) -> "EmbeddingCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- entries -----------------------------------------------------------------------------
    def register_model(self, model: str, description: str) -> None:
        """Record a human-readable description of a model key (shown by :meth:`stats`)."""
        with self._lock:
            connection = self._connect()
            if self.read_only or connection is None:
                return
            self._execute(connection, "record a model", sqlite3.Connection.execute,
                          "INSERT OR IGNORE INTO models (model, description, created) VALUES (?, ?, ?)",
                          (model, description, time.time()))

    def get(self, model: str, keys: Sequence[bytes]) -> dict:
        """Vectors found for ``keys`` (a dict key -> float32 vector, read-only); missing and corrupt ones are absent."""
        found: dict = {}
        with self._lock:
            read = self._read.setdefault(model, {})
            distinct = list(dict.fromkeys(keys))
            unique = []
            for key in distinct:
                vector = read.get(key)
                if vector is None:
                    unique.append(key)
                else:
                    found[key] = vector
            connection = self._connect() if unique else None
            getlimit, limit = getattr(connection, "getlimit", None), getattr(sqlite3, "SQLITE_LIMIT_VARIABLE_NUMBER", None)
            batch = min(getlimit(limit) - 1, _MAX_BATCH) if getlimit and limit is not None else _BATCH  # Python 3.11+
            fresh: dict = {}
            for start in range(0, len(unique), batch):
                if connection is None:  # a read-only location without a cache file: nothing stored
                    break
                chunk = unique[start:start + batch]
                rows = self._execute(connection, "read", self._select, model, chunk)
                for key, dim, blob, crc in rows:
                    if not isinstance(blob, bytes) or len(blob) != 4 * dim or zlib.crc32(blob) != crc:
                        self.corrupt += 1
                        continue
                    fresh[key] = np.frombuffer(blob, dtype="<f4")
            self._remember(model, fresh)
            found.update(fresh)
            self.hits += len(found)
            self.misses += len(distinct) - len(found)
        return found

    def _remember(self, model: str, fresh: dict) -> None:
        """Keep the vectors just read (forgetting everything first when they would pass :data:`READ_LIMIT`)."""
        size = sum(vector.nbytes + 100 for vector in fresh.values())
        if self._read_bytes + size > READ_LIMIT:
            self._forget()
        self._read.setdefault(model, {}).update(fresh)
        self._read_bytes += size

    def _forget(self) -> None:
        """Drop the vectors kept in memory (the file was cleared or replaced, or the memory is full)."""
        self._read, self._read_bytes = {}, 0

    def put(self, model: str, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        """Store vectors (replacing any entry with the same key) in one transaction; nothing in a read-only cache."""
        rows = []
        for key, vector in items:
            blob = np.ascontiguousarray(vector, dtype="<f4").tobytes()
            rows.append((model, key, len(blob) // 4, blob, zlib.crc32(blob)))
        if not rows:
            return
        rows.sort(key=lambda row: row[1])  # in key order: the B-tree's pages are touched once each (1.6x the rows/s)
        with self._lock:
            connection = self._connect()
            if self.read_only or connection is None:
                return
            self._execute(connection, "store vectors", self._write, rows)

    @staticmethod
    def _model_rows(connection: sqlite3.Connection) -> list:
        return connection.execute(
            "SELECT e.model, COALESCE(m.description, '?'), COUNT(*), MAX(e.dim) FROM embeddings e "
            "LEFT JOIN models m ON m.model = e.model GROUP BY e.model ORDER BY COUNT(*) DESC").fetchall()

    @staticmethod
    def _select(connection: sqlite3.Connection, model: str, keys: list) -> list:
        marks = ",".join("?" * len(keys))
        return connection.execute(
            f"SELECT text_key, dim, vector, crc FROM embeddings WHERE model = ? AND text_key IN ({marks})",
            (model, *keys)).fetchall()

    @staticmethod
    def _write(connection: sqlite3.Connection, rows: list) -> None:
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.executemany(
                "INSERT OR REPLACE INTO embeddings (model, text_key, dim, vector, crc) VALUES (?, ?, ?, ?, ?)", rows)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    def _execute(self, connection: sqlite3.Connection, doing: str, action, *args):
        """``action(connection, *args)``; an SQLite error becomes an :class:`EmbeddingCacheError` naming the file."""
        try:
            return action(connection, *args)
        except sqlite3.Error as exc:
            raise self._failure(exc, doing) from exc

    # -- maintenance -------------------------------------------------------------------------
    def stats(self) -> CacheStats:
        """Entries per model and the file's size."""
        with self._lock:
            connection = self._connect()
            rows = [] if connection is None else self._execute(connection, "read", self._model_rows)
            hits, misses, corrupt = self.hits, self.misses, self.corrupt
        models = [{"model": m, "description": d, "entries": n, "dim": dim} for m, d, n, dim in rows]
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*")
                   if p.is_file() and ".corrupt-" not in p.name)
        return CacheStats(path=self.path, bytes_on_disk=size, models=models, hits=hits, misses=misses, corrupt=corrupt)

    def clear(self, model: Optional[str] = None) -> int:
        """Delete every entry (or those of the model key ``model``) and shrink the file; returns the number removed."""
        with self._lock:
            self._forget()
            connection = self._connect()
            if self.read_only or connection is None:
                raise EmbeddingCacheError(f"embedding cache {str(self.path)!r} is read-only; nothing can be cleared")

            def delete(connection: sqlite3.Connection) -> int:
                if model is None:
                    removed = connection.execute("DELETE FROM embeddings").rowcount
                    connection.execute("DELETE FROM models")
                else:
                    removed = connection.execute("DELETE FROM embeddings WHERE model = ?", (model,)).rowcount
                    connection.execute("DELETE FROM models WHERE model = ?", (model,))
                connection.execute("VACUUM")
                return removed

            return self._execute(connection, "clear", delete)
