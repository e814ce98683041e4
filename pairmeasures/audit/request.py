"""What an audit is asked to do: :class:`AuditRequest`, frozen, written to JSON and read back exactly.

A request holds every input that decides an audit's numbers: the dataset, the systems, the measures, the depth,
the baseline, the statistics' seed and resamples, the trade-off's Lambdas. It holds nothing about where the output
goes (``--out``, ``--force``, ``--absolute-paths``, the printed format) or where the model work runs (``--engine``:
the numbers are the same either way). Every written audit's ``manifest.json`` stores the request it ran (its
``request`` key), with the measures the dataset chose filled in, so ``pairmeasures audit --request manifest.json``
re-runs that audit exactly. Paths in a request (a folder dataset, ``run:`` files, ``queries``, a model folder) are
as they were given: relative ones are read from the working folder.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable, Optional

__all__ = ["AuditRequest", "RequestError", "read_request", "DEFAULT_SYSTEMS", "DEFAULT_LAMBDAS", "REQUEST_FORMAT",
           "default_dataset"]

#: The systems of an audit that names none (the demo audit).
DEFAULT_SYSTEMS = ("bm25", "bm25>>dense", "bm25>>dense>>duogreedy(0.5)")
#: The Lambdas of the DuoGreedy-vs-MMR trade-off curve without ``--lambdas``.
DEFAULT_LAMBDAS = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
#: The version of a request's JSON (its ``format`` key); a reader refuses a newer one.
REQUEST_FORMAT = 1


class RequestError(ValueError):
    """A request that cannot be read: one line naming the file (or ``request``) and the key."""


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _texts(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _numbers(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                   and math.isfinite(v) for v in value)


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


#: Each key of a request: (its check, whether null is allowed, what it must be, in words).
_KEYS: dict[str, tuple[Callable[[Any], bool], bool, str]] = {
    "dataset": (_text, True, "a dataset id or a folder (null: the embedded demo corpus)"),
    "systems": (_texts, False, "a list of system specs"),
    "names": (_texts, True, "a list of names, one per system, or null"),
    "measures": (_texts, True, "a list of measure strings (null: the dataset's)"),
    "baseline": (_text, True, "a system's name, or null (the first)"),
    "by": (_text, True, "a query field, or null"),
    "correction": (_text, False, "a correction's name such as holm"),
    "resamples": (_integer, False, "a whole number"),
    "seed": (_integer, False, "a whole number"),
    "min_cell": (_integer, False, "a whole number"),
    "data": (_text, True, "a mirror folder, or null ($PAIRMEASURES_DATA)"),
    "text": (_text, True, "a document field, or null (the dataset's)"),
    "num_results": (_integer, False, "a whole number"),
    "k": (_integer, False, "a whole number"),
    "model": (_text, True, "a model name or folder, or null"),
    "positive": (_text, True, "a label, or null"),
    "queries": (_text, True, "a file of query ids, or null"),
    "tradeoff": (_flag, False, "true or false"),
    "lambdas": (_numbers, False, "a list of numbers"),
    "curves": (_flag, False, "true or false"),
}


@dataclass(frozen=True)
class AuditRequest:
    """An audit's inputs (``pairmeasures audit``'s options of the same names; :func:`~pairmeasures.audit.run_audit`
    runs it). ``dataset``: a dataset id or a BEIR-layout folder (None: the embedded demo corpus); ``systems``: specs,
    ``names`` one per spec (default: the specs); ``measures``: measure strings (None: the dataset's own, filled in
    when the audit runs); ``baseline``: a system's name (None: the first); ``by``/``min_cell``: the breakdown by a
    query field; ``correction``, ``resamples``, ``seed``: the statistics; ``data``: the mirror folder of dataset ids;
    ``text``: the document field(s); ``num_results``: the first stage's depth; ``k``: DuoGreedy's default k;
    ``model``: the sentence-transformers model; ``positive``: the label of polarity +1; ``queries``: a file of the
    query ids audited; ``tradeoff``/``lambdas``: the DuoGreedy-vs-MMR trade-off; ``curves``: bias by cut-off."""

    dataset: Optional[str] = None
    systems: tuple[str, ...] = DEFAULT_SYSTEMS
    names: Optional[tuple[str, ...]] = None
    measures: Optional[tuple[str, ...]] = None
    baseline: Optional[str] = None
    by: Optional[str] = None
    correction: str = "holm"
    resamples: int = 10_000
    seed: int = 0
    min_cell: int = 10
    data: Optional[str] = None
    text: Optional[str] = None
    num_results: int = 100
    k: int = 10
    model: Optional[str] = None
    positive: Optional[str] = None
    queries: Optional[str] = None
    tradeoff: bool = True
    lambdas: tuple[float, ...] = DEFAULT_LAMBDAS
    curves: bool = True

    def __post_init__(self) -> None:  # lists become tuples and paths text: a request is hashable and compares by value
        for name in ("systems", "names", "measures"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        if not isinstance(self.lambdas, tuple) or not all(isinstance(v, float) for v in self.lambdas):
            object.__setattr__(self, "lambdas", tuple(float(v) for v in self.lambdas))
        for name in ("dataset", "data", "queries", "model"):
            value = getattr(self, name)
            if isinstance(value, os.PathLike):
                object.__setattr__(self, name, os.fspath(value))

    def as_dict(self) -> dict:
        """The request as JSON-ready values: ``format`` first, then every field (tuples as lists)."""
        found: dict[str, Any] = {"format": REQUEST_FORMAT}
        for spec in fields(self):
            value = getattr(self, spec.name)
            found[spec.name] = list(value) if isinstance(value, tuple) else value
        return found

    def to_json(self) -> str:
        """The request as a JSON document (:meth:`from_json` reads it back to an equal request)."""
        return json.dumps(self.as_dict(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, values: Any, where: str = "request") -> "AuditRequest":
        """The request of :meth:`as_dict`'s mapping; a :class:`RequestError` naming ``where`` and the key for an
        unknown key, a missing ``systems``, a value of the wrong kind or a newer ``format``."""
        if not isinstance(values, dict):
            raise RequestError(f"{where}: a request is a JSON object of its options, not a {type(values).__name__}")
        given = dict(values)
        version = given.pop("format", REQUEST_FORMAT)
        if not _integer(version) or version > REQUEST_FORMAT:
            raise RequestError(f"{where}: key 'format' is {version!r}; this pairmeasures reads requests of format "
                               f"{REQUEST_FORMAT} and earlier: upgrade pairmeasures")
        for key, value in given.items():
            if key not in _KEYS:
                raise RequestError(f"{where}: unknown key {key!r}; a request's keys are {', '.join(_KEYS)}")
            check, nullable, what = _KEYS[key]
            if not (value is None and nullable) and not check(value):
                raise RequestError(f"{where}: key {key!r} must be {what}, not {json.dumps(value)}")
        if "systems" not in given:
            raise RequestError(f"{where}: key 'systems' is missing; a request names its systems")
        return cls(**given)

    @classmethod
    def from_json(cls, text: str, where: str = "request") -> "AuditRequest":
        """The request of :meth:`to_json`'s text (a :class:`RequestError` naming ``where`` where it is not one)."""
        try:
            values = json.loads(text)
        except json.JSONDecodeError as error:
            raise RequestError(f"{where}: not JSON (line {error.lineno}, column {error.colno}: {error.msg})") from None
        return cls.from_dict(values, where)

    def with_measures(self, measures: list[str]) -> "AuditRequest":
        """This request with the measures it evaluates written out (what the manifest stores)."""
        return replace(self, measures=tuple(measures))


def read_request(path: str | os.PathLike) -> AuditRequest:
    """The request in ``path``: a request's JSON, or a written audit's ``manifest.json`` (its ``request`` key). A
    :class:`RequestError` names the file (and the key) where it is neither."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise RequestError(f"--request {path}: cannot be read ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise RequestError(f"--request {path}: not a text file; give a request's JSON or an audit's manifest.json") \
            from None
    try:
        values = json.loads(text)
    except json.JSONDecodeError as error:
        raise RequestError(f"--request {path}: not JSON (line {error.lineno}, column {error.colno}: {error.msg})") \
            from None
    if isinstance(values, dict) and "command" in values and "versions" in values:  # an audit's manifest
        if "request" not in values:
            raise RequestError(f"--request {path}: this manifest has no key 'request' (written by a pairmeasures that "
                               "did not record requests); run its command again instead: "
                               f"{' '.join(map(str, values.get('command') or []))}")
        return AuditRequest.from_dict(values["request"], f"--request {path}, key 'request'")
    return AuditRequest.from_dict(values, f"--request {path}")


def default_dataset() -> str:
    """The embedded demo corpus (a BEIR-layout folder shipped with the package): the dataset of a request that
    names none."""
    try:
        from ..demo import debates_dir
    except ImportError:
        raise ValueError("this install has no embedded demo corpus; pass --dataset ID_OR_DIR") from None
    return str(debates_dir())
