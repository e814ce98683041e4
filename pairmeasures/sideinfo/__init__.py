"""Floor 4: side information a measure needs besides qrels and run (polarity scores, group labels, text).

A measure reads a side input from a run column (``polarity``, ``group``, ``text``) or, when one of its
parameters names a *resource*, from a :class:`SideInfoSource` resolved here. Resources are named
``scheme:argument``; built-in schemes:

``tsv:PATH``
    A tab-separated file with a header: ``corpus-id`` (or ``doc_id`` / ``docno``), optionally
    ``query-id`` (or ``query_id`` / ``qid``) when values depend on the query, and one value
    column (labels or numbers) or several numeric ones (one per polarity axis). ``tsv:PATH#name``
    picks the value column ``name``. Columns of finite numbers only provide scores, else labels;
    malformed rows, empty cells and repeated keys are errors naming the file and line.
``beir:DIR``
    The gold group labels of a BEIR-layout folder, ``DIR/labels.tsv`` (``query-id``,
    ``corpus-id``, ``group``), checked with the whole folder, its documents read into an on-disk store
    (:class:`pairmeasures.io.beirfolder.StoredFolder`), not into memory.
``irds:DATASET[?fields=title+text]``
    An ``ir_datasets`` dataset by id (``irds:pair/procon``): its gold group labels for rND/rKL/rRD,
    or its documents' text (``fields``, default ``text``) for the term-based measures
    (:mod:`pairmeasures.sideinfo.irds`).
``pca:DIR[?model=M&components=m&text=title+text&positive=LABEL]``, ``pca:irds:DATASET[?...]``
    Polarity computed from text: per query, axes fitted on the labelled (else judged)
    documents of the BEIR folder ``DIR`` or the dataset (:mod:`pairmeasures.sideinfo.polarity`);
    documents are embedded from the run's ``text`` column, else from the folder's or dataset's documents.
``corpus:DIR[?fields=title+text]``
    Document text for the term-based measures, from a BEIR folder's ``corpus.jsonl``, looked up by id in
    its on-disk store (:mod:`pairmeasures.sideinfo.text`).

A source declares what it provides in ``provides`` (``"scores"``, ``"labels"`` or ``"text"``, or a
tuple of them); a measure refuses a resource of another kind (scores serve as labels, never as text).
Plugins add schemes through the ``pairmeasures_side_info_schemes`` hook. Sources are built once
per process, name and content (:mod:`pairmeasures.io.memo`): a resource file is read once
however many measures use it, and read again when it changes (its size or modification time); a
resource naming a dataset id (``irds:...``) is kept by name, its files being ir_datasets' concern.
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional, Protocol, runtime_checkable

import numpy as np

from ..io.errors import InputWarning, SideInfoError
from ..io.memo import Memo, content_key
from .tsv import BeirLabelSource, TsvSource, beir_scheme, tsv_scheme

__all__ = ["SideInfoSource", "TsvSource", "BeirLabelSource", "register_scheme", "resolve", "schemes", "SideInfoError",
           "InputWarning", "resource_options", "resource_key", "kinds", "tsv_scheme", "beir_scheme"]


@runtime_checkable
class SideInfoSource(Protocol):
    """Something that supplies one side input for ranked documents.

    Optional attributes a measure reads when present: ``provides`` (``"scores"``, ``"labels"`` or
    ``"text"``, checked against what the measure needs), ``kind_reason`` (why, for the error when it
    does not fit) and ``missing_reason(query_id, doc_id)`` (why a document got no value, for the error).

    A source serving several kinds (``irds:DATASET``: text and labels) gives ``provides`` as a tuple and
    may have a method ``for_kind(kind) -> SideInfoSource``. When it does, the measure calls it with the
    kind it needs (one of ``provides``; ``"scores"`` when it needs labels and only scores are offered)
    and looks values up in the source returned, never in this one; without it, in this one.
    """

    def lookup(self, query_ids: np.ndarray, doc_ids: np.ndarray, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        """Values for each (query, document) row, aligned with the inputs.

        ``columns`` holds the run's other per-row columns (e.g. ``text``) for sources that compute
        values. A row without a value gets ``None`` (object arrays) or NaN (float arrays).
        """
        ...


_SCHEMES: dict[str, Callable[[str], SideInfoSource]] = {}
_SOURCES = Memo("side-information sources")

def resource_options(argument: str, allowed: tuple, scheme: str) -> tuple[str, dict]:
    """Split ``LOCATION?key=value&...`` into the location and its options (``+`` stays a plus sign,
    so ``text=title+text`` reads as written); an option not in ``allowed`` is an error."""
    from urllib.parse import unquote

    location, _, query = argument.partition("?")
    options = {}
    for pair in filter(None, query.split("&")):
        key, _, value = pair.partition("=")
        options[unquote(key)] = unquote(value)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise SideInfoError(f"{scheme}: resource options are {', '.join(allowed)}; got {unknown}")
    return location, options


def register_scheme(scheme: str, factory: Callable[[str], SideInfoSource]) -> None:
    """Make resources named ``scheme:ARGUMENT`` resolve to ``factory(ARGUMENT)`` (built again when the
    file or folder that ``ARGUMENT`` names, before any ``?options`` or ``#column``, changes)."""
    if not scheme.isidentifier():
        raise ValueError(f"a side-information scheme must be an identifier, got {scheme!r}")
    _SCHEMES[scheme] = factory


def schemes() -> list[str]:
    """Registered scheme names."""
    return sorted(_SCHEMES)


def resource_key(spec: str) -> Optional[tuple]:
    """The content a resource ``scheme:LOCATION[?options][#column]`` was read from: :func:`content_key`
    of ``LOCATION`` when it is a file or folder (every file under it), else ``None``: always for a dataset
    id (``irds:ID``, ``pca:irds:ID``), kept by name."""
    scheme, _, argument = spec.partition(":")
    location = argument.partition("?")[0].partition("#")[0]
    if scheme == "irds" or location.startswith("irds:") or not location:
        return None
    return content_key(location)


def kinds(source: SideInfoSource, default: str) -> tuple[str, ...]:
    """The kinds ``source`` provides (its ``provides``, a string or a tuple), ``default`` when it does not say."""
    provides = getattr(source, "provides", default)
    return (provides,) if isinstance(provides, str) else tuple(provides)


def resolve(spec: str) -> SideInfoSource:
    """The source a resource name stands for, built on first use and again when its files change."""
    scheme, sep, argument = spec.partition(":")
    if not sep or scheme not in _SCHEMES:
        raise SideInfoError(
            f"unknown side-information resource {spec!r}: expected SCHEME:ARGUMENT with SCHEME one of "
            f"{schemes()} (plugins can add more)"
        )
    return _SOURCES.get(spec, resource_key(spec), lambda: _SCHEMES[scheme](argument))

