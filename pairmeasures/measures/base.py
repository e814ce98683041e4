"""The base class of every measure the pairmeasures provider evaluates (built-in or from a plugin).

A measure is an ``ir_measures`` Measure value (``Duo(step=2)@10`` is a copy with other
parameters) plus two methods the provider calls on a whole run at once:

- :meth:`PairMeasure.prepare` narrows the shared :class:`RankedLists` to the documents the
  measure considers (cutoff, relevance threshold) and attaches its side inputs, validated;
- :meth:`PairMeasure.compute` returns one value per query, vectorised across queries, by calling
  :mod:`pairmeasures.math`.

What a measure reads besides the ranking it declares as side inputs (:class:`SideInput`); how they are resolved,
converted and checked is :mod:`pairmeasures.measures.sideinputs`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Optional, Sequence, cast

import numpy as np
from ir_measures import measures
from ir_measures.measures.base import MeanAgg

from .ranked import RankedLists
from .sideinputs import MissingSideInfoWarning, SideInput, attach, resource_example, source_for

__all__ = ["PairMeasure", "MeasureValues", "SideInput", "DegenerateQueryWarning", "MissingSideInfoWarning",
           "COMMON_PARAMS", "RangedParam", "MAX_CUTOFF", "TIE_POLICIES", "DEFAULT_TIES", "MeasureOutputError", "degenerate_causes", "DIRECTIONS",
           "EXPERIMENT_PLUS"]

#: How documents of equal score are ordered (the ``ties`` parameter): as trec_eval orders them, or as the system did.
TIE_POLICIES = ("trec_eval", "system")

#: The tie policy of a measure without a ``ties`` parameter (a plugin's), as of every built-in measure by default.
DEFAULT_TIES = "system"

#: The largest cutoff a measure accepts (some formulas build tables as long as the cutoff).
MAX_CUTOFF = 10**7


#: What :meth:`PairMeasure.direction` may return, and what each means.
DIRECTIONS = {
    "higher-fairer": "higher is fairer",
    "lower-fairer": "lower is fairer (higher = more biased)",
    "signed": "0 is balanced, the sign says which way the ranking leans; closer to 0 is fairer",
    "neither": "neither way is fairer: a count or one group's magnitude, not a fairness value",
    "unknown": "not declared by the measure",
}

#: Per direction, what pt.Experiment's ``"<measure> +"`` column counts (queries where the system's value
#: is strictly above the baseline's; ``"<measure> -"``: strictly below).
EXPERIMENT_PLUS = {
    "higher-fairer": "queries where the system is fairer than the baseline",
    "lower-fairer": "queries where the system is LESS fair than the baseline ('-' counts the fairer ones)",
    "signed": "queries where the system leans further to the positive side, fairer or not: compare absolute "
              "per-query values (perquery=True) to see which is closer to 0",
    "neither": "queries where the count or magnitude is higher",
    "unknown": "queries where the value is higher; the measure does not say which way is fairer",
}


class DegenerateQueryWarning(UserWarning):
    """Some queries had nothing to measure: left out of the per-query values and the mean (``degenerate='exclude'``,
    the default) or given the measure's documented value (``degenerate='default'``). The same warning counts the
    considered documents without side information (``missing='skip'`` or ``'neutral'``)."""


class MeasureOutputError(RuntimeError):
    """A measure's :meth:`PairMeasure.evaluate` returned something other than one value per query."""


@dataclass(frozen=True)
class MeasureValues:
    """Per-query results of :meth:`PairMeasure.compute`, aligned with ``RankedLists.query_ids``.

    ``degenerate`` marks queries with nothing to measure (their value is the measure's
    documented default); ``causes`` says, per degenerate query, why in a few words (e.g.
    ``"fewer than 3 documents"``; ``None``: the measure's ``DEGENERATE_REASON``). The provider
    reports them in one warning per measure and run, counted by cause.
    """

    values: np.ndarray
    degenerate: np.ndarray
    causes: Optional[np.ndarray] = None


def degenerate_causes(degenerate: np.ndarray, choices: list[tuple[np.ndarray, str]], otherwise: str) -> np.ndarray:
    """Per query, the cause of the first ``(condition, cause)`` pair that holds, else ``otherwise``; ``None``
    for queries that are not degenerate. For :attr:`MeasureValues.causes`."""
    left = np.array(degenerate, dtype=bool)  # the degenerate queries without a cause yet
    causes = np.full(left.shape, None, dtype=object)
    for condition, cause in choices:
        hit = left & np.asarray(condition, dtype=bool)
        causes[hit] = cause
        left &= ~hit
    causes[left] = otherwise
    return causes


class NonDegenerateMean(MeanAgg):
    """The mean over measured queries: NaN values (degenerate queries under ``degenerate='exclude'``) are left out."""

    def add(self, value):
        if not math.isnan(value):
            super().add(value)


class RangedParam(measures.ParamInfo):
    """A numeric parameter with a range: ``low``/``high`` bounds (``None``: unbounded), inclusive
    unless ``low_open``/``high_open``. Booleans and non-finite numbers are out of every range."""

    def __init__(self, *, low=None, high=None, low_open: bool = False, high_open: bool = False, **info):
        super().__init__(**info)
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open

    def validate(self, value) -> bool:
        if not super().validate(value):
            return False
        return value is measures.base._NOT_PROVIDED or value is None or self.in_range(value)

    def in_range(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)) or not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def range_text(self) -> str:
        """The allowed values in words, e.g. ``an int in [1, 10000000]``."""
        kinds = self.dtype if isinstance(self.dtype, tuple) else (self.dtype,)
        kind = "a number" if float in kinds else "an int"
        if self.high is None:
            return f"{kind} {'>' if self.low_open else '>='} {self.low}"
        low = "-inf" if self.low is None else self.low
        return f"{kind} in {'(' if self.low_open else '['}{low}, {self.high}{')' if self.high_open else ']'}"


COMMON_PARAMS = {
    "cutoff": RangedParam(dtype=int, required=False, low=1, high=MAX_CUTOFF, desc="ranking cutoff: only the top k documents of the system's ranking are considered"),
    "rel": measures.ParamInfo(dtype=int, default=None, desc="relevance threshold: only documents with a qrel >= rel count, in the order the system ranked them (default: every ranked document)"),
    "missing": measures.ParamInfo(dtype=str, choices=("error", "skip"), default="skip", desc="a considered document without side information: 'skip' it (default; counted and said in one warning per measure and run) or raise an 'error' naming the first"),
    "degenerate": measures.ParamInfo(dtype=str, choices=("default", "exclude"), default="exclude", desc="a query with nothing to measure: 'exclude' (default) leaves it out of the per-query values and the mean, counted (Measured(of=...)); 'default' gives it the measure's documented value, counted in the mean"),
    "ties": measures.ParamInfo(dtype=str, choices=TIE_POLICIES, default="system", desc="documents of equal score: 'system' (default) keeps the order the system showed (the run's rank column, else its row order); 'trec_eval' orders them by document id, descending, as trec_eval does"),
}


class PairMeasure(measures.Measure):
    """Base class: subclass it, set ``NAME``, ``SUPPORTED_PARAMS``, ``SIDE_INPUTS``, ``DEGENERATE``,
    ``DEGENERATE_REASON``, ``DIRECTION``, ``RANGE``, ``REFERENCE``, and implement :meth:`compute`."""

    SIDE_INPUTS: ClassVar[tuple[SideInput, ...]] = ()
    #: Shown by ``pairmeasures measures``: a one-line description of what the measure measures.
    SHORT_DESC: ClassVar[str] = ""
    #: Which way is fair, one of :data:`DIRECTIONS` (:meth:`direction` may refine it by parameters).
    DIRECTION: ClassVar[str] = "unknown"
    #: The values the measure takes, in words, e.g. ``"[0, 1]"`` (:meth:`value_range` may refine it).
    RANGE: ClassVar[str] = "unknown"
    #: The paper that defines the measure, short: authors, title, venue and year.
    REFERENCE: ClassVar[str] = ""
    #: A measure string that parses, shown by ``pairmeasures measures NAME`` (default: ``NAME@10``).
    EXAMPLE: ClassVar[str] = ""
    #: The documentation pages that define the measure and every parameter: for a built-in, files of
    #: pairmeasures' ``docs/`` (``("duo.md",)``; AWRF has two); a plugin may give its own addresses.
    PAGES: ClassVar[tuple[str, ...]] = ()
    #: Value of a query with nothing to measure (also ``DEFAULT`` for queries without results).
    DEGENERATE: ClassVar[float] = 0.0
    #: Says, in a few words, when a query has nothing to measure.
    DEGENERATE_REASON: ClassVar[str] = "nothing to measure"
    #: Set by a subclass whose ``prepare`` override still keeps or drops each document on its own after the
    #: cut-off (attaching per-document columns, say), so :meth:`evaluate_cutoffs` may prepare once.
    PREPARE_PER_DOCUMENT: ClassVar[bool] = False
    SUPPORTED_PARAMS = dict(COMMON_PARAMS)

    def degenerate_value(self) -> str:
        """What a query with nothing to measure gets, in words (for the degenerate-query warning)."""
        return str(self.DEGENERATE)

    @property
    def DEFAULT(self) -> float:  # type: ignore[override]  # ir_measures reads it as an attribute
        return math.nan if self.excludes_degenerate() else self.DEGENERATE

    def direction(self) -> str:
        """Which way is fair with these parameters: a key of :data:`DIRECTIONS`."""
        return self.DIRECTION

    def value_range(self) -> str:
        """The values this measure takes with these parameters, in words."""
        return self.RANGE

    def excludes_degenerate(self) -> bool:
        """Whether queries with nothing to measure are left out of the mean (``degenerate='exclude'``)."""
        return "degenerate" in self.SUPPORTED_PARAMS and self.param("degenerate") == "exclude"

    def aggregator(self):
        """The mean over all queries; over the measured ones under ``degenerate='exclude'``."""
        return NonDegenerateMean() if self.excludes_degenerate() else super().aggregator()

    def tie_policy(self) -> str:
        """How the provider orders this measure's documents of equal score: ``"trec_eval"`` (by document id,
        descending) or ``"system"`` (the run's rank column, else its row order); see :data:`TIE_POLICIES`."""
        return str(self.param("ties")) if "ties" in self.SUPPORTED_PARAMS else DEFAULT_TIES

    def needs_relevance(self) -> bool:
        """Whether the provider must attach qrels to the ranked lists (``rel`` is set)."""
        return "rel" in self.SUPPORTED_PARAMS and self.param("rel") is not None

    def __call__(self, **params) -> "PairMeasure":
        """A copy with other parameters, checked at once so a typo fails where it is written."""
        measure = super().__call__(**params)
        measure.check_params()
        return measure

    def check_params(self) -> None:
        """Raise a ValueError naming any unknown parameter or invalid value."""
        unknown = sorted(set(self.params) - set(self.SUPPORTED_PARAMS))
        if unknown:
            raise ValueError(f"{self.NAME} has no parameter {', '.join(map(repr, unknown))}; "
                             f"supported: {', '.join(self.SUPPORTED_PARAMS)}")
        missing = [name for name, info in self.SUPPORTED_PARAMS.items() if info.required and name not in self.params]
        if missing:
            raise ValueError(f"{self.NAME} needs {missing[0]}= ({self.SUPPORTED_PARAMS[missing[0]].desc})")
        for name, value in self.params.items():
            info = self.SUPPORTED_PARAMS[name]
            if isinstance(info, RangedParam) and measures.ParamInfo.validate(info, value) and not info.validate(value):
                raise ValueError(f"{self.NAME}: {name}={value!r} is out of range; {name} must be {info.range_text()} "
                                 f"({info.desc})")
            if not info.validate(value):
                choices = "" if info.choices is measures.base._NOT_PROVIDED else f" (one of {list(info.choices)})"
                raise ValueError(f"{self.NAME}: invalid {name}={value!r}; expected {info.desc}{choices}")

    def validate_params(self) -> None:
        """What ir_measures' providers call before evaluating: :meth:`check_params` (a ValueError, not an assert)."""
        self.check_params()

    def param(self, name: str):
        """The value of a parameter, its default when not given, ``None`` when it has neither."""
        value = self[name]
        return None if value is measures.base._NOT_PROVIDED else value

    def side_inputs(self) -> tuple[SideInput, ...]:
        """The side inputs this measure reads with its parameters (``SIDE_INPUTS`` by default)."""
        return self.SIDE_INPUTS

    def resource_example(self, side: SideInput) -> str:
        """How to name a resource for ``side`` instead of a run column, e.g. ``rKL(group='tsv:FILE' | 'beir:DIR')``."""
        return resource_example(self, side)

    def run_columns(self) -> list[str]:
        """Run columns this measure reads (side inputs not taken from a named resource)."""
        return [side.column for side in self.side_inputs() if self.param(side.param) is None]

    def optional_run_columns(self) -> list[str]:
        """Run columns passed along when present: ``text`` for side inputs computed by a resource."""
        return ["text"] if any(self.param(side.param) is not None for side in self.side_inputs()) else []

    def depth(self) -> Optional[int]:
        """How deep into each ranking this measure reads (``None``: all of it). The provider and the audit cut runs to
        it (keeping the documents tied with the last one), so a measure that reads anything below its cut-off (a
        background of the whole run, the retrieved documents' group shares) returns ``None``."""
        return self.param("cutoff")

    def prepare(self, lists: RankedLists, cutoff: bool = True) -> RankedLists:
        """The documents this measure considers, with its side inputs checked and attached.

        The cutoff applies to the system's ranking first (unless ``cutoff=False``); then only
        documents with a qrel of at least ``rel`` are kept (when ``rel`` is set), in ranked order.
        """
        if cutoff:
            lists = lists.head(self.param("cutoff"))
        rel = self.param("rel")
        if rel is not None:
            lists = lists.select(lists.relevance >= rel)
        for side in self.side_inputs():
            lists = attach(self, lists, side)
        return lists

    def check_resources(self) -> None:
        """Resolve every resource this measure names and check its kind, so that a missing file or a
        resource of the wrong kind fails before any run is produced or read."""
        for side in self.side_inputs():
            if self.param(side.param) is not None:
                source_for(self, side)

    def compute(self, lists: RankedLists) -> MeasureValues:
        """One value per query of the prepared ``lists``; vectorised across queries."""
        raise NotImplementedError

    def evaluate(self, lists: RankedLists) -> MeasureValues:
        """Prepare, then compute, for the provider."""
        return self.compute(self.prepare(lists))

    def evaluate_cutoffs(self, lists: RankedLists, cutoffs: Sequence[int]) -> list[MeasureValues]:
        """``(self @ k).evaluate(lists)`` for each cut-off k, the documents prepared once, at the deepest k.

        Exact for :meth:`prepare`: ``ranks`` are positions in the system's ranking and its relevance and
        side-input filters keep or drop each document on its own, so the top k of the prepared deepest lists are
        the prepared top k. A measure that overrides ``evaluate``, or ``prepare`` without
        :attr:`PREPARE_PER_DOCUMENT`, is evaluated at each k in turn.
        """
        cls = type(self)
        if cls.evaluate is not PairMeasure.evaluate or (cls.prepare is not PairMeasure.prepare
                                                        and not cls.PREPARE_PER_DOCUMENT):
            return [self.at(k).evaluate(lists) for k in cutoffs]
        return self.compute_cutoffs(self.at(max(cutoffs)).prepare(lists), cutoffs)

    def compute_cutoffs(self, lists: RankedLists, cutoffs: Sequence[int]) -> list[MeasureValues]:
        """``(self @ k).compute(lists.head(k))`` for each cut-off k of the prepared ``lists``; a family whose math
        takes every prefix in one pass overrides it (:meth:`RankedLists.prefix_lengths`)."""
        return [self.at(k).compute(lists.head(k)) for k in cutoffs]

    def at(self, cutoff: int) -> "PairMeasure":
        """This measure at another cut-off (``self @ cutoff``, typed)."""
        return cast(PairMeasure, self @ cutoff)
