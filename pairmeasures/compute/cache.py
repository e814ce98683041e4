"""A persistent cache of text embeddings, keyed by (model identity, exact text).

It holds the model's raw vectors: normalising is done on reading, so both settings share entries.

One SQLite file (default ``~/.cache/pairmeasures/embeddings.sqlite``; ``PAIRMEASURES_CACHE_DIR``
or ``XDG_CACHE_HOME`` move it). Every write is a transaction, so an interrupted job leaves whole
entries or none; WAL journalling and a busy timeout let several processes read and write at
once. Vectors are stored as raw little-endian float32 bytes, never pickled, and each carries a CRC32 over the model,
its text's key and its bytes: an entry whose length or checksum does not match is reported as missing, so the
caller recomputes and overwrites it instead of returning garbage.

The layout is made for the writer's rate (>= 100,000 vectors of 384 floats a second: benchmarks/embedding_cache.py).
A write is one *block*: the vectors of one ``put``, as one contiguous blob (``blocks``), plus one small row per
vector (``entries``: the block, the row in it and the checksum) whose integer id is the first 8 bytes of the text's
SHA-256 key mixed with the model's. An id is not the whole key, so the checksum, which covers the model and the
whole key, decides whether a row found is the one asked for (two keys with one id are a miss, recomputed: at ten
million texts a one-in-300,000 chance). Storing one vector a row with its 32-byte key as the primary key, as the
first format did, wrote about 9,000 vectors a second (benchmarks/embedding_cache.py, same run); SQLite's B-tree
cost per row is the ceiling, so the rows are made as small as they can be and the vectors go in whole blocks on
64 KiB pages. A vector read is a slice of its block's blob (incremental blob I/O).

The file itself, its format and what is done with a file that is not a sound cache of this format (moved aside
only when SQLite finds it damaged or it is a cache of the first format; else an error, left untouched) are
:mod:`~pairmeasures.compute.cachefile`'s. A read-only file or folder is used read-only.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
import zlib
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np

from ..io.memo import CACHE_ENV, cache_root
from .cachefile import CacheFile, EmbeddingCacheError, EmbeddingCacheWarning

__all__ = ["EmbeddingCache", "EmbeddingCacheError", "EmbeddingCacheWarning", "CacheStats", "default_cache_path", "text_key"]

_BATCH = 500  # keys per SELECT where SQLite's limit on bound variables is unknown (Python < 3.11; 999 in old SQLite)
_MAX_BATCH = 8000  # keys per SELECT at most: larger batches read no faster
#: Bytes of vectors an :class:`EmbeddingCache` keeps in memory once read (about 80,000 vectors of 384 floats).
READ_LIMIT = 128 * 2**20


def _model_mix(model: str) -> tuple:
    """What a model adds to its entries: a 64-bit number mixed into their ids, and the start of their checksums."""
    raw = model.encode("utf-8")
    return int.from_bytes(hashlib.sha256(raw).digest()[:8], "little", signed=True), zlib.crc32(raw)


def _entry_ids(keys: Sequence[bytes], mix: int) -> list:
    """The entry ids of ``keys`` for a model of ``mix``: their first 8 bytes as a signed integer, xor the model's."""
    return [int.from_bytes(key[:8], "little", signed=True) ^ mix for key in keys]


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
        self._file = CacheFile(self.path, timeout, self._move)
        self._connection: Optional[sqlite3.Connection] = None
        self._opened = False
        self._lock = threading.RLock()
        #: Vectors read from the file and found whole (model -> key -> vector): a text asked for again (the documents
        #: every system re-ranks) is not read again; forgotten at READ_LIMIT bytes, and when the file is cleared or
        #: closed (a file opened again may be another one).
        self._read: dict[str, dict[bytes, np.ndarray]] = {}
        self._read_bytes = 0

    @property
    def read_only(self) -> bool:
        """Whether the cache is used read-only (its file or folder cannot be written): nothing is stored."""
        return self._file.read_only

    # -- connection -------------------------------------------------------------------------
    def _connect(self) -> Optional[sqlite3.Connection]:
        """The connection (opened on first use); ``None`` for a read-only location without a cache file."""
        with self._lock:
            if not self._opened:
                self._connection = self._file.open()
                self._opened = True
            return self._connection

    def close(self) -> None:
        with self._lock:
            self._forget()
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
            self._execute(connection, "record a model", self._model_id, model, description)

    @staticmethod
    def _model_id(connection: sqlite3.Connection, model: str, description: Optional[str] = None,
                  create: bool = True) -> Optional[int]:
        """The row id of ``model`` in ``models``, recorded (with ``description``, else its key) if missing and
        ``create``; ``None`` for a model never recorded."""
        if create:
            connection.execute("INSERT OR IGNORE INTO models (model, description, created) VALUES (?, ?, ?)",
                               (model, description or model, time.time()))
        row = connection.execute("SELECT id FROM models WHERE model = ?", (model,)).fetchone()
        return None if row is None else row[0]

    def get(self, model: str, keys: Sequence[bytes]) -> dict:
        """Vectors found for ``keys`` (a dict key -> float32 vector, read-only); missing and corrupt ones are absent."""
        found: dict = {}
        distinct = list(dict.fromkeys(keys))
        with self._lock:
            kept = self._read.get(model, {})
            unique = []
            for key in distinct:
                vector = kept.get(key)
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
                self._execute(connection, "read", self._read_entries, model, unique[start:start + batch], fresh)
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
        """Drop the vectors kept in memory (the file was cleared or closed, or the memory is full)."""
        self._read, self._read_bytes = {}, 0

    def _read_entries(self, connection: sqlite3.Connection, model: str, keys: list, found: dict) -> None:
        """Add the vectors of ``keys`` that are whole to ``found``, in one read transaction (one snapshot of the
        file: every block an entry names is there to read); an entry that fails its checksum counts as corrupt."""
        mix, start_crc = _model_mix(model)
        ids = _entry_ids(keys, mix)
        key_of = dict(zip(ids, keys))
        connection.execute("BEGIN")
        try:
            model_id = self._model_id(connection, model, create=False)
            if model_id is None:
                return
            rows = connection.execute(
                "SELECT e.id, e.block, e.row, e.crc, b.dim FROM entries e JOIN blocks b ON b.id = e.block WHERE "
                f"b.model = ? AND e.id IN ({','.join('?' * len(ids))}) ORDER BY e.block, e.row",
                (model_id, *ids)).fetchall()
            for block, group in groupby(rows, key=itemgetter(1)):
                entries = list(group)
                blobs = self._slices(connection, block, [(row, dim) for _, _, row, _, dim in entries])
                for (entry, _, _, crc, dim), blob in zip(entries, blobs):
                    key = key_of[entry]
                    if len(blob) == 4 * dim and zlib.crc32(blob, zlib.crc32(key, start_crc)) == crc:
                        found[key] = np.frombuffer(blob, dtype="<f4")
                    else:
                        self.corrupt += 1
        finally:
            connection.execute("COMMIT")

    @staticmethod
    def _slices(connection: sqlite3.Connection, block: int, rows: list) -> list:
        """The bytes of the vectors ``rows`` (``(row, dim)`` pairs, in order) of a block: slices of its blob, read
        in place (Python >= 3.11), else cut from the whole blob; a blob that cannot be read gives empty slices."""
        blobopen = getattr(connection, "blobopen", None)
        try:
            if blobopen is None:
                (data,) = connection.execute("SELECT vectors FROM blocks WHERE id = ?", (block,)).fetchone()
                data = data if isinstance(data, bytes) else b""
                return [data[row * 4 * dim:(row + 1) * 4 * dim] for row, dim in rows]
            out = []
            with blobopen("blocks", "vectors", block, readonly=True) as blob:
                size = len(blob)
                for row, dim in rows:
                    blob.seek(min(row * 4 * dim, size))
                    out.append(blob.read(4 * dim))
            return out
        except sqlite3.OperationalError:  # the value is no blob (a damaged row): the entries are corrupt
            return [b""] * len(rows)

    def put(self, model: str, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        """Store vectors (replacing any entry with the same key) in one transaction; nothing in a read-only cache."""
        by_dim: dict = {}
        for key, vector in items:
            vector = np.asarray(vector, dtype="<f4").ravel()
            keys, vectors = by_dim.setdefault(vector.shape[0], ([], []))
            keys.append(key)
            vectors.append(vector)
        for keys, vectors in by_dim.values():
            self.put_block(model, keys, np.stack(vectors))

    def put_block(self, model: str, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Store the rows of ``vectors`` (a float32 matrix) as the vectors of ``keys``, as one block in one
        transaction (an entry with the same key is replaced); nothing in a read-only cache."""
        vectors = np.ascontiguousarray(vectors, dtype="<f4")
        if vectors.ndim != 2 or len(vectors) != len(keys):
            raise ValueError(f"{len(keys)} keys but vectors of shape {vectors.shape}")
        if not len(keys):
            return
        data, width = vectors.tobytes(), 4 * vectors.shape[1]
        view = memoryview(data)
        mix, start_crc = _model_mix(model)
        crcs = [zlib.crc32(view[row * width:(row + 1) * width], zlib.crc32(key, start_crc))
                for row, key in enumerate(keys)]
        ids = _entry_ids(keys, mix)
        # in id order: the B-tree's pages are each touched once (1.6x the rows a second)
        entries = sorted(zip(ids, range(len(ids)), crcs))
        with self._lock:
            connection = self._connect()
            if self.read_only or connection is None:
                return
            self._execute(connection, "store vectors", self._write, model, vectors.shape[1], data, entries)

    def _write(self, connection: sqlite3.Connection, model: str, dim: int, data: bytes, entries: list) -> None:
        connection.execute("BEGIN IMMEDIATE")
        try:
            model_id = self._model_id(connection, model)
            block = connection.execute("INSERT INTO blocks (model, dim, rows, vectors) VALUES (?, ?, ?, ?)",
                                       (model_id, dim, len(entries), data)).lastrowid
            connection.executemany("INSERT OR REPLACE INTO entries (id, block, row, crc) VALUES (?, ?, ?, ?)",
                                   [(entry, block, row, crc) for entry, row, crc in entries])
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    @staticmethod
    def _model_rows(connection: sqlite3.Connection) -> list:
        return connection.execute(
            "SELECT m.model, m.description, COUNT(*), MAX(b.dim) FROM entries e JOIN blocks b ON b.id = e.block "
            "JOIN models m ON m.id = b.model GROUP BY m.id ORDER BY COUNT(*) DESC").fetchall()

    def _execute(self, connection: sqlite3.Connection, doing: str, action, *args):
        """``action(connection, *args)``; an SQLite error becomes an :class:`EmbeddingCacheError` naming the file."""
        try:
            return action(connection, *args)
        except sqlite3.Error as exc:
            raise self._file.failure(exc, doing) from exc

    # -- maintenance -------------------------------------------------------------------------
    def stats(self) -> CacheStats:
        """Entries per model and the file's size."""
        with self._lock:
            connection = self._connect()
            rows = [] if connection is None else self._execute(connection, "read", self._model_rows)
            hits, misses, corrupt = self.hits, self.misses, self.corrupt
        models = [{"model": m, "description": d, "entries": n, "dim": dim} for m, d, n, dim in rows]
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*")
                   if p.is_file() and ".corrupt-" not in p.name and ".format1-" not in p.name)
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
                    removed = connection.execute("DELETE FROM entries").rowcount
                    connection.execute("DELETE FROM blocks")
                    connection.execute("DELETE FROM models")
                else:
                    ours = "SELECT b.id FROM blocks b JOIN models m ON m.id = b.model WHERE m.model = ?"
                    removed = connection.execute(f"DELETE FROM entries WHERE block IN ({ours})", (model,)).rowcount
                    connection.execute(f"DELETE FROM blocks WHERE id IN ({ours})", (model,))
                    connection.execute("DELETE FROM models WHERE model = ?", (model,))
                connection.execute("VACUUM")
                return removed

            return self._execute(connection, "clear", delete)
