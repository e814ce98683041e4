"""Deprecated: the former home of tokenisation, term lists, term counting and text resources.

Its names moved, one job per module:

- :mod:`pairmeasures.sideinfo.tokenizers`: ``TOKENIZERS``, ``tokenize`` (and ``word_spans``);
- :mod:`pairmeasures.sideinfo.termlists`: ``Lexicon``, ``BUILTIN_TERM_LISTS``, ``OVERLAPS``, ``parse_targets``;
- :mod:`pairmeasures.sideinfo.termcount`: ``TermStats``, ``TermCounter``, ``term_counter``;
- :mod:`pairmeasures.sideinfo.text`: ``TextSource``, ``corpus_scheme``;
- :mod:`pairmeasures.sideinfo.irds`: ``irds_scheme``.

Importing a name from here still works and warns (:class:`DeprecationWarning`) naming its new module.
"""

from __future__ import annotations

from .._moved import moved_names

_MOVED = {
    "TOKENIZERS": "pairmeasures.sideinfo.tokenizers",
    "tokenize": "pairmeasures.sideinfo.tokenizers",
    "OVERLAPS": "pairmeasures.sideinfo.termlists",
    "BUILTIN_TERM_LISTS": "pairmeasures.sideinfo.termlists",
    "Lexicon": "pairmeasures.sideinfo.termlists",
    "parse_targets": "pairmeasures.sideinfo.termlists",
    "TermStats": "pairmeasures.sideinfo.termcount",
    "TermCounter": "pairmeasures.sideinfo.termcount",
    "term_counter": "pairmeasures.sideinfo.termcount",
    "TextSource": "pairmeasures.sideinfo.text",
    "corpus_scheme": "pairmeasures.sideinfo.text",
    "irds_scheme": "pairmeasures.sideinfo.irds",
}

__all__ = list(_MOVED)  # each comes from __getattr__ (PEP 562), with its warning


__getattr__, __dir__ = moved_names(__name__, _MOVED)
