"""Progress of long work, on a terminal and in a log file alike.

On a terminal (or in a notebook) :func:`progress_bar` is a ``tqdm.auto`` bar that redraws in place and appears only
when the work takes more than :data:`DELAY` seconds. When stderr is a file or a pipe (``nohup``, a batch job, CI) it
is the same bar written as whole lines: one when the work has taken :data:`DELAY` seconds, then one every
:data:`LOG_INTERVAL` seconds, and a last one when it ends, each ending in a newline (no carriage returns), so a log
stays readable with ``tail -f``, ``less`` or ``grep``. Work shorter than :data:`DELAY` seconds writes nothing.

A bar moves when its work calls ``update``, and also on a clock, so that a step slower than the bar's interval (a
batch of a model on a CPU, a shard on Ray) does not freeze it: on a terminal it is redrawn every :data:`TICK`
seconds (its elapsed time and rate go on), in a log a line is written when :data:`LOG_INTERVAL` seconds passed
without one (the same count, a later time: the work goes on). One thread does it for every open bar, and ends when
none is left.

tqdm's own variables change the timing: ``TQDM_DELAY`` (seconds before the first line) and ``TQDM_MININTERVAL``
(seconds between lines in a log; the clock's line comes after at least one second without one);
``TQDM_DISABLE=1`` hides every bar.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
import weakref
from typing import IO, Any, Iterable, Optional

__all__ = ["DELAY", "LOG_INTERVAL", "TICK", "progress_bar", "is_terminal"]

#: Seconds before a bar appears (short work shows none), unless ``TQDM_DELAY`` says otherwise.
DELAY = 2.0
#: Seconds between two lines of a bar in a log file, unless ``TQDM_MININTERVAL`` says otherwise.
LOG_INTERVAL = 30.0
#: Seconds between two redraws of a bar on a terminal by the clock, when its work has not moved it.
TICK = 1.0
#: The least seconds without a line before the clock writes one in a log (whatever ``TQDM_MININTERVAL`` says).
_LEAST_SILENCE = 1.0


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
    written less than ``repeat`` seconds before (with other times) are dropped."""

    def __init__(self, stream: IO, repeat: float = 0.0):
        self.stream = stream
        self.encoding = getattr(stream, "encoding", None) or "utf-8"
        self.last = ""
        self.repeat = repeat
        self.written = 0.0  # time.monotonic() of the last line

    def write(self, text: str) -> int:
        written = ""
        now = time.monotonic()
        for line in _CURSOR.sub("", text).replace("\r", "\n").split("\n"):
            line = line.rstrip()
            state = line.rpartition(" [")[0] or line  # the bar without its times and rate
            # a bar's last state is drawn again when it closes: once is enough; the clock's line, later, is news
            if line and (state != self.last or now - self.written >= self.repeat):
                written += f"{line}\n"
                self.last, self.written = state, now
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
        return _clocked(tqdm(iterable, file=stream, leave=leave, **options), None)
    from tqdm.std import tqdm as plain

    interval = _seconds("TQDM_MININTERVAL", LOG_INTERVAL)
    silence = max(interval, _LEAST_SILENCE)
    lines = _Lines(stream, repeat=0.9 * silence)
    return _clocked(plain(iterable, file=lines, leave=True, mininterval=interval, maxinterval=max(interval, 10.0),
                          ncols=100, position=0, **options), silence)  # a log has no places for nested bars


#: The open bars the clock moves: ``id(bar) -> (weak reference, seconds of silence before a line, or None: redraw)``.
_CLOCKED: dict = {}
_CLOCK_LOCK = threading.Lock()
_CLOCK: list = []  # the clock's thread, while it runs


def _clocked(bar: Any, silence: Optional[float]) -> Any:
    """``bar``, moved by the clock until it is closed: redrawn every :data:`TICK` seconds (``silence=None``, a
    terminal), or written again when ``silence`` seconds passed since its last line (a log)."""
    if bar.disable:
        return bar
    with _CLOCK_LOCK:
        _CLOCKED[id(bar)] = (weakref.ref(bar), silence)
        if not _CLOCK:
            thread = threading.Thread(target=_run_clock, name="pairmeasures-progress", daemon=True)
            _CLOCK.append(thread)
            thread.start()
    return bar


def _run_clock() -> None:
    """Every :data:`TICK` seconds, refresh each open bar that is due (:func:`_clocked`); end when none is open."""
    while True:
        time.sleep(TICK)
        with _CLOCK_LOCK:
            watched = list(_CLOCKED.items())
        for key, (reference, silence) in watched:
            bar = reference()
            if bar is None or bar.disable or not _tick(bar, silence):  # closed, or its stream is gone
                with _CLOCK_LOCK:
                    _CLOCKED.pop(key, None)
            del bar
        with _CLOCK_LOCK:
            if not _CLOCKED:
                _CLOCK.clear()
                return


def _tick(bar: Any, silence: Optional[float]) -> bool:
    """Refresh ``bar`` if it is shown (its delay passed) and due; False when it cannot be written to any more."""
    now = time.time()  # tqdm's clock
    if now < bar.start_t + bar.delay or (silence is not None and now - bar.last_print_t < silence):
        return True
    try:
        bar.refresh()
    except (ValueError, OSError):  # a closed stream (the interpreter ending)
        return False
    bar.last_print_t = now  # as tqdm's own update does: its next line waits its interval from this one
    return True
