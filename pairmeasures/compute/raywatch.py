"""What nothing of a private local Ray may outlive: its processes and its temporary folder (:mod:`.raysession`).

A session is known by its temporary folder (made for it alone) and the marker file in it, which names the
driver (the process that started the session) and its watchdog. Its processes are this user's processes started
after the folder was made that hold a file open in it or name it on their command line: Ray's GCS, raylet, monitors
and dashboard name it, its agents and workers keep their log files there (their command lines are replaced by
titles such as ``ray::PoolActor``, and they are not all in the driver's process group).

Run as a script (``python raywatch.py FOLDER SINCE DRIVER_PID [PSUTIL_FOLDER]``), this module is the watchdog of one
session: it waits for its standard input to close (the driver holds the only write end, so it closes when the
driver ends, SIGKILL included), then ends what is left of the session's processes and removes the folder. It
needs nothing but the standard library and psutil (Ray's own copy, whose folder the driver passes), so it starts
in a fraction of a second and never imports Ray or pairmeasures.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from typing import Iterable, Optional

__all__ = ["MARKER", "PREFIX", "session_processes", "end_session", "remove_session_folder", "read_marker",
           "main"]

#: The name of a session's temporary folder begins with this.
PREFIX = "pm-ray-"
#: The marker file in the folder: ``{"driver": pid, "driver_started": time, "watchdog": pid, "since": time}``.
MARKER = "pairmeasures-ray-session.json"
#: Seconds of slack between the folder's time and a process's start time (the two clocks are read differently).
_SLACK = 2.0


def _psutil():
    import psutil

    return psutil


def read_marker(folder: str) -> Optional[dict]:
    """The marker of the session whose folder is ``folder``, or ``None`` when it has none (not a session of ours)."""
    try:
        with open(os.path.join(folder, MARKER), encoding="utf-8") as handle:
            marker = json.load(handle)
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) and isinstance(marker.get("since"), (int, float)) else None


def _names_folder(process, folder: str) -> bool:
    inside = folder.rstrip(os.sep) + os.sep
    if any(inside in part or part == folder for part in process.cmdline()):
        return True
    return any(f.path.startswith(inside) for f in process.open_files())


def session_processes(folder: str, since: float, exclude: Iterable[int] = ()) -> list:
    """This user's processes of the session whose temporary folder is ``folder``, made at ``since`` (a
    ``time.time()``): started since then, holding a file open in the folder or naming it on their command line.
    ``exclude``: pids never returned (the driver and the watchdog: they hold the folder's files too)."""
    psutil = _psutil()
    skip = {os.getpid(), *exclude}
    uid = os.getuid() if hasattr(os, "getuid") else None
    found = []
    for process in psutil.process_iter():
        if process.pid in skip:
            continue
        try:
            if process.create_time() < since - _SLACK:
                continue
            if uid is not None and process.uids().real != uid:
                continue
            if process.status() == psutil.STATUS_ZOMBIE:
                continue  # ended (its parent collects it; never this code: it may be another's child)
            if _names_folder(process, folder):
                found.append(process)
        except (psutil.Error, OSError):
            continue  # gone meanwhile, or not ours to read
    return found


def _alive(processes: list) -> list:
    psutil = _psutil()
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.Error:
            pass
    return alive


def _wait(processes: list, seconds: float) -> list:
    deadline = time.monotonic() + seconds
    alive = _alive(processes)
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = _alive(alive)
    return alive


def end_session(folder: str, since: float, *, grace: float, wait: float = 10.0, exclude: Iterable[int] = ()) -> list:
    """End what is left of a session's processes: wait up to ``grace`` seconds for them to exit by themselves,
    kill (SIGKILL) the rest and wait up to ``wait`` seconds for them, again while new ones appear (three rounds
    at most). Returns the pids still alive after that (none, unless a process cannot be killed)."""
    psutil = _psutil()
    exclude = tuple(exclude)
    for _round in range(3):
        processes = session_processes(folder, since, exclude)
        if not processes:
            return []
        left = _wait(processes, grace)
        for process in left:
            try:
                process.kill()  # (psutil refuses a pid that another process has taken meanwhile)
            except psutil.Error:
                pass
        _wait(left, wait)
    return [p.pid for p in session_processes(folder, since, exclude)]


def remove_session_folder(folder: str, since: float) -> bool:
    """Remove a session's temporary folder, only when its marker names the session made at ``since`` (the one
    folder this code made and can prove it made). Returns whether it is gone."""
    marker = read_marker(folder)
    if marker is None or marker["since"] != since:
        return not os.path.exists(folder)
    shutil.rmtree(folder, ignore_errors=True)
    return not os.path.exists(folder)


def main(argv: list) -> int:
    """The watchdog: ``FOLDER SINCE DRIVER_PID [PSUTIL_FOLDER]``; waits for standard input to close, then ends the
    session's processes and removes its folder."""
    folder, since, driver = argv[0], float(argv[1]), int(argv[2])
    if len(argv) > 3:
        sys.path.insert(0, argv[3])
    try:
        while sys.stdin.buffer.read(65536):
            pass  # nothing is ever written: this returns when the driver closes its end, or ends
    except (OSError, ValueError):
        pass
    end_session(folder, since, grace=1.0, exclude=(driver,))
    remove_session_folder(folder, since)
    return 0


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for the command is the command's to handle
    sys.exit(main(sys.argv[1:]))
