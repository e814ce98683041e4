"""``pairmeasures audit``: run retrieval systems over a bias benchmark; a leaderboard of relevance and bias.

Composes the lower layers: a dataset profile (topics, qrels, gold labels, polarity model, query fields),
systems built from specs (:mod:`pairmeasures.pipelines.specs`) with their runs cached on disk, per-query
values through ``ir_measures`` (each run evaluated once), pt.Experiment's significance test on those values, bootstrap intervals and
breakdowns (:mod:`pairmeasures.analysis`), the DuoGreedy-vs-MMR trade-off (:mod:`pairmeasures.apps.curves`),
plots and a self-contained HTML report. Everything is written into a temporary folder beside ``--out`` and
renamed into place at the end. Evaluation outputs and PNGs are cached by the content they derive from (run keys,
qrels, measure strings, seeds), so a warm re-run loads no model, index or plotting library.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import pickle
import shutil
import tempfile
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from .._atomic import write_atomically
from ..analysis.manifest import Manifest, sha256_file

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Profile", "load_profile", "default_measures", "audit", "DEFAULT_SYSTEMS", "DEFAULT_LAMBDAS", "MANIFEST",
           "RUNS_FORMAT", "EVALUATIONS_FORMAT"]

#: The systems of ``pairmeasures audit`` without ``--systems`` (the demo audit).
DEFAULT_SYSTEMS = ("bm25", "bm25>>dense", "bm25>>dense>>duogreedy(0.5)")
#: The file that marks a folder as an audit's output (``--force`` replaces only such folders).
MANIFEST = "manifest.json"
#: Version of the cached run files; a change makes earlier ones unused.
RUNS_FORMAT = 1
#: Version of the cached evaluation outputs and PNGs; a change makes earlier ones unused.
EVALUATIONS_FORMAT = 1
#: The Lambdas of the DuoGreedy-vs-MMR trade-off curve without ``--lambdas``.
DEFAULT_LAMBDAS = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
#: Relevance drops at which the trade-off compares the two methods' bias (:func:`~pairmeasures.apps.curves.equal_cost`).
EQUAL_COST_DROPS = (0.01, 0.02, 0.05)
#: Labels that mark a term-based (gender) benchmark: the term measures apply.
_GENDER_GROUPS = {"female", "male"}
_ARROWS = {"lower-fairer": "↓", "higher-fairer": "↑", "signed": "↕", "higher-better": "↑"}


@dataclass
class Profile:
    """What an audit needs from a dataset: ``queries`` (qid -> text), ``qrels`` (``query_id, doc_id,
    relevance``), gold ``labels`` (``query_id, doc_id, group``; None without), document ``texts`` (doc
    id -> the ``text`` field(s)), query ``fields`` for ``--by`` (field -> qid -> values), whether a
    gender ``terms`` list applies, the sha256 of every file read (``files``), and each document's ``titles``
    and ``bodies`` (its ``title`` and ``text`` fields, as a reader sees them: ``pairmeasures seme material``)."""

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
    titles: dict = field(default_factory=dict)
    bodies: dict = field(default_factory=dict)

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
            import difflib

            close = difflib.get_close_matches(name, list(SPEC_BY_ID), n=1, cutoff=0.6)
            raise ValueError(f"--dataset {str(dataset)!r} is neither a folder nor a pairmeasures dataset"
                             f"{f'; did you mean {close[0]!r}?' if close else ''}; known datasets: "
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
                   or name == "pair/grep-biasir", files=files,
                   titles={d: str(r.get("title") or "") for d, r in documents.items()},
                   bodies={d: str(r.get("text") or "") for d, r in documents.items()})


def only_queries(profile: Profile, file: str | os.PathLike) -> Profile:
    """``profile`` cut to the query ids listed in ``file`` (one a line, ``#`` comments), every one of which must be
    a query of the dataset; the documents stay (systems still rank the whole corpus)."""
    from ..sideinfo.runfiles import read_query_ids

    keep = read_query_ids(file)
    unknown = sorted(keep - set(profile.queries))
    if unknown:
        raise ValueError(f"--queries {file}: {len(unknown)} query ids are not queries of {profile.name}, e.g. "
                         f"{unknown[0]!r}")
    if not keep:
        raise ValueError(f"--queries {file} lists no query id: write one a line")

    def subset(frame):
        return None if frame is None else frame[frame["query_id"].isin(keep)].reset_index(drop=True)

    return replace(profile, queries={q: t for q, t in profile.queries.items() if q in keep}, qrels=subset(profile.qrels),
                   labels=subset(profile.labels),
                   fields={name: {q: v for q, v in values.items() if q in keep} for name, values in profile.fields.items()},
                   files={**profile.files, f"queries file {Path(file).name}": sha256_file(Path(file))})


def default_measures(profile: Profile) -> list[str]:
    """nDCG@1, nDCG@10, R@100 and Duo@10; rND/rKL/rRD@10 and the group-exposure EXP/NDKL/ARP@10 with gold labels;
    TExFAIR/NFaiRR/RaB@10 with a term list. EXPU is left out: the audit considers the labelled documents, which on
    these benchmarks are exactly the relevant ones, so EXPU would repeat EXP."""
    measures = ["nDCG@1", "nDCG@10", "R@100", "Duo@10"]
    if profile.labels is not None:
        measures += ["rND@10", "rKL@10", "rRD@10", "EXP@10", "NDKL@10", "ARP@10"]
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
    """The cache identity of a spec: its canonical text with the sha256 of run files and the content fingerprint of
    model folders (``ce(PATH)``, ``dense(PATH)``: a model retrained into the same folder runs again); None for user
    code."""
    from ..pipelines.specs import canonical_spec, parse_spec

    parts = []
    for stage in parse_spec(spec):
        if stage.name == "module":
            return None
        if stage.name == "run":
            path = Path(stage.args[0]).expanduser()
            parts.append(f"run:{sha256_file(path) if path.is_file() else path}")
        elif stage.name in ("ce", "dense") and stage.args:
            parts.append(f"{stage.name}({_model_fingerprint(str(stage.args[0]))})")
        else:
            parts.append(stage.canonical())
    return canonical_spec(">>".join(parts)) if parts else None


def _model_fingerprint(model: Optional[str]) -> Optional[str]:
    """A model folder's content fingerprint (its files), or the model name as given when it is not a folder."""
    from ..sideinfo.embed import _fingerprint

    if model is None:
        return None
    folder = Path(model).expanduser()
    return _fingerprint(folder) if folder.is_dir() else model


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


def _runs(systems: dict, profile: Profile, context, scorer, manifest: Manifest, polarity: bool) -> tuple[dict, dict]:
    """Each system's annotated run, from the run cache or built and run now (with a progress bar), and each run's
    cache key (None for user code)."""
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
            [RUNS_FORMAT, __version__, identity, profile.run_key(), context.num_results, context.k,
             _model_fingerprint(context.model),
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
            write_atomically(path, pickle.dumps(run.drop(columns=["text"]), protocol=pickle.HIGHEST_PROTOCOL))
        runs[name] = run
    return runs, keys


def _memo(kind: str, parts: Any, compute: Callable[[], Any], manifest: Manifest) -> Any:
    """``compute()``, or its result cached under the cache folder's ``evaluations/`` by ``kind`` and ``parts`` (what
    it derives from: run keys, the qrels' content, measure strings, seeds). Parts holding None (a run of user code)
    are not cached."""
    from .. import __version__

    def unkeyed(value) -> bool:
        return value is None or (isinstance(value, (list, tuple)) and any(map(unkeyed, value))) or \
            (isinstance(value, dict) and any(map(unkeyed, value.values())))

    if unkeyed(parts):
        manifest.cache.setdefault("evaluations", {})[kind] = "not cached: user code (module:attr)"
        return compute()
    key = hashlib.sha256(json.dumps([EVALUATIONS_FORMAT, __version__, kind, parts], default=str).encode()).hexdigest()
    path = _run_cache().parent / "evaluations" / f"{_file_name(kind)}-{key[:32]}.pkl"
    if path.is_file():
        try:
            with open(path, "rb") as handle:
                value = pickle.load(handle)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            pass  # unreadable (an interrupted write, another version's classes): computed again below
        else:
            manifest.cache.setdefault("evaluations", {})[kind] = "hit"
            return value
    value = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    manifest.cache.setdefault("evaluations", {})[kind] = "miss"
    return value


def _content_key(value) -> str:
    """A key of a value's content: frames by their columns and values (not their memory layout), in lists, tuples
    and dicts too."""
    import pandas as pd

    def plain(item):
        if isinstance(item, pd.DataFrame):
            try:
                values = pd.util.hash_pandas_object(item, index=False).to_numpy().tobytes().hex()
            except TypeError:  # unhashable cells (lists): their text
                values = item.to_csv(index=False)
            return ["frame", list(map(str, item.columns)), list(map(str, item.dtypes)), values]
        if isinstance(item, (list, tuple)):
            return [plain(v) for v in item]
        if isinstance(item, dict):
            return [[str(k), plain(v)] for k, v in item.items()]
        return item

    return hashlib.sha256(json.dumps(plain(value), default=str).encode()).hexdigest()


def _fit_key(scorer) -> str:
    fit = scorer.model.fit
    if fit is None:
        return "candidates"
    return hashlib.sha256(json.dumps([sorted(fit.texts.items()), sorted((fit.labels or {}).items()), fit.positive]).encode()).hexdigest()


def _per_query(runs: dict, qrels: "pd.DataFrame", measures: dict) -> "pd.DataFrame":
    """One row per (system, query, measure) measured; queries a bias measure excluded have no row."""
    import ir_measures
    import pandas as pd

    from ..measures import PairMeasure
    from .curves import scores_by_query

    names = {evaluated: shown for shown, evaluated in measures.items()}
    pair = [m for m in measures.values() if isinstance(m, PairMeasure)]
    other = [m for m in measures.values() if not isinstance(m, PairMeasure)]
    rows = []
    for system, run in runs.items():
        frame = run.rename(columns={"qid": "query_id", "docno": "doc_id"})
        metrics = ir_measures.iter_calc(pair, qrels, frame) if pair else iter(())
        if other:  # trec_eval-based measures read {qid: {docno: score}}, built from arrays, not row by row
            metrics = itertools.chain(ir_measures.iter_calc(other, qrels, scores_by_query(frame)), metrics)
        for metric in metrics:
            if not (isinstance(metric.value, float) and math.isnan(metric.value)):
                rows.append((system, str(metric.query_id), names[metric.measure], float(metric.value)))
    table = pd.DataFrame(rows, columns=["system", "qid", "measure", "value"])
    order = {m: i for i, m in enumerate(measures)}
    return table.sort_values(["system", "measure", "qid"], key=lambda c: c.map(order) if c.name == "measure" else
                             c.map({s: i for i, s in enumerate(runs)}) if c.name == "system" else c,
                             ignore_index=True)


def _significance(per_query: "pd.DataFrame", baseline: str, correction: str) -> dict:
    """``{(system, measure): (p_value, reject)}``: pt.Experiment's paired t-test against the baseline with the
    correction, from the per-query values already measured (:func:`pairmeasures.analysis.paired_tests`), over the
    queries every system measured."""
    from ..analysis import paired_tests

    tests = paired_tests(per_query, baseline, correction)
    return {(s, m): (p, r) for s, m, p, r in zip(tests["system"], tests["measure"], tests["p_value"], tests["reject"])}


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


#: The leaderboard column of IBBR's dataset-level disparity (gendered datasets: gold labels male and female).
DELTA_A_PRF = "|ΔA-PRF| ↓"


#: The leaderboard column of ΔA-PRF's bootstrap interval (signed: male minus female).
DELTA_A_PRF_INTERVAL = "ΔA-PRF 95% CI"


def _delta_a_prf(runs: dict, qrels: "pd.DataFrame", resamples: int, seed: int) -> dict:
    """Per system, IBBR's ΔA-PRF between the male and female clicked (relevant) passages over each whole run, from
    the gold labels (:func:`pairmeasures.measures.delta_prf.delta_a_prf`), with the bootstrap interval of the signed
    value over ``resamples`` draws of the queries; ``{"error": why}`` where undefined."""
    from ..measures import delta_a_prf

    results = {}
    for system, run in runs.items():
        frame = run.rename(columns={"qid": "query_id", "docno": "doc_id"})
        try:
            result = delta_a_prf(frame, qrels, labels="group", missing="skip", resamples=resamples, seed=seed)
        except ValueError as error:
            results[system] = {"absolute": math.nan, "error": str(error)}
            continue
        results[system] = {"absolute": result.absolute, "value": result.value, "interval": result.interval,
                           "means": dict(result.means), "counts": dict(result.counts), "left_out": len(result.left_out)}
    return results


def _interval_text(result: dict) -> str:
    """``[low, high]`` of a system's ΔA-PRF interval, or what is missing."""
    if "error" in result:
        return "undefined"
    low, high = result["interval"]
    return f"[{low:+.4f}, {high:+.4f}]"


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
          names: Optional[Sequence[str]] = None, plots: bool = True, tradeoff: bool = True,
          lambdas: Sequence[float] = DEFAULT_LAMBDAS, queries: Optional[str | os.PathLike] = None,
          command: Optional[list] = None) -> dict:
    """Run ``systems`` (specs; ``names`` default to the specs) over ``dataset`` and write the audit into ``out``.

    With ``tradeoff``, each system with a ``duogreedy(...)`` stage also gets the DuoGreedy-vs-MMR trade-off over
    ``lambdas``, re-ranking the run of the spec before that stage. ``queries`` (a file of query ids, one a line,
    ``#`` comments: e.g. the held-out split of a training run) audits those queries only. Returns ``{"leaderboard": frame, "summary":
    frame, "tradeoff": frame or None, "out": path, "manifest": dict}``. Every input is checked before the long
    work; the folder appears only when everything was written.
    """
    started = time.perf_counter()

    from ..pipelines.specs import SystemContext, canonical_spec, parse_spec
    from ..sideinfo.embed import Embedder
    from .curves import _checked_lambdas
    from .evaluate import parse_measures

    embedding_before = Embedder.total_embed_seconds

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
    lambdas = _checked_lambdas(lambdas)
    if tradeoff and 1.0 not in lambdas:
        raise ValueError(f"--lambdas {' '.join(f'{v:g}' for v in lambdas)}: include 1 (the base ranking the relevance "
                         "cost is measured from)")
    bases = _tradeoff_bases(specs) if tradeoff else {}
    with manifest.step("dataset"):
        profile = load_profile(dataset, data, text)
        if queries is not None:
            profile = only_queries(profile, queries)
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
                         "drop the group measures (rND/rKL/rRD, EXP, NDKL, ...) from --measures or add labels.tsv")
    uses_polarity = "polarity" in needs or any(stage.name == "duogreedy" for s in specs.values() for stage in parse_spec(s))
    embedder = Embedder(model) if uses_polarity else None
    polarity_model, polarity_source = _polarity_model(profile, positive, embedder) if uses_polarity else (None, None)
    context = SystemContext(source=profile.source, data=data, text=profile.text, polarity_model=polarity_model,
                            model=model, num_results=num_results, k=k)
    from ..pipelines.polarity import PolarityScorer

    scorer = PolarityScorer(polarity_model, errors="skip") if polarity_model is not None else None
    canonical = {canonical_spec(spec): name for name, spec in specs.items()}
    hidden = {f"base {base}": base for base, _ in bases.values() if canonical_spec(base) not in canonical}
    everything, run_keys = _runs({**specs, **hidden}, profile, context, scorer, manifest, uses_polarity)
    runs = {name: everything[name] for name in specs}
    base_names = {name: canonical.get(canonical_spec(base), f"base {base}") for name, (base, _) in bases.items()}

    qrels_key = _content_key(profile.qrels)
    evaluated = [str(m) for m in shown.values()]
    keys = {name: run_keys[name] for name in specs}
    with manifest.step("evaluate"):
        def evaluate() -> tuple:
            table = _per_query(runs, profile.qrels, shown)
            return table, _significance(table, baseline, correction)

        per_query, significance = _memo("evaluate", [keys, qrels_key, evaluated, baseline, correction], evaluate, manifest)
    from ..analysis import SmallCellWarning, breakdown, summarize

    with manifest.step("statistics"):
        summary = _memo("summary", [keys, qrels_key, evaluated, baseline, resamples, seed, list(profile.queries)],
                        lambda: summarize(per_query, baseline=baseline, resamples=resamples, seed=seed,
                                          topics=list(profile.queries)), manifest)
        summary["p_value"] = [significance.get((s, m), (math.nan, False))[0] if s != baseline else math.nan
                              for s, m in zip(summary["system"], summary["measure"])]
        summary["reject"] = [significance.get((s, m), (math.nan, False))[1] if s != baseline else False
                             for s, m in zip(summary["system"], summary["measure"])]
        summary["direction"] = summary["measure"].map(directions)
        cells = None
        small: list = []
        if by is not None:
            def cut() -> tuple:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", SmallCellWarning)
                    table = breakdown(per_query, profile.fields[by], field=by, min_size=min_cell)
                return table, [str(w.message) for w in caught if issubclass(w.category, SmallCellWarning)]

            cells, small = _memo("breakdown", [keys, qrels_key, evaluated, by, min_cell, _content_key(profile.fields[by])],
                                 cut, manifest)
            for message in small:
                warnings.warn(message, SmallCellWarning, stacklevel=2)
    leaderboard = _leaderboard_table(summary, shown, directions)
    disparity = None
    if profile.terms:
        disparity = _memo("delta a-prf", [keys, qrels_key, resamples, seed],
                          lambda: _delta_a_prf(runs, profile.qrels, resamples, seed), manifest)
    if disparity is not None:  # next to RaB: a dataset-level figure, not a per-query measure (docs/ibbr.md)
        leaderboard[DELTA_A_PRF] = [disparity[s]["absolute"] for s in leaderboard["system"]]
        leaderboard[DELTA_A_PRF_INTERVAL] = [_interval_text(disparity[s]) for s in leaderboard["system"]]
    families = {str(shown[m]).rsplit("@", 1)[0]: m.rsplit("@", 1)[0] for m, d in directions.items() if d != "higher-better"}
    curves = None
    if plots and families:
        with manifest.step("cut-off curves"):
            curves = _memo("cutoff curves", [keys, qrels_key, list(families)],
                           lambda: _cutoff_curves(runs, profile, families), manifest)
    trade = None
    if bases:
        with manifest.step("trade-off"):
            shown_duo = next((m for m in shown if m.split("(")[0].split("@")[0] == "Duo"), None)
            relevance = "nDCG@10"
            bias = str(shown[shown_duo]) if shown_duo else str(_evaluated(parse_measures(["Duo@10"])[0]))
            trade = _tradeoff(bases, base_names, everything, run_keys, profile, qrels_key, relevance, bias, lambdas,
                              seed, resamples, context, manifest)
            trade["bias"] = shown_duo or "Duo@10"  # the leaderboard's name, not the evaluated measure string

    parent = out.parent
    work = Path(tempfile.mkdtemp(dir=parent, prefix=f".{out.name}.", suffix=".tmp"))
    try:
        with manifest.step("plots"):
            images = _plots(work, summary, cells, curves, trade, shown, directions, manifest) if plots else []
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
                "delta_a_prf": _json_safe(disparity),
                "tradeoff": None if trade is None else _tradeoff_document(trade),
            }
            (work / "leaderboard.json").write_text(json.dumps(document, indent=2, allow_nan=False) + "\n")
            per_query.to_csv(work / "per_query.csv", index=False)
            summary.to_csv(work / "summary.csv", index=False)
            if cells is not None:
                cells.to_csv(work / f"by_{by}.csv", index=False)
            if trade is not None:
                trade["curve"].to_csv(work / "tradeoff.csv", index=False)
            from .tables import render

            (work / "leaderboard.md").write_text(render(leaderboard, "markdown"))
            from .report import Section, write_report

            sections = [Section("Leaderboard", f"{profile.name}: {len(profile.queries)} queries; baseline {baseline}; "
                                "bias measures exclude queries with nothing to measure (n = queries measured).",
                                tables=[("mean per system", leaderboard)]),
                        Section("Statistics", f"95% paired bootstrap intervals ({resamples} resamples, seed {seed}); "
                                f"p-values of pt.Experiment's paired t-test against {baseline}, {correction} correction.",
                                tables=[("summary", summary)]),
                        Section("Plots", images=images)]
            if trade is not None:
                sections.insert(2, _tradeoff_section(trade, [i for i in images if i[1].name.startswith("tradeoff")]))
                sections[-1] = Section("Plots", images=[i for i in images if not i[1].name.startswith("tradeoff")])
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
                "tradeoff": None if trade is None else {
                    "lambdas": lambdas, "relevance": trade["relevance"], "bias": trade["bias"],
                    "equal_cost_drops": list(EQUAL_COST_DROPS),
                    "systems": {name: {"base": base, "base_run": base_names[name]} for name, (base, _) in bases.items()}},
            })
            manifest.timings["embedding"] = round(Embedder.total_embed_seconds - embedding_before, 3)
            manifest.timings["total"] = round(time.perf_counter() - started, 3)
            (work / MANIFEST).write_text(json.dumps(_json_safe(manifest.as_dict()), indent=2) + "\n")
        if out.exists():
            shutil.rmtree(out)
        os.replace(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return {"leaderboard": leaderboard, "summary": summary, "tradeoff": None if trade is None else trade["curve"], "out": out,
            "manifest": manifest.as_dict()}


def _term_list_hash() -> str:
    from ..sideinfo.termlists import Lexicon

    return Lexicon.load("gender").fingerprint


def _tradeoff_bases(specs: dict) -> dict:
    """``name -> (base spec, duogreedy stage)`` of each spec with a ``duogreedy(...)`` stage after its first one; the
    base is the spec's prefix before that stage."""
    from ..pipelines.specs import parse_spec

    bases = {}
    for name, spec in specs.items():
        stages = parse_spec(spec)
        at = next((i for i, stage in enumerate(stages) if stage.name == "duogreedy"), 0)
        if at > 0:
            bases[name] = (">>".join(stage.text for stage in stages[:at]), stages[at])
    return bases


def _tradeoff(bases: dict, base_names: dict, runs: dict, run_keys: dict, profile: Profile, qrels_key: str,
              relevance: str, bias: str, lambdas: list, seed: int, resamples: int, context, manifest: Manifest) -> dict:
    """DuoGreedy(Lambda, k) on the base run (its ``polarity`` the audit's) against TopKMMR(Lambda, k) on the audit's
    bi-encoder, per system with a duogreedy stage: ``{"curve", "equal_cost", "relevance", "bias"}``."""
    import pandas as pd

    from ..sideinfo.embed import Embedder
    from .curves import equal_cost, tradeoff_curve

    def bi_encoder():
        from ..pipelines.dense import bi_encoder

        return context.shared("bi_encoder", lambda: bi_encoder(context.model))

    encoder_key = Embedder(context.model).key
    curves, costs = [], []
    for name, (base, stage) in bases.items():
        options = dict(stage.options)
        k, mode = int(options.get("k", context.k)), str(options.get("mode", "greedy"))
        base_run = runs[base_names[name]]

        def compute(base_run=base_run, k=k, mode=mode):
            from ..pipelines.duogreedy import DuoGreedy
            from ..pipelines.mmr import TopKMMR

            encoder = bi_encoder().doc_encoder()
            methods = {"DuoGreedy": lambda value: DuoGreedy(value, k, mode=mode),
                       "MMR": lambda value: TopKMMR(value, k, encoder=encoder)}
            return tradeoff_curve(base_run, profile.qrels, methods, lambdas, relevance=relevance, bias=bias, seed=seed,
                                  resamples=resamples)

        curve = _memo(f"trade-off {name}", [run_keys[base_names[name]], qrels_key, relevance, bias, lambdas, k, mode,
                                            encoder_key, seed, resamples], compute, manifest)
        curves.append(curve.assign(system=name, base=base, k=k)[["system", "base", "k", *curve.columns]])
        for drop in EQUAL_COST_DROPS:
            costs.append(equal_cost(curve, "DuoGreedy", "MMR", drop).assign(system=name, relevance_drop=drop))
    cost = pd.concat(costs, ignore_index=True)
    return {"curve": pd.concat(curves, ignore_index=True), "relevance": relevance, "bias": bias,
            "equal_cost": cost[["system", "relevance_drop", "method", "Lambda", "relevance", "bias"]]}


def _tradeoff_document(trade: dict) -> dict:
    """The ``tradeoff`` section of leaderboard.json: per system its base, curve and equal-cost points."""
    systems = {}
    for name, curve in trade["curve"].groupby("system", sort=False):
        cost = trade["equal_cost"][trade["equal_cost"]["system"] == name]
        systems[name] = {
            "base": curve["base"].iloc[0], "k": int(curve["k"].iloc[0]),
            "curve": _json_safe(curve.drop(columns=["system", "base", "k"]).to_dict(orient="records")),
            "equal_cost": {f"{drop:g}": {row["method"]: _json_safe({c: float(row[c]) for c in ("Lambda", "relevance", "bias")})
                                         for row in part.to_dict(orient="records")}
                           for drop, part in cost.groupby("relevance_drop", sort=False)},
        }
    return {"relevance": trade["relevance"], "bias": trade["bias"], "methods": ["DuoGreedy", "MMR"], "systems": systems}


def _tradeoff_section(trade: dict, images: list):
    from .report import Section

    return Section("DuoGreedy vs MMR", f"Each method re-ranks the top k of the base run (the spec before its duogreedy "
                   f"stage) at every Lambda (1 keeps the base order): {trade['relevance']} against {trade['bias']}, "
                   "95% paired bootstrap intervals. Equal cost: the bias each method reaches when relevance may drop "
                   f"by at most {', '.join(f'{d:g}' for d in EQUAL_COST_DROPS)} from Lambda = 1 (interpolated).",
                   tables=[("equal cost", trade["equal_cost"]), ("curve", trade["curve"])], images=images)


def _cutoff_curves(runs: dict, profile: Profile, families: dict) -> "pd.DataFrame":
    from .curves import cutoff_curves

    curves = cutoff_curves({n: r.rename(columns={"qid": "query_id", "docno": "doc_id"}) for n, r in runs.items()},
                           profile.qrels, list(families), range(1, 51))
    curves["measure"] = curves["measure"].map(families)
    return curves


def _png(work: Path, name: str, caption: str, draw: str, arguments: tuple, options: dict, manifest: Manifest) -> tuple:
    """``plots.<draw>(*arguments, **options)`` written to ``work/name``; the PNG's bytes are cached by the content
    of the arguments, so a warm audit does not import matplotlib."""
    def render() -> bytes:
        from . import plots

        with tempfile.TemporaryDirectory() as folder:
            plots.save_png(getattr(plots, draw)(*arguments, **options), Path(folder) / name)
            return (Path(folder) / name).read_bytes()

    (work / name).write_bytes(_memo(f"png {name}", [draw, _content_key((arguments, options))], render, manifest))
    return caption, work / name


def _plots(work: Path, summary, cells, curves, trade, shown, directions, manifest: Manifest) -> list:
    """The PNGs (relevance vs bias, breakdown heatmap, bias by cut-off, DuoGreedy vs MMR trade-off); their captions and paths."""
    images = []
    relevance = "nDCG@10" if "nDCG@10" in shown else next((m for m in shown if directions[m] == "higher-better"), None)
    biases = [m for m in shown if directions[m] != "higher-better"]
    for bias in biases if relevance is not None else []:
        images.append(_png(work, f"relevance_vs_{_file_name(bias)}.png", f"{relevance} against {bias} per system (95% CIs)",
                           "relevance_vs_bias", (summary, relevance, bias), {}, manifest))
    if cells is not None:
        field_name = cells["field"].iloc[0]
        for bias in biases:
            images.append(_png(work, f"by_{_file_name(field_name)}_{_file_name(bias)}.png", f"{bias} by {field_name}",
                               "breakdown_heatmap", (cells, bias), {}, manifest))
    if curves is not None:
        images.append(_png(work, "bias_by_cutoff.png", "bias against the cut-off k = 1..50", "bias_by_cutoff", (curves,),
                           {}, manifest))
    if trade is not None:
        for i, (name, curve) in enumerate(trade["curve"].groupby("system", sort=False)):
            images.append(_png(work, "tradeoff.png" if i == 0 else f"tradeoff_{_file_name(name)}.png",
                               f"{name}: DuoGreedy vs MMR on {curve['base'].iloc[0]} as Lambda varies", "tradeoff",
                               (curve.drop(columns=["system", "base", "k"]), trade["relevance"], trade["bias"]),
                               {"direction": "lower-fairer"}, manifest))
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
            "measures (default: what the dataset supports): nDCG@1 nDCG@10 R@100 Duo@10; rND@10 rKL@10 rRD@10 EXP@10\n"
            "  NDKL@10 ARP@10 with gold labels; TExFAIR@10 NFaiRR@10 RaB@10 where a gender term list applies. Bias measures leave out queries\n"
            "  with nothing to measure (degenerate='exclude') and count them: n in every table.\n\n"
            "statistics: paired bootstrap 95% intervals of each mean and of each system's difference to --baseline\n"
            "  (--resamples, --seed); p-values of pt.Experiment's paired t-test against the baseline with --correction; --by FIELD\n"
            "  means per value of a query field with counts (cells under --min-cell are warned about).\n\n"
            "trade-off: for a system with a duogreedy(...) stage, DuoGreedy and MMR (pm.TopKMMR on the bi-encoder) re-rank\n"
            "  the run of the spec before that stage at each of --lambdas: tradeoff.csv, tradeoff.png and the bias each\n"
            "  reaches at a relevance cost of 0.01, 0.02 and 0.05 (--no-tradeoff skips it).\n\n"
            "outputs in --out DIR (written to a temporary folder, renamed into place at the end): leaderboard.json,\n"
            "  leaderboard.md, per_query.csv, summary.csv, by_FIELD.csv, tradeoff.csv, manifest.json (versions, checksums, seeds,\n"
            "  timings, cache hits), PNG plots and report.html. Runs are cached under the cache folder (runs/), evaluation\n"
            "  outputs and PNGs under evaluations/, keyed by what they derive from.\n\n"
            "examples:\n"
            "  pairmeasures audit --out audit-demo\n"
            "  pairmeasures audit --dataset pair/procon --systems bm25 'bm25>>dense>>duogreedy(0.5)' --out procon\n"
            "  pairmeasures audit --dataset DIR --systems run:bm25.run run:bert.run --by category --out grep --force")


def default_dataset() -> str:
    """The embedded demo corpus (a BEIR-layout folder shipped with the package)."""
    try:
        from ..demo import debates_dir
    except ImportError:
        raise ValueError("this install has no embedded demo corpus; pass --dataset ID_OR_DIR") from None
    return str(debates_dir())
