"""The deprecation path of a module whose names moved elsewhere (PEP 562 module ``__getattr__``)."""

from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable, Mapping, Optional


def moved_names(module: str, moved: Mapping[str, str], *,
                removed_in: Optional[str] = None) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``module``, whose names ``moved`` (name -> new module) now live
    elsewhere: each still imports from ``module``, with a :class:`DeprecationWarning` naming its new home (and the
    version ``removed_in`` that drops the old one, when given)."""
    removal = f"; the old name is removed in pairmeasures {removed_in}" if removed_in else ""

    def __getattr__(name: str) -> Any:
        if name in moved:
            warnings.warn(f"{module}.{name} moved to {moved[name]}.{name}; import it from there{removal}",
                          DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(moved[name]), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(moved)

    return __getattr__, __dir__
