"""Progress bars on a terminal and in a log file (pairmeasures.io.progress): a log gets whole lines, at most one
per interval, and short work writes nothing; the audit's own log is checked in tests/test_report.py."""

from __future__ import annotations

import io
import time

import pytest

from pairmeasures.io.progress import LOG_INTERVAL, TICK, progress_bar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def no_tqdm_settings(monkeypatch):
    for name in ("TQDM_DELAY", "TQDM_MININTERVAL", "TQDM_DISABLE"):
        monkeypatch.delenv(name, raising=False)


def test_a_log_gets_a_first_and_a_last_line_and_no_carriage_returns():
    log = io.StringIO()
    for _ in progress_bar(range(50), desc="systems", unit="system", show=True, stream=log):
        pass
    text = log.getvalue()
    lines = text.splitlines()
    assert "\r" not in text and "\x1b" not in text and text.endswith("\n")
    assert len(lines) == 2 and "0/50" in lines[0] and "50/50" in lines[1]  # the 48 states between: under LOG_INTERVAL
    assert all(line.startswith("systems:") for line in lines) and LOG_INTERVAL >= 10


def test_a_log_gets_a_line_per_interval_and_nested_bars_stay_whole_lines(monkeypatch):
    monkeypatch.setenv("TQDM_MININTERVAL", "0.05")
    monkeypatch.setenv("TQDM_DELAY", "0")
    log = io.StringIO()
    for _ in progress_bar(range(2), desc="systems", unit="system", leave=False, stream=log):
        with progress_bar(total=4, desc="embedding with model", unit="text", stream=log) as bar:
            for _ in range(4):
                time.sleep(0.06)
                bar.update(1)
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue() and "\x1b" not in log.getvalue()  # no cursor moves for the nested bar
    assert sum("embedding with model" in line and "4/4" in line for line in lines) == 2
    assert any(line.startswith("systems:") and "1/2" in line for line in lines)
    assert any(line.startswith("embedding with model") and "2/4" in line for line in lines)
    assert all(line.startswith(("systems:", "embedding with model:")) for line in lines)
    states = [line.rpartition(" [")[0] for line in lines]
    assert all(a != b for a, b in zip(states, states[1:]))  # a bar's last state, drawn again as it closes, is written once


def test_short_work_writes_nothing_and_false_hides_the_bar():
    for stream in (io.StringIO(), Terminal()):
        for _ in progress_bar(range(10), desc="quick", unit="x", stream=stream):
            pass
        for _ in progress_bar(range(10), desc="hidden", unit="x", show=False, stream=stream):
            time.sleep(0.001)
        assert stream.getvalue() == ""


def test_a_terminal_gets_a_bar_redrawn_in_place(monkeypatch):
    terminal = Terminal()
    for _ in progress_bar(range(3), desc="systems", unit="system", show=True, stream=terminal):
        time.sleep(0.15)
    assert "\r" in terminal.getvalue() and "3/3" in terminal.getvalue()


def test_tqdm_disable_hides_bars_unless_one_is_asked_for(monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.setenv("TQDM_DELAY", "0")
    log = io.StringIO()
    for _ in progress_bar(range(3), desc="default", unit="x", stream=log):
        pass
    assert log.getvalue() == ""
    for _ in progress_bar(range(3), desc="asked", unit="x", show=True, stream=log):
        pass
    assert "asked" in log.getvalue()


def test_a_terminal_bar_is_redrawn_by_the_clock_while_its_work_is_slow():
    """No update for 3.2 s (a slow batch): the bar is redrawn at least every TICK seconds, its elapsed time moving."""
    terminal = Terminal()
    with progress_bar(total=4, desc="embedding", unit="text", show=True, stream=terminal) as bar:
        bar.update(1)
        time.sleep(3.2)
        drawn = terminal.getvalue().split("\r")
        bar.update(3)
    elapsed = {d.partition("[")[2][:5] for d in drawn if "1/4" in d}  # "00:01", "00:02", ...
    assert TICK <= 1.0 and len(elapsed) >= 3, drawn


def test_a_log_gets_a_line_from_the_clock_when_the_work_is_silent(monkeypatch):
    monkeypatch.setenv("TQDM_MININTERVAL", "0.2")
    monkeypatch.setenv("TQDM_DELAY", "0")
    log = io.StringIO()
    with progress_bar(total=4, desc="embedding", unit="text", stream=log) as bar:
        bar.update(1)
        time.sleep(3.3)  # a slow batch: lines say the work goes on, one a second (the least silence)
        during = log.getvalue().splitlines()
        bar.update(3)
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue() and lines[-1].startswith("embedding: 100%")
    silent = [line for line in during if "1/4" in line]
    assert 2 <= len(silent) <= 4, during
    assert len({line.rpartition("[")[2][:5] for line in silent}) == len(silent)  # each a later time


def test_the_clock_stops_when_no_bar_is_open():
    import threading

    with progress_bar(total=2, desc="x", unit="x", show=True, stream=Terminal()) as bar:
        bar.update(2)
    deadline = time.monotonic() + 5
    while any(t.name == "pairmeasures-progress" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(t.name == "pairmeasures-progress" for t in threading.enumerate())


def test_shard_progress_counts_each_text_once_and_never_goes_back():
    """What the Ray engine's bar is moved by (pairmeasures.compute.shardprogress): the actors' counts per shard and
    the merges; a shard embedded again after its actor was killed counts once, and the total ends at the texts."""
    from pairmeasures.compute.shardprogress import BatchReporter, ShardCounter, ShardProgress

    moves: list = []
    tracker = ShardProgress([("a", 100), ("b", 50)], moves.append)
    tracker.seen({"a": 30})
    tracker.seen({"a": 60, "b": 10})
    tracker.seen({"a": 20})  # the shard started again by a restarted actor: no step back
    tracker.seen({"a": 500, "z": 7})  # at most the shard's texts; a shard of another plan is not counted
    tracker.merged("b")
    tracker.merged("a")
    assert moves == [30, 40, 40, 40] and tracker.shown == sum(moves) == 150

    class Handle:  # a Ray actor handle's shape: handle.done.remote(...)
        def __init__(self, counter):
            self.done = type("Method", (), {"remote": staticmethod(counter.done)})

    counter = ShardCounter()
    reporter = BatchReporter(Handle(counter), "a")
    reporter(16)  # within REPORT_SECONDS of its start: kept for the next report
    assert counter.counts() == {}
    reporter.told -= 1.0
    reporter(16)
    assert counter.counts() == {"a": 32}
    reporter.finish(100)
    BatchReporter(Handle(counter), "a").finish(40)  # a second attempt that got less far
    assert counter.counts() == {"a": 100}
