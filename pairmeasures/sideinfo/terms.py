"""Term lists, tokenisation and counting: what the term-based measures read from document text.

Tokenisation is shared by every term-based measure:

``words`` (default)
    Lower-case the text, treat every character that is not a letter or a digit as a separator
    (punctuation, apostrophes, hyphens, underscores), and split. ``"Her mother's car."`` gives
    ``her``, ``mother``, ``s``, ``car``. A document's length :math:`|d|` is its number of tokens.
``whitespace``
    The authors' code (``text.lower().split(" ")``): tokens are separated by single spaces, so
    ``"mother's"`` and ``"her,"`` match no term and empty strings between double spaces count
    towards the length.

A :class:`Lexicon` maps single-token terms to groups. :class:`TermCounter` counts a lexicon's
terms in texts, each distinct text once per process (texts are keyed by their content), so all
term-based measures in one evaluation, and all systems ranking the same corpus, share one pass.
"""

from __future__ import annotations

import itertools
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Optional, Sequence

import numpy as np

from . import SideInfoError, resource_options
from .memo import Memo, content_key

__all__ = ["TOKENIZERS", "OVERLAPS", "BUILTIN_TERM_LISTS", "Lexicon", "TermStats", "TermCounter", "tokenize",
           "parse_targets", "term_counter", "TextSource", "corpus_scheme", "irds_scheme"]

TOKENIZERS = ("words", "whitespace")
OVERLAPS = ("error", "each", "first")

#: Built-in term lists, by name (see docs/term-measures.md for how the gender list was written).
BUILTIN_TERM_LISTS = {"gender": "gender_terms.tsv"}

# Characters that separate ``words`` tokens; non-ASCII characters are classified when first seen.
# NUL is left out: it delimits the texts of a batch (texts' own NULs become spaces first).
_SEPARATORS = {code: " " for code in range(1, 128) if not chr(code).isalnum()}


def _extend_separators(text: str) -> None:
    for char in set(text):
        code = ord(char)
        if code >= 128 and code not in _SEPARATORS and not char.isalnum():
            _SEPARATORS[code] = " "


def _word_texts(texts: Sequence[str]) -> list[str]:
    """Texts lower-cased with every separator replaced by a space (one C-level pass per batch)."""
    texts = [t.replace("\x00", " ") if "\x00" in t else t for t in texts]
    joined = "\x00".join(texts).lower()
    if not joined.isascii():
        joined = unicodedata.normalize("NFC", joined)
        _extend_separators(joined)
    return joined.translate(_SEPARATORS).split("\x00")


def tokenize(text: str, tokenizer: str = "words") -> list[str]:
    """The tokens of one text (see the module docstring for the two tokenisers)."""
    _check_tokenizer(tokenizer)
    if tokenizer == "whitespace":
        return text.lower().split(" ")
    return _word_texts([text])[0].split()


def _check_tokenizer(tokenizer: str) -> None:
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {TOKENIZERS}; got {tokenizer!r}")


@dataclass(frozen=True)
class Lexicon:
    """Group-representative terms: ``terms[i]`` belongs to the groups where ``membership[i]`` is True."""

    terms: tuple
    groups: tuple
    membership: np.ndarray
    source: str
    tokenizer: str = "words"
    counterparts: Mapping[str, str] = field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        import hashlib

        digest = hashlib.sha256()
        for term, row in zip(self.terms, self.membership):
            digest.update(f"{term}\t{row.tobytes().hex()}\n".encode())
        digest.update("|".join(self.groups).encode() + self.tokenizer.encode())
        return digest.hexdigest()[:16]

    def group_terms(self, group: str) -> list[str]:
        """The terms of one group, in list order."""
        column = self._group_index(group)
        return [t for t, row in zip(self.terms, self.membership) if row[column]]

    def _group_index(self, group: str) -> int:
        if group not in self.groups:
            raise SideInfoError(f"term list {self.source!r} has no group {group!r}; its groups: {list(self.groups)}")
        return self.groups.index(group)

    @classmethod
    def load(cls, source: str = "gender", tokenizer: str = "words", overlap: str = "error") -> "Lexicon":
        """A built-in list by name (:data:`BUILTIN_TERM_LISTS`) or a ``term,group`` file.

        Files are comma- or tab-separated, with an optional header line ``term,group``; further
        columns are ignored except ``counterpart`` (used by counterfactual substitution); lines
        starting with ``#`` are comments. Terms are lower-cased and must be single tokens. A term
        listed twice for one group is an error; a term listed for two groups is an error unless
        ``overlap`` is ``"each"`` (it counts for every group, as the NFaiRR reference code) or
        ``"first"`` (it counts for the group listed first).
        """
        _check_tokenizer(tokenizer)
        if overlap not in OVERLAPS:
            raise ValueError(f"overlap must be one of {OVERLAPS}; got {overlap!r}")
        if source in BUILTIN_TERM_LISTS:
            from importlib import resources

            text = resources.files(__package__).joinpath("data", BUILTIN_TERM_LISTS[source]).read_text(encoding="utf-8")
            origin = f"built-in list {source!r}"
        else:
            path = Path(source).expanduser()
            if not path.is_file():
                raise SideInfoError(f"term list {source!r} is neither a built-in list ({', '.join(BUILTIN_TERM_LISTS)}) "
                                    "nor an existing file of 'term,group' lines")
            text = path.read_text(encoding="utf-8")
            origin = str(path)
        return cls._parse(text.splitlines(), origin, tokenizer, overlap)

    @classmethod
    def _parse(cls, lines: Sequence[str], origin: str, tokenizer: str, overlap: str) -> "Lexicon":
        entries: dict[str, list[str]] = {}
        first_line: dict[tuple, int] = {}
        groups: list[str] = []
        counterparts: dict[str, str] = {}
        counterpart_column = None
        for number, line in enumerate(lines, start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            fields = [f.strip() for f in (line.split("\t") if "\t" in line else line.split(","))]
            if number == 1 and [f.lower() for f in fields[:2]] == ["term", "group"]:
                counterpart_column = fields.index("counterpart") if "counterpart" in fields else None
                continue
            if len(fields) < 2 or not fields[0] or not fields[1]:
                raise SideInfoError(f"{origin}, line {number}: expected 'term,group', got {line!r}")
            raw, group = fields[0], fields[1]
            tokens = tokenize(raw, tokenizer)
            if len(tokens) != 1 or not tokens[0]:
                raise SideInfoError(f"{origin}, line {number}: term {raw!r} is not a single {tokenizer} token "
                                    f"(it reads as {tokens}); list single words")
            term = tokens[0]
            if (term, group) in first_line:
                raise SideInfoError(f"{origin}, line {number}: duplicate term {term!r} for group {group!r} "
                                    f"(first on line {first_line[term, group]})")
            first_line[term, group] = number
            if group not in groups:
                groups.append(group)
            entries.setdefault(term, []).append(group)
            if counterpart_column is not None and len(fields) > counterpart_column and fields[counterpart_column]:
                counterparts.setdefault(term, fields[counterpart_column].lower())
        if not entries:
            raise SideInfoError(f"{origin} lists no terms")
        shared = {t: g for t, g in entries.items() if len(g) > 1}
        if shared and overlap == "error":
            examples = ", ".join(f"{t!r} ({' and '.join(g)})" for t, g in list(shared.items())[:3])
            raise SideInfoError(f"{origin}: {len(shared)} terms are listed for two groups, e.g. {examples}; "
                                "remove them, or pass overlap='each' (count for every group) or 'first'")
        terms = tuple(entries)
        membership = np.zeros((len(terms), len(groups)), dtype=bool)
        for row, term in enumerate(terms):
            listed = entries[term] if overlap == "each" else entries[term][:1]
            membership[row, [groups.index(g) for g in listed]] = True
        return cls(terms=terms, groups=tuple(groups), membership=membership, source=origin, tokenizer=tokenizer,
                   counterparts=counterparts)


def parse_targets(spec: Optional[str], groups: Sequence[str]) -> np.ndarray:
    """Target shares per group from ``"female=0.5,male=0.5"``; ``None`` gives equal shares."""
    if spec is None or spec == "":
        return np.full(len(groups), 1.0 / len(groups))
    shares: dict[str, float] = {}
    for part in spec.split(","):
        name, sep, value = part.partition("=")
        name = name.strip()
        try:
            share = float(value)
        except ValueError:
            share = float("nan")
        if not sep or not name or not np.isfinite(share) or share < 0:
            raise SideInfoError(f"targets {spec!r}: expected GROUP=SHARE pairs with non-negative shares, e.g. "
                                f"{','.join(f'{g}={1 / len(groups):g}' for g in groups)}")
        if name in shares:
            raise SideInfoError(f"targets {spec!r} give group {name!r} twice")
        shares[name] = share
    unknown = sorted(set(shares) - set(groups))
    missing = [g for g in groups if g not in shares]
    if unknown or missing:
        raise SideInfoError(f"targets {spec!r} must name exactly the term list's groups {list(groups)}"
                            + (f"; unknown: {unknown}" if unknown else "") + (f"; missing: {missing}" if missing else ""))
    total = sum(shares.values())
    if abs(total - 1.0) > 1e-9:
        raise SideInfoError(f"targets {spec!r} sum to {total:g}; shares must sum to 1")
    return np.array([shares[g] for g in groups])


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
        self._key_index = None
        empty = np.empty(0, dtype=np.int64)
        self._store = TermStats(self.lexicon, empty, empty, empty, np.empty(0))

    def count(self, texts: Sequence[str], remember: bool = True) -> TermStats:
        """Statistics for ``texts`` (aligned with them); ``remember=False`` neither looks them up
        nor keeps them (a one-off scan, e.g. of a whole collection)."""
        texts = np.asarray(texts, dtype=object)
        with self._lock:
            if not remember:
                return self._statistics(list(texts))
            return self._count_remembered(texts)

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
            token_lists = (t.split() for t in _word_texts(texts))
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

    A built-in list is kept by name, a file by its content (:func:`~pairmeasures.sideinfo.memo.content_key`)."""
    version = None if terms in BUILTIN_TERM_LISTS else content_key(terms)
    return _COUNTERS.get((terms, tokenizer, overlap), version,
                         lambda: TermCounter(Lexicon.load(terms, tokenizer, overlap)))


# --- text resources ----------------------------------------------------------------------------

class TextSource:
    """Document text for the term-based measures (``text='corpus:DIR'`` or ``text='irds:ID'``)."""

    provides = "text"

    def __init__(self, name: str, texts: Optional[Mapping[str, str]] = None, loader=None, iterator=None):
        self.name = name
        self._texts = texts
        self._loader = loader
        self._iterator = iterator

    def lookup(self, query_ids: np.ndarray, doc_ids: np.ndarray, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        ids = [str(d) for d in doc_ids]
        if self._texts is not None:
            found = [self._texts.get(d) for d in ids]
        else:
            unique = list(dict.fromkeys(ids))
            loaded = self._loader(unique)
            found = [loaded.get(d) for d in ids]
        out = np.empty(len(found), dtype=object)
        out[:] = found
        return out

    def iter_texts(self) -> Iterator[str]:
        """Every document's text, for a whole-collection background."""
        if self._texts is not None:
            return iter(self._texts.values())
        return self._iterator()

    def __repr__(self) -> str:
        return f"TextSource({self.name!r})"


def _fields_option(argument: str, scheme: str) -> tuple[str, str]:
    location, options = resource_options(argument, ("fields",), scheme)
    return location, options.get("fields", "text")


def corpus_scheme(argument: str) -> TextSource:
    """``corpus:DIR[?fields=text|title|title+text]``: document text from a BEIR folder's corpus.jsonl."""
    from .beir import check_text_field, read_beir

    location, fields = _fields_option(argument, "corpus")
    check_text_field(fields)
    try:
        data = read_beir(location)
    except FileNotFoundError as exc:
        raise SideInfoError(f"corpus:{argument}: {exc}") from None
    return TextSource(f"corpus:{argument}", texts={d: data.document_text(d, fields) for d in data.corpus})


def irds_scheme(argument: str) -> TextSource:
    """``irds:DATASET[?fields=title+text]``: document text from an ir_datasets dataset's docs store."""
    import ir_datasets

    dataset_id, fields = _fields_option(argument, "irds")
    try:
        dataset = ir_datasets.load(dataset_id)
    except KeyError as exc:
        raise SideInfoError(f"irds:{argument}: ir_datasets has no dataset {dataset_id!r} ({exc})") from None
    if not dataset.has_docs():
        raise SideInfoError(f"irds:{argument}: dataset {dataset_id!r} has no documents")
    names = fields.split("+")
    missing = [f for f in names if f not in dataset.docs_cls()._fields]
    if missing:
        raise SideInfoError(f"irds:{argument}: documents have no field(s) {missing}; fields: {list(dataset.docs_cls()._fields)}")

    def text_of(doc) -> str:
        return " ".join(str(getattr(doc, f)) for f in names if getattr(doc, f)).strip()

    def load(doc_ids: list[str]) -> dict:
        return {d: text_of(doc) for d, doc in dataset.docs_store().get_many(doc_ids).items()}

    return TextSource(f"irds:{argument}", loader=load, iterator=lambda: (text_of(d) for d in dataset.docs_iter()))

