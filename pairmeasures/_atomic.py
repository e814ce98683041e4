"""Writing a command's output: the whole new file or folder or the old one, never part of one; and the one policy on
what a command may replace.

A command claims its output before any work, with :func:`output_folder` (audit, train-ibbr, train-polarity,
generate-fitset) or :func:`output_file` (seme material, seme export, seme analyze --plot, validate-polarity
--per-query), and holds the claim until it has written:

1. A symbolic link is refused: name the folder or file itself.
2. An exclusive lock is held for the whole run (``fcntl.flock`` on ``.NAME.lock`` beside the output, which says
   which process holds it): a second writer of the same path fails at once, naming the first.
3. What is there is checked (:func:`check_replaceable`, :func:`check_file_replaceable`): a folder is replaced only
   with ``force`` and only when it is an earlier output of the same command; a file only with ``force``.
4. The output is written beside its place (``.NAME.<id>.partial``, ``.NAME.<id>.tmp``). At the moment of replacing,
   the path is checked again: when it is no longer what step 3 found (something appeared there, or was put in its
   place), it is left alone, the new output is kept beside it as ``NAME-<id8>`` and the command fails saying so.
5. A folder is swapped by renames: the old one is renamed aside (``.NAME.<id>.old``), the new one renamed in (with
   Ctrl-C and SIGTERM held between the two renames), then the old one is deleted. An interrupt leaves the old or the
   new output whole at NAME; what it leaves beside it is hidden, removed by the next run on the same path, and named
   in the interrupt's message (:class:`Interrupted`).

An output folder holds a marker, :data:`MARKER`: a small JSON file naming the command, the output's format, a random
id and the time. A folder is an earlier output of a command when its marker names that command and format. Folders
written before markers existed are recognised by the record the command wrote in them (:class:`Earlier`: an
audit's ``manifest.json`` with the keys an audit writes, a model's ``training.json`` or a fit set's
``manifest.json`` of their format), never by a file name alone. Files and folders are created with the process's
umask.
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
from typing import Iterator, Optional, Sequence

from ._exclusive import HeldSignals, Lock, rename_noreplace

__all__ = ["MARKER", "Earlier", "FolderOutput", "FolderClaim", "FileClaim", "Interrupted", "output_folder",
           "output_file", "check_replaceable", "check_file_replaceable", "write_atomically", "file_mode",
           "current_umask"]

#: The marker file of an output folder: which command wrote it, in which format, a random id and when.
MARKER = ".pairmeasures-output.json"
_MARKER_FORMAT = "pairmeasures-output-marker"
_ID = re.compile(r"^[0-9a-f]{32}$")


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C (or SIGTERM) that came while an output was put in place; its message says what is where."""


def current_umask() -> int:
    """The process's umask, read without changing it where Linux shows it, else by setting and restoring it."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode a new file gets under the process's umask (0o644 under the usual 022)."""
    return 0o666 & ~current_umask()


def write_atomically(path: str | os.PathLike, data: str | bytes, *, mode: Optional[int] = None) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file beside it and a rename, so a reader or an
    interrupted run never sees half a file; the temporary file is removed when writing fails. The file gets ``mode``,
    by default :func:`file_mode` (what ``open(path, "w")`` would give). For caches and files inside an output being
    written; a command's own output goes through :func:`output_file`."""
    path = Path(path)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(temporary, file_mode() if mode is None else mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Earlier:
    """How a folder written before markers existed is recognised as a command's output: its ``file`` (e.g.
    ``manifest.json``) is a JSON object holding every one of ``keys`` and, when given, ``"format": json_format``."""

    file: str
    keys: tuple = ()
    json_format: Optional[str] = None

    def recognises(self, folder: Path) -> bool:
        record = _json_object(folder / self.file)
        return record is not None and all(key in record for key in self.keys) and \
            (self.json_format is None or record.get("format") == self.json_format)


@dataclass(frozen=True)
class FolderOutput:
    """A kind of output folder: ``written_by`` (the command, e.g. ``"pairmeasures audit"``), ``what`` (the output in
    messages: ``"audit"``, ``"model"``), ``format`` (recorded in the marker), ``earlier`` (how its folders written
    before markers are recognised) and ``option`` (the command line option naming it)."""

    written_by: str
    what: str
    format: str
    earlier: Optional[Earlier] = None
    option: str = "--out"


def _json_object(path: Path) -> Optional[dict]:
    """The JSON object in the regular file ``path`` (not a link), or None."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _marker_id(folder: Path, kind: FolderOutput) -> Optional[str]:
    """The id in ``folder``'s marker when the marker says ``kind`` wrote it, else None."""
    record = _json_object(folder / MARKER)
    if record is None or record.get("marker") != _MARKER_FORMAT or record.get("written_by") != kind.written_by or \
            record.get("format") != kind.format or not _ID.match(str(record.get("id"))):
        return None
    return str(record["id"])


def _identity(path: Path, kind: Optional[FolderOutput] = None) -> Optional[tuple]:
    """What is at ``path`` (None: nothing), precisely enough to tell whether it changed: its device and inode, with
    (for a folder and ``kind``) whose output it is, or (for a file) its size and modification time."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return ("link", info.st_dev, info.st_ino)
    if not stat.S_ISDIR(info.st_mode):
        return ("file", info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    whose = None
    if kind is not None:
        whose = _marker_id(path, kind) or ("earlier" if kind.earlier and kind.earlier.recognises(path) else None)
    return ("folder", info.st_dev, info.st_ino, whose)


def _link_refused(label: str, path: Path, what: str) -> None:
    if path.is_symlink():
        raise ValueError(f"{label} is a symbolic link (to {os.readlink(path)!r}): name the {what} itself, not a link")


def check_replaceable(out: str | os.PathLike, kind: FolderOutput, *, force: bool) -> Optional[tuple]:
    """Refuse (ValueError naming ``kind.option``) an output folder ``out`` that ``kind``'s command may not replace: a
    symbolic link, a file, a folder it did not write (whatever ``force`` says; it is never removed), or an earlier
    output of it without ``force``. Returns what is there (None when nothing is), for the check made again when the
    new folder replaces it."""
    out = Path(out)
    label = f"{kind.option} {str(out)!r}"
    _link_refused(label, out, "folder")
    found = _identity(out, kind)
    if found is None:
        return None
    if found[0] != "folder" or found[3] is None:
        article = "an" if kind.what[:1].lower() in "aeiou" else "a"
        raise ValueError(f"{label} exists and is not {article} {kind.what} written by {kind.written_by}: choose another "
                         f"{kind.option}; --force replaces only a folder {kind.written_by} wrote (it holds {MARKER})")
    if not force:
        raise ValueError(f"{label} exists: pass --force to replace it")
    return found


def check_file_replaceable(path: str | os.PathLike, *, force: bool, option: Optional[str] = "--out",
                           suffixes: Sequence[str] = (), what: str = "file",
                           json_format: Optional[str] = None) -> Path:
    """``path`` (user folder expanded) once a command may write its single output file there, else a ValueError
    naming ``option`` (the command line option that gave ``path``; ``None``: the path alone): the name must end in
    one of ``suffixes`` when given (with several, the extension picks the format); ``path`` must be neither a folder
    nor a symbolic link; an existing file is replaced only with ``force``, and with ``json_format`` only when it is an
    earlier ``what`` (a JSON object whose ``"format"`` is ``json_format``); its folder must exist."""
    path = Path(path).expanduser()
    label = str(path) if option is None else f"{option} {str(path)!r}"
    wanted = " or ".join(", ".join(suffixes).rsplit(", ", 1)) if suffixes else ""
    if suffixes and path.suffix.lower() not in suffixes:
        raise ValueError(f"{label}: name a {wanted} file" + (" (the extension picks the format)" if len(suffixes) > 1
                                                              else ""))
    _link_refused(label, path, "file")
    if path.is_dir():
        raise ValueError(f"{label} is a folder; " + (f"name a {wanted} file" if suffixes else f"name the {what} to write"))
    if path.exists():
        if not force:
            raise ValueError(f"{label} exists; pass --force to replace it")
        if json_format is not None and (_json_object(path) or {}).get("format") != json_format:
            raise ValueError(f"{label} exists and is not an earlier {what} (no \"format\": \"{json_format}\"); "
                             "--force replaces only those: name a new file")
    if not path.parent.is_dir():
        raise ValueError(f"{label}: its folder does not exist (create {str(path.parent)!r} first)")
    return path


def _remove_leftovers(target: Path) -> None:
    """Remove what interrupted runs on ``target`` left beside it (``.NAME.<id>.partial``, ``.old``, ``.tmp``); the
    caller holds the lock, so none of them is being written."""
    pattern = re.compile(rf"^\.{re.escape(target.name)}\.[0-9a-f]{{32}}\.(partial|old|tmp)$")
    for entry in os.scandir(target.parent):
        if pattern.match(entry.name):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                Path(entry.path).unlink(missing_ok=True)


class _Claim:
    """What folder and file claims share: the path, its label in messages, the id of this run, what was found."""

    def __init__(self, path: Path, label: str, what: str, found: Optional[tuple]):
        self.path, self.label, self.what, self.found = path, label, what, found
        self.id = uuid.uuid4().hex

    def _keep_beside(self, new: Path, running: str) -> None:
        """Refuse to replace what changed at the path: keep ``new`` beside it and fail saying so."""
        short = self.id[:8]
        kept = self.path.with_name(f"{self.path.name}-{short}" if new.is_dir() else
                                   f"{self.path.stem}-{short}{self.path.suffix}")
        try:
            rename_noreplace(new, kept)
            where = f"this {self.what} was written to {str(kept)!r} instead"
        except OSError:
            where = f"this {self.what} was not kept"
        happened = "appeared" if self.found is None else "was replaced"
        raise ValueError(f"{self.label} {happened} while {running} ran (it is not what was there at the start): it is "
                         f"left as it is, and {where}")


class FolderClaim(_Claim):
    """An output folder claimed by :func:`output_folder` (``path``, absolute), locked until the claim ends; its
    contents are written in :meth:`written`."""

    def __init__(self, path: Path, kind: FolderOutput, found: Optional[tuple]):
        super().__init__(path, f"{kind.option} {str(path)!r}", kind.what, found)
        self.kind = kind

    @contextmanager
    def written(self) -> Iterator[Path]:
        """A new empty folder beside the output to fill; when the block ends without error it gets the marker and
        replaces the output (steps 4 and 5 of the module's policy), otherwise it is removed."""
        partial = self.path.parent / f".{self.path.name}.{self.id}.partial"
        partial.mkdir()  # 0o777 less the umask
        try:
            yield partial
            record = {"marker": _MARKER_FORMAT, "version": 1, "written_by": self.kind.written_by,
                      "format": self.kind.format, "id": self.id,
                      "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            write_atomically(partial / MARKER, json.dumps(record, indent=2) + "\n")
            self._put_in_place(partial)
        finally:
            if os.path.lexists(partial):
                shutil.rmtree(partial, ignore_errors=True)

    def _put_in_place(self, partial: Path) -> None:
        out, kind = self.path, self.kind
        if _identity(out, kind) != self.found:
            self._keep_beside(partial, kind.written_by)
        if self.found is None:
            try:
                rename_noreplace(partial, out)
            except FileExistsError:
                self._keep_beside(partial, kind.written_by)
            return
        aside, swapped = out.parent / f".{out.name}.{self.id}.old", False
        try:
            with HeldSignals() as held:  # the two renames: an interrupt waits until both are done
                os.rename(out, aside)
                if _identity(aside, kind) != self.found:  # replaced in the instant since the look above: put it back
                    rename_noreplace(aside, out)
                    self._keep_beside(partial, kind.written_by)
                try:
                    rename_noreplace(partial, out)
                except BaseException:
                    rename_noreplace(aside, out)
                    raise
                swapped = True
            held.deliver()
            shutil.rmtree(aside)
        except KeyboardInterrupt:
            if not swapped:
                raise
            raise Interrupted(f"the new {kind.what} is whole in {str(out)!r}; the earlier one, moved aside to "
                              f"{str(aside)!r}, is not removed completely: delete it, or the next run on "
                              f"{kind.option} {str(out)!r} removes it") from None


class FileClaim(_Claim):
    """An output file claimed by :func:`output_file` (``path``), locked until the claim ends; see :meth:`write`."""

    def write(self, data: str | bytes, *, mode: Optional[int] = None) -> None:
        """Write ``data`` (text as UTF-8) to a temporary file beside the path, then rename it into place when the path
        is still what the claim found (else it is kept beside it, and a ValueError says so). The file gets ``mode``,
        by default :func:`file_mode`."""
        temporary = self.path.parent / f".{self.path.name}.{self.id}.tmp"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            with os.fdopen(descriptor, "wb") as stream:
                stream.write(data.encode("utf-8") if isinstance(data, str) else data)
            os.chmod(temporary, file_mode() if mode is None else mode)
            if _identity(self.path) != self.found:
                self._keep_beside(temporary, "this command")
            if self.found is None:
                try:
                    rename_noreplace(temporary, self.path)
                except FileExistsError:
                    self._keep_beside(temporary, "this command")
            else:
                os.replace(temporary, self.path)
        finally:
            temporary.unlink(missing_ok=True)
        self.found = _identity(self.path)


@contextmanager
def output_folder(out: str | os.PathLike, kind: FolderOutput, *, force: bool) -> Iterator[FolderClaim]:
    """Claim the output folder ``out`` for ``kind``'s command, before any work: refuse a link or what
    :func:`check_replaceable` refuses, create its parent folders, lock it for the block (a ValueError names the
    process holding it), remove what interrupted runs left beside it, and give the :class:`FolderClaim` to write
    through."""
    out = Path(out).expanduser().absolute()
    check_replaceable(out, kind, force=force)
    out.parent.mkdir(parents=True, exist_ok=True)
    lock = Lock(out, f"{kind.option} {str(out)!r}", kind.option)
    lock.acquire()
    try:
        _remove_leftovers(out)
        yield FolderClaim(out, kind, check_replaceable(out, kind, force=force))
    finally:
        lock.release()


@contextmanager
def output_file(path: str | os.PathLike, *, force: bool, option: Optional[str] = "--out",
                suffixes: Sequence[str] = (), what: str = "file",
                json_format: Optional[str] = None) -> Iterator[FileClaim]:
    """Claim the output file ``path`` before any work: refuse what :func:`check_file_replaceable` refuses (same
    arguments), lock it for the block, remove what interrupted runs left beside it, and give the :class:`FileClaim`
    to write through."""
    checked = check_file_replaceable(path, force=force, option=option, suffixes=suffixes, what=what,
                                     json_format=json_format)
    label = str(checked) if option is None else f"{option} {str(checked)!r}"
    lock = Lock(checked.absolute(), label, option)
    lock.acquire()
    try:
        _remove_leftovers(checked.absolute())
        check_file_replaceable(checked, force=force, option=option, suffixes=suffixes, what=what,
                               json_format=json_format)
        yield FileClaim(checked, label, what, _identity(checked))
    finally:
        lock.release()
