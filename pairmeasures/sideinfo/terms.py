"""Deprecated: the former home of tokenisation, term lists, term counting and text resources.

Its names moved, one job per module:

- :mod:`pairmeasures.sideinfo.tokenizers`: ``TOKENIZERS``, ``tokenize`` (and ``word_spans``);
- :mod:`pairmeasures.sideinfo.termlists`: ``Lexicon``, ``BUILTIN_TERM_LISTS``, ``OVERLAPS``, ``parse_targets``;
- :mod:`pairmeasures.sideinfo.termcount`: ``TermStats``, ``TermCounter``, ``term_counter``;
- :mod:`pairmeasures.sideinfo.text`: ``TextSource``, ``corpus_scheme``, ``irds_scheme``.

Importing a name from here still works and warns (:class:`DeprecationWarning`) naming its new module.
"""

from __future__ import annotations

import importlib
import warnings

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
    "irds_scheme": "pairmeasures.sideinfo.text",
}

__all__ = list(_MOVED)  # each comes from __getattr__ (PEP 562), with its warning


def __getattr__(name: str):
    if name in _MOVED:
        warnings.warn(f"pairmeasures.sideinfo.terms.{name} moved to {_MOVED[name]}.{name}; import it from there",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MOVED))
