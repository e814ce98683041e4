"""A persistent cache of text embeddings, keyed by (model identity, normalisation, exact text).

One SQLite file (default ``~/.cache/pairmeasures/embeddings.sqlite``; ``PAIRMEASURES_CACHE_DIR``
or ``XDG_CACHE_HOME`` move it). Every write is a transaction, so an interrupted job leaves whole
entries or none; WAL journalling and a busy timeout let several processes read and write at
once. Vectors are stored as raw little-endian float32 bytes with their dimension and a CRC32,
never pickled: an entry whose length or checksum does not match is reported as missing, so the
caller recomputes and overwrites it instead of returning garbage. A cache file that is not a
database at all is moved aside (kept, renamed) and a fresh one started.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np

__all__ = ["EmbeddingCache", "CacheStats", "default_cache_path", "text_key"]

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

_BATCH = 500  # keys per SELECT (well under SQLite's variable limit)


def default_cache_path() -> Path:
    """Where the embedding cache lives unless told otherwise."""
    if os.environ.get("PAIRMEASURES_CACHE_DIR"):
        return Path(os.environ["PAIRMEASURES_CACHE_DIR"]).expanduser() / "embeddings.sqlite"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pairmeasures" / "embeddings.sqlite"


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
    """Get and put embedding vectors by (model key, text)."""

    def __init__(self, path: Optional[os.PathLike | str] = None, timeout: float = 120.0):
        self.path = Path(path).expanduser() if path is not None else default_cache_path()
        self.timeout = timeout
        self.hits = self.misses = self.corrupt = 0
        self._connection: Optional[sqlite3.Connection] = None

    # -- connection -------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._connection = self._open()
        except sqlite3.DatabaseError as exc:
            broken = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            self.path.replace(broken)
            warnings.warn(f"embedding cache {str(self.path)!r} was unreadable ({exc}); moved it to "
                          f"{str(broken)!r} and started a new one", RuntimeWarning, stacklevel=3)
            self._connection = self._open()
        return self._connection

    def _open(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.executescript(_SCHEMA)
        except sqlite3.DatabaseError:
            connection.close()
            raise
        return connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> "EmbeddingCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- entries -----------------------------------------------------------------------------
    def register_model(self, model: str, description: str) -> None:
        """Record a human-readable description of a model key (shown by :meth:`stats`)."""
        connection = self._connect()
        connection.execute("INSERT OR IGNORE INTO models (model, description, created) VALUES (?, ?, ?)",
                           (model, description, time.time()))

    def get(self, model: str, keys: Sequence[bytes]) -> dict:
        """Vectors found for ``keys`` (a dict key -> float32 vector); missing and corrupt ones are absent."""
        connection = self._connect()
        found: dict = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), _BATCH):
            chunk = unique[start:start + _BATCH]
            marks = ",".join("?" * len(chunk))
            rows = connection.execute(
                f"SELECT text_key, dim, vector, crc FROM embeddings WHERE model = ? AND text_key IN ({marks})",
                (model, *chunk),
            ).fetchall()
            for key, dim, blob, crc in rows:
                if not isinstance(blob, bytes) or len(blob) != 4 * dim or zlib.crc32(blob) != crc:
                    self.corrupt += 1
                    continue
                found[key] = np.frombuffer(blob, dtype="<f4")
        self.hits += len(found)
        self.misses += len(unique) - len(found)
        return found

    def put(self, model: str, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        """Store vectors (replacing any entry with the same key) in one transaction."""
        rows = []
        for key, vector in items:
            blob = np.ascontiguousarray(vector, dtype="<f4").tobytes()
            rows.append((model, key, len(blob) // 4, blob, zlib.crc32(blob)))
        if not rows:
            return
        connection = self._connect()
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.executemany(
                "INSERT OR REPLACE INTO embeddings (model, text_key, dim, vector, crc) VALUES (?, ?, ?, ?, ?)", rows)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    # -- maintenance -------------------------------------------------------------------------
    def stats(self) -> CacheStats:
        """Entries per model and the file's size."""
        connection = self._connect()
        rows = connection.execute(
            "SELECT e.model, COALESCE(m.description, '?'), COUNT(*), MAX(e.dim) FROM embeddings e "
            "LEFT JOIN models m ON m.model = e.model GROUP BY e.model ORDER BY COUNT(*) DESC").fetchall()
        models = [{"model": m, "description": d, "entries": n, "dim": dim} for m, d, n, dim in rows]
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*")
                   if p.is_file() and ".corrupt-" not in p.name)
        return CacheStats(path=self.path, bytes_on_disk=size, models=models, hits=self.hits, misses=self.misses,
                          corrupt=self.corrupt)

    def clear(self, model: Optional[str] = None) -> int:
        """Delete every entry (or one model's) and shrink the file; returns the number removed."""
        connection = self._connect()
        if model is None:
            removed = connection.execute("DELETE FROM embeddings").rowcount
            connection.execute("DELETE FROM models")
        else:
            removed = connection.execute("DELETE FROM embeddings WHERE model = ?", (model,)).rowcount
            connection.execute("DELETE FROM models WHERE model = ?", (model,))
        connection.execute("VACUUM")
        return removed
