"""Progress of long work, on a terminal and in a log file alike.

On a terminal (or in a notebook) :func:`progress_bar` is a ``tqdm.auto`` bar that redraws in place and appears only
when the work takes more than :data:`DELAY` seconds. When stderr is a file or a pipe (``nohup``, a batch job, CI) it
is the same bar written as whole lines: one when the work has taken :data:`DELAY` seconds, then at most one every
:data:`LOG_INTERVAL` seconds, and a last one when it ends, each ending in a newline (no carriage returns), so a log
stays readable with ``tail -f``, ``less`` or ``grep``. Work shorter than :data:`DELAY` seconds writes nothing.

tqdm's own variables change the timing: ``TQDM_DELAY`` (seconds before the first line) and ``TQDM_MININTERVAL``
(seconds between lines in a log); ``TQDM_DISABLE=1`` hides every bar.
"""

from __future__ import annotations

import os
import re
import sys
from typing import IO, Any, Iterable, Optional

__all__ = ["DELAY", "LOG_INTERVAL", "progress_bar", "is_terminal"]

#: Seconds before a bar appears (short work shows none), unless ``TQDM_DELAY`` says otherwise.
DELAY = 2.0
#: Seconds between two lines of a bar in a log file, unless ``TQDM_MININTERVAL`` says otherwise.
LOG_INTERVAL = 30.0


def is_terminal(stream: Optional[IO] = None) -> bool:
    """Whether ``stream`` (default: stderr) is a terminal, or the bars draw in a notebook."""
    from tqdm.autonotebook import tqdm as automatic
    from tqdm.std import tqdm as standard

    stream = sys.stderr if stream is None else stream
    if automatic is not standard:  # tqdm chose a notebook's widgets
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


#: Terminal control sequences (tqdm moves the cursor up to redraw nested bars): nothing for a log.
_CURSOR = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class _Lines:
    """A stream for tqdm that writes each state of a bar as a line of its own: tqdm's carriage returns (which redraw
    a terminal's line) become line ends; the blanks that pad a shorter state, cursor moves, empty lines and a state
    written just before (with other times) are dropped."""

    def __init__(self, stream: IO):
        self.stream = stream
        self.encoding = getattr(stream, "encoding", None) or "utf-8"
        self.last = ""

    def write(self, text: str) -> int:
        written = ""
        for line in _CURSOR.sub("", text).replace("\r", "\n").split("\n"):
            line = line.rstrip()
            state = line.rpartition(" [")[0] or line  # the bar without its times and rate
            if line and state != self.last:  # a bar's last state is drawn again when it closes: once is enough
                written += f"{line}\n"
                self.last = state
        if written:
            self.stream.write(written)
            self.flush()
        return len(text)

    def flush(self) -> None:
        flush = getattr(self.stream, "flush", None)
        if flush is not None:
            flush()


def _seconds(variable: str, default: float) -> float:
    try:
        return float(os.environ[variable])
    except (KeyError, ValueError):
        return default


def progress_bar(iterable: Optional[Iterable] = None, *, desc: str, unit: str, total: Optional[float] = None,
                 show: Optional[bool] = None, leave: bool = True, stream: Optional[IO] = None) -> Any:
    """A tqdm bar over ``iterable`` (or of ``total`` steps, updated with ``.update(n)``) on ``stream`` (default:
    stderr): redrawn in place on a terminal, as lines in a log file (the module docstring). ``show``: ``None`` shows
    it when the work takes more than :data:`DELAY` seconds, ``True`` from the start (even with ``TQDM_DISABLE``),
    ``False`` never. ``leave``: keep the last state on a terminal (a log always keeps it)."""
    from tqdm.auto import tqdm

    stream = sys.stderr if stream is None else stream
    delay = 0.0 if show else _seconds("TQDM_DELAY", DELAY)
    hidden = show is False or (show is None and os.environ.get("TQDM_DISABLE", "").lower() in ("1", "true", "yes"))
    options: dict = {"desc": desc, "unit": unit, "total": total, "delay": delay, "disable": hidden}
    if is_terminal(stream):
        return tqdm(iterable, file=stream, leave=leave, **options)
    from tqdm.std import tqdm as plain

    interval = _seconds("TQDM_MININTERVAL", LOG_INTERVAL)
    return plain(iterable, file=_Lines(stream), leave=True, mininterval=interval, maxinterval=max(interval, 10.0),
                 ncols=100, position=0, **options)  # a log has no places for nested bars: every line is whole
