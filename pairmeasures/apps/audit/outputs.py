"""An audit's outputs: plots (PNGs, cached by the content they draw), leaderboard.json and .md, the CSV tables,
report.html and manifest.json, written into a new folder that replaces ``--out`` only when all of it is written
(:meth:`pairmeasures._atomic.FolderClaim.written`)."""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Optional

from ..._atomic import Earlier, FolderClaim, FolderOutput, output_folder

if TYPE_CHECKING:
    import pandas as pd

    from ...analysis.manifest import Manifest, PathRecord
    from ...datasets.profile import Profile

__all__ = ["MANIFEST", "OUTPUT", "Results", "claim_out", "json_safe", "file_name", "plots", "write_outputs",
           "manifest_record", "input_files", "dataset_record"]

#: The audit's record of what it did, in every audit folder.
MANIFEST = "manifest.json"
#: What an audit folder is, for the replace policy (:mod:`pairmeasures._atomic`): audits written before the marker
#: are recognised by a manifest.json with the keys every audit's manifest has.
OUTPUT = FolderOutput("pairmeasures audit", "audit", "pairmeasures-audit",
                      Earlier(MANIFEST, keys=("command", "versions", "dataset", "systems", "measures", "timings_s")))


def claim_out(out: Path, force: bool) -> ContextManager[FolderClaim]:
    """Claim ``--out`` before any work, for the whole audit (:func:`pairmeasures._atomic.output_folder`): a link, a
    folder the audit did not write, an earlier audit without ``--force``, a folder another audit is writing or one
    whose parent does not exist is refused."""
    if not out.expanduser().absolute().parent.is_dir():
        raise ValueError(f"--out {str(out)!r}: its parent folder does not exist")
    return output_folder(out, OUTPUT, force=force)


def json_safe(value):
    """``value`` with NaN as None, in dicts and lists too (JSON has no NaN)."""
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def file_name(text: str) -> str:
    """``text`` as a file name: letters and digits kept, the rest ``_``."""
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")


@dataclass
class Results:
    """What an audit computed, for its outputs: the leaderboard, the statistics ``summary``, the per-query values,
    the breakdown ``cells`` (with ``small`` cell warnings) by ``by``, the cut-off ``curves``, the ``trade``-off,
    IBBR's ``disparity``, the measures ``shown`` (shown -> evaluated) with their ``directions``, the held-out evidence
    of DUO's polarity ``axes`` (:mod:`.axes`; None when the audit read no polarity)."""

    leaderboard: "pd.DataFrame"
    summary: "pd.DataFrame"
    per_query: "pd.DataFrame"
    shown: dict
    directions: dict
    cells: Optional["pd.DataFrame"] = None
    small: tuple = ()
    by: Optional[str] = None
    curves: Optional["pd.DataFrame"] = None
    trade: Optional[dict] = None
    disparity: Optional[dict] = None
    ties: Optional[dict] = None
    axes: Optional[dict] = None

    def ties_text(self) -> str:
        """The tie counts in a sentence, for the report."""
        if not self.ties:
            return ""
        k = next(iter(self.ties.values()))["k"]
        counted = "; ".join(f"{s} {t['with_ties']} of {t['queries']}" for s, t in self.ties.items())
        return (f"Documents of equal score in the top {k} (or across the cut at {k}): {counted} queries. The bias "
                "measures read each system's own order of them (ties='system'); trec_eval's order (by document id) "
                "would differ there.")


def _png(work: Path, name: str, caption: str, draw: str, arguments: tuple, options: dict, memo) -> tuple:
    """``plots.<draw>(*arguments, **options)`` written to ``work/name``; the PNG's bytes are kept through ``memo`` by
    the content of the arguments, so a warm audit does not import matplotlib."""
    from ...sideinfo.memo import value_key

    def render() -> bytes:
        from .. import plots

        with tempfile.TemporaryDirectory() as folder:
            plots.save_png(getattr(plots, draw)(*arguments, **options), Path(folder) / name)
            return (Path(folder) / name).read_bytes()

    from ..plots import FIGURES_FORMAT  # the module is light until a figure is drawn

    (work / name).write_bytes(memo(f"png {name}", [draw, FIGURES_FORMAT, value_key((arguments, options))], render))
    return caption, work / name


def plots(work: Path, results: Results, memo) -> list:
    """The PNGs (relevance against every bias measure as small multiples, breakdown heatmaps, bias by cut-off,
    DuoGreedy vs MMR trade-off); their captions and paths."""
    images = []
    shown, directions = results.shown, results.directions
    relevance = "nDCG@10" if "nDCG@10" in shown else next((m for m in shown if directions[m] == "higher-better"), None)
    biases = [m for m in shown if directions[m] != "higher-better"]
    if relevance is not None and biases:
        images.append(_png(work, "relevance_vs_bias.png", f"{relevance} against each bias measure, one panel per "
                           "measure: each system's means with 95% intervals", "relevance_vs_biases",
                           (results.summary, relevance, biases), {}, memo))
    if results.cells is not None:
        field_name = results.cells["field"].iloc[0]
        for bias in biases:
            images.append(_png(work, f"by_{file_name(field_name)}_{file_name(bias)}.png", f"{bias} by {field_name}",
                               "breakdown_heatmap", (results.cells, bias), {"direction": directions[bias]}, memo))
    if results.curves is not None:
        images.append(_png(work, "bias_by_cutoff.png", "each bias measure's mean against the cut-off k = 1..50",
                           "bias_by_cutoff", (results.curves,), {"directions": _family_directions(results)}, memo))
    if results.trade is not None:
        for i, (name, curve) in enumerate(results.trade["curve"].groupby("system", sort=False)):
            images.append(_png(work, "tradeoff.png" if i == 0 else f"tradeoff_{file_name(name)}.png",
                               f"{name}: DuoGreedy vs MMR on {curve['base'].iloc[0]} as Lambda varies", "tradeoff",
                               (curve.drop(columns=["system", "base", "k"]), results.trade["relevance"],
                                results.trade["bias"]), {"direction": directions.get(results.trade["bias"],
                                                                                     "lower-fairer")}, memo))
    return images


def _family_directions(results: Results) -> dict:
    """Each bias family's direction (``Duo`` -> ``lower-fairer``), for the cut-off panels' arrows."""
    return {m.rsplit("@", 1)[0]: way for m, way in results.directions.items() if way != "higher-better"}


def dataset_record(profile: "Profile", paths: "PathRecord") -> tuple:
    """``(id, source)`` of the dataset as the audit's files record it: a dataset id as it is, a folder as ``paths``
    writes it (relative to the output folder, unless ``--absolute-paths``)."""
    if profile.corpus.is_folder:
        return paths(profile.name), paths(profile.source)
    return profile.name, profile.source


def _model_record(model: Any, paths: "PathRecord") -> Any:
    """A model as given (a name), or a model folder that exists as ``paths`` writes it."""
    return paths(str(model)) if model is not None and Path(str(model)).expanduser().exists() else model


def _leaderboard_document(results: Results, profile: "Profile", specs: dict, statistics: dict,
                          paths: "PathRecord") -> dict:
    from .tradeoff import tradeoff_document

    summary = results.summary
    return {
        "dataset": dataset_record(profile, paths)[0],
        "systems": {s: {m: json_safe(float(v)) for m, v in zip(part["measure"], part["mean"])}
                    for s, part in summary.groupby("system", sort=False)},
        "measures": {m: {"direction": results.directions[m], "evaluated": str(results.shown[m]),
                         "measured": {s: int(n) for s, n in zip(part["system"], part["n"])},
                         "excluded": {s: int(n) for s, n in zip(part["system"], part["excluded"])}}
                     for m, part in summary.groupby("measure", sort=False)},
        "baseline": statistics["baseline"], "correction": statistics["correction"], "queries": len(profile.queries),
        "statistics": json_safe(summary.drop(columns=["direction"]).to_dict(orient="records")),
        "by": None if results.cells is None else {"field": results.by, "min_cell": statistics["min_cell"],
                                                  "small_cells": list(results.small),
                                                  "cells": json_safe(results.cells.to_dict(orient="records"))},
        "specs": specs,
        "delta_a_prf": json_safe(results.disparity),
        "ties": results.ties,
        "tradeoff": None if results.trade is None else tradeoff_document(results.trade),
        "polarity_axes": json_safe(results.axes),
    }


def _report(work: Path, results: Results, profile: "Profile", statistics: dict, images: list,
            paths: "PathRecord") -> None:
    from ..report import Section, write_report
    from . import report_tables as views
    from .axes import AXIS_COLUMN, report_section

    def named(prefix: str) -> list:
        return [image for image in images if image[1].name.startswith(prefix)]

    trade, baseline, correction = results.trade, statistics["baseline"], statistics["correction"]
    title = views.dataset_title(profile)
    systems = list(results.leaderboard["system"])
    differ = [m for m in results.shown if not views.same_queries(results.summary, m)]
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
                                                results.summary, results.shown,
                                                results.directions, correction)),
    ]
    sections += report_section(results.axes)  # after the leaderboard: how good DUO's polarity axes are
    if named("relevance_vs_bias"):
        sections.append(Section("Relevance against bias", "One panel per bias measure: further right is more relevant, "
                                "and the arrow in a panel's title says which way is fairer.",
                                images=named("relevance_vs_bias")))
    if named("bias_by_cutoff"):
        sections.append(Section("Bias by cut-off", "Each bias measure of the leaderboard at every cut-off k from 1 to "
                                "50: how the bias of the first k documents changes further down the ranking.",
                                images=named("bias_by_cutoff")))
    if results.cells is not None:
        relevance = next((m for m in ("nDCG@10", *results.shown) if results.directions.get(m) == "higher-better"), None)
        sections.append(Section(
            f"By {results.by}", "\n\n".join([f"Means by the query field {results.by!r}, with the queries measured (n) "
                                             f"in each cell; by_{results.by}.csv has every measure.", *results.small]),
            tables=[] if relevance is None else [(f"{relevance} by {results.by} (best of a row in bold)",
                                                  views.breakdown_table(results.cells, relevance, "higher-better"))],
            images=named(f"by_{file_name(results.by or '')}_")))
    if trade is not None:
        direction = results.directions.get(trade["bias"], "lower-fairer")
        sections.append(Section(
            "DuoGreedy vs MMR", f"Each method re-ranks the top k of the base run (the spec before its duogreedy stage) "
            f"at every Lambda (λ = 1 keeps the base order): {trade['relevance']} against {trade['bias']}, 95% paired "
            "bootstrap intervals. Equal cost, interpolated between the Lambdas measured:\n\n"
            + views.equal_cost_text(trade, direction),
            tables=[("the trade-off curve", views.curve_table(trade["curve"], trade["relevance"], trade["bias"]))],
            images=named("tradeoff")))
    sections.append(Section("Statistics", f"95% paired bootstrap intervals ({statistics['resamples']} resamples, seed "
                            f"{statistics['seed']}) of each mean and of its difference to {baseline}; p-values of "
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
    write_report(work / "report.html", f"pairmeasures audit: {title}", sections,
                 subtitle=f"{len(profile.queries)} queries · {len(systems)} systems · baseline {baseline}")


def write_outputs(out: FolderClaim, results: Results, profile: "Profile", specs: dict, statistics: dict, draw: bool,
                  manifest: "Manifest", record: dict, memo, finish: Callable[[], None]) -> None:
    """Every output, into a new folder that replaces the claimed ``out`` when all of it is written (``statistics``: baseline,
    correction, resamples, seed, min_cell; ``record``: the manifest's entries; ``draw``: write the plots;
    ``finish()``: called just before the manifest is written, e.g. to record the total time)."""
    from ..tables import render

    with out.written() as work:
        with manifest.step("plots"):
            images = plots(work, results, memo) if draw else []
        with manifest.step("write"):
            document = _leaderboard_document(results, profile, specs, statistics, manifest.paths)
            (work / "leaderboard.json").write_text(json.dumps(document, indent=2, allow_nan=False) + "\n")
            results.per_query.to_csv(work / "per_query.csv", index=False)
            results.summary.to_csv(work / "summary.csv", index=False)
            if results.cells is not None:
                results.cells.to_csv(work / f"by_{results.by}.csv", index=False)
            if results.trade is not None:
                results.trade["curve"].to_csv(work / "tradeoff.csv", index=False)
            (work / "leaderboard.md").write_text(render(results.leaderboard, "markdown"))
            _report(work, results, profile, statistics, images, manifest.paths)
            manifest.record.update(record)
            finish()
            (work / MANIFEST).write_text(json.dumps(json_safe(manifest.as_dict()), indent=2) + "\n")


def input_files(system) -> dict:
    """``{path as written: sha256}`` of the files a system's stages read (its ``run:PATH`` files)."""
    from ...pipelines.stages.run_file import path_of
    from ...sideinfo.memo import sha256_file

    return {str(stage.args[0]): sha256_file(path_of(stage)) for stage in system.stages
            if stage.name == "run" and path_of(stage).is_file()}


def manifest_record(profile: "Profile", specs: dict, systems: dict, results: Results, polarity_source: Any,
                    embedder, statistics: dict, context: dict, tradeoff: Optional[dict], paths: "PathRecord") -> dict:
    """The manifest's entries on what was audited and how (``systems``: name -> its parsed
    :class:`~pairmeasures.pipelines.specs.System`; the manifest adds versions, timings and cache hits); a folder
    dataset and a model folder as ``paths`` writes them."""
    from ...sideinfo.termlists import Lexicon

    name, source = dataset_record(profile, paths)
    context = {**context, "model": _model_record(context.get("model"), paths)}
    return {
        "dataset": {"id": name, "source": source, "text": profile.text, "files_sha256": profile.files,
                    "queries": len(profile.queries), "labelled": profile.labels is not None},
        "systems": {n: {"spec": s, "canonical": systems[n].canonical, "identity": systems[n].identity(),
                        "files_sha256": input_files(systems[n]), "ties": (results.ties or {}).get(n)}
                    for n, s in specs.items()},
        "measures": {m: {"evaluated": str(e), "direction": results.directions[m],
                         "parameters": {k: json_safe(v) if isinstance(v, (int, float, str, bool)) or v is None
                                        else repr(v) for k, v in e.params.items()}} for m, e in results.shown.items()},
        "side_columns": {"text": f"document field {profile.text!r} of the dataset",
                         "group": "gold labels (labels.tsv)" if profile.labels is not None else None,
                         "polarity": polarity_source},
        "embedding_model": None if embedder is None else {"name": _model_record(embedder.model_name, paths),
                                                          "key": embedder.key},
        "term_list_sha256": Lexicon.load("gender").fingerprint if profile.terms else None,
        "statistics": statistics,
        "context": context,
        "tradeoff": tradeoff,
    }
