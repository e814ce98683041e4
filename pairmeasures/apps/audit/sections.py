"""The sections of an audit's ``report.html``: the leaderboard, DUO's polarity axes, relevance against bias, bias by
cut-off, the breakdown, DuoGreedy vs MMR, the statistics and the provenance (:func:`write_report`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from ...analysis.manifest import PathRecord
    from ...audit.result import AuditResult, AxisEvidence
    from ..report import Section

__all__ = ["write_report", "axes_section"]


def write_report(work: Path, result: "AuditResult", images: list, paths: "PathRecord") -> None:
    """``report.html`` of ``result`` in ``work`` (``images``: the plots' captions and paths; ``paths``: how a folder
    dataset is written)."""
    from ...audit.axes import AXIS_COLUMN
    from ..report import Section
    from ..report import write_report as write_html
    from . import report_tables as views
    from .naming import dataset_record, file_name

    def named(prefix: str) -> list:
        return [image for image in images if image[1].name.startswith(prefix)]

    results, profile, statistics = result, result.provenance.profile, result.statistics
    trade, baseline, correction = result.tradeoff, statistics.baseline, statistics.correction
    shown, directions, breakdown = result.measures.shown, result.measures.directions, statistics.breakdown
    title = views.dataset_title(profile)
    systems = list(results.leaderboard["system"])
    differ = [m for m in shown if not views.same_queries(results.summary, m)]
    sections = [
        Section("Leaderboard", "Each cell is a system's mean over the queries measured. A bias measure leaves out "
                "queries with nothing "
                "to measure: the small grey number beside its mean is n, the queries it measured. "
                f"{views.MARK} marks a mean that differs from {baseline}'s (paired t-test over the queries every "
                f"system measured, {correction}-corrected, α = 0.05). Bold marks the best mean of a column in its "
                "direction (↑ higher, ↓ lower, ↕ nearest 0) where every system measured the same queries"
                + (f"; where they did not ({', '.join(differ)}), means over different queries are not compared, and "
                   "the bold is in the table of means over the queries every system measured" if differ else "")
                + ". Hover over a mean for its 95% interval and p-values; every number is in the Statistics below "
                f"and in summary.csv.\n\n{results.ties_text()}".strip(),
                tables=views.leaderboard_tables(results.leaderboard.drop(columns=[AXIS_COLUMN], errors="ignore"),
                                                results.summary, shown, directions, correction)),
    ]
    sections += axes_section(results.axes)  # after the leaderboard: how good DUO's polarity axes are
    if named("relevance_vs_bias"):
        sections.append(Section("Relevance against bias", "One panel per bias measure: further right is more relevant, "
                                "and the arrow in a panel's title says which way is fairer.",
                                images=named("relevance_vs_bias")))
    if named("bias_by_cutoff"):
        sections.append(Section("Bias by cut-off", "Each bias measure of the leaderboard at every cut-off k from 1 to "
                                "50: how the bias of the first k documents changes further down the ranking.",
                                images=named("bias_by_cutoff")))
    if breakdown is not None:
        by = breakdown.field
        relevance = next((m for m in ("nDCG@10", *shown) if directions.get(m) == "higher-better"), None)
        sections.append(Section(
            f"By {by}", "\n\n".join([f"Means by the query field {by!r}, with the queries measured (n) "
                                     f"in each cell; by_{by}.csv has every measure.", *breakdown.small_cells]),
            tables=[] if relevance is None else [(f"{relevance} by {by} (best of a row in bold)",
                                                  views.breakdown_table(breakdown.cells, relevance, "higher-better"))],
            images=named(f"by_{file_name(by)}_")))
    if trade is not None:
        direction = directions.get(trade.bias, "lower-fairer")
        sections.append(Section(
            "DuoGreedy vs MMR", f"Each method re-ranks the top k of the base run (the spec before its duogreedy stage) "
            f"at every Lambda (λ = 1 keeps the base order): {trade.relevance} against {trade.bias}, 95% paired "
            "bootstrap intervals. Equal cost, interpolated between the Lambdas measured:\n\n"
            + views.equal_cost_text(trade, direction),
            tables=[("the trade-off curve", views.curve_table(trade.curve, trade.relevance, trade.bias))],
            images=named("tradeoff")))
    sections.append(Section("Statistics", f"95% paired bootstrap intervals ({statistics.resamples} resamples, seed "
                            f"{statistics.seed}) of each mean and of its difference to {baseline}; p-values of "
                            f"pt.Experiment's paired t-test against {baseline}, uncorrected and {correction}-corrected, "
                            f"over the queries every system measured ({views.MARK}: significant at α = 0.05 after the "
                            "correction).\n\n" + views.mixed_signals_text(results.summary, baseline, correction),
                            tables=[(f"every measure and system (p: the t-test's, uncorrected; p {correction}-corrected: "
                                     f"after the correction, {views.MARK} at most 0.05)",
                                     views.statistics_table(results.summary, correction))]))
    if profile.corpus.is_folder:
        where = dataset_record(profile, paths)[1]
        kind = "a folder, " + ("its absolute path" if paths.describe() == "absolute" else
                               "relative to this report's folder")
    else:
        where, kind = profile.source, "a pairmeasures dataset id"
    sections.append(Section("Provenance", f"Dataset {where} ({kind}), document field {profile.text!r}. "
                            "manifest.json beside this report records the command, the versions of what ran, the "
                            "sha256 of every input file (the dataset's and run files), seeds, timings per step and "
                            "cache hits."))
    write_html(work / "report.html", f"pairmeasures audit: {title}", sections,
                 subtitle=f"{len(profile.queries)} queries · {len(systems)} systems · baseline {baseline}")


def axes_section(found: Optional["AxisEvidence"]) -> list["Section"]:
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
