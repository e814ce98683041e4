"""Term counting: a lexicon's term occurrences in texts, kept per process by the texts' content.

:class:`TermCounter` counts a lexicon's terms in texts, each distinct text once per process (texts
are keyed by their content), so all term-based measures in one evaluation, and all systems ranking
the same corpus, share one pass; :func:`term_counter` gives the process-wide counter of a term list.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator, Optional, Sequence, Union

import numpy as np

from ..io.memo import Memo, content_key
from .termlists import BUILTIN_TERM_LISTS, Lexicon
from .tokenizers import word_texts

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TermStats", "TermCounter", "term_counter"]


@dataclass(frozen=True)
class TermStats:
    """Term occurrences in a batch of texts: token counts, and one (text, term, count) triple per
    term that occurs in a text, ordered by text."""

    lexicon: Lexicon
    lengths: np.ndarray
    hit_text: np.ndarray
    hit_term: np.ndarray
    hit_count: np.ndarray

    def __len__(self) -> int:
        return self.lengths.size

    def take(self, rows: np.ndarray) -> "TermStats":
        """Statistics of the texts ``rows`` (which may repeat), in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        first_hit = np.searchsorted(self.hit_text, np.arange(len(self) + 1))
        starts, counts = first_hit[rows], first_hit[rows + 1] - first_hit[rows]
        output_starts = np.cumsum(counts) - counts
        picked = np.repeat(starts - output_starts, counts) + np.arange(counts.sum())
        return TermStats(self.lexicon, self.lengths[rows], np.repeat(np.arange(rows.size), counts),
                         self.hit_term[picked], self.hit_count[picked])

    def group_counts(self) -> np.ndarray:
        """``(n_texts, n_groups)``: occurrences of each group's terms."""
        membership = self.lexicon.membership
        counts = np.zeros((len(self), membership.shape[1]))
        for column in range(membership.shape[1]):
            member = membership[self.hit_term, column]
            counts[:, column] = np.bincount(self.hit_text[member], weights=self.hit_count[member], minlength=len(self))
        return counts

    def word_counts(self, group: str) -> np.ndarray:
        """``(n_texts, n_words)``: counts of each of one group's terms (for IBBR's magnitude)."""
        column = self.lexicon._group_index(group)
        words = np.flatnonzero(self.lexicon.membership[:, column])
        position = np.full(len(self.lexicon.terms), -1)
        position[words] = np.arange(words.size)
        member = position[self.hit_term] >= 0
        matrix = np.zeros((len(self), words.size))
        matrix[self.hit_text[member], position[self.hit_term[member]]] = self.hit_count[member]
        return matrix


class TermCounter:
    """Counts a lexicon's terms in texts, each distinct text once.

    Every text counted so far is kept in one store (token counts and term hits, row per text) and
    found again by its content, so a later call only tokenises texts it has not seen. Safe to share
    between threads: one call at a time reads and extends the store.
    """

    #: Texts remembered before the store starts afresh (bounds memory on very large runs).
    MEMO_LIMIT = 2_000_000

    def __init__(self, lexicon: Lexicon):
        self.lexicon = lexicon
        self._index = {term: i for i, term in enumerate(lexicon.terms)}
        self._lock = threading.Lock()
        self._clear()
        self.counted = 0  # texts tokenised so far (the rest were found in the store)

    def _clear(self) -> None:
        self._keys: list[str] = []
        self._key_index: Optional[pd.Index] = None
        empty = np.empty(0, dtype=np.int64)
        self._store = TermStats(self.lexicon, empty, empty, empty, np.empty(0))

    def count(self, texts: Union[Sequence[str], np.ndarray], remember: bool = True) -> TermStats:
        """Statistics for ``texts`` (aligned with them); ``remember=False`` neither looks them up
        nor keeps them (a one-off scan, e.g. of a whole collection)."""
        array = np.asarray(texts, dtype=object)
        with self._lock:
            if not remember:
                return self._statistics(list(array))
            return self._count_remembered(array)

    def _count_remembered(self, texts: np.ndarray) -> TermStats:
        import pandas as pd

        rows = self._rows(texts)
        new = rows < 0
        if new.any():
            unseen = pd.unique(texts[new])
            if len(self._keys) + unseen.size > self.MEMO_LIMIT:
                self._clear()
                unseen = pd.unique(texts)
            self._add(list(unseen))
            rows = self._rows(texts)
        return self._store.take(rows)

    def _rows(self, texts: np.ndarray) -> np.ndarray:
        import pandas as pd

        if self._key_index is None:
            self._key_index = pd.Index(self._keys, dtype=object)
        return self._key_index.get_indexer(texts) if texts.size else np.empty(0, dtype=np.int64)

    def _add(self, texts: list[str]) -> None:
        added, store = self._statistics(texts), self._store
        self._store = TermStats(self.lexicon, np.concatenate([store.lengths, added.lengths]),
                                np.concatenate([store.hit_text, len(store) + added.hit_text]),
                                np.concatenate([store.hit_term, added.hit_term]),
                                np.concatenate([store.hit_count, added.hit_count]))
        self._keys.extend(texts)
        self._key_index = None

    def _statistics(self, texts: list[str]) -> TermStats:
        lengths, terms, counts = [], [], []
        for length, found, found_counts in self._tokenise(texts):
            lengths.append(length)
            terms.append(found)
            counts.append(found_counts)
        hits = np.array([len(t) for t in terms], dtype=np.int64)
        total = int(hits.sum())
        self.counted += len(texts)
        return TermStats(self.lexicon, np.array(lengths, dtype=np.int64), np.repeat(np.arange(len(texts)), hits),
                         np.fromiter(itertools.chain.from_iterable(terms), np.int64, total),
                         np.fromiter(itertools.chain.from_iterable(counts), np.float64, total))

    def _tokenise(self, texts: list[str]) -> Iterator[tuple]:
        index = self._index
        terms = frozenset(index)
        if self.lexicon.tokenizer == "whitespace":
            token_lists: Iterable[list[str]] = (t.lower().split(" ") for t in texts)
        else:
            token_lists = (t.split() for t in word_texts(texts))
        for tokens in token_lists:
            present = terms.intersection(tokens)
            if present:
                found = sorted(present)
                yield len(tokens), [index[t] for t in found], [tokens.count(t) for t in found]
            else:
                yield len(tokens), (), ()


_COUNTERS = Memo("term counters")


def term_counter(terms: str = "gender", tokenizer: str = "words", overlap: str = "error") -> TermCounter:
    """The process-wide counter of one term list (loaded and validated once; again if its file changes).

    A built-in list is kept by name, a file by its content (:func:`~pairmeasures.io.memo.content_key`)."""
    version = None if terms in BUILTIN_TERM_LISTS else content_key(terms)
    return _COUNTERS.get((terms, tokenizer, overlap), version,
                         lambda: TermCounter(Lexicon.load(terms, tokenizer, overlap)))
