"""The Ray engine's options and addresses, checked as a user meets them: one line, within seconds, before any work
(and without starting or even importing Ray where none is needed); and the clean-up of a local Ray left by a run
whose driver and watchdog were both killed. Only 127.0.0.1 is ever contacted (by the commands, not by this process).

The local Ray's own clean-up (a normal end, and a driver killed with SIGKILL) is tested where a real pool runs:
tests/test_ray_embed.py and tests/test_audit_ray.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ray_survivors import kill, of_the_run, private_tmpdir
from test_embed_command import CHECKOUT, WITHOUT_RAY, small_corpus

pytest.importorskip("ray")

def cli(command: str, *args: str, cache: Path, timeout: float = 300) -> tuple:
    """``(exit code, stderr, seconds)`` of ``pairmeasures COMMAND ARGS`` in a fresh interpreter that must not
    import Ray."""
    environment = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1",
                   "PYTHONPATH": os.pathsep.join(filter(None, [CHECKOUT, os.environ.get("PYTHONPATH")]))}
    environment.pop("RAY_ADDRESS", None)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", WITHOUT_RAY, command, *args], env=environment,
                          capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stderr, time.monotonic() - started


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr[-3000:]
    return lines[0]


def free_port() -> int:
    with socket.socket() as probe:  # bound and closed: nothing listens there afterwards
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


CHECK_ONLY = ("import sys\nfrom pairmeasures.compute.raysession import check_address, RayEngineError\n"
              "try:\n    check_address(sys.argv[1])\nexcept RayEngineError as exc:\n    print(exc)\n    sys.exit(1)\n")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, data_mirror):
    return small_corpus(tmp_path_factory.mktemp("ray-session") / "corpus", 5)


def test_an_address_where_nothing_listens_is_one_line_within_seconds(tmp_path, corpus):
    address = f"127.0.0.1:{free_port()}"
    code, stderr, seconds = cli("embed", str(corpus), "--engine", "ray", "--address", address, cache=tmp_path / "c")
    line = one_line(stderr)
    assert code == 2 and line.startswith("pairmeasures embed: error: no Ray cluster at --address")
    assert address in line and "nothing listens" in line and "ray start --head" in line and "192.0.2" not in line
    assert seconds < 120  # Ray alone retried for over ten minutes (seconds here; the bound allows a loaded machine)
    out = tmp_path / "out"
    code, stderr, seconds = cli("audit", "--out", str(out), "--engine", "ray", "--address", f"ray://{address}",
                                cache=tmp_path / "c")
    line = one_line(stderr)
    assert code == 2 and f"ray://{address}" in line and "Ray Client" in line and seconds < 120
    assert not out.exists() and not list(tmp_path.glob("out*")), "the audit claimed --out before checking the address"


def test_a_port_that_is_not_a_ray_head_is_named_at_once(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def answer():  # a web server's answer, as the dashboard's port (8265) gives
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                connection.recv(64)
                connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=answer, daemon=True).start()
    address = f"127.0.0.1:{server.getsockname()[1]}"
    try:
        done = subprocess.run([sys.executable, "-c", CHECK_ONLY, address], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": CHECKOUT})
    finally:
        server.close()
    assert done.returncode == 1 and address in done.stdout and "not a Ray head" in done.stdout, done.stdout


@pytest.mark.parametrize("address", ["127.0.0.1", "http://127.0.0.1:8265", "ray://:10001"])
def test_an_address_of_no_known_form_is_refused_without_a_connection(address):
    from pairmeasures.compute.raysession import RayEngineError, check_address

    with pytest.raises(RayEngineError, match="expected auto, HOST:PORT"):
        check_address(address)  # (a connection would fail the test: this process is offline)


@pytest.mark.parametrize("options, message", [
    (("--workers", "-3"), "--workers applies to --engine ray"),
    (("--engine", "ray", "--workers", "-3"), "--workers must be at least 1; got -3"),
    (("--engine", "local", "--workers", "0"), "--workers applies to --engine ray"),
    (("--shard-size", "0"), "--shard-size applies to --engine ray"),
    (("--engine", "ray", "--shard-size", "0"), "--shard-size must be at least 1; got 0"),
    (("--engine", "ray", "--tokenizers", "-1"), "--tokenizers must be 0 or more; got -1"),
    (("--batch-size", "0"), "--batch-size must be at least 1; got 0"),
])
def test_embed_options_out_of_range_are_one_line_before_any_work(tmp_path, corpus, options, message):
    code, stderr, _ = cli("embed", str(corpus), *options, cache=tmp_path / "cache")
    assert code == 2 and one_line(stderr).startswith(f"pairmeasures embed: error: {message}")
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").rglob("*.sqlite"))


@pytest.mark.parametrize("options, message", [
    (("--workers", "-3"), "--workers applies to --engine ray"),
    (("--engine", "ray", "--workers", "-3"), "--workers must be at least 1; got -3"),
    (("--engine", "ray", "--workers", "0"), "--workers must be at least 1; got 0"),
])
def test_audit_engine_options_out_of_range_are_one_line_before_any_work(tmp_path, options, message):
    out = tmp_path / "out"
    code, stderr, _ = cli("audit", "--out", str(out), *options, cache=tmp_path / "cache")
    assert code == 2 and one_line(stderr).startswith(f"pairmeasures audit: error: {message}")
    assert not out.exists()


@pytest.mark.parametrize("engine", ["local", "ray"])
def test_an_empty_corpus_is_one_line_naming_its_file(tmp_path, data_mirror, engine):
    empty = small_corpus(tmp_path / "empty", 1)
    (empty / "corpus.jsonl").write_text("")
    code, stderr, _ = cli("embed", str(empty), "--engine", engine, cache=tmp_path / "cache")
    line = one_line(stderr)
    assert code == 2 and line.startswith("pairmeasures embed: error: "), line  # as every command fails
    assert str(empty / "corpus.jsonl") in line and "has no documents" in line, line


def test_a_left_over_session_whose_driver_and_watchdog_are_gone_is_cleaned_at_the_next_start(tmp_path, monkeypatch):
    import tempfile

    from pairmeasures.compute import raywatch
    from pairmeasures.compute.raysession import clean_stale_sessions

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that ran and ended: the "driver" and "watchdog" of the left-over session
    since = time.time()
    stale, alive, foreign = (Path(tempfile.mkdtemp(prefix=raywatch.PREFIX)) for _ in range(3))
    (stale / raywatch.MARKER).write_text(json.dumps({"driver": dead.pid, "watchdog": dead.pid, "since": since}))
    (alive / raywatch.MARKER).write_text(json.dumps({"driver": os.getpid(), "watchdog": dead.pid, "since": since}))
    (foreign / "notes.txt").write_text("not a session of ours: no marker")
    (stale / "session" / "logs").mkdir(parents=True)
    log = stale / "session" / "logs" / "agent.out"
    # a process of the left-over session, as Ray's agents are: it holds a log file of the folder open
    agent = subprocess.Popen([sys.executable, "-c", "import sys, time\nhandle = open(sys.argv[1], 'w')\n"
                              "print('ready', flush=True)\ntime.sleep(600)", str(log)], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert agent.stdout.readline() == "ready\n"
        assert clean_stale_sessions() == 1
        agent.wait(timeout=60)  # killed: it would have slept for ten minutes
    finally:
        if agent.poll() is None:
            agent.kill()
        agent.wait()
        agent.stdout.close()
    assert not stale.exists()
    assert (alive / raywatch.MARKER).is_file() and (foreign / "notes.txt").is_file()


DETACHING = """import os, subprocess, sys
sleeper = [sys.executable, "-c", "import sys, time; time.sleep(600)"]
subprocess.Popen(sleeper, start_new_session=True)  # as Ray's watchdog: a session of its own, the run's TMPDIR
subprocess.Popen(sleeper + [os.path.join(os.environ["TMPDIR"], "pm-ray-x", "session_1")], start_new_session=True,
                 env={"PATH": os.environ.get("PATH", "")})  # as Ray's GCS: the session folder on its command line
"""


def test_the_ray_tests_find_what_a_run_detached_into_sessions_of_their_own(tmp_path):
    """What tests/test_audit_ray.py and test_ray_embed.py check after a run: the processes of its session, and those it
    detached into sessions of their own, known by its private TMPDIR in their environment or on their command line
    (the check of the run's session alone saw none of these)."""
    temporary, other = private_tmpdir(), private_tmpdir()
    since = time.time()
    run = subprocess.Popen([sys.executable, "-c", DETACHING], env={**os.environ, "TMPDIR": temporary},
                           start_new_session=True)
    try:
        assert run.wait(timeout=120) == 0
        left = of_the_run(run.pid, temporary, since)
        assert len(left) == 2 and all(os.getsid(p.pid) not in (run.pid, os.getsid(0)) for p in left), left
        assert not of_the_run(run.pid, other, since)  # another run's TMPDIR: none of them
    finally:
        kill(of_the_run(run.pid, temporary, since))
        os.rmdir(temporary)
        os.rmdir(other)
