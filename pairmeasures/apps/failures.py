"""How a command ends when it fails: one line on stderr (``pairmeasures COMMAND: error: ...``) that says what went
wrong and what to do, never a traceback unless asked for (``pairmeasures --debug COMMAND ...``, or
``PAIRMEASURES_DEBUG=1``); and SIGTERM taken as Ctrl-C is, so that a command's lock and temporary files go with it.

:func:`failure` turns any exception into that line and an exit status: the errors commands raise on purpose
(:data:`EXPECTED`: bad input, a missing file, a missing extra) are their own message (status 2); anything else is
named by kind, with what usually causes it and where it was raised (status 1). :func:`sigterm_interrupts` makes
SIGTERM raise :class:`Terminated` (a ``KeyboardInterrupt``) while a command runs.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from .extras import extra_for, needs_message

__all__ = ["DEBUG_ENV", "EXPECTED", "Terminated", "debug_asked", "failure", "missing_module", "sigterm_interrupts"]

#: The environment variable that, set to anything but ``0`` or nothing, prints a failure's traceback as ``--debug``.
DEBUG_ENV = "PAIRMEASURES_DEBUG"

#: What commands raise on purpose, with a message that names the input and the fix: printed as it is (status 2).
EXPECTED = (ValueError, NameError, FileNotFoundError, RuntimeError, ImportError)

#: The line's last words where the cause is not ours to name.
_DEBUG = f"run again with --debug (or {DEBUG_ENV}=1) for the traceback"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as Ctrl-C raises ``KeyboardInterrupt``: what a command holds (its
    ``--out`` lock, temporary files) is released on the way out as on Ctrl-C."""


def debug_asked(words: list[str]) -> tuple[list[str], bool]:
    """``words`` without ``--debug`` (anywhere before a ``--``: before the command or after it), and whether it was
    there or :data:`DEBUG_ENV` asks for it."""
    end = words.index("--") if "--" in words else len(words)
    kept = [word for word in words[:end] if word != "--debug"] + words[end:]
    return kept, len(kept) < len(words) or os.environ.get(DEBUG_ENV, "") not in ("", "0")


@contextmanager
def sigterm_interrupts() -> Iterator[list]:
    """Inside the block, SIGTERM raises :class:`Terminated` in the main thread; yields the list of SIGTERMs received
    (empty when none came). Nothing changes outside the main thread, or where the application already handles
    SIGTERM itself."""
    received: list = []
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield received
        return

    def terminate(number, frame):
        received.append(number)
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, previous)


def missing_module(exc: BaseException) -> Optional[str]:
    """The module of an extra whose absence ``exc`` comes from (a ModuleNotFoundError, or an error raised while
    handling one: "the bi-encoder stages need pyterrier-dr"), or None."""
    seen: set[int] = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ModuleNotFoundError) and current.name and extra_for(current.name):
            return current.name
        current = current.__cause__ or current.__context__
    return None


def failure(exc: BaseException, extra: Optional[str] = None) -> tuple[str, int]:
    """The line a command prints for ``exc`` (after ``pairmeasures COMMAND: ``) and its exit status. ``extra``: the
    command's own extra, named when a module of it is missing."""
    module = missing_module(exc)
    if module is not None:
        message = needs_message([module], extra)
        if message is not None:
            return message, 2
    if isinstance(exc, EXPECTED) and not isinstance(exc, ImportError):
        return f"error: {exc}", 2
    return f"error: {_explained(exc)}", 2 if isinstance(exc, ImportError) else 1


def _explained(exc: BaseException) -> str:
    """An exception no command raises on purpose, in one line: what it is, its usual cause, where it was raised."""
    text = " ".join(str(exc).split()) or "(no message)"
    kind = type(exc).__name__
    if kind == "error":  # struct.error, zlib.error, ...: named by their module
        kind = f"{type(exc).__module__}.error"
    where = _origin(exc)
    at = f" (raised at {where})" if where else ""
    if isinstance(exc, ImportError):
        return (f"{text}: an installed package is broken or of another version than pairmeasures expects; reinstall "
                f"it, or {_DEBUG}")
    if isinstance(exc, SystemExit):
        return (f"the command was stopped by sys.exit({exc.code!r}){at} before it finished: code it ran (a plugin, "
                f"a module:attr stage) calls sys.exit; {_DEBUG}")
    if isinstance(exc, SyntaxError):
        return f"{exc.filename}:{exc.lineno}: Python cannot read this file: {exc.msg}; fix it, or {_DEBUG}"
    if _is(exc, "sqlite3", "DatabaseError"):
        return (f"SQLite: {text}{at}: a database file (a cache under $PAIRMEASURES_CACHE_DIR, or one you named) is "
                f"damaged or is not a database; {_DEBUG} to see which")
    if _is(exc, "requests", "RequestException") or _is(exc, "urllib3", "HTTPError") or \
            isinstance(exc, (ConnectionError, TimeoutError)) or _is(exc, "socket", "gaierror"):
        url = getattr(getattr(exc, "request", None), "url", None)
        if isinstance(url, str) and url:  # requests names the URL it tried: the file to put in place
            return (f"downloading {url} failed ({kind}: {text}){at}: retry with network access, or fetch it where "
                    f"there is network and put it where its dataset expects it ($IR_DATASETS_HOME for an ir_datasets "
                    f"id; docs/datasets.md); {_DEBUG}")
        return (f"{kind}: {text}{at}: a download or connection failed; put the files in place (docs/datasets.md) to "
                f"work offline, or retry with network access; {_DEBUG}")
    if _is(exc, "struct", "error") or _is(exc, "pickle", "UnpicklingError") or _is(exc, "zlib", "error") or \
            kind == "SafetensorError" or isinstance(exc, (EOFError, UnicodeDecodeError)):
        return f"{kind}: {text}{at}: a file is damaged or cut short; {_DEBUG} to see which, and replace it"
    if isinstance(exc, AssertionError):
        package = where.split("/", 1)[0] if "/" in where and not where.startswith("/") else "a check"
        return (f"{package} refused the input: {text} (an assertion at {where or 'an unknown place'}); check the "
                f"measure, file or option it was given, or {_DEBUG}")
    return f"{kind}: {text}{at}; {_DEBUG}, and report it if the input looks right"


def _is(exc: BaseException, module: str, name: str) -> bool:
    """Whether ``exc`` is an instance of ``module.name``, checked only where that module is already imported."""
    import sys

    found = getattr(sys.modules.get(module), name, None)
    if module == "requests" and found is None:
        found = getattr(sys.modules.get("requests.exceptions"), name, None)
    return isinstance(found, type) and isinstance(exc, found)


def _origin(exc: BaseException) -> str:
    """``FILE:LINE`` of the innermost frame that raised ``exc``: relative to the installation (``ir_measures/...``)
    where it is an installed package's, else the full path; "" without a traceback."""
    trace = exc.__traceback__
    if trace is None:
        return ""
    while trace.tb_next is not None:
        trace = trace.tb_next
    path = Path(trace.tb_frame.f_code.co_filename)
    parts = path.parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            path = Path(*parts[parts.index(marker) + 1:])
            break
    else:
        package = Path(__file__).resolve().parents[2]  # the folder holding pairmeasures/
        if path.is_absolute() and package in path.parents:
            path = path.relative_to(package)
    return f"{path.as_posix()}:{trace.tb_lineno}"
