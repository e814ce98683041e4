"""The built-in plugin: pairmeasures' own measures and resource schemes, through the public hooks."""

from __future__ import annotations

from .. import sideinfo
from ..measures import BUILTIN_MEASURES
from .hookspecs import hookimpl


@hookimpl
def pairmeasures_measures():
    return list(BUILTIN_MEASURES)


def pca_scheme(argument: str):
    """``pca:...`` (:func:`pairmeasures.sideinfo.polarity.pca_scheme`), its module imported when a measure first
    names such a resource: it brings the embedder, its cache and their file policies, which ``import pairmeasures``
    does not need (some 30 ms)."""
    from ..sideinfo.polarity import pca_scheme as scheme

    return scheme(argument)


@hookimpl
def pairmeasures_side_info_schemes():
    from ..sideinfo.irds import irds_scheme
    from ..sideinfo.text import corpus_scheme

    return {"tsv": sideinfo.tsv_scheme, "beir": sideinfo.beir_scheme, "pca": pca_scheme, "corpus": corpus_scheme,
            "irds": irds_scheme}
