"""Shards of embedding vectors on disk: what parallel workers write and the one cache writer merges.

A shard is a fixed set of texts (their :func:`~pairmeasures.compute.cache.text_key`) embedded by one model. Its
name binds both: ``<model tag>-<digest>``, the tag being the first 16 hex digits of the model key (model files,
backend; precision and normalisation do not change the cached raw vectors) and the digest a SHA-256 over the model
key and the keys, so the same texts of the same model always make the same shard, and another model's never do.
A worker writes three files into the store's folder: ``<name>.npy`` (the model's raw float32 vectors, one row per
key), ``<name>.keys`` (the 32-byte keys, in the same order) and, last, ``<name>.done`` (JSON: the model key, rows,
dimension and the SHA-256 of the two other files). Each file is written under a temporary name and renamed, so a
killed worker leaves no ``.done`` file and its shard counts as not written. A shard whose ``.done`` is missing,
unreadable or disagrees with its files (a wrong row count or model, a truncated or changed file, a vector that is
not finite) is not valid: :meth:`ShardStore.recover` deletes it and its texts are embedded again.

The shard folder is a work folder of :mod:`pairmeasures._owned`: it carries pairmeasures' marker, and holds nothing
but shards (of any model), their temporary files, the per-model lock files and the audit's private run folders; a
folder holding anything else is refused, untouched. A store is one model's view of the folder: it merges, deletes
and locks only that model's shards, and never reads or deletes another model's.

The driver alone merges shards into the :class:`~pairmeasures.compute.cache.EmbeddingCache` (a shard is one block
there, one transaction), then deletes them: a shard is in the cache or on disk, never lost between the two.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Iterator, NamedTuple, Optional, Sequence

import numpy as np

from .._atomic import write_atomically
from .._exclusive import Lock
from .._owned import WorkFolder, claim_folder, remove_entries, remove_folder
from ..io.memo import sha256_file
from .cache import EmbeddingCache, default_cache_path

__all__ = ["Shard", "ShardStore", "ShardError", "plan_shards", "shard_id", "model_tag", "default_shard_folder",
           "store_for", "SHARD_FOLDER", "RUN_FOLDER"]

_KEY = 32  # bytes of a text key (SHA-256)
_NAME = r"[0-9a-f]{16}-[0-9a-f]{32}"
_SHARD_FILES = (rf"{_NAME}\.(npy|keys|done)", rf"\.{_NAME}\.(npy|keys|done)\.[^/]+\.tmp")

#: The shard folder (``--work``, or ``shards/<model>`` in the cache folder): shards of any model, their temporary
#: files, a lock file per model and the audit's private run folders.
SHARD_FOLDER = WorkFolder("pairmeasures", "shard folder", "--work",
                          _SHARD_FILES + (r"\.[0-9a-f]{16}\.lock", r"run-[0-9]+-[0-9a-f]+"),
                          "pass --work a new or empty folder (or one pairmeasures made)")
#: A private run folder of ``audit --engine ray`` inside the shard folder: its shards, removed when the run ends.
RUN_FOLDER = WorkFolder("pairmeasures", "run's shard folder", "--work", _SHARD_FILES)


class ShardError(ValueError):
    """A shard file that is missing, damaged or disagrees with its record; the message names the file."""


class Shard(NamedTuple):
    """A shard to embed: its id, its texts' keys and the texts, in the same order."""

    id: str
    keys: list
    texts: list


def model_tag(model_key: str) -> str:
    """The part of a shard's name that names its model: the first 16 hex digits of the model key."""
    if not re.fullmatch(r"[0-9a-f]{16,}", model_key):
        raise ValueError(f"a model key is a hex digest; got {model_key!r}")
    return model_key[:16]


def shard_id(keys: Sequence[bytes], model_key: str) -> str:
    """The name of the shard of ``keys`` (in that order) embedded by the model ``model_key``: its
    :func:`model_tag`, then the first 32 hex digits of a SHA-256 over the model key and the keys."""
    return _shard_id(b"".join(keys), model_key)


def _shard_id(raw: bytes, model_key: str) -> str:
    """:func:`shard_id` of the keys concatenated in ``raw``."""
    digest = hashlib.sha256(model_key.encode("ascii") + b"\0")
    digest.update(raw)
    return f"{model_tag(model_key)}-{digest.hexdigest()[:32]}"


def plan_shards(keys: Sequence[bytes], texts: Sequence[str], size: int, model_key: str) -> list:
    """``keys``/``texts`` cut into :class:`Shard` objects of ``size`` texts (the last one shorter), in order, for the
    model ``model_key``."""
    if size < 1:
        raise ValueError(f"a shard holds at least one text; got size {size}")
    return [Shard(shard_id(keys[start:start + size], model_key), list(keys[start:start + size]),
                  list(texts[start:start + size])) for start in range(0, len(keys), size)]


def default_shard_folder(model_key: str) -> Path:
    """Where shards of the model with cache key ``model_key`` are written by default: ``shards/<key>`` beside the
    embedding cache (in ``$PAIRMEASURES_CACHE_DIR``, else ``~/.cache/pairmeasures``)."""
    return default_cache_path().parent / "shards" / model_key[:32]


class ShardStore:
    """The shards of the model ``model_key`` in ``folder`` (a work folder, :data:`SHARD_FOLDER`, or a private run
    folder, ``kind`` :data:`RUN_FOLDER`). Safe to share between processes: every file appears whole, by a rename;
    a store reads, merges and deletes only its own model's shards. :meth:`claim` makes or checks the folder before
    any work; the driver holds :meth:`locked` while it recovers and merges."""

    def __init__(self, folder: "str | os.PathLike", model_key: str, kind: WorkFolder = SHARD_FOLDER):
        self.folder = Path(folder).expanduser()
        self.model_key, self.tag, self.kind = model_key, model_tag(model_key), kind

    def __repr__(self) -> str:
        return f"ShardStore({str(self.folder)!r}, {self.model_key[:16]!r})"

    def claim(self, option: Optional[str] = None) -> "ShardStore":
        """Make the folder with its marker, or check it is a shard folder holding nothing but shards (else a
        one-line ValueError naming the folder and what is not a shard; ``option`` names it there)."""
        claim_folder(self.folder, replace(self.kind, option=option) if option else self.kind)
        return self

    @contextmanager
    def locked(self, option: str = "--work") -> Iterator["ShardStore"]:
        """This model's lock in the folder (``.<model tag>.lock``) for the block: a second driver of the same model
        on the same folder fails at once, naming the first (another model's driver is not kept waiting)."""
        lock = Lock(self.folder / self.tag, f"{option} {str(self.folder)!r} (model {self.tag})", option)
        lock.acquire()
        try:
            yield self
        finally:
            lock.release()

    def _files(self, shard: str) -> tuple:
        return tuple(self.folder / f"{shard}.{suffix}" for suffix in ("npy", "keys", "done"))

    def _ours(self, shard: str) -> None:
        if not re.fullmatch(_NAME, shard) or not shard.startswith(self.tag + "-"):
            raise ShardError(f"{shard!r} is not a shard of model {self.tag} in {self.folder}")

    def write(self, shard: str, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Write the vectors of ``keys`` as shard ``shard``; its ``.done`` record is written last."""
        self._ours(shard)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(keys):
            raise ShardError(f"shard {shard}: {len(keys)} keys but vectors of shape {vectors.shape}")
        self.folder.mkdir(parents=True, exist_ok=True)  # (a node that does not share it: the driver says so)
        npy, keys_file, done = self._files(shard)
        buffer = io.BytesIO()
        np.save(buffer, vectors, allow_pickle=False)
        write_atomically(npy, buffer.getvalue())
        write_atomically(keys_file, b"".join(keys))
        record = {"model": self.model_key, "rows": len(keys), "dim": int(vectors.shape[1]),
                  "npy": sha256_file(npy), "keys": sha256_file(keys_file)}
        write_atomically(done, json.dumps(record))

    def finished(self) -> list:
        """The names of this model's shards whose ``.done`` record exists (valid or not: :meth:`read` checks),
        sorted."""
        if not self.folder.is_dir():
            return []
        return sorted(path.stem for path in self.folder.glob(f"{self.tag}-*.done") if re.fullmatch(_NAME, path.stem))

    def read(self, shard: str) -> tuple:
        """``(keys, vectors)`` of a finished shard, checked against its record; a :class:`ShardError` otherwise."""
        self._ours(shard)
        npy, keys_file, done = self._files(shard)
        try:
            record = json.loads(done.read_text())
            rows, dim = int(record["rows"]), int(record["dim"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ShardError(f"shard record {done} is missing or unreadable ({exc})") from None
        if record.get("model") != self.model_key:
            raise ShardError(f"shard record {done} names the model {str(record.get('model'))[:16]}, not {self.tag}")
        contents = {}
        for path, field in ((npy, "npy"), (keys_file, "keys")):
            try:
                contents[field] = path.read_bytes()  # read once: checked, then parsed
            except OSError:
                contents[field] = None
            if contents[field] is None or hashlib.sha256(contents[field]).hexdigest() != record.get(field):
                raise ShardError(f"shard file {path} is missing or changed since it was written (checksum differs)")
        raw = contents["keys"]
        if len(raw) != rows * _KEY:
            raise ShardError(f"shard file {keys_file} holds {len(raw) // _KEY} keys; its record says {rows}")
        try:
            vectors = np.load(io.BytesIO(contents["npy"]), allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ShardError(f"shard file {npy} is damaged ({exc})") from None
        if vectors.shape != (rows, dim) or vectors.dtype != np.float32:
            raise ShardError(f"shard file {npy} holds {vectors.dtype} {vectors.shape}; its record says ({rows}, {dim})")
        if not np.isfinite(vectors).all():
            raise ShardError(f"shard file {npy} holds vectors that are not finite")
        if _shard_id(raw, self.model_key) != shard:
            raise ShardError(f"shard file {keys_file} holds other keys than shard {shard} was made of")
        return [raw[i:i + _KEY] for i in range(0, len(raw), _KEY)], vectors

    def remove(self, shard: str) -> None:
        """Delete the shard's files (the record first, so a half-removed shard is an unfinished one)."""
        self._ours(shard)
        remove_entries(self.folder, [path.name for path in reversed(self._files(shard))], self.kind)

    def merge(self, shard: str, cache: EmbeddingCache) -> int:
        """Put the shard's vectors into ``cache`` under the store's model (one transaction), then delete the shard;
        returns its rows. A :class:`ShardError` leaves the shard where it is."""
        keys, vectors = self.read(shard)
        cache.put_block(self.model_key, keys, vectors)
        self.remove(shard)
        return len(keys)

    def recover(self, cache: EmbeddingCache) -> tuple:
        """Merge every valid finished shard of this model into ``cache`` and delete its invalid ones (and files of
        its shards never finished); another model's shards are neither read nor touched. Returns ``(rows merged,
        [the problems of the shards deleted])``. Hold :meth:`locked` around it: a temporary file of a shard being
        written is deleted here."""
        merged, problems = 0, []
        for shard in self.finished():
            try:
                merged += self.merge(shard, cache)
            except ShardError as exc:
                problems.append(str(exc))
                self.remove(shard)
        remove_entries(self.folder, [path.name for path in self.unfinished()], self.kind)
        return merged, problems

    def unfinished(self) -> list:
        """Files of this model's shards without a ``.done`` record, and temporary files of its writes cut short."""
        if not self.folder.is_dir():
            return []
        done = set(self.finished())
        pattern = re.compile(rf"\.?({re.escape(self.tag)}-[0-9a-f]{{32}})\.(npy|keys|done)(\..+\.tmp)?")
        out = []
        for path in sorted(self.folder.iterdir()):
            found = pattern.fullmatch(path.name)
            if found and self.kind.owns(path.name) and (path.name.startswith(".") or found.group(1) not in done):
                out.append(path)
        return out

    def remove_folder(self) -> list:
        """Remove the store's folder with the shards in it (a private run folder at its end); returns the names of
        what it holds that is not a shard, left there with the folder."""
        return remove_folder(self.folder, self.kind)

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
    """The :class:`ShardStore` of a model: in ``folder`` if given, else in :func:`default_shard_folder`."""
    return ShardStore(folder if folder is not None else default_shard_folder(model_key), model_key)
