"""Atomic file writes: the whole new file or the old one, never part of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


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
