"""Checks that need the whole run, while ``pt.Experiment(..., batch_size=N)`` shows the evaluator one batch at a time.

With ``batch_size``, PyTerrier evaluates each batch of topics on its own, against the qrels of that batch alone (empty
for a batch of unjudged topics), in both of its plans (``plan='linear'`` and ``plan='tree'``). A check that needs the
whole run or all the qrels (there are qrels; some document of the run has the protected group) must not decide on one
batch. :mod:`~pairmeasures.compat.pyterrier` runs such an experiment inside :func:`evaluating_in_batches`, and a
measure makes such a check through :func:`check_whole_run`: outside batches it decides at once; in batches it is
decided once every batch of the system has been evaluated, with the same error as without batches.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Callable, Hashable, Iterable, Iterator, Optional

__all__ = ["BatchedEvaluation", "evaluating_in_batches", "current_batches", "in_batches", "check_whole_run"]


class BatchedEvaluation:
    """The whole-run checks of the systems of one batched evaluation: for each (system, check), whether the check
    held in some batch, and what the batches where it did not hold saw (for the error)."""

    def __init__(self) -> None:
        self.system: Hashable = None  # the system now evaluated, where one evaluation holds several (plan='tree')
        self._checks: dict[tuple[Hashable, Hashable], tuple[bool, set, Callable[[list], Exception]]] = {}

    @contextlib.contextmanager
    def evaluating(self, system: Hashable) -> Iterator[None]:
        """Evaluations in this block are batches of ``system``."""
        before, self.system = self.system, system
        try:
            yield
        finally:
            self.system = before

    def note(self, key: Hashable, holds: bool, seen: Iterable, error: Callable[[list], Exception]) -> None:
        """One batch's outcome of the check ``key`` of the system now evaluated."""
        held, union, _ = self._checks.get((self.system, key), (False, set(), error))
        self._checks[(self.system, key)] = (held or holds, union | set(seen), error)

    def failure(self) -> Optional[Exception]:
        """The error of the first check (in the order first made) that held in no batch of its system."""
        for held, seen, error in self._checks.values():
            if not held:
                return error(sorted(seen, key=str))
        return None


_CURRENT: ContextVar[Optional[BatchedEvaluation]] = ContextVar("pairmeasures_batched_evaluation", default=None)


@contextlib.contextmanager
def evaluating_in_batches() -> Iterator[BatchedEvaluation]:
    """Evaluations in this block see one batch of topics each; when it ends, the first whole-run check that held in
    no batch of a system raises its error (not when the block ends with an error of its own)."""
    batches = BatchedEvaluation()
    token = _CURRENT.set(batches)
    try:
        yield batches
    finally:
        _CURRENT.reset(token)
    error = batches.failure()
    if error is not None:
        raise error


def current_batches() -> Optional[BatchedEvaluation]:
    """The batched evaluation running now, if any."""
    return _CURRENT.get()


def in_batches() -> bool:
    """Whether the evaluation running now sees one batch of topics (so the qrels may be empty)."""
    return _CURRENT.get() is not None


def check_whole_run(key: Hashable, holds: bool, seen: Iterable, error: Callable[[list], Exception]) -> None:
    """A check of the whole run: raise ``error(sorted(seen))`` unless it ``holds``; in batches, unless it holds in some
    batch of the system (``seen`` then gathered over the batches where it did not). ``key`` names the check (one per
    measure and cut-off); ``seen`` (what the check saw instead) matters only where it does not hold."""
    batches = _CURRENT.get()
    if batches is not None:
        batches.note(key, holds, seen, error)
    elif not holds:
        raise error(sorted(seen, key=str))
