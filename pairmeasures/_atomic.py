"""Atomic writes: the whole new file or folder or the old one, never part of one; and the one policy on what a
command may replace (:func:`check_replaceable` for output folders, :func:`check_file_replaceable` for files)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Sequence


def write_atomically(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file beside it and a rename, so a reader
    or an interrupted run never sees half a file; the temporary file is removed when writing fails. The
    file is readable by others (0o644), as a plain ``open(path, "w")`` would leave it under the usual umask."""
    path = Path(path)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextmanager
def folder_written_atomically(out: str | os.PathLike) -> Iterator[Path]:
    """A new empty folder beside ``out`` to fill; when the block ends without error it replaces ``out`` (an
    earlier folder there is removed: the caller checks first that it may be), otherwise it is removed. The
    folder is readable by others (0o755), as ``mkdir`` would leave it under the usual umask."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".partial"))
    try:
        yield partial
        os.chmod(partial, 0o755)
        if out.exists():
            shutil.rmtree(out)
        os.replace(partial, out)
    finally:
        if partial.exists():
            shutil.rmtree(partial)


def check_replaceable(out: Path, *, force: bool, marker: str, written_by: str, what: str = "model",
                      json_format: Optional[str] = None) -> None:
    """Refuse to let a command's output folder replace ``out`` unless ``out`` is an earlier output of that command
    and ``force`` is given. An earlier output holds the ``marker`` file ``written_by`` writes (a JSON object whose
    ``"format"`` is ``json_format``, when that is given); a folder of the user's is refused whatever ``force`` says,
    and never removed. ``what`` names the output in the message ("model", "fit set", ...)."""
    out = Path(out)
    if out.exists() or out.is_symlink():
        if not _is_earlier(out / marker, json_format):
            article = "an" if what[:1].lower() in "aeiou" else "a"
            detail = f" of format {json_format}" if json_format else ""
            raise ValueError(f"{out} exists and is not {article} {what} written by {written_by} (no {marker}{detail}): "
                             f"choose another --out; --force replaces only an earlier {written_by} {what}")
        if not force:
            raise ValueError(f"{out} exists: pass --force to replace it")


def check_file_replaceable(path: str | os.PathLike, *, force: bool, option: Optional[str] = "--out",
                           suffixes: Sequence[str] = (), what: str = "file",
                           json_format: Optional[str] = None) -> Path:
    """``path`` (user folder expanded) once a command may write its single output file there, else a ValueError
    naming ``option`` (the command line option that gave ``path``; ``None``: the path alone): the name must end in
    one of ``suffixes`` when given (with several, the extension picks the format); ``path`` must not be a folder;
    an existing file is replaced only with ``force``, and with ``json_format`` only when it is an earlier ``what``
    (a JSON object whose ``"format"`` is ``json_format``); its folder must exist."""
    path = Path(path).expanduser()
    label = str(path) if option is None else f"{option} {str(path)!r}"
    wanted = " or ".join(", ".join(suffixes).rsplit(", ", 1)) if suffixes else ""
    if suffixes and path.suffix.lower() not in suffixes:
        raise ValueError(f"{label}: name a {wanted} file" + (" (the extension picks the format)" if len(suffixes) > 1
                                                              else ""))
    if path.is_dir():
        raise ValueError(f"{label} is a folder; " + (f"name a {wanted} file" if suffixes else f"name the {what} to write"))
    if path.exists() or path.is_symlink():
        if not force:
            raise ValueError(f"{label} exists; pass --force to replace it")
        if json_format is not None and not _is_earlier(path, json_format):
            raise ValueError(f"{label} exists and is not an earlier {what} (no \"format\": \"{json_format}\"); "
                             "--force replaces only those: name a new file")
    if not path.parent.is_dir():
        raise ValueError(f"{label}: its folder does not exist (create {str(path.parent)!r} first)")
    return path


def _is_earlier(marker: Path, json_format: Optional[str]) -> bool:
    """Whether ``marker`` is a file, and (with ``json_format``) a JSON object whose ``"format"`` is ``json_format``."""
    if not marker.is_file():
        return False
    if json_format is None:
        return True
    try:
        return json.loads(marker.read_text(encoding="utf-8")).get("format") == json_format
    except (OSError, ValueError, AttributeError):
        return False
