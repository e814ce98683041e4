"""Atomic writes: the whole new file or folder or the old one, never part of one."""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


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


def check_replaceable(out: Path, *, force: bool, marker: str, written_by: str) -> None:
    """Refuse to let a command's output replace ``out`` unless ``force`` is given and ``out`` is an earlier output
    of that command (it holds the ``marker`` file ``written_by`` writes): a user's own folder is never removed."""
    if out.exists():
        if not force:
            raise ValueError(f"{out} exists: pass --force to replace it")
        if not (out / marker).is_file():
            raise ValueError(f"{out} exists and is not a model written by {written_by} (no {marker}): choose another "
                             f"--out; --force replaces only an earlier {written_by} model")
