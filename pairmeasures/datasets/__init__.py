"""Floor 7: bias benchmarks as ir_datasets datasets, with gold labels, that also work offline.

Once ``pairmeasures`` is imported, ``ir_datasets.load("pair/perspectrum")`` and
``pt.get_dataset("irds:pair/perspectrum")`` find these datasets (ir_datasets has no plugin
discovery; the registration runs as soon as both packages are imported, in any order and however
ir_datasets is imported, and ``import pairmeasures`` alone does not import ir_datasets)::

    pair/wiki-balance/synthetic  pair/wiki-balance/natural  pair/perspectrum  pair/procon
    pair/grep-biasir  pair/msmarco-passage/dev/gender-qs1  pair/msmarco-passage/dev/gender-qs2
    pair/msmarco-passage/trec-dl-2019/gender

Files come from the folder given as ``data=`` to :func:`load`, else from ``$PAIRMEASURES_DATA``
(both laid out like ``shared/data``: one subfolder per dataset), else from the download cache
``$IR_DATASETS_HOME/pair``, else from the public source (downloaded and converted once). Each
dataset offers ``docs_iter()``, ``queries_iter()``, ``qrels_iter()`` and, for the labelled ones,
``labels_iter()`` (:class:`GroupLabel`; measures read them as ``group="irds:ID"``), ``labels_path()`` (a TSV) and
``query_info_iter()`` (topic, domains, split, category...). See ``docs/datasets.md``.

:func:`open_corpus` is the one place that resolves a dataset id or a BEIR-layout folder into documents
(served by id), queries, qrels, gold labels, a default text field and a term list (``corpus``);
:func:`load_profile` is what an audit reads of it (``profile``).

One module per dataset family holds its records, conversion, builder, resources and specs
(``wiki_balance``, ``msmarco_gender``, ``perspectrum``, ``procon``, ``grep_biasir``); ``_catalogue``
collects them, and the private modules ``_records`` (shared records), ``_resources`` (locations,
downloads), ``_irdsfiles`` (ir_datasets' own files a set reads, the MS MARCO passages and qrels: which are
missing, fetched by ir_datasets on first use), ``_convert`` (text cleaning, writers), ``_loaders`` (specs, tables,
parsing once), ``_irds`` (the ir_datasets classes) and ``_load`` (:func:`load`, :func:`register`) hold what they
share.
"""

from __future__ import annotations

import importlib
import os
import warnings
from typing import Optional

from ._load import load, register, spec_of

__all__ = ["Corpus", "CorpusSourceError", "DATASET_IDS", "DATA_ENV", "DatasetError", "DatasetUnavailableError",
           "GroupLabel", "Profile", "Qrel", "Query", "ir_datasets_home", "load", "load_profile", "local_files",
           "open_corpus", "record_types", "register", "register_when_ir_datasets_loads", "status"]

#: Where each public name lives (the record types of the dataset families are found through their specs:
#: :func:`record_types`).
_LAZY = {"DATA_ENV": "._resources", "DatasetError": "._resources", "DatasetUnavailableError": "._resources",
         "ir_datasets_home": "._resources",
         "DATASET_IDS": "._catalogue", **dict.fromkeys(("Corpus", "CorpusSourceError", "open_corpus"), ".corpus"),
         **dict.fromkeys(("Profile", "load_profile"), ".profile"), **dict.fromkeys(("GroupLabel", "Qrel", "Query"), "._records")}


def record_types() -> dict:
    """The record types of every registered dataset (``ProconDoc``, ``WikiBalanceQueryInfo``...), by name, from the
    dataset specs: ``pm.datasets.ProconDoc`` is one of them (imported on first use)."""
    from ._catalogue import SPECS

    return {cls.__name__: cls for spec in SPECS for cls in (spec.doc_cls, spec.query_info_cls) if cls is not None}


def __getattr__(name: str):
    """Records, errors and the dataset ids load on first use, so that ``import pairmeasures`` stays
    light (it imports no dataset family module)."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    if name[:1].isupper():
        found = record_types().get(name)
        if found is not None:
            return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    """The module's names, the lazily loaded ones and the record types (which imports the family modules)."""
    return sorted(set(globals()) | set(_LAZY) | set(record_types()))


def status(data: Optional[str | os.PathLike] = None) -> list[dict]:
    """For each dataset: where its files resolve from and whether they are here (nothing is downloaded): ``yes``,
    ``after download`` (downloaded on first use), or ``no: ...`` (what makes it fail until it is fixed)."""
    from ._catalogue import SPECS
    from ._irdsfiles import irds_missing, irds_on_first_use, irds_unmarked
    from ._resources import DatasetError, find, mirror_roots

    mirror_roots(data)  # a mirror folder named but absent is an error, not a column of "download" rows
    rows = []
    for spec in SPECS:
        places, missing, problems = [], [], []
        for resource in spec.resources:
            try:
                location = find(resource, data)
            except DatasetError as exc:
                problems.append(str(exc))
                continue
            if location is None:
                missing.append(resource)
                places.append(f"download: {resource.source}")
            else:
                places.append(f"{location.origin}: {location.path}")
        problems += [f"{note} (docs/msmarco.md)" for note in irds_unmarked(spec.documents_files)]
        lacking = [] if problems else irds_missing(spec.documents_files)  # ir_datasets downloads them on first use
        available = ("no: " + "; ".join(problems) if problems else
                     "after download" if missing or lacking else "yes")
        if spec.documents_from and not problems:
            groups = ", ".join(dict.fromkeys(file.group for file in spec.documents_files))
            available += "; documents and qrels: " + (irds_on_first_use(lacking) if lacking else
                                                      f"ir_datasets {groups}, here")
        rows.append({"dataset": spec.id, "resolves from": "; ".join(places), "available": available})
    return rows


def _register_quietly() -> None:
    try:
        register()
    except Exception as exc:  # never break the import of ir_datasets itself
        warnings.warn(f"pairmeasures could not register its datasets with ir_datasets: {exc}", stacklevel=2)


def register_when_ir_datasets_loads() -> None:
    """Register the datasets now if ir_datasets is imported, else right after it is (no import here)."""
    from ..compat import after_import

    after_import("ir_datasets", _register_quietly)


def local_files(dataset_id: str, data: Optional[str | os.PathLike] = None) -> dict:
    """``{file: path}`` of every file ``dataset_id`` reads from its mirror, keyed as :meth:`Corpus.files` keys them
    (in the mirror layout: ``procon/qrels/test.tsv``, ``wiki-balance-categories.tsv``), with where it is here: in
    ``data`` (else ``$PAIRMEASURES_DATA``) or the download cache, or None where neither has it (then keyed by the
    plain name; optional files that are absent are left out). Nothing is downloaded or parsed; an incomplete resource
    folder is a :class:`DatasetError`. The files of ir_datasets' own collections (MS MARCO) are not among them."""
    from pathlib import Path

    from ._loaders import resource_files
    from ._resources import find

    files: dict = {}
    for resource in spec_of(dataset_id).resources:
        location = find(resource, data)
        if location is None:
            names = resource.files or ("",)
            files.update({(Path(resource.name) / name).as_posix(): None for name in names})
            continue
        for path in resource_files(location):
            relative = Path(resource.name) / path.relative_to(location.path) if resource.files else Path(resource.name)
            files[relative.as_posix()] = path
    return files
