"""One cache policy, keyed by content: in the process (:class:`Memo`) and on disk (:class:`DiskMemo`).

Every in-process cache in the package (side-information sources, term counters, collection ideals,
parsed datasets, corpus folders) is a :class:`Memo`. A memo keeps one value per *slot* (what was asked
for, e.g. a resource name) together with the *version* of the content it was built from (e.g.
:func:`content_key` of the files it read); asking again with another version rebuilds the value,
so a file edited between two evaluations in one process is read again. :func:`clear_caches` empties them.

What outlives a process (an audit's runs, evaluations and plots) is a :class:`DiskMemo`: one file per
value, named by a hash of what the value derives from (:func:`value_key` of run keys, qrels, measure
strings, seeds), written atomically; a damaged file is reported and computed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import threading
import warnings
from pathlib import Path
from typing import Any, Callable, Hashable, Optional, TypeVar

__all__ = ["CACHE_ENV", "CacheFolderError", "CacheWarning", "DiskMemo", "Memo", "cache_root", "clear_caches",
           "content_key", "sha256_file", "value_key", "writable_folder"]

#: The environment variable that moves pairmeasures' caches (the embedding cache and an audit's runs and evaluations).
CACHE_ENV = "PAIRMEASURES_CACHE_DIR"


def cache_root() -> Path:
    """The pairmeasures cache folder: ``$PAIRMEASURES_CACHE_DIR``, else ``$XDG_CACHE_HOME/pairmeasures`` (default
    ``~/.cache/pairmeasures``). It holds the embedding cache, corpus stores, indexes, run caches and shards, each in
    a place of its own; read now, so a changed variable takes effect."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pairmeasures"

T = TypeVar("T")

_MEMOS: list["Memo"] = []


def content_key(location: str | os.PathLike) -> Optional[tuple]:
    """What identifies the content at ``location``: the resolved path, size and mtime_ns of the file,
    or of every file under the folder (sorted by path); ``None`` when nothing exists there."""
    path = Path(location).expanduser().resolve()
    if path.is_file():
        stat = path.stat()
        return (str(path), stat.st_size, stat.st_mtime_ns)
    if path.is_dir():
        files = []
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            stat = child.stat()
            files.append((str(child.relative_to(path)), stat.st_size, stat.st_mtime_ns))
        return (str(path), tuple(files))
    return None


def sha256_file(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, read in chunks: the key of a file's content where its size and time are not
    enough (manifests, run files named in a spec)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class Memo:
    """Values by slot, each remembered with the version of the content it was built from.

    Thread-safe: the table is guarded by a lock; a value is built outside it (builders may use
    other memos), and when two threads build the same slot and version at once the first kept wins.
    """

    def __init__(self, name: str):
        self.name = name
        self._values: dict = {}
        self._lock = threading.Lock()
        _MEMOS.append(self)

    def get(self, slot: Hashable, version: Hashable, build: Callable[[], T]) -> T:
        """The value of ``slot`` built from content ``version``; built by ``build()`` when absent or older."""
        with self._lock:
            kept = self._values.get(slot)
        if kept is not None and kept[0] == version:
            return kept[1]
        value = build()
        with self._lock:
            kept = self._values.get(slot)
            if kept is not None and kept[0] == version:
                return kept[1]
            self._values[slot] = (version, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Memo({self.name!r}, {len(self)} entries)"


def clear_caches() -> None:
    """Forget every value cached in this process (resources, term lists and counts, collection
    ideals, parsed datasets); the next use reads the files again. The embedding cache on disk is kept."""
    for memo in _MEMOS:
        memo.clear()


class CacheWarning(UserWarning):
    """A cached file could not be read (damaged, or written by another version) and its value was computed again."""


class CacheFolderError(RuntimeError):
    """A cache folder cannot be written; the message names it and, where one does, the variable that moves it."""


def writable_folder(folder: str | os.PathLike, moved_by: Optional[str] = None) -> Path:
    """``folder``, created if needed, after writing and removing a file in it; a :class:`CacheFolderError` naming it
    (and ``moved_by``, the variable that moves it) when that fails, so a command stops before its long work."""
    import tempfile

    path = Path(folder).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path, prefix=".pairmeasures-write-test-"):
            pass
    except OSError as exc:
        raise CacheFolderError(_not_writable(path, exc, moved_by)) from None
    return path


def _not_writable(path: Path, exc: OSError, moved_by: Optional[str]) -> str:
    return (f"cache folder {str(path)!r} is not writable ({exc.strerror or exc})"
            + (f": set {moved_by} to a writable folder" if moved_by else ""))


def value_key(value: Any) -> str:
    """A key of a value's content: data frames by their columns, types and values (not their memory layout), in
    lists, tuples and dicts too; anything else by its JSON (or ``str``) form."""
    def plain(item):
        if type(item).__name__ == "DataFrame":
            import pandas as pd

            try:
                values = pd.util.hash_pandas_object(item, index=False).to_numpy().tobytes().hex()
            except TypeError:  # unhashable cells (lists): their text
                values = item.to_csv(index=False)
            return ["frame", list(map(str, item.columns)), list(map(str, item.dtypes)), values]
        if isinstance(item, (list, tuple)):
            return [plain(v) for v in item]
        if isinstance(item, dict):
            return [[str(k), plain(v)] for k, v in item.items()]
        return item

    return hashlib.sha256(json.dumps(plain(value), default=str).encode()).hexdigest()


def _unkeyed(value: Any) -> bool:
    """Whether a key part holds None (something that cannot be keyed, such as a run of the user's own code)."""
    return value is None or (isinstance(value, (list, tuple)) and any(map(_unkeyed, value))) or \
        (isinstance(value, dict) and any(map(_unkeyed, value.values())))


class DiskMemo:
    """Values computed once and kept as pickles in ``folder``, one file per ``(kind, parts)``: ``parts`` are what the
    value derives from (keys, strings, numbers; :func:`value_key` of frames), ``version`` what invalidates every
    value at once (a format number and the package version). A part holding None makes the value uncached. A folder
    that cannot be written is a :class:`CacheFolderError` naming it and ``moved_by`` (the variable that moves it)."""

    def __init__(self, folder: str | os.PathLike, version: Any, moved_by: Optional[str] = CACHE_ENV):
        self.folder = Path(folder)
        self.version = version
        self.moved_by = moved_by

    def path(self, kind: str, parts: Any) -> Optional[Path]:
        """The file of a value, or None when ``parts`` hold None (not cached)."""
        if _unkeyed(parts):
            return None
        key = hashlib.sha256(json.dumps([self.version, kind, parts], default=str).encode()).hexdigest()
        name = "".join(c if c.isalnum() else "_" for c in kind).strip("_")
        return self.folder / f"{name}-{key[:32]}.pkl"

    def load(self, path: Path) -> tuple[bool, Any]:
        """``(True, value)`` from a readable file, else ``(False, None)``; a damaged one is reported
        (:class:`CacheWarning`) and removed."""
        if not path.is_file():
            return False, None
        try:
            with open(path, "rb") as handle:
                return True, pickle.load(handle)
        except Exception as error:  # truncated, garbage, or another version's classes
            warnings.warn(f"the cached file {path} could not be read ({type(error).__name__}: {error}); it is computed "
                          "again", CacheWarning, stacklevel=3)
            from .._owned import discard

            discard(path)  # a cache entry of this folder (its name is its key)
            return False, None

    def store(self, path: Path, value: Any) -> None:
        """Keep ``value`` in ``path``, written atomically."""
        from .._atomic import write_atomically

        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, data)
        except OSError as exc:
            raise CacheFolderError(_not_writable(path.parent, exc, self.moved_by)) from None

    def get(self, kind: str, parts: Any, compute: Callable[[], T]) -> tuple[T, str]:
        """``(value, how)``: the value kept for ``(kind, parts)`` (``how`` = ``"hit"``), else ``compute()``'s, kept
        (``"miss"``), or computed and not kept when ``parts`` hold None (``"not cached"``)."""
        path = self.path(kind, parts)
        if path is None:
            return compute(), "not cached"
        found, value = self.load(path)
        if found:
            return value, "hit"
        value = compute()
        self.store(path, value)
        return value, "miss"
