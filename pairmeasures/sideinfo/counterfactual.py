"""Counterfactual data substitution (CDS; Maudslay et al. 2019, as used for CRBO in the TExFAIR paper, §5).

Every gendered term of a two-group term list is replaced by its counterpart (``he`` ↔ ``she``,
``son`` ↔ ``daughter``, ``Mary`` ↔ ``John``): the ``counterpart`` column of the list names it, and
the built-in ``gender`` list has one for every term. Case is kept (``He`` → ``She``, ``HIS`` → ``HER``).

English pronouns do not map one to one, so four rules apply (the paper uses a POS tagger; no tagger
model installs offline here, so the rule looks at the next word instead):

- ``her`` is an object pronoun (→ ``him``) when the text ends after it, when punctuation follows
  it, or when the next word is a function word (a preposition, conjunction, determiner, pronoun,
  auxiliary or common adverb, :data:`OBJECT_FOLLOWERS`: "gave it to her.", "saw her and left",
  "told her the truth"); otherwise it is a possessive determiner (→ ``his``: "her book").
- ``his`` before a word is a determiner (→ ``her``); at the end of a clause it is a pronoun (→ ``hers``).
- ``hers`` → ``his``; ``him`` → ``her``.

Known miss: "her" directly before a content word that starts a new phrase ("made her quickly
leave", "gave her flowers") is read as possessive.
"""

from __future__ import annotations

from typing import Mapping, Optional

from . import SideInfoError
from .termlists import Lexicon
from .tokenizers import word_spans

__all__ = ["CounterfactualSubstitution", "OBJECT_FOLLOWERS"]

#: Words after which "her" is read as an object pronoun (→ "him"), not a possessive (→ "his").
OBJECT_FOLLOWERS = frozenset("""
a about above across after against along also although among an and any anything are around as at away back
be because before behind below beneath beside besides between beyond both but by can could did do does down
during each either enough even ever every everything for from had has have he her here him his how i if in
inside instead into is it its just later like may me might more most much must my near neither never no nor
not now of off on once one only onto or other our out outside over past perhaps please rather really
she should since so some something soon still such than that the their them then there these they this
those though through throughout to together too toward towards under until up upon us very was we well were
what when where whether which while who whom whose why will with within without would yet you your
""".split())


def _match_case(original: str, replacement: str) -> str:
    if original.isupper() and len(original) > 1:
        return replacement.upper()
    if original[0].isupper():
        return replacement[0].upper() + replacement[1:]
    return replacement


class CounterfactualSubstitution:
    """A text transform swapping the gendered terms of a two-group list: ``cds(text) -> text``."""

    def __init__(self, terms: str = "gender", counterparts: Optional[Mapping[str, str]] = None):
        lexicon = Lexicon.load(terms, overlap="first")
        if len(lexicon.groups) != 2:
            raise SideInfoError(f"counterfactual substitution swaps two groups; {lexicon.source} has {list(lexicon.groups)}")
        mapping = dict(lexicon.counterparts)
        mapping.update({k.lower(): v.lower() for k, v in (counterparts or {}).items()})
        missing = [t for t in lexicon.terms if t not in mapping]
        if missing:
            raise SideInfoError(f"{lexicon.source}: {len(missing)} terms have no counterpart, e.g. {missing[:5]}; add a "
                                "'counterpart' column (term,group,counterpart) or pass counterparts={term: swap}")
        self.mapping = mapping
        self.source = lexicon.source

    def _replacement(self, word: str, following: Optional[str], gap: str) -> str:
        lower = word.lower()
        clause_ends = following is None or bool(gap.strip())
        if lower == "her":
            return "him" if following is None or clause_ends or following.lower() in OBJECT_FOLLOWERS else "his"
        if lower == "his":
            return "hers" if clause_ends else "her"
        return self.mapping[lower]

    def __call__(self, text: str) -> str:
        spans = list(word_spans(text))  # the words tokeniser's tokens, where they are in the text
        pieces, position = [], 0
        for index, (start, end) in enumerate(spans):
            word = text[start:end]
            if word.lower() not in self.mapping:
                continue
            after = spans[index + 1] if index + 1 < len(spans) else None
            gap = text[end:after[0]] if after is not None else ""
            replacement = self._replacement(word, text[after[0]:after[1]] if after is not None else None, gap)
            pieces.append(text[position:start])
            pieces.append(_match_case(word, replacement))
            position = end
        pieces.append(text[position:])
        return "".join(pieces)

    def __repr__(self) -> str:
        return f"CounterfactualSubstitution({self.source!r}, {len(self.mapping)} terms)"
