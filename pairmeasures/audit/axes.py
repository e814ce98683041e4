"""The evidence of DUO's polarity axes in an audit: how well the per-query axes the audit measures DUO with separate
the dataset's labelled perspectives, on documents held out of each axis's fit
(:func:`pairmeasures.analysis.polarity.axis_evidence`, :data:`~pairmeasures.analysis.polarity.FOLDS` folds, the
audit's ``--seed`` and ``--resamples``). Kept in the audit's evaluation cache; shown as a leaderboard column next to
DUO's, a report section, ``leaderboard.json``'s ``polarity_axes`` and the manifest's; one warning line when an
interval reaches chance. Where the axes are fitted on each run's candidates (no two labelled perspectives), DUO's
axis is unvalidated and every one of those places says so."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import pandas as pd

    from ..datasets.profile import PolarityChoice, Profile
    from .result import AxisEvidence

__all__ = ["AXIS_COLUMN", "EVIDENCE_FORMAT", "evidence", "add_column"]

#: The leaderboard column (after DUO's) with the held-out consistent accuracy of the axes and its interval.
AXIS_COLUMN = "Duo axis: held-out acc."

#: Version of the cached evidence; a change makes earlier ones unused.
EVIDENCE_FORMAT = 1


def evidence(polarity: "PolarityChoice", profile: "Profile", seed: int, resamples: int,
             memo: Callable[[str, Any, Callable[[], Any]], Any]) -> "AxisEvidence":
    """The held-out evidence of ``polarity``'s axes on ``profile``'s labels (kept through ``memo`` by the fit
    documents, labels, model, folds, seed and resamples), with the reason in words where there is none; its warning,
    if any, issued as an :class:`~pairmeasures.analysis.polarity.AxisWarning` (on warm audits too)."""
    from ..analysis.polarity import FOLDS, AxisWarning, axis_evidence
    from .result import AxisEvidence

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
    return AxisEvidence.from_record(found)


def _interval(found: "AxisEvidence", measure: str) -> str:
    value = found[measure]
    return f"{value['value']:.3f} [{value['low']:.3f}, {value['high']:.3f}]"


def add_column(leaderboard: "pd.DataFrame", found: "AxisEvidence", shown: dict) -> None:
    """:data:`AXIS_COLUMN` into ``leaderboard`` after its last DUO column (none without one): the held-out consistent
    accuracy with its interval, "not above chance" where an interval reaches 0.5, or "unvalidated"."""
    duo = [m for m in shown if m.split("(")[0].split("@")[0] == "Duo"]
    after = [i for i, c in enumerate(leaderboard.columns) if any(c == m or c.startswith(f"{m} ") for m in duo)]
    if not after:
        return
    text = (_interval(found, "consistent_accuracy") + (", not above chance" if found["reaches_chance"] else "")
            if found["validated"] else "unvalidated")
    leaderboard.insert(after[-1] + 1, AXIS_COLUMN, [text] * len(leaderboard))
