"""One in-process cache policy: values kept by content, thread-safe, emptied by :func:`clear_caches`.

Every cache in the package (side-information sources, term counters, collection ideals, parsed
datasets) is a :class:`Memo`. A memo keeps one value per *slot* (what was asked for, e.g. a
resource name) together with the *version* of the content it was built from (e.g.
:func:`content_key` of the files it read); asking again with another version rebuilds the value,
so a file edited between two evaluations in one process is read again.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable, Hashable, Optional, TypeVar

__all__ = ["Memo", "clear_caches", "content_key"]

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
