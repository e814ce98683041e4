"""The built-in plugin: pairmeasures' own measures and resource schemes, through the public hooks."""

from __future__ import annotations

from .. import sideinfo
from ..measures import BUILTIN_MEASURES
from .hookspecs import hookimpl


@hookimpl
def pairmeasures_measures():
    return list(BUILTIN_MEASURES)


@hookimpl
def pairmeasures_side_info_schemes():
    from ..sideinfo.irds import irds_scheme
    from ..sideinfo.polarity import pca_scheme
    from ..sideinfo.text import corpus_scheme

    return {"tsv": sideinfo.tsv_scheme, "beir": sideinfo.beir_scheme, "pca": pca_scheme, "corpus": corpus_scheme,
            "irds": irds_scheme}
