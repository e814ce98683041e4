"""``pairmeasures audit``: run retrieval systems over a bias benchmark; a leaderboard of relevance and bias.

Composes the lower layers: a dataset profile (topics, qrels, gold labels, polarity model, query fields),
systems built from specs (:mod:`pairmeasures.pipelines.specs`) with their runs cached on disk, per-query
values through ``ir_measures``, significance through ``pt.Experiment``, bootstrap intervals and
breakdowns (:mod:`pairmeasures.analysis`), plots and a self-contained HTML report. Everything is written
into a temporary folder beside ``--out`` and renamed into place at the end.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from ..analysis.manifest import Manifest, sha256_file

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Profile", "load_profile", "default_measures", "audit", "DEFAULT_SYSTEMS", "MANIFEST", "RUNS_FORMAT"]

#: The systems of ``pairmeasures audit`` without ``--systems`` (the demo audit).
DEFAULT_SYSTEMS = ("bm25", "bm25>>dense", "bm25>>dense>>duogreedy(0.5)")
#: The file that marks a folder as an audit's output (``--force`` replaces only such folders).
MANIFEST = "manifest.json"
#: Version of the cached run files; a change makes earlier ones unused.
RUNS_FORMAT = 1
#: Labels that mark a term-based (gender) benchmark: the term measures apply.
_GENDER_GROUPS = {"female", "male"}
_ARROWS = {"lower-fairer": "↓", "higher-fairer": "↑", "signed": "↕", "higher-better": "↑"}


@dataclass
class Profile:
    """What an audit needs from a dataset: ``queries`` (qid -> text), ``qrels`` (``query_id, doc_id,
    relevance``), gold ``labels`` (``query_id, doc_id, group``; None without), document ``texts`` (doc
    id -> the ``text`` field(s)), query ``fields`` for ``--by`` (field -> qid -> values), whether a
    gender ``terms`` list applies, and the sha256 of every file read (``files``)."""

    name: str
    source: str
    data: Optional[str]
    text: str
    queries: dict
    qrels: "pd.DataFrame"
    labels: Optional["pd.DataFrame"]
    texts: dict
    fields: dict
    terms: bool
    files: dict = field(default_factory=dict)

    @property
    def perspectives(self) -> list:
        """The two labelled perspectives (e.g. pro/con), or [] when the labels are not two groups."""
        groups = sorted(set(self.labels["group"])) if self.labels is not None else []
        return groups if len(groups) == 2 else []

    def run_key(self) -> str:
        """A key of what runs depend on: every file but the qrels, and the text field."""
        parts = sorted((n, h) for n, h in self.files.items() if not Path(n).name.startswith(("test.tsv", "qrels")))
        return hashlib.sha256(json.dumps([self.source, self.text, parts]).encode()).hexdigest()


def _values(value) -> list:
    if value is None or value == "" or value == []:
        return []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def _query_fields(records: dict, documents: dict, judged: "pd.DataFrame") -> dict:
    """Query fields: every field of the query records but ``_id``/``query_id``/``text``, and ``domain``
    from the ``categories`` of a query's judged documents (Wiki-Balance) where documents carry them."""
    fields: dict = {}
    for qid, record in records.items():
        for name, value in record.items():
            if name not in ("_id", "query_id", "text"):
                fields.setdefault(name, {})[qid] = _values(value)
    if any("categories" in d for d in documents.values()):
        domains: dict = {}
        for qid, doc_id in zip(judged["query_id"], judged["doc_id"]):
            domains.setdefault(qid, {}).update(dict.fromkeys(_values(documents[doc_id].get("categories"))))
        fields["domain"] = {qid: list(values) for qid, values in domains.items()}
    return fields


def _known_datasets() -> str:
    from ..datasets import DATASET_IDS

    return ", ".join(DATASET_IDS)


def load_profile(dataset: str | os.PathLike, data: Optional[str | os.PathLike] = None, text: Optional[str] = None) -> Profile:
    """The profile of a BEIR-layout folder or a pairmeasures dataset id (``pair/procon``, from ``data`` or
    ``$PAIRMEASURES_DATA``). ``text``: the document field(s) read (default ``title+text`` for Grep-BiasIR,
    whose gender wording is often in the title only, else ``text``)."""
    import pandas as pd

    from ..sideinfo.beir import check_text_field, record_text

    folder = Path(dataset).expanduser()
    name = str(dataset)
    if folder.is_dir():
        from ..sideinfo.beir import read_beir

        beir = read_beir(folder)
        field_text = check_text_field(text or "text")
        files = {str(p.relative_to(folder)): sha256_file(p) for p in sorted(folder.rglob("*"))
                 if p.is_file() and p.name.split(".")[0] in ("corpus", "queries", "test", "labels")}
        records, documents, qrels, labels = beir.queries, beir.corpus, beir.qrels, beir.labels
        source = str(folder.resolve())
    else:
        from ..datasets._catalogue import SPEC_BY_ID
        from ..datasets._loaders import _files, load_tables
        from ..datasets._resources import locate

        name = name.removeprefix("irds:")
        if name not in SPEC_BY_ID:
            raise ValueError(f"--dataset {str(dataset)!r} is neither a folder nor a pairmeasures dataset; known datasets: "
                             f"{_known_datasets()}; a BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/test.tsv, "
                             "optional labels.tsv) works too")
        spec = SPEC_BY_ID[name]
        if spec.documents_from:
            raise ValueError(f"--dataset {name}: its documents are ir_datasets' {spec.documents_from}, which the audit "
                             "does not index; write the queries, qrels and the passages you need as a BEIR-layout folder")
        field_text = check_text_field(text or ("title+text" if name == "pair/grep-biasir" else "text"))
        tables = load_tables(spec, data)
        files = {str(path): sha256_file(path) for resource in spec.resources
                 for path in _files(locate(resource, data, spec.id))}
        records = {q.query_id: q._asdict() for q in tables.queries}
        for info in tables.query_info:
            records.setdefault(info.query_id, {}).update(info._asdict())
        documents = {d.doc_id: d._asdict() for d in tables.docs}
        qrels = pd.DataFrame([(q.query_id, q.doc_id, int(q.relevance)) for q in tables.qrels],
                             columns=["query_id", "doc_id", "relevance"])
        labels = (pd.DataFrame([(g.query_id, g.doc_id, str(g.group)) for g in tables.labels],
                               columns=["query_id", "doc_id", "group"]) if tables.labels else None)
        source = name
    groups = set(labels["group"]) if labels is not None else set()
    return Profile(name=name, source=source, data=None if data is None else str(data), text=field_text,
                   queries={q: r["text"] for q, r in records.items()}, qrels=qrels, labels=labels,
                   texts={d: record_text(r, field_text) for d, r in documents.items()},
                   fields=_query_fields(records, documents, qrels), terms=_GENDER_GROUPS <= groups
                   or name == "pair/grep-biasir", files=files)


def default_measures(profile: Profile) -> list[str]:
    """nDCG@1, nDCG@10, R@100 and Duo@10; rND/rKL/rRD@10 with gold labels; TExFAIR/NFaiRR/RaB@10 with a term list."""
    measures = ["nDCG@1", "nDCG@10", "R@100", "Duo@10"]
    if profile.labels is not None:
        measures += ["rND@10", "rKL@10", "rRD@10"]
    if profile.terms:
        measures += ["TExFAIR@10", "NFaiRR@10", "RaB@10"]
    return measures


def _evaluated(measure):
    """The measure evaluated. Unless the measure string says otherwise, a pairmeasures measure leaves out queries
    with nothing to measure (``degenerate='exclude'``: no value, counted) and skips ranked documents without side
    information for the query (``missing='skip'``: a document another query's label covers, a query whose
    polarity axis could not be fitted)."""
    from ..measures import PairMeasure

    if not isinstance(measure, PairMeasure):
        return measure
    changes = {}
    if "degenerate" in measure.SUPPORTED_PARAMS and "degenerate" not in measure.params:
        changes["degenerate"] = "exclude"
    if "skip" in (measure.SUPPORTED_PARAMS.get("missing") and measure.SUPPORTED_PARAMS["missing"].choices or ()) \
            and "missing" not in measure.params:
        changes["missing"] = "skip"
    return measure(**changes) if changes else measure


def _direction(measure) -> str:
    from ..measures import PairMeasure

    return measure.direction() if isinstance(measure, PairMeasure) else "higher-better"


def _label(measure, direction: str) -> str:
    return f"{measure} {_ARROWS.get(direction, '')}".strip()


def _polarity_model(profile: Profile, positive: Optional[str], embedder):
    """PolarityModel fitted per query on the labelled documents when two perspectives are labelled, else on each
    run's candidates; and where that came from, in words."""
    import pandas as pd

    from ..sideinfo.polarity import FitSet, PolarityModel

    labels = profile.labels
    if labels is not None and profile.perspectives:
        frame = pd.DataFrame({"qid": labels["query_id"], "label": labels["group"],
                              "text": [profile.texts[d] for d in labels["doc_id"]]})
        fit = FitSet.from_frame(frame, positive=positive)
        return PolarityModel(fit, embedder=embedder), (f"per-query axis fitted on the labelled documents "
                                                       f"({' vs '.join(profile.perspectives)}; positive {fit.positive!r})")
    return PolarityModel(embedder=embedder), "per-query axis fitted on each run's candidates (no two labelled perspectives)"


def _run_cache() -> Path:
    from ..sideinfo.cache import default_cache_path

    return default_cache_path().parent / "runs"


def _spec_key(spec: str) -> Optional[str]:
    """The cache identity of a spec: its canonical text with the sha256 of run files; None for user code."""
    from ..pipelines.specs import canonical_spec, parse_spec

    parts = []
    for stage in parse_spec(spec):
        if stage.name == "module":
            return None
        if stage.name == "run":
            path = Path(stage.args[0]).expanduser()
            parts.append(f"run:{sha256_file(path) if path.is_file() else path}")
        else:
            parts.append(stage.canonical())
    return canonical_spec(">>".join(parts)) if parts else None


def _annotate(run: "pd.DataFrame", profile: Profile, scorer, polarity: bool) -> "pd.DataFrame":
    """The run with the side columns the bias measures read: ``text``, ``group`` (gold label of the pair; None where
    unlabelled) and ``polarity`` (the audit's scorer; NaN for a query whose axis cannot be fitted)."""
    missing = sorted(set(run["docno"]) - set(profile.texts))
    if missing:
        raise ValueError(f"the run names {len(missing)} documents that are not in {profile.name}, e.g. {missing[0]!r}; "
                         "run files must rank this dataset's documents")
    run = run.drop(columns=[c for c in ("text", "group", "polarity", "query") if c in run.columns])
    run = run.assign(text=[profile.texts[d] for d in run["docno"]], query=[profile.queries.get(q, "") for q in run["qid"]])
    if profile.labels is not None:
        gold = dict(zip(zip(profile.labels["query_id"], profile.labels["doc_id"]), profile.labels["group"]))
        run = run.assign(group=[gold.get(pair) for pair in zip(run["qid"], run["docno"])])
    if polarity:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            run = scorer(run)
    return run


def _runs(systems: dict, profile: Profile, context, scorer, manifest: Manifest, polarity: bool) -> dict:
    """Each system's annotated run, from the run cache or built and run now (with a progress bar)."""
    import pandas as pd
    from tqdm.auto import tqdm

    from .. import __version__
    from ..pipelines.specs import build_system

    topics = pd.DataFrame({"qid": list(profile.queries), "query": list(profile.queries.values())})
    folder = _run_cache()
    keys = {}
    for name, spec in systems.items():
        identity = _spec_key(spec)
        keys[name] = None if identity is None else hashlib.sha256(json.dumps(
            [RUNS_FORMAT, __version__, identity, profile.run_key(), context.num_results, context.k, context.model,
             scorer.model.embedder.key if polarity else None, _fit_key(scorer) if polarity else None]).encode()).hexdigest()
    paths = {name: None if key is None else folder / f"{key[:32]}.pkl" for name, key in keys.items()}
    # every spec is built (so checked) before any runs; a warm audit whose runs are all cached builds none
    pipelines = {} if all(p is not None and p.is_file() for p in paths.values()) else \
        {name: build_system(spec, context) for name, spec in systems.items()}
    runs = {}
    for name in tqdm(list(systems), desc="systems", unit="system", leave=False):
        key, path = keys[name], paths[name]
        if path is not None and path.is_file():
            runs[name] = pd.read_pickle(path).assign(text=lambda f: [profile.texts[d] for d in f["docno"]])
            manifest.cached(name, True, key or "")
            continue
        with manifest.step(f"run {name}"):
            run = pipelines[name].transform(topics)
            keep = [c for c in ("qid", "docno", "score", "rank") if c in run.columns]
            run = _annotate(run[keep], profile, scorer, polarity)
        manifest.cached(name, False, key or "not cached: user code (module:attr)")
        if path is not None:
            folder.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
            os.close(handle)
            run.drop(columns=["text"]).to_pickle(temporary)
            os.replace(temporary, path)
        runs[name] = run
    return runs


def _fit_key(scorer) -> str:
    fit = scorer.model.fit
    if fit is None:
        return "candidates"
    return hashlib.sha256(json.dumps([sorted(fit.texts.items()), sorted((fit.labels or {}).items()), fit.positive]).encode()).hexdigest()


def _per_query(runs: dict, qrels: "pd.DataFrame", measures: dict) -> "pd.DataFrame":
    """One row per (system, query, measure) measured; queries a bias measure excluded have no row."""
    import ir_measures
    import pandas as pd

    names = {evaluated: shown for shown, evaluated in measures.items()}
    rows = []
    for system, run in runs.items():
        frame = run.rename(columns={"qid": "query_id", "docno": "doc_id"})
        for metric in ir_measures.iter_calc(list(measures.values()), qrels, frame):
            if not (isinstance(metric.value, float) and math.isnan(metric.value)):
                rows.append((system, str(metric.query_id), names[metric.measure], float(metric.value)))
    table = pd.DataFrame(rows, columns=["system", "qid", "measure", "value"])
    order = {m: i for i, m in enumerate(measures)}
    return table.sort_values(["system", "measure", "qid"], key=lambda c: c.map(order) if c.name == "measure" else
                             c.map({s: i for i, s in enumerate(runs)}) if c.name == "system" else c,
                             ignore_index=True)


def _significance(runs: dict, profile: Profile, per_query: "pd.DataFrame", measures: dict, baseline: str,
                  correction: str) -> dict:
    """``{(system, measure): (p_value, reject)}`` from ``pt.Experiment`` against the baseline with the correction.

    The paired test needs a value of every system on each query: a measure is tested over the queries every
    system measured (all queries for relevance measures), one ``pt.Experiment`` call per distinct query set."""
    import pandas as pd
    import pyterrier as pt

    order = [baseline] + [n for n in runs if n != baseline]
    counts = per_query.groupby(["measure", "qid"])["system"].nunique()
    sets: dict = {}
    for shown in measures:
        common = tuple(sorted(q for q, n in counts[shown].items() if n == len(runs))) if shown in counts else ()
        sets.setdefault(common, []).append(shown)
    qrels = profile.qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
    result = {}
    for qids, group in sets.items():
        if len(qids) < 2:
            continue
        topics = pd.DataFrame({"qid": list(qids), "query": [profile.queries[q] for q in qids]})
        chosen = [measures[m] for m in group]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = pt.Experiment([pt.Transformer.from_df(runs[n], uniform=False) for n in order], topics,
                                  qrels[qrels["qid"].isin(qids)], eval_metrics=chosen, names=order, baseline=0,
                                  correction=correction)
        for row in table.to_dict(orient="records"):
            for shown in group:
                p = row.get(f"{measures[shown]} p-value", math.nan)
                p = math.nan if p is None else float(p)
                result[(row["name"], shown)] = (p, bool(row.get(f"{measures[shown]} reject", False)) and not math.isnan(p))
    return result


def _leaderboard_table(summary: "pd.DataFrame", measures: dict, directions: dict) -> "pd.DataFrame":
    """Systems by measures (means), with each column headed by the measure, its direction arrow and counts."""
    import pandas as pd

    systems = list(dict.fromkeys(summary["system"]))
    table = pd.DataFrame({"system": systems})
    for shown in measures:
        part = summary[summary["measure"] == shown].set_index("system")
        table[_label(shown, directions[shown])] = [float(part.loc[s, "mean"]) for s in systems]
        if directions[shown] != "higher-better":
            table[f"{shown} n"] = [int(part.loc[s, "n"]) for s in systems]
    return table


def _check_out(out: Path, force: bool) -> None:
    if out.exists() or out.is_symlink():
        if not (out.is_dir() and (out / MANIFEST).is_file()):
            raise ValueError(f"--out {str(out)!r} exists and is not an earlier audit's folder (no {MANIFEST}); name a "
                             "new folder")
        if not force:
            raise ValueError(f"--out {str(out)!r} holds an earlier audit; pass --force to replace it")
    if not out.parent.is_dir():
        raise ValueError(f"--out {str(out)!r}: its parent folder does not exist")


def _json_safe(value):
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def audit(dataset: str | os.PathLike, systems: Sequence[str], out: str | os.PathLike, *,
          measures: Optional[Sequence[str]] = None, baseline: Optional[str] = None, by: Optional[str] = None,
          correction: str = "holm", resamples: int = 10_000, seed: int = 0, min_cell: int = 10,
          data: Optional[str | os.PathLike] = None, text: Optional[str] = None, num_results: int = 100, k: int = 10,
          model: Optional[str] = None, positive: Optional[str] = None, force: bool = False,
          names: Optional[Sequence[str]] = None, plots: bool = True, command: Optional[list] = None) -> dict:
    """Run ``systems`` (specs; ``names`` default to the specs) over ``dataset`` and write the audit into ``out``.

    Returns ``{"leaderboard": frame, "summary": frame, "out": path, "manifest": dict}``. Every input is
    checked before the long work; the folder appears only when everything was written.
    """

    from ..pipelines.specs import SystemContext, canonical_spec, parse_spec
    from ..sideinfo.embed import Embedder
    from .evaluate import parse_measures

    manifest = Manifest(command=list(command) if command is not None else Manifest().command)
    out = Path(out).expanduser()
    _check_out(out, force)
    names = list(names) if names is not None else list(systems)
    if len(names) != len(systems) or len(set(names)) != len(names):
        raise ValueError(f"system names must be distinct, one per system; got {names}")
    specs = dict(zip(names, systems))
    for spec in specs.values():
        parse_spec(spec)
        for stage in parse_spec(spec):
            if stage.name == "run":
                from ..sideinfo.runfiles import read_run_file

                path = Path(stage.args[0]).expanduser()
                if not path.is_file():
                    raise ValueError(f"system {spec!r}: run file {str(path)!r} does not exist")
                read_run_file(str(path))  # unreadable run files fail now, naming file and line
    baseline = names[0] if baseline is None else baseline
    if baseline not in specs:
        raise ValueError(f"--baseline {baseline!r} is not one of the systems: {', '.join(names)}")
    if resamples < 100:
        raise ValueError(f"--resamples must be at least 100, got {resamples}")
    with manifest.step("dataset"):
        profile = load_profile(dataset, data, text)
    if by is not None and by not in profile.fields:
        raise ValueError(f"--by {by!r}: {profile.name} has no query field {by!r}; fields: "
                         f"{', '.join(sorted(profile.fields)) or 'none'}")
    chosen = parse_measures(list(measures) if measures else default_measures(profile))
    shown = {str(m): _evaluated(m) for m in chosen}
    directions = {s: _direction(m) for s, m in shown.items()}
    from ..measures import PairMeasure
    from ..measures.provider import provider

    needs = set(provider.run_inputs([m for m in shown.values() if isinstance(m, PairMeasure)]))
    if "group" in needs and profile.labels is None:
        raise ValueError(f"{profile.name} has no gold labels (labels.tsv), so the group measures have no 'group'; "
                         "drop rND/rKL/rRD from --measures or add labels.tsv")
    uses_polarity = "polarity" in needs or any(stage.name == "duogreedy" for s in specs.values() for stage in parse_spec(s))
    embedder = Embedder(model) if uses_polarity else None
    polarity_model, polarity_source = _polarity_model(profile, positive, embedder) if uses_polarity else (None, None)
    context = SystemContext(source=profile.source, data=data, text=profile.text, polarity_model=polarity_model,
                            model=model, num_results=num_results, k=k)
    from ..pipelines.polarity import PolarityScorer

    scorer = PolarityScorer(polarity_model, errors="skip") if polarity_model is not None else None
    runs = _runs(specs, profile, context, scorer, manifest, uses_polarity)

    with manifest.step("evaluate"):
        per_query = _per_query(runs, profile.qrels, shown)
        significance = _significance(runs, profile, per_query, shown, baseline, correction)
    from ..analysis import SmallCellWarning, breakdown, summarize

    with manifest.step("statistics"):
        summary = summarize(per_query, baseline=baseline, resamples=resamples, seed=seed, topics=list(profile.queries))
        summary["p_value"] = [significance.get((s, m), (math.nan, False))[0] if s != baseline else math.nan
                              for s, m in zip(summary["system"], summary["measure"])]
        summary["reject"] = [significance.get((s, m), (math.nan, False))[1] if s != baseline else False
                             for s, m in zip(summary["system"], summary["measure"])]
        summary["direction"] = summary["measure"].map(directions)
        cells = None
        small: list = []
        if by is not None:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", SmallCellWarning)
                cells = breakdown(per_query, profile.fields[by], field=by, min_size=min_cell)
            small = [str(w.message) for w in caught if issubclass(w.category, SmallCellWarning)]
            for message in small:
                warnings.warn(message, SmallCellWarning, stacklevel=2)
    leaderboard = _leaderboard_table(summary, shown, directions)

    parent = out.parent
    work = Path(tempfile.mkdtemp(dir=parent, prefix=f".{out.name}.", suffix=".tmp"))
    try:
        with manifest.step("plots"):
            images = _plots(work, summary, cells, runs, profile, shown, directions, specs, scorer) if plots else []
        with manifest.step("write"):
            document = {
                "dataset": profile.name,
                "systems": {s: {m: _json_safe(float(v)) for m, v in zip(part["measure"], part["mean"])}
                            for s, part in summary.groupby("system", sort=False)},
                "measures": {m: {"direction": directions[m], "evaluated": str(shown[m]),
                                 "measured": {s: int(n) for s, n in zip(part["system"], part["n"])},
                                 "excluded": {s: int(n) for s, n in zip(part["system"], part["excluded"])}}
                             for m, part in summary.groupby("measure", sort=False)},
                "baseline": baseline, "correction": correction, "queries": len(profile.queries),
                "statistics": _json_safe(summary.drop(columns=["direction"]).to_dict(orient="records")),
                "by": None if cells is None else {"field": by, "min_cell": min_cell, "small_cells": small,
                                                   "cells": _json_safe(cells.to_dict(orient="records"))},
                "specs": specs,
            }
            (work / "leaderboard.json").write_text(json.dumps(document, indent=2, allow_nan=False) + "\n")
            per_query.to_csv(work / "per_query.csv", index=False)
            summary.to_csv(work / "summary.csv", index=False)
            if cells is not None:
                cells.to_csv(work / f"by_{by}.csv", index=False)
            from .tables import render

            (work / "leaderboard.md").write_text(render(leaderboard, "markdown"))
            from .report import Section, write_report

            sections = [Section("Leaderboard", f"{profile.name}: {len(profile.queries)} queries; baseline {baseline}; "
                                "bias measures exclude queries with nothing to measure (n = queries measured).",
                                tables=[("mean per system", leaderboard)]),
                        Section("Statistics", f"95% paired bootstrap intervals ({resamples} resamples, seed {seed}); "
                                f"p-values from pt.Experiment against {baseline}, {correction} correction.",
                                tables=[("summary", summary)]),
                        Section("Plots", images=images)]
            if cells is not None:
                sections.insert(2, Section(f"By {by}", "\n".join(small), tables=[(f"means by {by}", cells)]))
            write_report(work / "report.html", f"pairmeasures audit: {profile.name}", sections)
            manifest.record.update({
                "dataset": {"id": profile.name, "source": profile.source, "text": profile.text, "files_sha256": profile.files,
                            "queries": len(profile.queries), "labelled": profile.labels is not None},
                "systems": {n: {"spec": s, "canonical": canonical_spec(s)} for n, s in specs.items()},
                "measures": {m: {"evaluated": str(e), "direction": directions[m],
                                 "parameters": {k: _json_safe(v) if isinstance(v, (int, float, str, bool)) or v is None
                                                else repr(v) for k, v in e.params.items()}} for m, e in shown.items()},
                "side_columns": {"text": f"document field {profile.text!r} of the dataset",
                                 "group": "gold labels (labels.tsv)" if profile.labels is not None else None,
                                 "polarity": polarity_source},
                "embedding_model": None if embedder is None else {"name": embedder.model_name, "key": embedder.key},
                "term_list_sha256": _term_list_hash() if profile.terms else None,
                "statistics": {"baseline": baseline, "correction": correction, "resamples": resamples, "seed": seed,
                               "by": by, "min_cell": min_cell},
                "context": {"num_results": num_results, "k": k, "model": model},
            })
            (work / MANIFEST).write_text(json.dumps(_json_safe(manifest.as_dict()), indent=2) + "\n")
        if out.exists():
            shutil.rmtree(out)
        os.replace(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return {"leaderboard": leaderboard, "summary": summary, "out": out, "manifest": manifest.as_dict()}


def _term_list_hash() -> str:
    from ..sideinfo.termlists import Lexicon

    return Lexicon.load("gender").fingerprint


def _plots(work: Path, summary, cells, runs, profile, shown, directions, specs, scorer) -> list:
    """The PNGs (relevance vs bias, breakdown heatmap, bias by cut-off, DuoGreedy vs MMR trade-off); their captions and paths."""
    from . import plots

    images = []
    relevance = next((m for m in shown if directions[m] == "higher-better"), None)
    for bias in [m for m in shown if directions[m] != "higher-better"]:
        if relevance is None:
            break
        path = work / f"relevance_vs_{_file_name(bias)}.png"
        plots.save_png(plots.relevance_vs_bias(summary, relevance, bias), path)
        images.append((f"{relevance} against {bias} per system (95% CIs)", path))
    if cells is not None:
        for bias in [m for m in shown if directions[m] != "higher-better"]:
            path = work / f"by_{_file_name(cells['field'].iloc[0])}_{_file_name(bias)}.png"
            plots.save_png(plots.breakdown_heatmap(cells, bias), path)
            images.append((f"{bias} by {cells['field'].iloc[0]}", path))
    families = {str(shown[m]).rsplit("@", 1)[0]: m.rsplit("@", 1)[0] for m, d in directions.items() if d != "higher-better"}
    if families:
        from .curves import cutoff_curves

        curves = cutoff_curves({n: r.rename(columns={"qid": "query_id", "docno": "doc_id"}) for n, r in runs.items()},
                               profile.qrels, list(families), range(1, 51))
        curves["measure"] = curves["measure"].map(families)
        path = work / "bias_by_cutoff.png"
        plots.save_png(plots.bias_by_cutoff(curves), path)
        images.append(("bias against the cut-off k = 1..50", path))
    return images


def _file_name(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")


def leaderboard_text(result: dict, fmt: str) -> str:
    """The leaderboard as printed by the command (markdown, csv or json)."""
    from .tables import render

    return render(result["leaderboard"], fmt)


def help_epilog() -> str:
    """What ``pairmeasures audit --help`` says after the options: specs, measures, statistics, outputs, examples."""
    from ..pipelines.specs import STAGES

    stages = "\n".join(f"  {name:<40} {what}" for name, what in STAGES.items())
    return (f"system specs: stages joined by '>>'; what a stage needs (document text, polarity) is inserted\n{stages}\n\n"
            "measures (default: what the dataset supports): nDCG@1 nDCG@10 R@100 Duo@10; rND@10 rKL@10 rRD@10 with gold\n"
            "  labels; TExFAIR@10 NFaiRR@10 RaB@10 where a gender term list applies. Bias measures leave out queries\n"
            "  with nothing to measure (degenerate='exclude') and count them: n in every table.\n\n"
            "statistics: paired bootstrap 95% intervals of each mean and of each system's difference to --baseline\n"
            "  (--resamples, --seed); p-values from pt.Experiment against the baseline with --correction; --by FIELD\n"
            "  means per value of a query field with counts (cells under --min-cell are warned about).\n\n"
            "outputs in --out DIR (written to a temporary folder, renamed into place at the end): leaderboard.json,\n"
            "  leaderboard.md, per_query.csv, summary.csv, by_FIELD.csv, manifest.json (versions, checksums, seeds,\n"
            "  timings, cache hits), PNG plots and report.html. Runs are cached under the cache folder (runs/).\n\n"
            "examples:\n"
            "  pairmeasures audit --out audit-demo\n"
            "  pairmeasures audit --dataset pair/procon --systems bm25 'bm25>>dense>>duogreedy(0.5)' --out procon\n"
            "  pairmeasures audit --dataset DIR --systems run:bm25.run run:bert.run --by category --out grep --force")


def default_dataset() -> str:
    """The embedded demo corpus (a BEIR-layout folder shipped with the package)."""
    try:
        from ..demo import debates_dir  # type: ignore[attr-defined]
    except ImportError:
        raise ValueError("this install has no embedded demo corpus; pass --dataset ID_OR_DIR") from None
    return str(debates_dir())
