"""What a command's run left running, for the Ray tests: the processes of its session and those Ray started in
any other session (its watchdog starts in one of its own, and Ray may detach others), found by the run's private
TMPDIR, where its local Ray's session folder lies."""

from __future__ import annotations

import os
import tempfile

import psutil


def private_tmpdir() -> str:
    """A fresh TMPDIR for one run (short: Ray's socket paths live under it)."""
    return tempfile.mkdtemp(prefix="pmt-")


def of_the_run(session: int, temporary: str, since: float) -> list:
    """The live processes a run started: those of its session (``session``: the run was started with
    start_new_session, so its pid), and those of this user started since ``since`` (a ``time.time()``) that have the
    run's TMPDIR ``temporary`` in their environment, name a path in it on their command line, hold a file open there
    or work there, whatever their session."""
    inside = temporary.rstrip(os.sep) + os.sep
    found = []
    for process in psutil.process_iter():
        if process.pid in (os.getpid(), session):
            continue
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                continue  # ended, its parent not yet told
            if os.getsid(process.pid) == session:
                found.append(process)
                continue
            if process.create_time() < since - 2 or process.uids().real != os.getuid():
                continue
            if process.environ().get("TMPDIR") == temporary or any(inside in part for part in process.cmdline()) \
                    or process.cwd().startswith(inside) or any(f.path.startswith(inside) for f in process.open_files()):
                found.append(process)
        except (psutil.Error, OSError):
            continue  # gone meanwhile, or not ours to read
    return found


def describe(process: psutil.Process) -> str:
    """A survivor in a failure message: pid, command line (Ray's title), session."""
    try:
        return f"{process.pid} {' '.join(process.cmdline())[:120]!r} (session {os.getsid(process.pid)})"
    except (psutil.Error, OSError):
        return f"{process.pid} (gone meanwhile)"


def kill(processes: list) -> None:
    for process in processes:
        try:
            process.kill()
        except psutil.Error:
            pass


def ray_folders(temporary: str) -> list:
    """The local Ray session folders (``pm-ray-*``) left in a run's TMPDIR."""
    return sorted(name for name in os.listdir(temporary) if name.startswith("pm-ray-"))
