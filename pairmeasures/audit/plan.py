"""What an audit will do, checked before any long work: the systems (parsed once into
:class:`~pairmeasures.pipelines.specs.System` objects), the baseline, the trade-off's bases, and the measures with
their directions. A measure is evaluated exactly as its string says, with the library's defaults, so the number the
audit shows for ``rKL@10`` is the one ``pairmeasures eval``, ``ir_measures.calc_aggregate`` and ``pt.Experiment`` give
for ``rKL@10`` on the same run: queries with nothing to measure left out and counted, documents without side
information skipped and counted, documents of equal score in the order the system showed them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:
    from ..datasets.profile import Profile
    from ..pipelines.specs import Stage, System

__all__ = ["Plan", "Measures", "plan_systems", "check_run_files", "choose_measures", "default_measures", "direction",
           "label"]

#: How the leaderboard marks each direction.
ARROWS = {"lower-fairer": "↓", "higher-fairer": "↑", "signed": "↕", "higher-better": "↑"}


@dataclass
class Plan:
    """The checked systems of an audit: ``systems`` (name -> System, in order), ``baseline``, the trade-off's
    ``lambdas`` and ``bases`` (name -> (the system before its duogreedy stage, that stage))."""

    systems: dict
    baseline: str
    lambdas: list
    bases: dict

    @property
    def specs(self) -> dict:
        """name -> the spec as the user wrote it."""
        return {name: system.spec for name, system in self.systems.items()}

    @property
    def reads_polarity(self) -> bool:
        """Whether a system (or a trade-off base) reorders by polarity."""
        return any(system.reads_polarity for system in self.systems.values()) or \
            any(base.reads_polarity for base, _ in self.bases.values())


def plan_systems(systems: Sequence[str], names: Optional[Sequence[str]], baseline: Optional[str], resamples: int,
                 tradeoff: bool, lambdas: Sequence[float]) -> Plan:
    """The :class:`Plan`, every input checked (specs parsed, run files read, model folders present); a ValueError
    says what to fix."""
    from ..pipelines.specs import System
    from .curves import checked_lambdas

    names = list(names) if names is not None else list(systems)
    if len(names) != len(systems) or len(set(names)) != len(names):
        raise ValueError(f"system names must be distinct, one per system; got {names}")
    parsed = {name: System.parse(spec) for name, spec in zip(names, systems)}
    for system in parsed.values():
        system.check()  # unreadable run files fail now, naming file and line
    baseline = names[0] if baseline is None else baseline
    if baseline not in parsed:
        raise ValueError(f"--baseline {baseline!r} is not one of the systems: {', '.join(names)}")
    if resamples < 100:
        raise ValueError(f"--resamples must be at least 100, got {resamples}")
    lambdas = checked_lambdas(lambdas)
    if tradeoff and 1.0 not in lambdas:
        raise ValueError(f"--lambdas {' '.join(f'{v:g}' for v in lambdas)}: include 1 (the base ranking the relevance "
                         "cost is measured from)")
    bases: dict[str, tuple[System, Stage]] = {}
    for name, system in parsed.items():
        split = system.split_before("duogreedy") if tradeoff else None
        if split is not None:
            bases[name] = split
    return Plan(parsed, baseline, lambdas, bases)


def check_run_files(plan: Plan, profile: "Profile", dataset_queries) -> None:
    """Each ``run:FILE`` system's file against the dataset, before any long work: a ValueError naming the system and
    its file when the run ranks a document the dataset lacks, none of the dataset's queries (``dataset_queries``: all
    of them, before ``--queries``) or none of the audited ones (``profile.queries``); an
    :class:`~pairmeasures.sideinfo.InputWarning` with counts when some of its query ids are not the dataset's (their
    results are left out). The audited queries a run has no results for are said after the runs
    (:func:`~pairmeasures.audit.runs.run_systems`)."""
    import warnings

    from ..io.runfiles import examples
    from ..pipelines.stages.run_file import path_of, read
    from ..sideinfo import InputWarning

    known = set(dataset_queries)
    for name, system in plan.systems.items():
        first = system.stages[0]
        if first.name != "run":
            continue
        rows = read(first)
        who = f"system {name!r} ({path_of(first)})" if name == system.spec else \
            f"system {name!r} ({system.spec}, file {path_of(first)})"
        ranked = set(rows["query_id"])
        foreign = ranked - known
        if foreign == ranked:
            raise ValueError(f"{who}: none of its {len(ranked)} query ids is a query of {profile.name} (e.g. "
                             f"{examples(foreign)}; the dataset's: {examples(known)}): run files must rank this dataset's "
                             "queries, with its query ids")
        if not ranked & set(profile.queries):
            raise ValueError(f"{who}: it has no results for any of the {len(profile.queries)} queries audited (e.g. "
                             f"{examples(profile.queries)}); audit queries it ranks (--queries)")
        missing = profile.corpus.missing(rows["doc_id"])
        if missing:
            raise ValueError(f"{who}: it ranks {len(missing)} documents that are not in {profile.name}, e.g. "
                             f"{examples(missing)}: run files must rank this dataset's documents")
        if foreign:
            warnings.warn(f"{who}: {len(foreign)} of its {len(ranked)} query ids are not queries of {profile.name} "
                          f"(e.g. {examples(foreign)}); their results are left out", InputWarning, stacklevel=2)


def default_measures(profile: "Profile") -> list[str]:
    """nDCG@1, nDCG@10, R@100 and Duo@10; rND/rKL/rRD@10 and the group-exposure EXP/NDKL/ARP@10 with gold labels;
    TExFAIR/NFaiRR/RaB@10 with a term list. EXPU is left out: the audit considers the labelled documents, which on
    these benchmarks are exactly the relevant ones, so EXPU would repeat EXP. A dataset whose spec names the measures
    its papers report (the MS MARCO gender sets: :attr:`~pairmeasures.datasets.DatasetSpec.measures`) takes those."""
    papers = profile.corpus.measures
    if papers:
        return list(papers)
    measures = ["nDCG@1", "nDCG@10", "R@100", "Duo@10"]
    if profile.labels is not None:
        measures += ["rND@10", "rKL@10", "rRD@10", "EXP@10", "NDKL@10", "ARP@10"]
    if profile.terms:
        measures += ["TExFAIR@10", "NFaiRR@10", "RaB@10"]
    return measures


def direction(measure) -> str:
    """Which way is fair (:data:`pairmeasures.measures.DIRECTIONS`), ``higher-better`` for relevance measures."""
    from ..measures import PairMeasure

    return measure.direction() if isinstance(measure, PairMeasure) else "higher-better"


def label(measure, way: str) -> str:
    """A leaderboard column: the measure and its direction's arrow."""
    return f"{measure} {ARROWS.get(way, '')}".strip()


@dataclass
class Measures:
    """The measures of an audit: ``shown`` (the measure's string -> the measure, evaluated as it says) and
    ``directions`` (shown -> direction), and what their side inputs need (``needs``: ``group``, ``polarity``,
    ``text``...)."""

    shown: dict
    directions: dict
    needs: frozenset

    @property
    def evaluated(self) -> list:
        """The measures as strings (a cache key)."""
        return [str(m) for m in self.shown.values()]

    def deepest_cutoff(self, default: int = 10) -> int:
        """The deepest cut-off of the bias measures (``default`` when none has one): the depth whose ties count."""
        from ..measures import PairMeasure

        cutoffs = [m.param("cutoff") for m in self.shown.values() if isinstance(m, PairMeasure)
                   and "cutoff" in m.SUPPORTED_PARAMS and m.param("cutoff") is not None]
        return max(cutoffs, default=default)

    def bias_families(self) -> dict:
        """shown family -> the family's measure object (the measure without its cut-off: ``Duo@10`` -> ``Duo``,
        ``Duo(step=2)@10`` -> ``Duo(step=2)``), of the bias measures; the cut-off curves call it with each k."""
        families = {}
        for shown, way in self.directions.items():
            if way != "higher-better":
                measure = self.shown[shown]
                families[shown.rsplit("@", 1)[0]] = type(measure)(**{k: v for k, v in measure.params.items()
                                                                     if k != "cutoff"})
        return families


def choose_measures(profile: "Profile", measures: Optional[Sequence[str]]) -> Measures:
    """The audit's measures (``measures``, else :func:`default_measures`), checked against the profile."""
    from ..measures import PairMeasure
    from ..measures.parsing import parse_measures, split_measure_texts
    from ..measures.provider import provider

    chosen = parse_measures(split_measure_texts(measures) if measures else default_measures(profile))
    shown = {str(m): m for m in chosen}
    needs = frozenset(provider.run_inputs([m for m in shown.values() if isinstance(m, PairMeasure)]))
    if "group" in needs and profile.labels is None:
        raise ValueError(f"{profile.name} has no gold labels (labels.tsv), so the group measures have no 'group'; "
                         "drop the group measures (rND/rKL/rRD, EXP, NDKL, ...) from --measures or add labels.tsv")
    return Measures(shown, {s: direction(m) for s, m in shown.items()}, needs)
