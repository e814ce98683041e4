"""The evidence of DUO's polarity axes in an audit: how well the per-query axes the audit measures DUO with separate
the dataset's labelled perspectives, on documents held out of each axis's fit
(:func:`pairmeasures.analysis.polarity.axis_evidence`, :data:`~pairmeasures.analysis.polarity.FOLDS` folds, the
audit's ``--seed`` and ``--resamples``). Kept in the audit's evaluation cache; shown as a leaderboard column next to
DUO's, a report section, ``leaderboard.json``'s ``polarity_axes`` and the manifest's; one warning line when an
interval reaches chance. Where the axes are fitted on each run's candidates (no two labelled perspectives), DUO's
axis is unvalidated and every one of those places says so."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:
    import pandas as pd

    from ...datasets.profile import PolarityChoice, Profile
    from ..report import Section

__all__ = ["AXIS_COLUMN", "EVIDENCE_FORMAT", "evidence", "add_column", "report_section", "manifest_entry"]

#: The leaderboard column (after DUO's) with the held-out consistent accuracy of the axes and its interval.
AXIS_COLUMN = "Duo axis: held-out acc."

#: Version of the cached evidence; a change makes earlier ones unused.
EVIDENCE_FORMAT = 1


def evidence(polarity: "PolarityChoice", profile: "Profile", seed: int, resamples: int,
             memo: Callable[[str, Any, Callable[[], Any]], Any]) -> dict:
    """The held-out evidence of ``polarity``'s axes on ``profile``'s labels (kept through ``memo`` by the fit
    documents, labels, model, folds, seed and resamples), with the reason in words where there is none; its warning,
    if any, issued as an :class:`~pairmeasures.analysis.polarity.AxisWarning` (on warm audits too)."""
    from ...analysis.polarity import FOLDS, AxisWarning, axis_evidence

    model = polarity.model
    found = memo("axis evidence", [EVIDENCE_FORMAT, polarity.key(), model.embedder.key, FOLDS, seed, resamples],
                 lambda: axis_evidence(model, folds=FOLDS, seed=seed, resamples=resamples, name=profile.name,
                                       warn=False))
    if model.fit is None:
        groups = sorted(set(profile.labels["group"])) if profile.labels is not None else []
        labels = (f"its labels are {len(groups)} groups ({', '.join(groups)}), not two perspectives" if groups
                  else "it has no labelled documents")
        found = {**found, "reason": f"{labels}: DUO's axes are fitted on each run's candidates, and nothing checks "
                                    "that they follow the perspectives"}
    if found["warning"]:
        warnings.warn(found["warning"], AxisWarning, stacklevel=2)
    return found


def _interval(found: dict, measure: str) -> str:
    value = found[measure]
    return f"{value['value']:.3f} [{value['low']:.3f}, {value['high']:.3f}]"


def add_column(leaderboard: "pd.DataFrame", found: dict, shown: dict) -> None:
    """:data:`AXIS_COLUMN` into ``leaderboard`` after its last DUO column (none without one): the held-out consistent
    accuracy with its interval, "not above chance" where an interval reaches 0.5, or "unvalidated"."""
    duo = [m for m in shown if m.split("(")[0].split("@")[0] == "Duo"]
    after = [i for i, c in enumerate(leaderboard.columns) if any(c == m or c.startswith(f"{m} ") for m in duo)]
    if not after:
        return
    text = (_interval(found, "consistent_accuracy") + (", not above chance" if found["reaches_chance"] else "")
            if found["validated"] else "unvalidated")
    leaderboard.insert(after[-1] + 1, AXIS_COLUMN, [text] * len(leaderboard))


def report_section(found: Optional[dict]) -> list["Section"]:
    """The report's section on DUO's axes ([] when the audit read no polarity)."""
    import pandas as pd

    from ..report import Section

    heading = "How good are DUO's polarity axes"
    if found is None:
        return []
    if not found["validated"]:
        return [Section(heading, f"DUO's axis is unvalidated: {found['reason']}. DUO measures the spread of documents "
                                 "along each query's axis; without labelled perspectives, no one has checked that the "
                                 "axis separates viewpoints rather than, say, sub-topics.")]
    skipped = "; ".join(f"{n} with {why}" for why, n in found["skipped_queries"].items())
    hindsight = found["in_hindsight"]
    text = (f"How well the per-query axes DUO is measured on separate the labelled perspectives ({found['positive']!r} "
            f"against the other label), on documents held out of each axis's fit: {found['scheme']}. "
            f"{found['queries']} queries, {found['documents']} documents"
            + (f" (not measured: {skipped})" if skipped else "") + ". "
            f"{found['confidence']:.0%} percentile bootstrap intervals over queries ({found['resamples']} resamples); "
            f"{found['chance']} is chance. Accuracy is PAIR's reference measure (the better side per perspective), "
            "consistent accuracy allows one side per query (a degenerate axis cannot game it).\n\n"
            f"Counted as validate-polarity counts them (signs chosen on the scored documents, at least 0.5 whatever "
            f"the labels), the same held-out scores give accuracy {hindsight['accuracy']:.3f} and consistent "
            f"accuracy {hindsight['consistent_accuracy']:.3f}.")
    if found["warning"]:
        text += f"\n\nWarning: {found['warning']}."
    table = pd.DataFrame([{"measure": m.replace("_", " "), **found[m]} for m in ("accuracy", "consistent_accuracy")])
    worst = pd.DataFrame(found["per_query"]).sort_values(["consistent_accuracy", "query_id"]).head(10)
    return [Section(heading, text, tables=[("held-out accuracies", table),
                                           ("the queries with the lowest held-out consistent accuracy",
                                            worst[["query_id", "accuracy", "consistent_accuracy", "documents"]])])]


def manifest_entry(found: Optional[dict]) -> Optional[dict]:
    """The evidence without its per-query records, for the manifest."""
    return None if found is None else {k: v for k, v in found.items() if k != "per_query"}
