"""An audit's outputs: plots (PNGs, cached by the content they draw), leaderboard.json and .md, the CSV tables,
report.html and manifest.json, written from an :class:`~pairmeasures.audit.result.AuditResult` into a new folder that
replaces ``--out`` only when all of it is written (:meth:`pairmeasures._atomic.FolderClaim.written`)."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ContextManager

from ..._atomic import Earlier, FolderClaim, FolderOutput, output_folder
from ...audit.jsonsafe import json_safe
from ...audit.tradeoff import EQUAL_COST_DROPS
from .naming import dataset_record, file_name

if TYPE_CHECKING:
    from ...analysis.manifest import PathRecord
    from ...audit.result import AuditResult, Tradeoff

__all__ = ["MANIFEST", "OUTPUT", "claim_out", "file_name", "plots", "write_outputs", "manifest_record", "input_files",
           "dataset_record", "leaderboard_document", "tradeoff_document"]

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


def _png(work: Path, name: str, caption: str, draw: str, arguments: tuple, options: dict, memo) -> tuple:
    """``plots.<draw>(*arguments, **options)`` written to ``work/name``; the PNG's bytes are kept through ``memo`` by
    the content of the arguments, so a warm audit does not import matplotlib."""
    from ...io.memo import value_key

    def render() -> bytes:
        from .. import plots

        with tempfile.TemporaryDirectory() as folder:
            plots.save_png(getattr(plots, draw)(*arguments, **options), Path(folder) / name)
            return (Path(folder) / name).read_bytes()

    from ..plots import FIGURES_FORMAT  # the module is light until a figure is drawn

    (work / name).write_bytes(memo(f"png {name}", [draw, FIGURES_FORMAT, value_key((arguments, options))], render))
    return caption, work / name


def plots(work: Path, results: "AuditResult", memo) -> list:
    """The PNGs (relevance against every bias measure as small multiples, breakdown heatmaps, bias by cut-off,
    DuoGreedy vs MMR trade-off); their captions and paths."""
    images = []
    shown, directions = results.measures.shown, results.measures.directions
    breakdown, trade = results.statistics.breakdown, results.tradeoff
    relevance = "nDCG@10" if "nDCG@10" in shown else next((m for m in shown if directions[m] == "higher-better"), None)
    biases = [m for m in shown if directions[m] != "higher-better"]
    if relevance is not None and biases:
        images.append(_png(work, "relevance_vs_bias.png", f"{relevance} against each bias measure, one panel per "
                           "measure: each system's means with 95% intervals", "relevance_vs_biases",
                           (results.summary, relevance, biases), {}, memo))
    if breakdown is not None:
        field_name = breakdown.cells["field"].iloc[0]
        for bias in biases:
            images.append(_png(work, f"by_{file_name(field_name)}_{file_name(bias)}.png", f"{bias} by {field_name}",
                               "breakdown_heatmap", (breakdown.cells, bias), {"direction": directions[bias]}, memo))
    if results.curves is not None:
        images.append(_png(work, "bias_by_cutoff.png", "each bias measure's mean against the cut-off k = 1..50",
                           "bias_by_cutoff", (results.curves,), {"directions": _family_directions(results)}, memo))
    if trade is not None:
        for i, (name, curve) in enumerate(trade.curve.groupby("system", sort=False)):
            images.append(_png(work, "tradeoff.png" if i == 0 else f"tradeoff_{file_name(name)}.png",
                               f"{name}: DuoGreedy vs MMR on {curve['base'].iloc[0]} as Lambda varies", "tradeoff",
                               (curve.drop(columns=["system", "base", "k"]), trade.relevance, trade.bias),
                               {"direction": directions.get(trade.bias, "lower-fairer")}, memo))
    return images


def _family_directions(results: "AuditResult") -> dict:
    """Each bias family's direction (``Duo`` -> ``lower-fairer``), for the cut-off panels' arrows."""
    return {m.rsplit("@", 1)[0]: way for m, way in results.measures.directions.items() if way != "higher-better"}


def _model_record(model: Any, paths: "PathRecord") -> Any:
    """A model as given (a name), or a model folder that exists as ``paths`` writes it."""
    return paths(str(model)) if model is not None and Path(str(model)).expanduser().exists() else model


def leaderboard_document(results: "AuditResult", paths: "PathRecord") -> dict:
    """``leaderboard.json``: the systems' means, the measures with their directions and counts, the statistics, the
    breakdown, the specs, ΔA-PRF, ties, the trade-off and the evidence of DUO's axes."""
    summary, statistics, breakdown = results.summary, results.statistics, results.statistics.breakdown
    profile, directions, shown = results.provenance.profile, results.measures.directions, results.measures.shown
    return {
        "dataset": dataset_record(profile, paths)[0],
        "systems": {s: {m: json_safe(float(v)) for m, v in zip(part["measure"], part["mean"])}
                    for s, part in summary.groupby("system", sort=False)},
        "measures": {m: {"direction": directions[m], "evaluated": str(shown[m]),
                         "measured": {s: int(n) for s, n in zip(part["system"], part["n"])},
                         "excluded": {s: int(n) for s, n in zip(part["system"], part["excluded"])}}
                     for m, part in summary.groupby("measure", sort=False)},
        "baseline": statistics.baseline, "correction": statistics.correction, "queries": len(profile.queries),
        "statistics": json_safe(summary.drop(columns=["direction"]).to_dict(orient="records")),
        "by": None if breakdown is None else {"field": breakdown.field, "min_cell": breakdown.min_cell,
                                              "small_cells": list(breakdown.small_cells),
                                              "cells": json_safe(breakdown.cells.to_dict(orient="records"))},
        "specs": _specs(results),
        "delta_a_prf": None if results.disparity is None else json_safe({s: d.as_record()
                                                                         for s, d in results.disparity.items()}),
        "ties": {s: t.as_record() for s, t in results.ties.items()},
        "tradeoff": None if results.tradeoff is None else tradeoff_document(results.tradeoff),
        "polarity_axes": None if results.axes is None else json_safe(dict(results.axes.details)),
    }


def _specs(results: "AuditResult") -> dict:
    """name -> the spec as the user wrote it."""
    return {name: system.spec for name, system in results.provenance.systems.items()}


def tradeoff_document(trade: "Tradeoff") -> dict:
    """The ``tradeoff`` section of leaderboard.json: per system its base, curve and equal-cost points."""
    systems = {}
    for name, curve in trade.curve.groupby("system", sort=False):
        cost = trade.equal_cost[trade.equal_cost["system"] == name]
        systems[name] = {
            "base": curve["base"].iloc[0], "k": int(curve["k"].iloc[0]),
            "curve": json_safe(curve.drop(columns=["system", "base", "k"]).to_dict(orient="records")),
            "equal_cost": {f"{drop:g}": {row["method"]: json_safe({c: float(row[c]) for c in ("Lambda", "relevance", "bias")})
                                         for row in part.to_dict(orient="records")}
                           for drop, part in cost.groupby("relevance_drop", sort=False)},
        }
    return {"relevance": trade.relevance, "bias": trade.bias, "methods": ["DuoGreedy", "MMR"], "systems": systems}


def write_outputs(out: FolderClaim, results: "AuditResult", *, draw: bool = True) -> None:
    """Every output of ``results``, into a new folder that replaces the claimed ``out`` when all of it is written
    (``draw``: write the plots). The manifest is the result's (its ``paths`` say how paths are written), with the
    audit's records and its total time added."""
    from ...audit.run import EvaluationCache
    from ..tables import render
    from .sections import write_report

    manifest = results.provenance.manifest
    memo = EvaluationCache(manifest)  # the PNGs are kept by what they draw, beside the evaluations
    with out.written() as work:
        with manifest.step("plots"):
            images = plots(work, results, memo) if draw else []
        with manifest.step("write"):
            document = leaderboard_document(results, manifest.paths)
            (work / "leaderboard.json").write_text(json.dumps(document, indent=2, allow_nan=False) + "\n")
            results.per_query.to_csv(work / "per_query.csv", index=False)
            results.summary.to_csv(work / "summary.csv", index=False)
            breakdown = results.statistics.breakdown
            if breakdown is not None:
                breakdown.cells.to_csv(work / f"by_{breakdown.field}.csv", index=False)
            if results.tradeoff is not None:
                results.tradeoff.curve.to_csv(work / "tradeoff.csv", index=False)
            (work / "leaderboard.md").write_text(render(results.leaderboard, "markdown"))
            write_report(work, results, images, manifest.paths)
            manifest.record.update(manifest_record(results, manifest.paths))
            manifest.timings["total"] = round(time.perf_counter() - results.provenance.started, 3)
            (work / MANIFEST).write_text(json.dumps(json_safe(manifest.as_dict()), indent=2) + "\n")


def input_files(system) -> dict:
    """``{path as written: sha256}`` of the files a system's stages read (its ``run:PATH`` files)."""
    from ...io.memo import sha256_file
    from ...pipelines.stages.run_file import path_of

    return {str(stage.args[0]): sha256_file(path_of(stage)) for stage in system.stages
            if stage.name == "run" and path_of(stage).is_file()}


def manifest_record(results: "AuditResult", paths: "PathRecord") -> dict:
    """The manifest's entries on what was audited and how (the manifest adds versions, timings and cache hits); a
    folder dataset and a model folder as ``paths`` writes them; ``request``: the request that re-runs the audit
    (``pairmeasures audit --request manifest.json``)."""
    from ...sideinfo.termlists import Lexicon

    provenance, request, trade = results.provenance, results.request, results.tradeoff
    profile, systems, embedder = provenance.profile, provenance.systems, provenance.embedder
    specs = _specs(results)
    name, source = dataset_record(profile, paths)
    context = {"num_results": request.num_results, "k": request.k, "model": _model_record(request.model, paths)}
    tradeoff = None if trade is None else {
        "lambdas": list(trade.lambdas), "relevance": trade.relevance, "bias": trade.bias,
        "equal_cost_drops": list(EQUAL_COST_DROPS),
        "systems": {base.system: {"base": base.base, "base_run": base.base_run} for base in trade.bases}}
    axes = None if results.axes is None else {k: v for k, v in results.axes.details.items() if k != "per_query"}
    return {
        "dataset": {"id": name, "source": source, "text": profile.text, "files_sha256": profile.files,
                    "queries": len(profile.queries), "labelled": profile.labels is not None},
        "systems": {n: {"spec": s, "canonical": systems[n].canonical, "identity": systems[n].identity(),
                        "files_sha256": input_files(systems[n]),
                        "ties": results.ties[n].as_record() if n in results.ties else None}
                    for n, s in specs.items()},
        "measures": {m: {"evaluated": str(e), "direction": results.measures.directions[m],
                         "parameters": {k: json_safe(v) if isinstance(v, (int, float, str, bool)) or v is None
                                        else repr(v) for k, v in e.params.items()}}
                     for m, e in results.measures.shown.items()},
        "side_columns": {"text": f"document field {profile.text!r} of the dataset",
                         "group": "gold labels (labels.tsv)" if profile.labels is not None else None,
                         "polarity": provenance.polarity_source},
        "embedding_model": None if embedder is None else {"name": _model_record(embedder.model_name, paths),
                                                          "key": embedder.key},
        "term_list_sha256": Lexicon.load("gender").fingerprint if profile.terms else None,
        "statistics": results.statistics.as_record(),
        "context": context,
        "tradeoff": tradeoff,
        "polarity_axes": axes,
        "engine": dict(provenance.engine),
        "request": request.as_dict(),
    }
