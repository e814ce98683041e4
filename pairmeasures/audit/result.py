"""What an audit found: :class:`AuditResult` and its parts, each a dataclass with typed fields.

Tables stay pandas frames (the per-query values, the leaderboard, the statistics, the cut-off curves, the trade-off
curve); everything else is a field. Nothing here writes a file: the command's outputs (:mod:`pairmeasures.apps.audit`)
turn a result into ``leaderboard.json``, the CSVs, the plots, the report and the manifest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Optional

if TYPE_CHECKING:
    import pandas as pd

    from ..analysis.manifest import Manifest
    from ..datasets.profile import Profile
    from .plan import Measures
    from .request import AuditRequest

__all__ = ["AuditResult", "Statistics", "Breakdown", "TieCount", "Disparity", "AxisEvidence", "Tradeoff",
           "TradeoffBase", "Provenance"]


@dataclass(frozen=True)
class TieCount:
    """How many of a system's ``queries`` hold documents of equal score in their top ``k`` (or across the cut at
    ``k``), where trec_eval's order and the system's differ: ``with_ties``."""

    k: int
    queries: int
    with_ties: int

    def as_record(self) -> dict:
        return {"k": self.k, "queries": self.queries, "with_ties": self.with_ties}


@dataclass(frozen=True)
class Disparity:
    """A system's IBBR ΔA-PRF over its whole run: the signed ``value`` (male − female), its ``absolute`` value (the
    paper's figure), the bootstrap ``interval`` of the signed value, the groups' ``means`` and ``counts`` and the
    queries ``left_out``; NaN values and ``error`` (why) where it is undefined."""

    absolute: float
    value: float
    interval: Optional[tuple] = None
    means: Mapping[str, float] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    left_out: int = 0
    error: Optional[str] = None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> "Disparity":
        return cls(absolute=record["absolute"], value=record["value"], interval=record.get("interval"),
                   means=record.get("means", {}), counts=record.get("counts", {}), left_out=record.get("left_out", 0),
                   error=record.get("error"))

    def as_record(self) -> dict:
        """The record ``leaderboard.json`` writes (NaN as it is: the writer makes it null)."""
        if self.error is not None:
            return {"absolute": self.absolute, "value": self.value, "error": self.error}
        return {"absolute": self.absolute, "value": self.value, "interval": self.interval, "means": dict(self.means),
                "counts": dict(self.counts), "left_out": self.left_out}

    def interval_text(self) -> str:
        """``[low, high]`` of the interval, or what is missing."""
        if self.error is not None or self.interval is None:
            return "undefined"
        low, high = self.interval
        return f"[{low:+.4f}, {high:+.4f}]"


@dataclass(frozen=True)
class Breakdown:
    """Means by the values of the query field ``field`` (``cells``: one row per value, measure and system, with
    counts), and the warnings about cells under ``min_cell`` queries (``small_cells``)."""

    field: str
    min_cell: int
    cells: "pd.DataFrame"
    small_cells: tuple[str, ...] = ()


@dataclass(frozen=True)
class Statistics:
    """Each system's mean of each measure with its bootstrap interval, its difference to the ``baseline``, the
    paired test's p-values (uncorrected and after ``correction``) and the direction (``summary``: one row per
    system and measure); ``resamples`` and ``seed`` of the bootstrap; the ``breakdown`` by a query field, if any."""

    summary: "pd.DataFrame"
    baseline: str
    correction: str
    resamples: int
    seed: int
    min_cell: int
    breakdown: Optional[Breakdown] = None

    def as_record(self) -> dict:
        """The manifest's ``statistics``."""
        return {"baseline": self.baseline, "correction": self.correction, "resamples": self.resamples,
                "seed": self.seed, "by": None if self.breakdown is None else self.breakdown.field,
                "min_cell": self.min_cell}


@dataclass(frozen=True)
class AxisEvidence:
    """How well DUO's polarity axes separate the dataset's labelled perspectives on held-out documents
    (:func:`pairmeasures.analysis.polarity.axis_evidence`): ``validated`` (False where the axes are fitted on each
    run's candidates, with the ``reason``), ``reaches_chance`` (an interval reaches 0.5), the ``warning`` said, and
    the whole evidence (``details``: accuracies with intervals, per-query records, the scheme) as written to
    ``leaderboard.json``."""

    validated: bool
    reaches_chance: bool
    warning: Optional[str]
    reason: Optional[str]
    details: Mapping[str, Any]

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> "AxisEvidence":
        return cls(validated=bool(record.get("validated")), reaches_chance=bool(record.get("reaches_chance")),
                   warning=record.get("warning") or None, reason=record.get("reason"), details=record)

    def __getitem__(self, key: str) -> Any:  # the report reads the details by their names
        return self.details[key]


@dataclass(frozen=True)
class TradeoffBase:
    """A system with a ``duogreedy(...)`` stage in the trade-off: its ``base`` (the spec before that stage) and the
    run the base's re-rankings start from (``base_run``: an audited system's name, or ``"base SPEC"``)."""

    system: str
    base: str
    base_run: str


@dataclass(frozen=True)
class Tradeoff:
    """DuoGreedy against MMR over ``lambdas``: the ``curve`` (system, base, k, method, Lambda, relevance, bias and
    their intervals, n), the ``equal_cost`` points (the bias each method reaches at a relevance cost), the
    ``relevance`` measure and the ``bias`` measure (as the leaderboard names it), and the systems' ``bases``."""

    curve: "pd.DataFrame"
    equal_cost: "pd.DataFrame"
    relevance: str
    bias: str
    lambdas: tuple[float, ...]
    bases: tuple[TradeoffBase, ...]


@dataclass(frozen=True)
class Provenance:
    """Where an audit's numbers come from: the ``manifest`` (versions, timings per step, cache hits, what was
    embedded and why), the dataset ``profile``, the parsed ``systems`` (name -> ``System``), where the polarity axes
    come from (``polarity_source``), the ``embedder`` used (None when nothing read polarity), the compute ``engine``
    (``{"engine": "local"}`` or the Ray pool's record) and when the audit ``started`` (``time.perf_counter()``)."""

    manifest: "Manifest"
    profile: "Profile"
    systems: Mapping[str, Any]
    polarity_source: Optional[str]
    embedder: Any
    engine: Mapping[str, Any]
    started: float


@dataclass(frozen=True)
class AuditResult:
    """An audit's findings (:func:`~pairmeasures.audit.run_audit`): the ``request`` it ran (its measures written
    out), the ``measures`` (shown name -> measure object, with directions), the ``per_query`` values (system, qid,
    measure, value: one row per query measured), the ``leaderboard`` (systems by measures, the arrows in the column
    names), the ``statistics``, each system's ``ties``, IBBR's ``disparity`` (gendered datasets), the bias-by-cut-off
    ``curves``, the evidence of DUO's polarity ``axes``, the DuoGreedy-vs-MMR ``tradeoff`` and the ``provenance``."""

    request: "AuditRequest"
    measures: "Measures"
    per_query: "pd.DataFrame"
    leaderboard: "pd.DataFrame"
    statistics: Statistics
    ties: Mapping[str, TieCount]
    provenance: Provenance
    disparity: Optional[Mapping[str, Disparity]] = None
    curves: Optional["pd.DataFrame"] = None
    axes: Optional[AxisEvidence] = None
    tradeoff: Optional[Tradeoff] = None

    @property
    def summary(self) -> "pd.DataFrame":
        """The statistics' table (:attr:`Statistics.summary`)."""
        return self.statistics.summary

    def ties_text(self) -> str:
        """The tie counts in a sentence, for the report."""
        if not self.ties:
            return ""
        k = next(iter(self.ties.values())).k
        counted = "; ".join(f"{s} {t.with_ties} of {t.queries}" for s, t in self.ties.items())
        return (f"Documents of equal score in the top {k} (or across the cut at {k}): {counted} queries. The bias "
                "measures read each system's own order of them (ties='system'); trec_eval's order (by document id) "
                "would differ there.")

