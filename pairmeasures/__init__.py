"""pairmeasures: measure bias in ranked lists the way ir_measures measures relevance.

Importing the package registers its measures (and those of installed plugins) with ir_measures,
so ``ir_measures.parse_measure("Duo@10")``, ``ir_measures.calc_aggregate`` and
``pyterrier.Experiment`` all accept them::

    import pairmeasures as pm
    from ir_measures import nDCG
    pt.Experiment([bm25], topics, qrels, eval_metrics=[nDCG@10, pm.Duo@10, pm.rKL@10])

Heavy libraries (pandas, PyTerrier, torch) are imported only when used. Files read for side
information (resources, term lists, datasets) are cached in the process by their content, so an
edited file is read again; ``pm.clear_caches()`` forgets them all.
"""

import typing as _typing

from . import datasets, measures, sideinfo
from . import math as math  # pm.math; not in __all__, where it would shadow the standard library's math
from .io.memo import clear_caches
from .measures import *  # every measure (pm.Duo, pm.rKL, ...) and what writes or evaluates one: pm.measures.__all__
from .plugins import PluginLoadWarning, hookimpl, plugin_manager, register_plugins

__version__ = "0.1.0"

_LAZY = {
    "PolarityScorer": "pairmeasures.pipelines",
    "DuoGreedy": "pairmeasures.pipelines",
    "BiasedOrdering": "pairmeasures.pipelines",
    "TopKMMR": "pairmeasures.pipelines.mmr",
    "PolarityModel": "pairmeasures.sideinfo.polarity",
    "FitSet": "pairmeasures.sideinfo.polarity",
    "Embedder": "pairmeasures.compute.embed",
    "EmbeddingCache": "pairmeasures.compute.cache",
    "Lexicon": "pairmeasures.sideinfo.termlists",
    "CounterfactualSubstitution": "pairmeasures.sideinfo.counterfactual",
    "CounterfactualText": "pairmeasures.pipelines.counterfactual",
    "crbo": "pairmeasures.pipelines.counterfactual",
    "bm25": "pairmeasures.pipelines.retrieval",
    "pisa_index": "pairmeasures.pipelines.retrieval",
    "RetrievalSourceError": "pairmeasures.pipelines.retrieval",
    "bi_encoder": "pairmeasures.pipelines.dense",
    "CachedBiEncoder": "pairmeasures.pipelines.dense",
    "dense_retriever": "pairmeasures.pipelines.dense",
    "cross_encoder": "pairmeasures.pipelines.crossencoder",
    "CrossEncoderReranker": "pairmeasures.pipelines.crossencoder",
    "counterfactual_rbo": "pairmeasures.pipelines.counterfactual",
    "generate_fitset": "pairmeasures.generate",
    "validate_polarity": "pairmeasures.analysis.polarity",
    "axis_evidence": "pairmeasures.analysis.polarity",
}


#: Subpackages loaded on first use: ``pm.analysis.paired_bootstrap``, ``pm.benchmark.load_suite``,
#: ``pm.leaderboard.build``, ``pm.audit.run_audit``.
_LAZY_PACKAGES = ("analysis", "benchmark", "leaderboard", "audit")


def __getattr__(name: str):
    """Heavier parts (PyTerrier transformers, embeddings) load on first use."""
    if name in _LAZY or name in _LAZY_PACKAGES:
        import importlib

        if name in _LAZY_PACKAGES:
            return importlib.import_module(f"{__name__}.{name}")
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'pairmeasures' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names and the lazily loaded ones, so tab completion and ``dir(pm)`` show them."""
    return sorted(set(globals()) | set(_LAZY) | set(_LAZY_PACKAGES))

# ``math`` (the array functions, ``pm.math``) is left out: ``from pairmeasures import *`` must not
# shadow the standard library's ``math``. The names from pm.measures follow it.
__all__ = [
    "BiasedOrdering",
    "CachedBiEncoder",
    "CounterfactualSubstitution",
    "CounterfactualText",
    "CrossEncoderReranker",
    "DuoGreedy",
    "Embedder",
    "EmbeddingCache",
    "FitSet",
    "generate_fitset",
    "validate_polarity",
    "axis_evidence",
    "Lexicon",
    "PluginLoadWarning",
    "PolarityModel",
    "PolarityScorer",
    "RetrievalSourceError",
    "TopKMMR",
    "bi_encoder",
    "bm25",
    "clear_caches",
    "counterfactual_rbo",
    "crbo",
    "cross_encoder",
    "dense_retriever",
    "hookimpl",
    "pisa_index",
    "plugin_manager",
    "register_plugins",
    "sideinfo",
    "__version__",
    "datasets",
]
if not _typing.TYPE_CHECKING:  # type checkers read them from the import above; a computed __all__ hides them
    __all__ += measures.__all__

register_plugins(plugin_manager())
datasets.register_when_ir_datasets_loads()  # ir_datasets.load("pair/...") then works; ir_datasets is not imported here
