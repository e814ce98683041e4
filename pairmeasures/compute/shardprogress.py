"""Progress of shards embedded on Ray, as the actors go rather than when a shard is merged.

A shard takes minutes at CPU rates (2,048 texts at some 20 to 100 texts a second per actor), so a bar moved only by
merges would stand still that long. Each model actor tells a :class:`ShardCounter` (a small Ray actor of no CPU)
how many texts of its shard it has embedded, after its batches (:class:`BatchReporter`, at most every
:data:`REPORT_SECONDS`); the driver reads the counter every :data:`POLL_SECONDS` (:func:`polled`) and a
:class:`ShardProgress` turns those counts and the merges into one number of texts embedded: it never goes back,
never counts a text twice (a shard embedded again after its actor was killed counts once) and ends at the number of
texts. ``ray`` is never imported here: the functions take the module.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Mapping, Optional, Sequence

__all__ = ["POLL_SECONDS", "REPORT_SECONDS", "ShardCounter", "BatchReporter", "ShardProgress", "polled"]

#: Seconds between two reads of the counter by the driver.
POLL_SECONDS = 1.0
#: Seconds between two reports of an actor to the counter (its last batch of a shard is always reported).
REPORT_SECONDS = 0.5


class ShardCounter:
    """A Ray actor (created with ``num_cpus=0``): the texts of each shard the model actors have embedded so far."""

    def __init__(self) -> None:
        self.rows: dict = {}

    def done(self, shard: str, rows: int) -> None:
        """``rows`` texts of ``shard`` are embedded (by one attempt at it: the most any attempt reached is kept)."""
        self.rows[shard] = max(self.rows.get(shard, 0), int(rows))

    def counts(self) -> dict:
        """``{shard: texts embedded}``."""
        return dict(self.rows)


class BatchReporter:
    """An actor's ``on_batch`` for one shard: adds up the texts of its batches and tells ``counter`` (an actor
    handle, or None) at most every :data:`REPORT_SECONDS`, fire and forget; :meth:`finish` tells it the whole shard."""

    def __init__(self, counter, shard: str):
        self.counter, self.shard = counter, shard
        self.rows = 0
        self.told = time.monotonic()

    def __call__(self, rows: int) -> None:
        self.rows += rows
        now = time.monotonic()
        if self.counter is not None and now - self.told >= REPORT_SECONDS:
            self.counter.done.remote(self.shard, self.rows)
            self.told = now

    def finish(self, rows: int) -> None:
        """The shard's ``rows`` texts are embedded (and written)."""
        self.rows = rows
        if self.counter is not None:
            self.counter.done.remote(self.shard, rows)


class ShardProgress:
    """Texts embedded so far across ``shards`` (``(id, texts)`` pairs), from the counter's counts and the merges, as
    increments to ``progress`` (e.g. a bar's ``update``). Safe to call from the polling thread and the merging one."""

    def __init__(self, shards: Sequence[tuple], progress: Optional[Callable[[int], object]]):
        self.size = {shard: int(rows) for shard, rows in shards}
        self.best: dict = {}
        self.shown = 0
        self.progress = progress
        self._lock = threading.Lock()

    def seen(self, counts: Mapping[str, int]) -> None:
        """Texts embedded per shard, as the counter or a merge says: the bar moves by what is new."""
        with self._lock:
            for shard, rows in counts.items():
                if shard in self.size:
                    self.best[shard] = max(self.best.get(shard, 0), min(int(rows), self.size[shard]))
            total = sum(self.best.values())
            if total > self.shown:
                if self.progress is not None:
                    self.progress(total - self.shown)
                self.shown = total

    def merged(self, shard: str) -> None:
        """``shard`` is merged into the cache: all its texts count."""
        self.seen({shard: self.size.get(shard, 0)})


@contextmanager
def polled(ray, counter, tracker: ShardProgress, every: float = POLL_SECONDS) -> Iterator[None]:
    """While the block runs, read ``counter`` (a :class:`ShardCounter` actor) every ``every`` seconds in a thread and
    tell ``tracker``; a slow or failed read is skipped (the merges still move the bar). The thread ends with the
    block."""
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(every):
            try:
                counts = ray.get(counter.counts.remote(), timeout=max(10.0, every))
            except Exception:  # noqa: BLE001 - progress only: a counter that does not answer leaves the bar to merges
                continue
            tracker.seen(counts)

    thread = threading.Thread(target=poll, name="pairmeasures-shard-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=every + 15.0)
