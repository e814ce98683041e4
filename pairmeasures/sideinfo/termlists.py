"""Term lists and target shares: which words stand for which group, and each group's target share.

A :class:`Lexicon` maps single-token terms to groups (the built-in ``gender`` list, or a
``term,group`` file); :func:`parse_targets` reads ``"female=0.5,male=0.5"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np

from . import SideInfoError
from .tokenizers import check_tokenizer, tokenize

__all__ = ["OVERLAPS", "BUILTIN_TERM_LISTS", "Lexicon", "parse_targets"]

OVERLAPS = ("error", "each", "first")

#: Built-in term lists, by name (see docs/term-measures.md for how the gender list was written; the other two are the
#: word lists of the NFaiRR and RaB reference code, as the MS MARCO gender audits read them).
BUILTIN_TERM_LISTS = {"gender": "gender_terms.tsv", "gender-representative": "gender_representative.tsv",
                      "gender-specific": "gender_specific.tsv"}


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
        check_tokenizer(tokenizer)
        if overlap not in OVERLAPS:
            raise ValueError(f"overlap must be one of {OVERLAPS}; got {overlap!r}")
        if source in BUILTIN_TERM_LISTS:
            from importlib import resources

            text = resources.files(__package__).joinpath("data").joinpath(BUILTIN_TERM_LISTS[source]).read_text(encoding="utf-8")
            lines = text.splitlines()
            origin = f"built-in list {source!r}"
        else:
            from ..io.beir import numbered_lines

            path = Path(source).expanduser()
            if not path.is_file():
                raise SideInfoError(f"term list {source!r} is neither a built-in list ({', '.join(BUILTIN_TERM_LISTS)}) "
                                    "nor an existing file of 'term,group' lines")
            lines = [line for _, line in numbered_lines(path)]  # a byte that is not UTF-8 names the file and line
            origin = str(path)
        return cls._parse(lines, origin, tokenizer, overlap)

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

