"""The NFaiRR paper's published runs (Rekabsaz, Kopeinik, Schedl, SIGIR 2021) as ``run:`` systems of an audit.

``CPJKU/FairnessRetrievalResults`` publishes, in ``measurement/sample_trec_runs/``, the top 200 of ten rankers for
the 215 bias-sensitive MS MARCO dev queries (QS2, ``msmarco_passage/``) and the 29 of TREC DL 2019
(``trecdl2019_passage/``): BM25, RM3, KNRM, ConvKNRM, MatchPyramid, TK, BERT-L2/L4 and AdvBERT-L2/L4. Each set is
a :class:`Resource` pinned by commit (a mirror folder, the download cache, or a download checked by SHA-256);
:func:`expand_published` turns ``published`` (all ten) or ``published/NAME`` (one, also as the first stage of a
spec: ``published/BM25 >> ce(...)``; any case) into ``run:FILE`` specs named as written.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Optional, Sequence

from ._resources import UNKNOWN, DatasetError, Resource, github_file, locate
from .msmarco_gender import DL19_ID, FAIRNESS_RETRIEVAL_COMMIT, QS2_ID

__all__ = ["PUBLISHED", "PUBLISHED_RUNS", "RUN_NAMES", "expand_published", "published_runs"]

#: The word that names the published runs in ``--systems``.
PUBLISHED = "published"

#: The ten runs, as the repository names their files (``NAME.run``) and the paper its rankers.
RUN_NAMES = {"BM25": "BM25", "RM3": "BM25+RM3", "knrm": "KNRM", "conv_knrm": "ConvKNRM", "match_pyramid": "MatchPyramid",
             "tk": "TK", "bert_L2": "BERT-L2", "bert_L4": "BERT-L4", "advbert_L2": "AdvBERT-L2",
             "advbert_L4": "AdvBERT-L4"}

#: SHA-256 of the run files known here (those of ``shared/data``, whose README gives their provenance); the others
#: are recorded at their first download and required afterwards.
_PINNED = {("msmarco_passage", "BM25"): "4915d75f95c0f68f90a0589d51dba7363fe2cc43faebe6518f9f972c83aed9be",
           ("msmarco_passage", "bert_L2"): "71120c4692524179dba4730a84ef00ca1c2afe8163d705ea7ca481fbac6ec333"}


def _copy(sources: Path, target: Path) -> None:
    target.mkdir(parents=True)
    for name in RUN_NAMES:
        shutil.copyfile(sources / f"{name}.run", target / f"{name}.run")


def _runs(folder: str, name: str) -> Resource:
    remote = tuple(github_file("CPJKU/FairnessRetrievalResults", FAIRNESS_RETRIEVAL_COMMIT,
                               f"measurement/sample_trec_runs/{folder}/{run}.run", _PINNED.get((folder, run), UNKNOWN))
                   for run in RUN_NAMES)
    return Resource(name, tuple(f"{run}.run" for run in RUN_NAMES), remote, _copy,
                    f"CPJKU/FairnessRetrievalResults on GitHub (measurement/sample_trec_runs/{folder})")


#: The published runs of each dataset they rank (mirror folders ``msmarco-gender-runs-qs2/``, ``-dl19/``; a file
#: may be gzipped: ``BM25.run.gz``).
PUBLISHED_RUNS = {QS2_ID: _runs("msmarco_passage", "msmarco-gender-runs-qs2"),
                  DL19_ID: _runs("trecdl2019_passage", "msmarco-gender-runs-dl19")}


def published_runs(dataset_id: str, data: Optional[str | os.PathLike] = None) -> dict:
    """``{name: run file}`` of the ten published runs of ``dataset_id`` (from ``data``, ``$PAIRMEASURES_DATA``, the
    download cache, or downloaded once); a :class:`DatasetError` for a dataset they do not rank."""
    resource = PUBLISHED_RUNS.get(dataset_id)
    if resource is None:
        raise DatasetError(f"--systems {PUBLISHED}: the NFaiRR paper published runs for {' and '.join(PUBLISHED_RUNS)} "
                           f"only, not for {dataset_id}")
    location = locate(resource, data, dataset_id)
    return {name: location.file(f"{name}.run") for name in RUN_NAMES}


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
