"""The tokenisers of the term-based measures and of counterfactual substitution.

Tokenisation is shared by every term-based measure:

``words`` (default)
    Lower-case the text, treat every character that is not a letter or a digit as a separator
    (punctuation, apostrophes, hyphens, underscores), and split. ``"Her mother's car."`` gives
    ``her``, ``mother``, ``s``, ``car``. A document's length :math:`|d|` is its number of tokens.
``whitespace``
    The authors' code (``text.lower().split(" ")``): tokens are separated by single spaces, so
    ``"mother's"`` and ``"her,"`` match no term and empty strings between double spaces count
    towards the length.

:func:`tokenize` gives one text's tokens; :func:`word_spans` finds the same ``words`` tokens as
(start, end) positions in the original text, for rewriting it (counterfactual substitution,
:mod:`pairmeasures.sideinfo.counterfactual`). Batches of texts are split in one C-level pass
(:func:`word_texts`, used by :class:`~pairmeasures.sideinfo.termcount.TermCounter`).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterator, Sequence

__all__ = ["TOKENIZERS", "tokenize", "word_spans", "word_texts", "check_tokenizer"]

TOKENIZERS = ("words", "whitespace")

# Characters that separate ``words`` tokens; non-ASCII characters are classified when first seen.
# NUL is left out: it delimits the texts of a batch (texts' own NULs become spaces first).
_SEPARATORS = {code: " " for code in range(1, 128) if not chr(code).isalnum()}


def _extend_separators(text: str) -> None:
    for char in set(text):
        code = ord(char)
        if code >= 128 and code not in _SEPARATORS and not char.isalnum():
            _SEPARATORS[code] = " "


def word_texts(texts: Sequence[str]) -> list[str]:
    """Texts lower-cased with every separator replaced by a space (one C-level pass per batch): ``t.split()`` of
    each gives the ``words`` tokens of ``t``."""
    texts = [t.replace("\x00", " ") if "\x00" in t else t for t in texts]
    joined = "\x00".join(texts).lower()
    if not joined.isascii():
        joined = unicodedata.normalize("NFC", joined)
        _extend_separators(joined)
    return joined.translate(_SEPARATORS).split("\x00")


def tokenize(text: str, tokenizer: str = "words") -> list[str]:
    """The tokens of one text (see the module docstring for the two tokenisers)."""
    check_tokenizer(tokenizer)
    if tokenizer == "whitespace":
        return text.lower().split(" ")
    return word_texts([text])[0].split()


def check_tokenizer(tokenizer: str) -> None:
    """A ValueError unless ``tokenizer`` names one of :data:`TOKENIZERS`."""
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {TOKENIZERS}; got {tokenizer!r}")


# A ``words`` token: a run of characters that are letters or digits. ``[^\W_]`` matches exactly the
# characters for which ``str.isalnum()`` is true (checked over every code point), as ``_SEPARATORS``.
_WORD = re.compile(r"[^\W_]+")


def word_spans(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each ``words`` token in ``text`` as given, in order.

    The spans are of the original text (its case and normalisation kept), so it can be rewritten in
    place. :func:`tokenize` lower-cases and NFC-normalises first: on lower-case NFC text the spans'
    texts are exactly its tokens, and on other NFC text their lower-cased texts are, except where
    lower-casing changes what NFC composes (``"İ"`` lowers to ``i`` and a combining dot, a separator;
    ``"H"`` with a combining macron below lowers into the single letter ``"ẖ"``). On text that is not
    NFC a letter and a combining mark are two spans here (the mark separates) and one token there.
    """
    for match in _WORD.finditer(text):
        yield match.span()
