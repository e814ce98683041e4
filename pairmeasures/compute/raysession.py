"""The Ray session of the Ray engine (:mod:`.raypool`): a cluster joined at an address that is checked within
seconds, or a private local Ray on 127.0.0.1 that nothing outlives.

**Joining** (``--address``): ``HOST:PORT`` and ``ray://HOST[:PORT]`` are checked before Ray is asked, because
Ray retries an address where nothing listens for over ten minutes, and its warnings name this machine's network
address instead of the one typed: a TCP connection and an HTTP/2 answer (Ray's GCS and Ray Client speak gRPC)
within :data:`CONNECT_TIMEOUT` seconds, else a :class:`RayEngineError` naming the address and what to do.

**Starting locally** (no address): a temporary folder of its own (``pm-ray-*``, with a marker naming this
session), no dashboard, 127.0.0.1 only. When the ``with`` block ends, Ray is shut down and every process of the
session (GCS, raylet, monitors, dashboard and runtime-env agents, workers such as ``ray::PoolActor``) is waited
for, a bounded time, then killed; then the folder is removed. A driver killed with SIGKILL cannot do that itself,
so a watchdog started with the session (:mod:`.raywatch`, in a session of its own, reading a pipe whose only
write end the driver holds) does it as soon as the driver is gone. A folder left by a session whose driver and
watchdog are both gone (both killed, a machine reset) is cleaned when the next local Ray starts.

``ray`` and ``psutil`` (Ray's own copy) are imported only inside the functions.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from typing import Iterator, Optional

from . import raywatch

__all__ = ["LOOPBACK_ENV", "CONNECT_TIMEOUT", "RayEngineError", "require_ray", "import_ray", "check_address",
           "ray_session", "clean_stale_sessions"]

#: Set before ``import ray`` so that a local Ray advertises 127.0.0.1, not the machine's network interface.
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
#: Seconds an ``--address`` has to accept a connection and answer before it is called unreachable.
CONNECT_TIMEOUT = 5.0
#: Seconds the processes of a local Ray have to exit after ``ray.shutdown()`` before they are killed, and seconds
#: to wait for them after that (bounded: a loaded machine is slower, not stuck).
SHUTDOWN_GRACE, KILL_WAIT = 5.0, 10.0

_FORMS = ("expected auto, HOST:PORT (the head's GCS port: 6379 unless `ray start --head --port` chose another) "
          "or ray://HOST:PORT (Ray Client, port 10001 by default)")


class RayEngineError(RuntimeError):
    """Ray is missing, or a cluster cannot be used; the message says what to do."""


def require_ray() -> None:
    """A :class:`RayEngineError` saying what to install when Ray is missing (without importing it)."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise RayEngineError("--engine ray needs Ray Data: pip install 'pairmeasures[ray]'")


def import_ray():
    """The ``ray`` module (with Ray Data), or a :class:`RayEngineError` saying what to install."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise RayEngineError(f"--engine ray needs Ray Data ({exc}): pip install 'pairmeasures[ray]'") from None
    return ray


#: Ray's notices that are not for our users (its loggers by module; a renamed module only lets its notice through):
#: Ray Data's start and end of each execution and its note that its progress bars are off (ours show progress), and
#: the note that a new local cluster uses token authentication (it does; nothing to act on).
_RAY_NOTICES = {"ray.data._internal.execution.streaming_executor": logging.WARNING,
                "ray.data._internal.progress": logging.ERROR,
                "ray._private.authentication.authentication_token_setup": logging.ERROR}


def _quiet_ray() -> None:
    logging.getLogger("ray").setLevel(logging.WARNING)
    for name, level in _RAY_NOTICES.items():
        logging.getLogger(name).setLevel(level)


def _host_port(address: str) -> Optional[tuple]:
    """``(host, port)`` of an address to check; ``None`` for ``auto`` (Ray finds the cluster itself and says so
    at once when there is none)."""
    if address in ("auto", "local"):
        return None
    text, client = address.strip(), address.strip().startswith("ray://")
    if client:
        text = text[len("ray://"):]
    text = text.rstrip("/")
    host, colon, port = text.rpartition(":")
    if not colon and client:
        host, port = text, "10001"
    host = host.strip("[]")
    if not host or "://" in host or "/" in host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RayEngineError(f"--address {address!r}: {_FORMS}")
    return host, int(port)


#: An HTTP/2 client's first bytes (the preface, then an empty SETTINGS frame): a gRPC server answers with SETTINGS.
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def _answers_http2(connection: socket.socket) -> bool:
    connection.sendall(_PREFACE)
    header = b""
    while len(header) < 9:
        chunk = connection.recv(9 - len(header))
        if not chunk:
            return False
        header += chunk
    return header[3] == 0x04  # the frame type: SETTINGS


def check_address(address: Optional[str], timeout: float = CONNECT_TIMEOUT) -> None:
    """A :class:`RayEngineError` naming ``address`` and what to do, within about ``timeout`` seconds, when no Ray
    cluster can answer there: nothing listens, no answer, an unknown host, or a service that does not speak gRPC
    (with ``RAY_USE_TLS`` set, a TCP connection is all that is checked). ``None`` and ``auto``: nothing to check."""
    if address is None:
        return
    where = _host_port(address)
    if where is None:
        return
    host, port = where
    start = ("`ray start --head` (its Ray Client listens on 10001, or --ray-client-server-port)"
             if address.strip().startswith("ray://") else f"`ray start --head --port {port}`")
    advice = (f"check that the cluster's head runs there (on the head: {start}) and that --address is the "
              f"address it printed; or leave --address out to start a private local Ray")
    try:
        with socket.create_connection((host, port), timeout=timeout) as connection:
            connection.settimeout(timeout)
            tls = os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true")
            if tls or _answers_http2(connection):
                return
    except socket.gaierror as exc:
        raise RayEngineError(f"--address {address!r}: cannot resolve the host {host!r} ({exc.strerror}): {advice}") \
            from None
    except ConnectionRefusedError:
        raise RayEngineError(f"no Ray cluster at --address {address!r}: nothing listens on {host}:{port} "
                             f"(connection refused): {advice}") from None
    except (socket.timeout, TimeoutError):
        raise RayEngineError(f"no Ray cluster at --address {address!r}: no answer from {host}:{port} within "
                             f"{timeout:g} s (the machine is down, or a firewall drops the port): {advice}") from None
    except OSError as exc:
        raise RayEngineError(f"no Ray cluster at --address {address!r}: {host}:{port}: {exc.strerror or exc}: "
                             f"{advice}") from None
    raise RayEngineError(f"--address {address!r}: something listens on {host}:{port}, but not a Ray head (it does "
                         f"not answer as Ray's GCS or Ray Client do; the dashboard's port, 8265, is not one): "
                         f"{_FORMS}")


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")


@contextmanager
def ray_session(address: Optional[str] = None, *, num_cpus: Optional[int] = None,
                num_gpus: Optional[int] = None) -> Iterator[object]:
    """Ray, initialised for the ``with`` block: joined at ``address`` (checked first: :func:`check_address`);
    else the Ray this process already runs; else a private local one on 127.0.0.1 (``num_cpus``/``num_gpus``:
    its resources, default the machine's) that nothing outlives (the module's docstring). Yields ``ray``."""
    if address is not None:
        check_address(address)
    elif "ray" not in sys.modules:
        os.environ.setdefault(LOOPBACK_ENV, "0")
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    _quiet_ray()
    if address is not None:
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        except Exception as exc:
            raise RayEngineError(f"could not join the Ray cluster at --address {address!r}: {_first_line(exc)}") \
                from None
        try:
            ray.data.DataContext.get_current().enable_progress_bars = False
            yield ray
        finally:
            ray.shutdown()
        return
    with _local_ray(ray, num_cpus, num_gpus):
        yield ray


class _Session:
    """A local Ray's folder, its time, and its watchdog (started before Ray, so it guards Ray's first process)."""

    def __init__(self, ray):
        clean_stale_sessions()
        self.folder = tempfile.mkdtemp(prefix=raywatch.PREFIX)  # short: Ray's socket paths live under it
        self.since = time.time()
        vendored = os.path.join(os.path.dirname(ray.__file__), "thirdparty_files")  # Ray's psutil
        self.watchdog = subprocess.Popen(
            [sys.executable, "-I", raywatch.__file__, self.folder, repr(self.since), str(os.getpid()), vendored],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        with open(os.path.join(self.folder, raywatch.MARKER), "w", encoding="utf-8") as handle:
            json.dump({"driver": os.getpid(), "watchdog": self.watchdog.pid, "since": self.since}, handle)

    def end(self) -> list:
        """Every process of the session ended (a bounded wait, then killed) and the folder removed; the watchdog
        let go. Returns the pids that could not be ended (none, normally)."""
        try:
            left = raywatch.end_session(self.folder, self.since, grace=SHUTDOWN_GRACE, wait=KILL_WAIT,
                                        exclude=(self.watchdog.pid,))
            raywatch.remove_session_folder(self.folder, self.since)
        finally:
            if self.watchdog.stdin is not None:
                self.watchdog.stdin.close()  # the watchdog finds nothing left, and exits
            try:
                self.watchdog.wait(timeout=KILL_WAIT)
            except subprocess.TimeoutExpired:
                self.watchdog.kill()
                self.watchdog.wait()
        return left


@contextmanager
def _local_ray(ray, num_cpus: Optional[int], num_gpus: Optional[int]) -> Iterator[None]:
    session = _Session(ray)
    try:
        ray.init(address="local", num_cpus=num_cpus, num_gpus=num_gpus, include_dashboard=False,
                 _node_ip_address="127.0.0.1", _temp_dir=session.folder, log_to_driver=False,
                 logging_level=logging.WARNING)
        ray.data.DataContext.get_current().enable_progress_bars = False
    except Exception as exc:
        _stop(ray, session)
        raise RayEngineError(f"could not start a local Ray: {_first_line(exc)}") from None
    try:
        yield
    finally:
        _stop(ray, session)


def _stop(ray, session: _Session) -> None:
    try:
        ray.shutdown()
    finally:
        left = session.end()
        if left:
            logging.getLogger(__name__).warning("processes of the local Ray could not be ended: %s", left)


def clean_stale_sessions() -> int:
    """End the processes and remove the folders of this user's local Ray sessions whose driver and watchdog are
    both gone (only folders whose marker says this code made them). Returns the folders removed."""
    import psutil

    removed = 0
    for folder in glob.glob(os.path.join(tempfile.gettempdir(), raywatch.PREFIX + "*")):
        marker = raywatch.read_marker(folder)
        try:
            if marker is None or (hasattr(os, "getuid") and os.stat(folder).st_uid != os.getuid()):
                continue
        except OSError:
            continue
        if any(_alive_since(psutil, marker.get(name), marker["since"]) for name in ("driver", "watchdog")):
            continue
        raywatch.end_session(folder, marker["since"], grace=0.0)
        removed += raywatch.remove_session_folder(folder, marker["since"])
    return removed


def _alive_since(psutil, pid, since: float) -> bool:
    """Whether ``pid`` is a running process that was started before ``since`` (not a later one that took its pid)."""
    if not isinstance(pid, int):
        return False
    try:
        process = psutil.Process(pid)
        return process.status() != psutil.STATUS_ZOMBIE and process.create_time() <= since + 2.0
    except psutil.Error:
        return False
