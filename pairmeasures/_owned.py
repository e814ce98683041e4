"""The one policy on what pairmeasures deletes, moves or replaces on disk: only what it can prove it wrote.

Every deletion, rename and replacement of the package goes through this module (or :mod:`pairmeasures._atomic`,
the ``--out`` policy and its atomic writes; ``tests/test_deletion_policy.py`` checks it). What counts as proof:

- **A work folder** (the shard folder of ``embed --work``, a model's ``MODEL.checkpoints/``) carries its command's
  marker, :data:`MARKER`, written when the command creates the folder (or takes an empty one). A command deletes
  there only entries whose names its :class:`WorkFolder` kind lists (``owns``), and only in a folder whose marker
  names that kind. A folder holding anything else, or no marker (a user's folder, or one an older pairmeasures
  wrote before markers existed: not guessed at), is refused before any work, with one line naming the folder, the
  file that is not the command's and what to do (:func:`claim_folder`).
- **A scratch folder** is made by this process under a fresh random name (:func:`scratch_folder`) and removed
  with what the process put in it.
- **A temporary file** this process created (a random or process-unique name beside its target) is put in place
  by a rename (:func:`put_in_place`) or discarded (:func:`discard`).
- **A cache entry** is a file whose name the cache's own layout derives from its content or key, under the cache
  folder; a damaged one is discarded or, where a user may want it, moved aside under a new name
  (:func:`move_aside`), never over something.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from ._atomic import write_atomically
from ._exclusive import rename_noreplace

__all__ = ["MARKER", "WorkFolder", "ForeignFolderError", "claim_folder", "mark_folder", "is_claimed", "remove_entries",
           "release_folder", "release_empty", "remove_folder", "scratch_folder", "move_entries", "put_in_place", "discard", "move_aside"]

#: The marker file of a work folder: which command made it, for what, a random id and when.
MARKER = ".pairmeasures-work"
_MARKER_FORMAT = "pairmeasures-work-marker"


class ForeignFolderError(ValueError):
    """A folder a command would write and clean in that holds what the command did not write (one line)."""


@dataclass(frozen=True)
class WorkFolder:
    """A kind of work folder: ``written_by`` (``"pairmeasures embed"``), ``what`` (in messages: ``"shard folder"``),
    ``option`` (the option that names it, or derives it: ``"--work"``), ``names`` (regular expressions of the
    entries the command writes there; the marker is always its own) and ``advice`` (what to do with a refused
    folder, ending the error line)."""

    written_by: str
    what: str
    option: str
    names: tuple = ()
    advice: str = "choose a new or empty folder"

    def owns(self, name: str) -> bool:
        """Whether ``name`` is an entry this kind's command writes in its folder."""
        return name == MARKER or any(re.fullmatch(pattern, name) for pattern in self.names)


def _marker(folder: Path) -> Optional[dict]:
    """The marker record of ``folder`` (a regular file, not a link), or None."""
    path = folder / MARKER
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("marker") == _MARKER_FORMAT else None


def _label(folder: Path, kind: WorkFolder) -> str:
    return f"{kind.option}: {kind.what} {str(folder)!r}"


def _write_marker(folder: Path, kind: WorkFolder, made: bool) -> None:
    record = {"marker": _MARKER_FORMAT, "version": 1, "written_by": kind.written_by, "what": kind.what,
              "id": uuid.uuid4().hex, "made": made, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_atomically(folder / MARKER, json.dumps(record, indent=2) + "\n")


def mark_folder(folder: str | os.PathLike, kind: WorkFolder) -> None:
    """Write ``kind``'s marker into ``folder``, which this process has just made and filled inside its own scratch
    folder (an index before it is renamed into place): everything in it is then provably the command's."""
    _write_marker(Path(folder), kind, made=True)


def is_claimed(folder: str | os.PathLike, kind: WorkFolder) -> bool:
    """Whether ``folder`` is a folder (not a link) whose marker names ``kind``'s command and purpose."""
    folder = Path(folder)
    if folder.is_symlink() or not folder.is_dir():
        return False
    record = _marker(folder)
    return record is not None and record.get("written_by") == kind.written_by and record.get("what") == kind.what


def claim_folder(folder: str | os.PathLike, kind: WorkFolder) -> Path:
    """``folder`` (user folder expanded) as ``kind``'s work folder: created with its marker when missing (its parents
    too), marked when empty, else checked: a :class:`ForeignFolderError` (one line naming the folder, a file in it
    that ``kind`` does not write, and what to do) for a link, a file, a folder of another command or purpose, or a
    folder without the marker, or with entries ``kind`` does not own. Nothing in the folder is touched."""
    folder = Path(folder).expanduser()
    label = _label(folder, kind)
    if folder.is_symlink():
        raise ForeignFolderError(f"{label} is a symbolic link (to {os.readlink(folder)!r}): name the folder itself")
    if not folder.exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            folder.mkdir()
        except FileExistsError:
            pass  # another process made it meanwhile: checked below like any existing folder
        else:
            _write_marker(folder, kind, made=True)
            return folder
    if not folder.is_dir():
        raise ForeignFolderError(f"{label} is a file, not a folder: {kind.advice}")
    entries = sorted(os.listdir(folder))
    record = _marker(folder)
    if record is None:
        if not entries:
            _write_marker(folder, kind, made=False)
            return folder
        raise ForeignFolderError(
            f"{label} holds {entries[0]!r}{_more(entries)} but no {MARKER}: {kind.written_by} works only in a folder "
            f"it made (an older pairmeasures' folder, or a user's, is left as it is); {kind.advice}")
    if record.get("written_by") != kind.written_by or record.get("what") != kind.what:
        raise ForeignFolderError(f"{label} is a {record.get('what')} of {record.get('written_by')}, not a {kind.what} "
                                 f"of {kind.written_by}: {kind.advice}")
    foreign = [name for name in entries if not kind.owns(name)]
    if foreign:
        raise ForeignFolderError(f"{label} holds {foreign[0]!r}{_more(foreign)}, which {kind.written_by} did not write "
                                 f"there: it is left as it is; move it out of the folder, or {kind.advice}")
    return folder


def _more(names: list) -> str:
    return f" (and {len(names) - 1} more)" if len(names) > 1 else ""


def _remove_path(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def remove_entries(folder: str | os.PathLike, names, kind: WorkFolder) -> None:
    """Delete the entries ``names`` of ``kind``'s work folder ``folder`` (files, or folders with what they hold); a
    ValueError, deleting nothing, when the folder lacks ``kind``'s marker or a name is not one ``kind`` owns (never
    the marker)."""
    folder = Path(folder)
    names = list(names)
    if not is_claimed(folder, kind):
        raise ValueError(f"{_label(folder, kind)} lacks its {MARKER}: nothing in it is deleted")
    refused = [name for name in names if name == MARKER or "/" in name or not kind.owns(name)]
    if refused:
        raise ValueError(f"{_label(folder, kind)}: {refused[0]!r} is not an entry {kind.written_by} writes there; "
                         "nothing is deleted")
    for name in names:
        _remove_path(folder / name)


def release_folder(folder: str | os.PathLike, kind: WorkFolder) -> bool:
    """Remove ``kind``'s work folder ``folder`` when it holds nothing but its marker: the folder too when the command
    made it, else only the marker. Returns whether anything was removed (a folder with entries stays as it is)."""
    folder = Path(folder)
    if not is_claimed(folder, kind) or os.listdir(folder) != [MARKER]:
        return False
    made = bool((_marker(folder) or {}).get("made"))
    (folder / MARKER).unlink(missing_ok=True)
    if made:
        try:
            folder.rmdir()
        except OSError:  # something appeared meanwhile: it stays, with the folder
            pass
    return True


def remove_folder(folder: str | os.PathLike, kind: WorkFolder) -> list:
    """Remove ``kind``'s work folder ``folder``: every entry ``kind`` owns, then the folder (:func:`release_folder`).
    Returns the names left because ``kind`` does not own them (the folder then stays); nothing is removed from a
    folder without ``kind``'s marker."""
    folder = Path(folder)
    if not is_claimed(folder, kind):
        return sorted(os.listdir(folder)) if folder.is_dir() else []
    entries = [name for name in sorted(os.listdir(folder)) if name != MARKER]
    left = [name for name in entries if not kind.owns(name)]
    remove_entries(folder, [name for name in entries if name not in left], kind)
    release_folder(folder, kind)
    return left


def release_empty(folder: str | os.PathLike) -> bool:
    """Remove ``folder`` when it is empty (a folder this process filled and emptied); returns whether it is gone."""
    try:
        os.rmdir(folder)
    except OSError:
        return not os.path.lexists(folder)
    return True


@contextmanager
def scratch_folder(parent: str | os.PathLike, prefix: str, suffix: str = "") -> Iterator[Path]:
    """A new folder under ``parent`` with a fresh random name (``prefix…suffix``), made now by this process, and
    removed with everything in it when the block ends (what the block moved out of it stays where it went)."""
    folder = Path(tempfile.mkdtemp(dir=parent, prefix=prefix, suffix=suffix))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def move_entries(source: str | os.PathLike, target: str | os.PathLike) -> None:
    """Move every entry of the folder ``source`` (a scratch folder this process wrote) into the folder ``target``
    (a new output this process is writing), never over something there (FileExistsError)."""
    source, target = Path(source), Path(target)
    for name in sorted(os.listdir(source)):
        rename_noreplace(source / name, target / name)


def put_in_place(temporary: str | os.PathLike, target: str | os.PathLike) -> None:
    """Rename the file ``temporary`` that this process wrote (beside ``target``, under a name unique to it) to
    ``target``, a cache entry or a file of a folder this process writes: it replaces a file there, never a folder or
    a symbolic link (an OSError, ``temporary`` left for the caller to discard)."""
    target = Path(target)
    if target.is_symlink() or target.is_dir():
        raise IsADirectoryError(f"{str(target)!r} is a {'link' if target.is_symlink() else 'folder'}; not replaced")
    os.replace(temporary, target)


def discard(path: str | os.PathLike) -> None:
    """Delete the file ``path``: a temporary file this process created, or a cache entry (named by the cache's layout
    from its key) found damaged. A folder or a link is never deleted here (an OSError)."""
    path = Path(path)
    if path.is_symlink() or path.is_dir():
        raise IsADirectoryError(f"{str(path)!r} is a {'link' if path.is_symlink() else 'folder'}; not deleted")
    path.unlink(missing_ok=True)


def move_aside(path: str | os.PathLike, aside: str | os.PathLike) -> None:
    """Rename ``path`` (a damaged cache file, kept for its user) to ``aside``, a new name: FileExistsError when
    something is there, which is never replaced."""
    rename_noreplace(Path(path), Path(aside))
