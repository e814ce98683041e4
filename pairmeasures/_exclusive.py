"""Exclusive access for writing outputs (:mod:`pairmeasures._atomic` uses them): a lock file that a second
writer cannot take (:class:`Lock`), a rename that never replaces (:func:`rename_noreplace`), and Ctrl-C held across
a few renames (:class:`HeldSignals`)."""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

try:
    import fcntl
except ImportError:  # not on Windows: outputs are not locked there
    fcntl = None  # type: ignore[assignment]

__all__ = ["Lock", "HeldSignals", "rename_noreplace"]


def rename_noreplace(source: Path, target: Path) -> None:
    """Rename ``source`` to ``target``, or FileExistsError when something is at ``target``: atomically on Linux
    (``renameat2`` with ``RENAME_NOREPLACE``); elsewhere a look, then a rename (which fails over a non-empty folder)."""
    renameat2 = _renameat2()
    if renameat2 is not None:
        import ctypes

        if renameat2(-100, os.fsencode(source), -100, os.fsencode(target), 1) == 0:  # AT_FDCWD, RENAME_NOREPLACE
            return
        code = ctypes.get_errno()
        if code == errno.EEXIST:
            raise FileExistsError(code, os.strerror(code), str(target))
        if code not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # else: not supported there; fall back
            raise OSError(code, os.strerror(code), str(source), None, str(target))
    if os.path.lexists(target):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target))
    try:
        os.rename(source, target)
    except OSError as error:
        if error.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target)) from error
        raise


def _renameat2() -> Optional[Callable[..., int]]:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


class Lock:
    """An exclusive ``flock`` on ``.NAME.lock`` beside ``target``, which records the process holding it; the file is
    removed on release (a process that locked it meanwhile notices and locks the new one)."""

    def __init__(self, target: Path, label: str, option: Optional[str]):
        self.path, self.label = target.parent / f".{target.name}.lock", label
        self.instead = f"another {option}" if option else "another path"
        self.descriptor: Optional[int] = None

    def acquire(self, wait: float = 0.0) -> None:
        """Take the lock, or a ValueError naming the process holding it; ``wait``: seconds to wait for that
        process to release it first (writers that take turns, such as records written into one results folder)."""
        if fcntl is None:
            return
        deadline = time.monotonic() + wait
        while True:
            try:
                descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
            except OSError as error:
                raise ValueError(f"{self.label}: cannot create the lock file {str(self.path)!r} ({error.strerror}): "
                                 "choose a folder you may write in") from None
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = self._holder(descriptor)
                os.close(descriptor)
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                raise ValueError(f"{self.label} is being written by another pairmeasures process{holder}: wait for it "
                                 f"to finish, or choose {self.instead}") from None
            except OSError:  # a file system without locks: go on unlocked
                os.close(descriptor)
                return
            try:
                current = os.stat(self.path)
            except FileNotFoundError:
                current = None
            if current is not None and os.path.samestat(os.fstat(descriptor), current):
                break
            os.close(descriptor)  # its holder removed it as this process opened it: lock the new one
        record = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
        os.ftruncate(descriptor, 0)
        os.write(descriptor, json.dumps(record).encode("utf-8"))
        self.descriptor = descriptor

    @staticmethod
    def _holder(descriptor: int) -> str:
        try:
            holder = json.loads(os.read(descriptor, 4096).decode("utf-8"))
            return f" (pid {int(holder['pid'])} on {holder['host']}, since {holder['since']})"
        except (OSError, ValueError, TypeError, KeyError):
            return ""

    def release(self) -> None:
        if self.descriptor is not None:
            Path(self.path).unlink(missing_ok=True)  # still locked: whoever opened it meanwhile sees it gone
            os.close(self.descriptor)
            self.descriptor = None


class HeldSignals:
    """Inside the block, Ctrl-C and SIGTERM are held (main thread only); :meth:`deliver` acts on them afterwards."""

    def __init__(self) -> None:
        self.caught: list = []
        self.previous: dict = {}

    def __enter__(self) -> "HeldSignals":
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(number) is not None:  # None: a handler not set from Python, left alone
                    self.previous[number] = signal.signal(number, lambda number, frame: self.caught.append(number))
        return self

    def __exit__(self, *exc: Any) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)
        self.previous = {}

    def deliver(self) -> None:
        """Raise each signal held (Ctrl-C: KeyboardInterrupt here)."""
        caught, self.caught = self.caught, []
        for number in dict.fromkeys(caught):
            signal.raise_signal(number)
