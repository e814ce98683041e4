"""Shards of embedding vectors on disk: what parallel workers write and the one cache writer merges.

A shard is a fixed set of texts (their :func:`~pairmeasures.sideinfo.cache.text_key`), named by a hash of
its keys, so the same texts always make the same shard. A worker writes three files into the store's folder:
``<id>.npy`` (the model's raw float32 vectors, one row per key), ``<id>.keys`` (the 32-byte keys, in the same
order) and, last, ``<id>.done`` (JSON: rows, dimension and the SHA-256 of the two other files). Each file is
written under a temporary name and renamed, so a killed worker leaves no ``.done`` file and its shard counts as
not written. A shard whose ``.done`` is missing, unreadable or disagrees with its files (a wrong row count, a
truncated or changed file, a vector that is not finite) is not valid: :meth:`ShardStore.recover` deletes it
and its texts are embedded again.

The driver alone merges shards into the :class:`~pairmeasures.sideinfo.cache.EmbeddingCache` (one writer of
the SQLite file), then deletes them: a shard is in the cache or on disk, never lost between the two.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Iterator, NamedTuple, Optional, Sequence

import numpy as np

from .cache import EmbeddingCache, default_cache_path
from .memo import sha256_file

__all__ = ["Shard", "ShardStore", "ShardError", "plan_shards", "shard_id", "default_shard_folder", "store_for"]

_KEY = 32  # bytes of a text key (SHA-256)


class ShardError(ValueError):
    """A shard file that is missing, damaged or disagrees with its record; the message names the file."""


class Shard(NamedTuple):
    """A shard to embed: its id, its texts' keys and the texts, in the same order."""

    id: str
    keys: list
    texts: list


def shard_id(keys: Sequence[bytes]) -> str:
    """The name of the shard of ``keys`` (in that order): the first 32 hex digits of a SHA-256 over them."""
    digest = hashlib.sha256()
    for key in keys:
        digest.update(key)
    return digest.hexdigest()[:32]


def plan_shards(keys: Sequence[bytes], texts: Sequence[str], size: int) -> list:
    """``keys``/``texts`` cut into :class:`Shard` objects of ``size`` texts (the last one shorter), in order."""
    if size < 1:
        raise ValueError(f"a shard holds at least one text; got size {size}")
    return [Shard(shard_id(keys[start:start + size]), list(keys[start:start + size]), list(texts[start:start + size]))
            for start in range(0, len(keys), size)]


def default_shard_folder(model_key: str) -> Path:
    """Where shards of the model with cache key ``model_key`` are written by default: ``shards/<key>`` beside the
    embedding cache (in ``$PAIRMEASURES_CACHE_DIR``, else ``~/.cache/pairmeasures``)."""
    return default_cache_path().parent / "shards" / model_key[:32]



def _write_atomic(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temporary.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


class ShardStore:
    """The shards of one model in ``folder`` (created on first write). Safe to share between processes: every
    file appears whole, by a rename."""

    def __init__(self, folder: "str | os.PathLike"):
        self.folder = Path(folder).expanduser()

    def __repr__(self) -> str:
        return f"ShardStore({str(self.folder)!r})"

    def _files(self, shard: str) -> tuple:
        return tuple(self.folder / f"{shard}.{suffix}" for suffix in ("npy", "keys", "done"))

    def write(self, shard: str, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Write the vectors of ``keys`` as shard ``shard``; its ``.done`` record is written last."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(keys):
            raise ShardError(f"shard {shard}: {len(keys)} keys but vectors of shape {vectors.shape}")
        self.folder.mkdir(parents=True, exist_ok=True)
        npy, keys_file, done = self._files(shard)
        temporary = npy.with_name(f".{npy.name}.{os.getpid()}.tmp.npy")
        np.save(temporary, vectors, allow_pickle=False)
        os.replace(temporary, npy)
        _write_atomic(keys_file, b"".join(keys))
        record = {"rows": len(keys), "dim": int(vectors.shape[1]), "npy": sha256_file(npy), "keys": sha256_file(keys_file)}
        _write_atomic(done, json.dumps(record).encode())

    def finished(self) -> list:
        """The ids of the shards whose ``.done`` record exists (valid or not: :meth:`read` checks), sorted."""
        if not self.folder.is_dir():
            return []
        return sorted(path.stem for path in self.folder.glob("*.done"))

    def read(self, shard: str) -> tuple:
        """``(keys, vectors)`` of a finished shard, checked against its record; a :class:`ShardError` otherwise."""
        npy, keys_file, done = self._files(shard)
        try:
            record = json.loads(done.read_text())
            rows, dim = int(record["rows"]), int(record["dim"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ShardError(f"shard record {done} is missing or unreadable ({exc})") from None
        for path, field in ((npy, "npy"), (keys_file, "keys")):
            if not path.is_file() or sha256_file(path) != record.get(field):
                raise ShardError(f"shard file {path} is missing or changed since it was written (checksum differs)")
        raw = keys_file.read_bytes()
        if len(raw) != rows * _KEY:
            raise ShardError(f"shard file {keys_file} holds {len(raw) // _KEY} keys; its record says {rows}")
        try:
            vectors = np.load(npy, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ShardError(f"shard file {npy} is damaged ({exc})") from None
        if vectors.shape != (rows, dim) or vectors.dtype != np.float32:
            raise ShardError(f"shard file {npy} holds {vectors.dtype} {vectors.shape}; its record says ({rows}, {dim})")
        if not np.isfinite(vectors).all():
            raise ShardError(f"shard file {npy} holds vectors that are not finite")
        if shard_id([raw[i:i + _KEY] for i in range(0, len(raw), _KEY)]) != shard:
            raise ShardError(f"shard file {keys_file} holds other keys than shard {shard} was made of")
        return [raw[i:i + _KEY] for i in range(0, len(raw), _KEY)], vectors

    def remove(self, shard: str) -> None:
        """Delete the shard's files (the record first, so a half-removed shard is an unfinished one)."""
        npy, keys_file, done = self._files(shard)
        for path in (done, npy, keys_file):
            path.unlink(missing_ok=True)

    def merge(self, shard: str, cache: EmbeddingCache, model_key: str) -> int:
        """Put the shard's vectors into ``cache`` under ``model_key`` (one transaction), then delete the shard;
        returns its rows. A :class:`ShardError` leaves the shard where it is."""
        keys, vectors = self.read(shard)
        cache.put(model_key, list(zip(keys, vectors)))
        self.remove(shard)
        return len(keys)

    def recover(self, cache: EmbeddingCache, model_key: str) -> tuple:
        """Merge every valid finished shard into ``cache`` and delete the invalid ones (and files of shards never
        finished); returns ``(rows merged, [the problems of the shards deleted])``."""
        merged, problems = 0, []
        for shard in self.finished():
            try:
                merged += self.merge(shard, cache, model_key)
            except ShardError as exc:
                problems.append(str(exc))
                self.remove(shard)
        for path in self.unfinished():
            path.unlink(missing_ok=True)
        return merged, problems

    def unfinished(self) -> Iterator[Path]:
        """Files of shards without a ``.done`` record, and temporary files of writes cut short."""
        if not self.folder.is_dir():
            return iter(())
        done = set(self.finished())
        return (path for path in list(self.folder.iterdir())
                if path.is_file() and (path.name.startswith(".") or path.stem not in done))

    def pending(self, shards: Sequence[Shard]) -> list:
        """The shards among ``shards`` without a valid finished copy in the store."""
        out = []
        for shard in shards:
            try:
                self.read(shard.id)
            except ShardError:
                out.append(shard)
        return out


def store_for(model_key: str, folder: Optional["str | os.PathLike"] = None) -> ShardStore:
    """The :class:`ShardStore` of a model: ``folder`` if given, else :func:`default_shard_folder`."""
    return ShardStore(folder if folder is not None else default_shard_folder(model_key))
