"""``pairmeasures embed --engine local`` shows its progress while it works, as a user sees it: whole lines in a log file
(stderr redirected to a file) and a bar redrawn on a terminal (stderr a pseudo-terminal), several states arriving
before the command ends, not one jump to 100% at the end. (The Ray engine's: tests/test_ray_embed.py.)"""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_embed_command import CHECKOUT, WITHOUT_RAY, small_corpus

TEXTS = 400
#: ``embedding:  45%|...| 180/400 [...]``: a state of the bar, counting distinct texts (small_corpus adds a duplicate).
STATE = re.compile(r"embedding:\s+\d+%\|[^|]*\| (\d+)/(\d+) \[")


def command(corpus: Path, cache: Path, **variables: str) -> tuple[list, dict]:
    environment = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1", "TQDM_DELAY": "0",
                   **variables, "PYTHONPATH": os.pathsep.join(filter(None, [CHECKOUT, os.environ.get("PYTHONPATH")]))}
    return ([sys.executable, "-c", WITHOUT_RAY, "embed", str(corpus), "--batch-size", "8", "--no-index", "--json"],
            environment)


def intermediate(text: str) -> set:
    """The counts of the bar's states between the first (0) and the last (all texts)."""
    return {int(done) for done, total in STATE.findall(text) if 0 < int(done) < int(total)}


def test_a_log_file_gets_whole_lines_while_the_texts_are_embedded(tmp_path, data_mirror):
    corpus = small_corpus(tmp_path / "corpus", TEXTS, data_mirror)
    argv, environment = command(corpus, tmp_path / "cache", TQDM_MININTERVAL="0.3")
    log = tmp_path / "embed.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(argv, env=environment, stdout=subprocess.PIPE, stderr=stderr, text=True)
        seen: set = set()  # intermediate counts read from the file while the command still ran
        while process.poll() is None:
            seen |= intermediate(log.read_text())
            time.sleep(0.1)
        out = process.communicate(timeout=600)[0]
    text = log.read_text()
    assert process.returncode == 0, text[-3000:]
    assert '"embedded": 400' in out
    assert "\r" not in text and f"{TEXTS}/{TEXTS}" in text, text[-3000:]  # whole lines, the last at 100%
    assert len(seen) >= 3, f"only {sorted(seen)} arrived before the end:\n{text[-3000:]}"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pseudo-terminal as Linux opens one")
def test_a_terminal_gets_a_bar_redrawn_while_the_texts_are_embedded(tmp_path, data_mirror):
    import fcntl
    import pty
    import struct
    import termios

    corpus = small_corpus(tmp_path / "corpus", TEXTS, data_mirror)
    argv, environment = command(corpus, tmp_path / "cache")
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a terminal's size (tqdm's width)
    process = subprocess.Popen(argv, env=environment, stdout=subprocess.PIPE, stderr=follower, text=True)
    os.close(follower)
    received = b""
    seen: set = set()
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # EIO: the command closed the terminal (it ended)
                    break
                if not chunk:
                    break
                received += chunk
                if process.poll() is None:
                    seen |= intermediate(received.decode(errors="replace"))
            elif process.poll() is not None:
                break
        out = process.communicate(timeout=600)[0]
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
    text = received.decode(errors="replace")
    assert process.returncode == 0, text[-3000:]
    assert '"embedded": 400' in out
    assert "\r" in text and f"{TEXTS}/{TEXTS}" in text, text[-3000:]  # redrawn in place, ending at 100%
    assert len(seen) >= 3, f"only {sorted(seen)} were drawn before the end:\n{text[-3000:]!r}"
