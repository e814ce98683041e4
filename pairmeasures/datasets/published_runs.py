"""The NFaiRR paper's published runs (Rekabsaz, Kopeinik, Schedl, SIGIR 2021) as ``run:`` systems of an audit.

``CPJKU/FairnessRetrievalResults`` publishes, in ``measurement/sample_trec_runs/``, the top 200 of ten rankers for
the 215 bias-sensitive MS MARCO dev queries (QS2, ``msmarco_passage/``) and the 29 of TREC DL 2019
(``trecdl2019_passage/``): BM25, RM3, KNRM, ConvKNRM, MatchPyramid, TK, BERT-L2/L4 and AdvBERT-L2/L4. Each set is
a :class:`Resource` pinned by commit (a mirror folder, the download cache, or a download checked by SHA-256), held
by its dataset's spec (:attr:`~pairmeasures.datasets.DatasetSpec.published_runs`: the MS MARCO gender family module
declares them); :func:`expand_published` turns ``published`` (all ten) or ``published/NAME`` (one, also as the first stage of a
spec: ``published/BM25 >> ce(...)``; any case) into ``run:FILE`` specs named as written.
"""

from __future__ import annotations

import os
from typing import Optional, Sequence

from ._resources import DatasetError, locate

__all__ = ["PUBLISHED", "expand_published", "published_runs"]

#: The word that names the published runs in ``--systems``.
PUBLISHED = "published"


def published_runs(dataset_id: str, data: Optional[str | os.PathLike] = None) -> dict:
    """``{name: run file}`` of the ten published runs of ``dataset_id`` (from ``data``, ``$PAIRMEASURES_DATA``, the
    download cache, or downloaded once); a :class:`DatasetError` for a dataset they do not rank."""
    from ._catalogue import SPECS

    published = {spec.id: spec.published_runs for spec in SPECS if spec.published_runs is not None}
    resource = published.get(dataset_id)
    if resource is None:
        raise DatasetError(f"--systems {PUBLISHED}: the NFaiRR paper published runs for {' and '.join(published)} "
                           f"only, not for {dataset_id}")
    location = locate(resource, data, dataset_id)
    return {name.removesuffix(".run"): location.file(name) for name in resource.files}


def expand_published(systems: Sequence[str], names: Optional[Sequence[str]], dataset: "str | os.PathLike",
                     data: Optional[str | os.PathLike] = None) -> tuple[list, Optional[list]]:
    """``systems`` and ``names`` with ``published`` replaced by the ten published runs of ``dataset`` and a spec
    starting with ``published/NAME`` by one of them (``run:FILE``), each named as written (``published/BM25``).
    Systems that name no published run are returned as they are, without looking the runs up."""
    if not any(_mentions(spec) for spec in systems):
        return list(systems), None if names is None else list(names)
    runs = published_runs(str(getattr(dataset, "name", dataset)).removeprefix("irds:"), data)  # an id, or a Corpus
    specs, named = [], []
    for index, spec in enumerate(systems):
        given = None if names is None or index >= len(names) else names[index]
        text = spec.strip()
        if text == PUBLISHED:
            if names is not None:
                raise ValueError(f"--systems {PUBLISHED} stands for {len(runs)} systems named published/NAME; give "
                                 "--names for the other systems only by writing each published run as published/NAME")
            specs += [f"run:{path}" for path in runs.values()]
            named += [f"{PUBLISHED}/{name}" for name in runs]
            continue
        if text.startswith(f"{PUBLISHED}/"):
            first, sep, rest = text.partition(">>")
            written = first.strip()[len(PUBLISHED) + 1:]
            run = next((name for name in runs if name.lower() == written.lower()), written)  # published/bm25 too
            if run not in runs:
                raise ValueError(f"system {spec!r}: no published run {written!r}; the published runs are "
                                 f"{', '.join(f'{PUBLISHED}/{n}' for n in runs)}")
            specs.append(f"run:{runs[run]}" + (f" >> {rest.strip()}" if sep else ""))
            named.append(given or text)
            continue
        specs.append(spec)
        named.append(given or spec)
    return specs, named


def _mentions(spec: str) -> bool:
    text = spec.strip()
    return text == PUBLISHED or text.startswith(f"{PUBLISHED}/")
