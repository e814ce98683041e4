r"""``pairmeasures seme material``: study material from a system's rankings (PAIR paper, Section 6).

Per query, the system's top ``k`` documents are shown in four orderings (:data:`CONDITIONS`): the most biased
toward each perspective (the largest and the smallest signed DUO :math:`\mu^+`, PAIR Appendix A.2, found by
:func:`~pairmeasures.math.reorder.most_signed_order`), the least biased (``BiasedOrdering("least")``: DUO = 0) and the
system's own. Each ordering carries its :math:`\mu^+` (``Duo(signed=True)@k``; + = toward the ``positive``
perspective) and its DUO. Polarity is the audit's: an axis per query fitted on the dataset's labelled documents,
pointing to ``positive``. The building blocks are the audit's (dataset profile, polarity model) and the
pipelines' (system specs, :class:`~pairmeasures.pipelines.duogreedy.BiasedOrdering`); this module composes them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, ContextManager, Optional, Sequence

from ...io.frames import ir_names

if TYPE_CHECKING:
    import pandas as pd

    from ..._atomic import FileClaim

__all__ = ["CONDITIONS", "FORMAT", "VERSION", "DEFAULT_SYSTEM", "build_material", "write_material", "check_out",
           "claim_out", "material_text"]

HELP = "write study material: per query, orderings of maximal and minimal signed bias, with mu+_DUO"
#: The extra this command needs (a module of it missing is named with ``pip install 'pairmeasures[audit]'``).
EXTRA = "audit"
#: The ``format`` field that marks a material file (``--force`` replaces only such files).
FORMAT = "pairmeasures-seme-material"
#: Version of the material format.
VERSION = 1
#: The system of ``pairmeasures seme material`` without ``--system``.
DEFAULT_SYSTEM = "bm25>>dense"
#: The orderings of each query, in the order of the material's ``conditions``.
CONDITIONS = ("most_positive", "most_negative", "least", "system")
#: The largest ``k``: the most biased orderings are searched among the 2^(k-1) window orderings of each query.
MAX_K = 16
#: Queries retrieved per call of the system (one step of the progress bar).
BATCH = 16
#: The longest title and snippet shown, in characters (cut at a word boundary, with an ellipsis).
TITLE_CHARS = 90
SNIPPET_CHARS = 220
#: Labels read as agreeing / disagreeing with a query's claim (the perspective statements are worded from them).
_AGREE = {"pro", "support", "supports", "yes", "positive", "agree", "for", "favor", "favour"}
_DISAGREE = {"con", "undermine", "undermines", "no", "negative", "disagree", "against", "oppose"}

DESCRIPTION = f"""{HELP}.

For each query the system's top k documents are reordered four ways: most_positive and most_negative (the
orderings of the largest and smallest signed DUO, i.e. the most biased toward each perspective), least (the most
diverse ordering, DUO = 0) and system (the system's own ordering). Each ordering carries mu_duo, its signed DUO
(Duo(signed=True)@k, PAIR Appendix A.2; + = toward the positive perspective), and duo. Polarity: an axis per query
fitted on the dataset's labelled documents (two perspectives needed, e.g. pro/con), oriented toward --positive.

The JSON holds everything a study page needs: the query, a statement of each perspective, and per ordering the
documents' ids, titles, snippets, texts, polarity and gold label; "manifest" records the dataset's checksums,
the system, the polarity model, the queries left out and why, versions and timings.

examples:
  pairmeasures seme material --out material.json
  pairmeasures seme material --dataset pair/procon --system 'bm25>>dense' -k 8 --queries 20 --out procon.json
  pairmeasures seme material --dataset DIR --positive pro --queries q1 q7 --out study.json --force"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default=None, metavar="ID_OR_DIR",
                        help="a pairmeasures dataset id (pair/procon, from --data or $PAIRMEASURES_DATA) or a "
                             "BEIR-layout folder with labels.tsv (default: the embedded demo corpus)")
    parser.add_argument("--system", default=DEFAULT_SYSTEM, metavar="SPEC",
                        help=f"the system whose top k is shown, as in pairmeasures audit (default: {DEFAULT_SYSTEM})")
    parser.add_argument("--out", required=True, metavar="FILE", help="the material JSON to write")
    parser.add_argument("-k", type=int, default=10, help=f"documents shown per query (default 10; 3 to {MAX_K})")
    parser.add_argument("--data", default=None, metavar="DIR", help="the data mirror of dataset ids")
    parser.add_argument("--text", default=None, help="document field(s) embedded and indexed: text, title, title+text")
    parser.add_argument("--model", default=None, metavar="DIR", help="sentence-transformers model (default: offline default)")
    parser.add_argument("--positive", default=None, metavar="LABEL",
                        help="the label of the positive perspective (default: pro, support, p1, ... whichever is present)")
    parser.add_argument("--queries", nargs="+", default=None, metavar="N_OR_ID",
                        help="one number N: N queries drawn with --seed; else query ids (a single numeric id: '5,')")
    parser.add_argument("--seed", type=int, default=0, help="seed of the query sample (default 0)")
    parser.add_argument("--num-results", type=int, default=100, help="first-stage depth of the system (default 100)")
    parser.add_argument("--force", action="store_true", help="replace --out when it is an earlier material file")
    parser.add_argument("--absolute-paths", action="store_true",
                        help="write absolute paths in the manifest (the working folder, a folder dataset; default: "
                             "relative to the folder of --out)")


def run(args: argparse.Namespace) -> int:
    import sys

    from ...analysis.manifest import PathRecord
    from ...audit.request import default_dataset
    from ..console import warnings_shown

    started = time.perf_counter()
    with claim_out(args.out, args.force) as claim:  # locked and checked before any work
        # the dependencies' deprecations are not the user's business
        with warnings_shown("seme material", ("ignore", DeprecationWarning), ("ignore", FutureWarning)):
            material = build_material(args.dataset or default_dataset(), args.system, k=args.k, data=args.data,
                                      text=args.text, model=args.model, positive=args.positive,
                                      queries=_queries_argument(args.queries), seed=args.seed,
                                      num_results=args.num_results, command=list(sys.argv),
                                      paths=PathRecord(claim.path.parent, args.absolute_paths))
        claim.write(material_text(material))
    out = claim.path
    excluded = material["manifest"]["queries"]["excluded"]
    print(f"wrote {out}: {len(material['queries'])} queries x {len(material['conditions'])} orderings of k = "
          f"{material['k']} documents ({material['dataset']}, {material['system']}) in "
          f"{time.perf_counter() - started:.1f} s" + (f"; {len(excluded)} queries left out (see manifest.queries."
                                                       "excluded)" if excluded else ""))
    return 0


def _queries_argument(values: Optional[Sequence[str]]):
    """``--queries``: one integer -> a count; otherwise query ids (commas separate ids too; '5,' is id 5)."""
    if values is None:
        return None
    if len(values) == 1 and values[0].strip().isdigit():
        return int(values[0])
    ids = [part.strip() for value in values for part in value.split(",") if part.strip()]
    if not ids:
        raise ValueError("--queries: give a number of queries or query ids")
    return ids


def check_out(path: str | os.PathLike, force: bool) -> Path:
    """``path`` (user folder expanded) once the material may be written there: new (in an existing folder), or an
    earlier material file with ``force``; else a clear error (:func:`pairmeasures._atomic.check_file_replaceable`)."""
    from ..._atomic import check_file_replaceable

    return check_file_replaceable(path, force=force, what="material file", json_format=FORMAT)


def claim_out(path: str | os.PathLike, force: bool) -> ContextManager["FileClaim"]:
    """``path`` claimed for the material (:func:`pairmeasures._atomic.output_file`): checked as :func:`check_out`
    does and locked until the block ends."""
    from ..._atomic import output_file

    return output_file(path, force=force, what="material file", json_format=FORMAT)


def material_text(material: dict) -> str:
    """``material`` (from :func:`build_material`) as the JSON text of a material file."""
    if not isinstance(material, dict) or material.get("format") != FORMAT:
        raise ValueError(f"write_material takes what build_material returns (a dict with \"format\": \"{FORMAT}\")")
    return json.dumps(material, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def write_material(material: dict, path: str | os.PathLike, force: bool = False) -> None:
    """Write ``material`` (from :func:`build_material`) to ``path`` as UTF-8 JSON, atomically; an existing file is
    replaced only with ``force`` and only when it is an earlier material file."""
    text = material_text(material)
    with claim_out(path, force) as claim:
        claim.write(text)


def _shortened(text: str, limit: int) -> str:
    """``text`` on one line, cut at the last word boundary before ``limit`` characters, with an ellipsis."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[:limit - 1]
    return (cut[:cut.rfind(" ")] if " " in cut else cut).rstrip(" ,;:.") + "…"


def perspective_statements(query: str, positive: str, negative: str) -> dict:
    """A statement of each perspective of ``query``, worded from the labels: for agree/disagree labels (pro/con,
    support/undermine) the claim and its negation, or "Yes"/"No" to a question; other labels (p1/p2) name the
    perspective by its label."""
    from ...sideinfo.polarity import negation_anchors

    query = " ".join(query.split())
    question = query.endswith("?")
    claim, negation = negation_anchors({"q": query.rstrip(".")})["q"]

    def statement(label: str) -> str:
        if label.lower() in _AGREE:
            return f"Yes: {query}" if question else f"{claim}."
        if label.lower() in _DISAGREE:
            return f"No: {query}" if question else f"{negation}."
        return f"Perspective {label!r} on: {query}"

    return {"positive": {"label": positive, "statement": statement(positive)},
            "negative": {"label": negative, "statement": statement(negative)}}


def _selected(profile, eligible: list, queries, seed: int) -> list:
    """The queries to make material for: all eligible ones, ``queries`` of them drawn with ``seed`` (in dataset
    order), or the ids given (each checked)."""
    if queries is None:
        return eligible
    if isinstance(queries, int) and not isinstance(queries, bool):
        if queries < 1:
            raise ValueError(f"--queries must be a positive number of queries or query ids, got {queries}")
        if queries > len(eligible):
            raise ValueError(f"--queries {queries}: {profile.name} has {len(eligible)} queries with documents of both "
                             "perspectives labelled; ask for at most that many")
        chosen = set(random.Random(seed).sample(eligible, queries))
        return [q for q in eligible if q in chosen]
    ids = [str(q) for q in queries]
    possible = set(eligible)
    for qid in ids:
        if qid not in profile.queries:
            import difflib

            close = difflib.get_close_matches(qid, list(profile.queries), n=1)
            raise ValueError(f"--queries: {profile.name} has no query {qid!r}" + (f"; did you mean {close[0]!r}?" if close
                             else f"; its query ids are e.g. {', '.join(list(profile.queries)[:5])}"))
        if qid not in possible:
            raise ValueError(f"--queries: query {qid!r} of {profile.name} lacks labelled documents of both perspectives, "
                             "so its polarity axis cannot be fitted")
    return list(dict.fromkeys(ids))


def _retrieve(pipeline, topics: "pd.DataFrame", k: int) -> "pd.DataFrame":
    """The system's top ``k`` of each topic (``qid, docno, rank``), retrieved in batches under a progress bar."""
    import pandas as pd
    import pyterrier as pt
    from tqdm.auto import tqdm

    parts = []
    with tqdm(total=len(topics), desc="retrieving", unit="query", leave=False) as bar:
        for start in range(0, len(topics), BATCH):
            batch = topics.iloc[start:start + BATCH]
            result = pipeline.transform(batch)
            if "rank" not in result.columns:
                result = pt.model.add_ranks(result)
            parts.append(result[["qid", "docno", "score", "rank"]])
            bar.update(len(batch))
    run = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["qid", "docno", "score", "rank"])
    run = run.astype({"qid": str, "docno": str}).sort_values(["qid", "rank"], kind="stable")
    return run[run["rank"] < k].reset_index(drop=True)


def _signed_extremes(scored: "pd.DataFrame") -> dict:
    """``most_positive`` and ``most_negative``: per query, :func:`~pairmeasures.math.reorder.most_signed_order` toward +1 and -1 of its
    documents, starting from the system's ordering."""
    import numpy as np
    from tqdm.auto import tqdm

    from ...math.reorder import most_signed_order

    if not len(scored):
        return {"most_positive": scored, "most_negative": scored}
    polarity = scored["polarity"].to_numpy(dtype=np.float64)
    rows: dict = {"most_positive": [], "most_negative": []}
    start = 0
    lengths = scored.groupby("qid", sort=False)["qid"].size().to_numpy()
    for length in tqdm(lengths, desc="most biased orderings", unit="query", leave=False):  # one search per query
        scores = polarity[start:start + length]
        rows["most_positive"].append(start + most_signed_order(scores, +1))
        rows["most_negative"].append(start + most_signed_order(scores, -1))
        start += length
    return {name: scored.iloc[np.concatenate(parts)].reset_index(drop=True) for name, parts in rows.items()}


def _measured(frame: "pd.DataFrame", qrels: "pd.DataFrame", k: int) -> dict:
    """``{qid: (mu_duo, duo)}`` of each query's ordering in ``frame`` (rows in shown order): ``Duo(signed=True)@k``
    and ``Duo@k`` through ir_measures, against the qrels of ``frame``'s queries alone; a query with nothing to measure
    (all polarities equal) gets NaN, without a warning: :func:`build_material` leaves it out and says so once."""
    import ir_measures
    import numpy as np

    from ...measures import DegenerateQueryWarning, Duo

    lengths = frame.groupby("qid", sort=False)["qid"].transform("size").to_numpy()
    position = frame.groupby("qid", sort=False).cumcount().to_numpy()
    run = ir_names(frame.assign(score=(lengths - position).astype(np.float64)))
    signed, plain = Duo(signed=True, degenerate="exclude") @ k, Duo(degenerate="exclude") @ k
    values: dict = {}
    qrels = qrels[qrels["query_id"].isin(set(run["query_id"]))]  # the other queries are not in the study
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateQueryWarning)
        for metric in ir_measures.iter_calc([signed, plain], qrels, run[["query_id", "doc_id", "score", "polarity"]]):
            values.setdefault(str(metric.query_id), {})[metric.measure] = float(metric.value)
    return {q: (v.get(signed, float("nan")), v.get(plain, float("nan"))) for q, v in values.items()}


def build_material(source: str | os.PathLike, system: str, *, k: int = 10, data: Optional[str | os.PathLike] = None,
                   text: Optional[str] = None, model: Optional[str] = None, positive: Optional[str] = None,
                   queries=None, seed: int = 0, num_results: int = 100, command: Optional[list] = None,
                   paths=None) -> dict:
    """Study material of ``system`` (a spec, e.g. ``bm25>>dense``) over ``source`` (a dataset id or BEIR folder
    with two labelled perspectives): a dict in the material format (docs/seme.md, section 1).

    ``queries``: ``None`` (every query with both perspectives labelled), a number drawn with ``seed``, or query
    ids. Queries whose top ``k`` cannot be measured (fewer than 3 documents, no fitted axis, all polarities equal)
    are left out with their reason in ``manifest["queries"]["excluded"]``, and a warning says how many. Every
    input is checked before anything is retrieved or embedded. ``paths``: how the manifest writes the paths of this
    machine (:class:`~pairmeasures.analysis.manifest.PathRecord`; default absolute, as no file is known).
    """
    import math

    import numpy as np
    import pandas as pd

    from ...analysis.manifest import Manifest, PathRecord
    from ...compute.embed import Embedder
    from ...datasets.profile import load_profile, polarity_model
    from ...pipelines.duogreedy import BiasedOrdering
    from ...pipelines.polarity import PolarityScorer
    from ...pipelines.specs import System, SystemContext
    from ...sideinfo.polarity import default_positive

    manifest = Manifest(command=list(command) if command is not None else Manifest().command,
                        paths=paths if paths is not None else PathRecord())
    started = time.perf_counter()
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 3 <= k <= MAX_K:
        raise ValueError(f"-k must be an integer from 3 (DUO needs 3 documents to order) to {MAX_K} (the most biased "
                         f"orderings are searched exhaustively), got {k!r}")
    if isinstance(num_results, bool) or not isinstance(num_results, (int, np.integer)) or num_results < k:
        raise ValueError(f"--num-results must be an integer of at least k = {k}, got {num_results!r}")
    parsed = System.parse(system)
    parsed.check()
    with manifest.step("dataset"):
        profile = load_profile(source, data, text)
    if profile.labels is None:
        raise ValueError(f"{profile.name} has no gold labels (labels.tsv), so no perspectives to bias toward; seme "
                         "material needs a dataset whose documents are labelled with two perspectives (e.g. pro/con)")
    labels = sorted(set(profile.labels["group"]))
    if not profile.perspectives:
        raise ValueError(f"{profile.name} labels {len(labels)} groups ({', '.join(map(repr, labels))}), not two "
                         "perspectives; seme material needs two (e.g. pro/con): relabel labels.tsv")
    if positive is not None and positive not in labels:
        raise ValueError(f"--positive {positive!r} is not a label of {profile.name}; its labels: {', '.join(labels)}")
    positive = positive if positive is not None else str(default_positive(labels))
    negative = next(label for label in labels if label != positive)
    both = profile.labels.groupby("query_id")["group"].nunique()
    eligible = [q for q in profile.queries if both.get(q, 0) == 2]
    if not eligible:
        raise ValueError(f"{profile.name}: no query has labelled documents of both perspectives")
    selected = _selected(profile, eligible, queries, seed)

    embedder = Embedder(model)
    polarity = polarity_model(profile, positive, embedder)
    context = SystemContext(source=profile.corpus, data=data, text=profile.text, polarity_model=polarity.model,
                            model=model, num_results=num_results, k=k)
    pipeline = parsed.build(context)
    topics = pd.DataFrame({"qid": selected, "query": [profile.queries[q] for q in selected]})
    with manifest.step("retrieve"):
        top = _retrieve(pipeline, topics, k)
    unknown = profile.corpus.missing(top["docno"])
    if unknown:
        raise ValueError(f"system {system!r} ranks {len(unknown)} documents that are not in {profile.name}, e.g. "
                         f"{unknown[0]!r}; it must rank this dataset's documents")
    excluded: dict = {}
    counts = top.groupby("qid")["docno"].size()
    for qid in selected:
        if counts.get(qid, 0) < 3:
            excluded[qid] = f"the system retrieved {counts.get(qid, 0)} document(s); DUO needs at least 3"
    top = top[~top["qid"].isin(list(excluded))].reset_index(drop=True)
    with manifest.step("polarity"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # queries without an axis: recorded below
        scored = PolarityScorer(polarity.model, errors="skip").transform(top.assign(text=profile.texts(top["docno"])))
        for qid, reason in polarity.model.skipped.items():
            excluded.setdefault(qid, reason)
        scored = scored[~scored["qid"].isin(list(excluded))].reset_index(drop=True)
    with manifest.step("orderings"):
        orderings = {**_signed_extremes(scored), "least": BiasedOrdering("least").transform(scored), "system": scored}
    with manifest.step("measure"):
        values = {name: _measured(frame, profile.qrels, k) for name, frame in orderings.items()}
    for qid in dict.fromkeys(scored["qid"]):
        if any(math.isnan(values[name].get(qid, (math.nan,))[0]) for name in CONDITIONS):
            excluded[qid] = "every ordering of its documents has the same DUO (e.g. all polarities equal)"
    one_sided = {qid: "positive" if values["most_positive"][qid][0] <= 0 else "negative"
                 for qid in dict.fromkeys(scored["qid"]) if qid not in excluded
                 and (values["most_positive"][qid][0] <= 0 or values["most_negative"][qid][0] >= 0)}
    if one_sided:
        warnings.warn(f"seme material: {len(one_sided)} queries have no ordering that leans toward one of the "
                      f"perspectives (e.g. {next(iter(one_sided))!r} toward its {next(iter(one_sided.values()))} one: "
                      "too few of its top k documents are on that side); manifest.queries.one_sided lists them",
                      RuntimeWarning, stacklevel=2)
    if excluded:
        warnings.warn(f"seme material: {len(excluded)} of {len(selected)} queries left out (e.g. {next(iter(excluded))!r}: "
                      f"{next(iter(excluded.values()))})", RuntimeWarning, stacklevel=2)
    kept = [q for q in selected if q not in excluded]
    if not kept:
        raise ValueError(f"no query of {profile.name} could be measured with {system!r} at k = {k}; e.g. "
                         f"{next(iter(excluded))!r}: {next(iter(excluded.values()))}")
    gold = dict(zip(zip(profile.labels["query_id"], profile.labels["doc_id"]), profile.labels["group"]))
    lists: dict = {name: dict(iter(frame.groupby("qid", sort=False))) for name, frame in orderings.items()}
    shown = list(dict.fromkeys(scored["docno"]))
    texts = dict(zip(shown, profile.texts(shown)))
    bodies = {d: body or texts[d] for d, body in zip(shown, profile.bodies(shown))}
    titles = {d: title or bodies[d] for d, title in zip(shown, profile.titles(shown))}

    def document(qid: str, doc_id: str, value: float) -> dict:
        body = bodies[doc_id]
        return {"doc_id": doc_id, "title": _shortened(titles[doc_id], TITLE_CHARS),
                "snippet": _shortened(body, SNIPPET_CHARS), "text": body, "polarity": float(value),
                "label": gold.get((qid, doc_id))}

    pages = [{"query_id": qid, "query": profile.queries[qid],
              "perspectives": perspective_statements(profile.queries[qid], positive, negative),
              "orderings": {name: {"mu_duo": values[name][qid][0] + 0.0, "duo": values[name][qid][1],
                                   "documents": [document(qid, d, p) for d, p in zip(lists[name][qid]["docno"],
                                                                                      lists[name][qid]["polarity"])]}
                            for name in CONDITIONS}} for qid in kept]
    manifest.timings["total"] = round(time.perf_counter() - started, 3)
    dataset = manifest.paths(profile.name) if profile.corpus.is_folder else profile.name
    manifest.record.update({
        "dataset": {"id": dataset, "source": manifest.paths(profile.source) if profile.corpus.is_folder else profile.source,
                    "text": profile.text, "files_sha256": profile.files},
        "system": {"spec": system, "canonical": parsed.canonical, "num_results": num_results},
        "polarity": {"source": polarity.source, "positive": positive, "negative": negative,
                     "embedding_model": {"name": embedder.model_name, "key": embedder.key}},
        "measures": {"mu_duo": f"Duo(signed=True)@{k}", "duo": f"Duo@{k}"},
        "orderings": {"most_positive": "the system's top k in an ordering of the largest signed DUO found (window "
                                       "orderings and the system's, improved by swaps)",
                      "most_negative": "the same, of the smallest signed DUO",
                      "least": "BiasedOrdering('least') of the system's top k (DUO = 0)", "system": "the system's top k"},
        "queries": {"requested": queries if queries is None or isinstance(queries, int) else [str(q) for q in queries],
                    "seed": seed, "eligible": len(eligible), "selected": len(selected), "kept": len(kept),
                    "excluded": excluded, "one_sided": one_sided},
    })
    record = manifest.as_dict()
    record.pop("cache", None)
    return {"format": FORMAT, "version": VERSION, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "dataset": dataset, "system": system, "k": int(k), "conditions": list(CONDITIONS), "manifest": record,
            "queries": pages}

