"""The SQLite file of the embedding cache: made, checked and opened, or refused, never touched on a guess.

:class:`CacheFile` opens the file :class:`~pairmeasures.compute.cache.EmbeddingCache` reads and writes. A new file
gets the cache's tables (:data:`FORMAT`, on pages of 64 KiB) in one transaction and WAL journalling; an existing
one must be a cache of this format. Only a file that SQLite itself finds is not a database, or damaged, is moved
aside (kept, under a name unique to the process) and a fresh one started, and likewise, once, a cache of the first
format (its exact tables and columns prove it is one). A locked, unopenable or failing file is an
:class:`EmbeddingCacheError` naming it and SQLite's error; a read-only file or folder is opened read-only; a
directory, an SQLite database of another program or a cache of a newer format is an error, left untouched.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import time
import warnings
from pathlib import Path
from typing import Optional

from .._owned import move_aside
from ..io.memo import CacheWarning

__all__ = ["CacheFile", "EmbeddingCacheError", "EmbeddingCacheWarning", "FORMAT", "SCHEMA"]

#: The format this module writes (SQLite's ``user_version``); the first format had no number and a table ``embeddings``.
FORMAT = 2
_PAGE_SIZE = 65536  # a block of 1,024 vectors of 384 floats spans 24 pages, not 384
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS models (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    model TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS blocks (
    id INTEGER PRIMARY KEY,
    model INTEGER NOT NULL,
    dim INTEGER NOT NULL,
    rows INTEGER NOT NULL,
    vectors BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY,
    block INTEGER NOT NULL,
    row INTEGER NOT NULL,
    crc INTEGER NOT NULL
);
PRAGMA user_version = {FORMAT};
"""
#: The tables of the first format and their columns: a file of exactly these is a cache this module wrote.
_FIRST_FORMAT = {"models": ["model", "description", "created"],
                 "embeddings": ["model", "text_key", "dim", "vector", "crc"]}


def _sqlite_header(path: Path) -> bool:
    """Whether ``path`` begins as every SQLite file does (a damaged cache may be moved aside; another file never)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\0"
    except OSError:
        return False


class EmbeddingCacheWarning(CacheWarning, RuntimeWarning):
    """The cache file was moved aside (damaged, or of the first format) or is used read-only: vectors are computed
    again, or not stored. A :class:`~pairmeasures.io.memo.CacheWarning`, which the commands always show."""


class EmbeddingCacheError(RuntimeError):
    """The embedding cache file cannot be used; the message names it and says what to do."""


class _EarlierFormat(Exception):
    """Raised by ``_open`` for a cache of the first format."""


_OUR_TABLES = {"models", "blocks", "entries"}
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


class CacheFile:
    """The cache's SQLite file at ``path``: :meth:`open` gives the connection (``timeout``: how long to wait for
    another process's lock); ``move`` says, in messages, how to put the cache elsewhere. ``read_only`` is set when
    the file or its folder cannot be written (it is then opened read-only, one warning saying so)."""

    def __init__(self, path: Path, timeout: float, move: str):
        self.path, self.timeout, self._move = path, timeout, move
        self.read_only = False

    def open(self) -> Optional[sqlite3.Connection]:
        """A connection to the cache file, made or checked (the module docstring); ``None`` for a read-only location
        without a cache file."""
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
        except _EarlierFormat:
            return self._retire_earlier_format(before)
        except sqlite3.DatabaseError as exc:
            if _error_code(exc) in _DAMAGED:
                return self._move_aside(exc, before)
            if _error_code(exc) in (_READONLY, _PERM) and self.path.is_file():
                return self._read_only(f"{_error_name(exc)}: {exc}")
            raise self.failure(exc, "open") from exc
        except OSError as exc:
            raise EmbeddingCacheError(f"cannot open embedding cache {str(self.path)!r}: {exc}") from exc

    def _open(self, uri: Optional[str] = None) -> sqlite3.Connection:
        """A connection to our database; a file that is another program's database is an error."""
        connection = sqlite3.connect(uri or self.path, timeout=self.timeout, isolation_level=None,
                                     check_same_thread=False, uri=uri is not None)
        try:
            tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables == set(_FIRST_FORMAT) and all(
                    [column[1] for column in connection.execute(f"PRAGMA table_info({table})")] == columns
                    for table, columns in _FIRST_FORMAT.items()):
                raise _EarlierFormat()
            if tables and not _OUR_TABLES <= tables:
                raise EmbeddingCacheError(
                    f"{str(self.path)!r} is an SQLite database of another program (tables: {sorted(tables)}), not an "
                    "embedding cache; it was left untouched: pass another cache path or PAIRMEASURES_CACHE_DIR")
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            if tables and version != FORMAT:
                raise EmbeddingCacheError(
                    f"embedding cache {str(self.path)!r} is of format {version}, and this pairmeasures reads format "
                    f"{FORMAT}; it was left untouched: use the pairmeasures that wrote it, or another cache path or "
                    "PAIRMEASURES_CACHE_DIR")
            if uri is None:
                if not tables:  # a new file: its page size is set before anything is written (WAL fixes it)
                    connection.execute(f"PRAGMA page_size={_PAGE_SIZE}")
                self._use_wal(connection)
                connection.execute("PRAGMA synchronous=NORMAL")
                # the journal is copied into the file every 256 MiB, not every 64 MiB: 1.3x the vectors a second
                connection.execute(f"PRAGMA wal_autocheckpoint={2**28 // _PAGE_SIZE}")
                if not tables:  # one transaction: another process opening the file meanwhile sees all tables or none
                    connection.executescript(f"BEGIN IMMEDIATE;{SCHEMA}COMMIT;")
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

    def _keep_aside(self, before: Optional[tuple], kind: str) -> Optional[Path]:
        """Move the cache file (and its WAL journal) to ``<name>.<kind>-<time>-<pid>-<random>``, a name no other
        process uses; ``None`` if another process replaced the file meanwhile (its identity changed): then nothing
        is moved and the new file is opened instead. An OSError if it cannot be moved."""
        if before is None or self._identity() != before:
            return None
        kept = self.path.with_name(f"{self.path.name}.{kind}-{time.strftime('%Y%m%d-%H%M%S')}-"
                                   f"{os.getpid()}-{secrets.token_hex(4)}")
        move_aside(self.path, kept)
        for suffix in ("-wal", "-shm"):  # a journal of the file kept aside must not meet the new one
            companion = self.path.with_name(self.path.name + suffix)
            if companion.exists():
                move_aside(companion, kept.with_name(kept.name + suffix))
        return kept

    def _move_aside(self, exc: sqlite3.DatabaseError, before: Optional[tuple]) -> sqlite3.Connection:
        """Keep a file SQLite proved damaged under a name no other process uses, and start a new cache."""
        if not _sqlite_header(self.path):
            raise EmbeddingCacheError(f"embedding cache {str(self.path)!r} is not an SQLite file ({exc}): it was left "
                                      "untouched; pass another cache path or PAIRMEASURES_CACHE_DIR") from exc
        try:
            broken = self._keep_aside(before, "corrupt")
        except OSError as error:
            raise EmbeddingCacheError(f"embedding cache {str(self.path)!r} is damaged ({exc}) and could not be "
                                      f"moved aside ({error}); move or delete it") from exc
        if broken is not None:
            warnings.warn(f"embedding cache {str(self.path)!r} was unreadable ({_error_name(exc)}: {exc}); moved "
                          f"it to {str(broken)!r} and started a new one", EmbeddingCacheWarning, stacklevel=5)
        try:
            return self._open()
        except sqlite3.DatabaseError as again:
            raise self.failure(again, "open") from again

    def _retire_earlier_format(self, before: Optional[tuple]) -> sqlite3.Connection:
        """Keep a cache of the first format (ours: its tables say so) aside and start a new one; its vectors are
        computed again as they are asked for."""
        try:
            kept = self._keep_aside(before, "format1")
        except OSError as error:
            raise EmbeddingCacheError(f"embedding cache {str(self.path)!r} is of an earlier format and could not be "
                                      f"moved aside ({error}); move or delete it") from None
        if kept is not None:
            warnings.warn(f"embedding cache {str(self.path)!r} was of an earlier format; moved it to {str(kept)!r} "
                          "(delete it when you like) and started a new one: its vectors are computed again as they are "
                          "needed", EmbeddingCacheWarning, stacklevel=5)
        try:
            return self._open()
        except sqlite3.DatabaseError as again:
            raise self.failure(again, "open") from again

    def _read_only(self, reason: str) -> Optional[sqlite3.Connection]:
        """Open an existing cache file read-only (``None`` without one); one warning says so."""
        self.read_only = True
        if not self.path.is_file():
            warnings.warn(f"embedding cache {str(self.path)!r} cannot be created ({reason}); embeddings are computed "
                          f"but not stored ({self._move} to keep them)", EmbeddingCacheWarning, stacklevel=5)
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
        except _EarlierFormat:
            warnings.warn(f"embedding cache {str(self.path)!r} is read-only ({reason}) and of an earlier format, "
                          f"which is not read: embeddings are computed but not stored ({self._move} to keep them)",
                          EmbeddingCacheWarning, stacklevel=5)
            return None
        except sqlite3.DatabaseError as exc:
            raise self.failure(exc, "open read-only") from exc
        warnings.warn(f"embedding cache {str(self.path)!r} is read-only ({reason}): cached vectors are used, new ones "
                      f"are computed but not stored ({self._move} to keep them)", EmbeddingCacheWarning, stacklevel=5)
        return connection

    def failure(self, exc: sqlite3.Error, doing: str) -> EmbeddingCacheError:
        """An error naming the file, SQLite's error and what to do; the file is left as it is."""
        code, name = _error_code(exc), _error_name(exc)
        advice = _ADVICE.get(code) if code is not None else None
        if code in _DAMAGED:
            advice = "the file is damaged; move or delete it (a new cache is started on next use)"
        return EmbeddingCacheError(f"embedding cache {str(self.path)!r}: could not {doing} ({name}: {exc})"
                                   + (f"; {advice}" if advice else "") + "; the file was left as it is")
