"""Training triples for IBBR: (query, one clicked passage, K non-clicked passages, group of the clicked one).

Two sources:

- a **BEIR-layout folder** (:func:`beir_triples`): one data pair per (query, relevant passage) of
  ``qrels/train.tsv`` (``qrels/test.tsv`` when there is no train file); the K negatives are the passages PISA
  BM25 (:func:`pairmeasures.bm25`) ranks highest for the query among those not judged relevant to it;
- an **ir_datasets id with docpairs** (:func:`docpairs_triples`), such as MS MARCO's training triples
  (``msmarco-passage/train/triples-small``, where the user has them): the negatives of each (query, positive)
  are the ``doc_id_b`` of its first K docpairs, in file order.

The group of a data pair is IBBR's :math:`d(p) \\in \\{-1, 0, 1\\}` of its clicked passage: ``labels='terms'``
takes the sign of the Eq. 1 gender magnitude of its text, computed by the ``PRF`` measure's own labelling
(:meth:`pairmeasures.measures.prf.PRFMeasure.bias_labels`); ``labels='group'`` reads the folder's ``labels.tsv``
(``male``/``female``/``neutral``, or -1/0/1). Held-out query ids never enter the triples.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Collection, Optional, Sequence

import numpy as np

from ..sideinfo import InputWarning

if TYPE_CHECKING:
    import pandas as pd

    from ..analysis.manifest import PathRecord

__all__ = ["TrainingTriples", "beir_triples", "docpairs_triples", "load_triples", "passage_groups",
           "LABEL_SOURCES"]

#: Where the group of a clicked passage comes from.
LABEL_SOURCES = ("terms", "group")
#: The entries of a source that are paths of this machine (absolute in :attr:`TrainingTriples.source`).
_SOURCE_PATHS = ("path", "negatives_run")


@dataclass(frozen=True)
class TrainingTriples:
    """Data pairs in columns, one row per (query, clicked passage); ``negatives`` rows hold K texts each."""

    query_ids: list[str]
    queries: list[str]
    positive_ids: list[str]
    positives: list[str]
    negative_ids: list[list[str]]
    negatives: list[list[str]]
    groups: list[int]
    source: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.queries)

    def dataset(self):
        """The ``datasets.Dataset`` that :class:`pairmeasures.train.IBBRLoss` trains on (:func:`ibbr_dataset`)."""
        from .ibbr import ibbr_dataset

        return ibbr_dataset(self.queries, self.positives, self.negatives, self.groups)

    def summary(self, paths: Optional["PathRecord"] = None) -> dict:
        """What ``training.json`` records about the data: source, counts, and data pairs per group; ``paths``: how
        it writes the source's files (the folder, a negatives run; default absolute)."""
        groups = np.asarray(self.groups)
        source = dict(self.source)
        if paths is not None:
            source.update({name: paths(source[name]) for name in _SOURCE_PATHS if source.get(name) is not None})
        return {**source, "queries": len(set(self.query_ids)), "pairs": len(self),
                "negatives": len(self.negatives[0]) if self.negatives else 0,
                "groups": {"male": int((groups == 1).sum()), "female": int((groups == -1).sum()),
                           "neutral": int((groups == 0).sum())}}


def passage_groups(texts: Sequence[str], *, variant: str = "ibbr", terms: str = "gender") -> np.ndarray:
    """IBBR's :math:`d(p)` of each text (1 male, -1 female, 0 neutral), by the ``PRF`` measure's labelling:
    the sign of the ``variant`` gender magnitude (``'ibbr'``: Eq. 1) over the ``terms`` list."""
    from ..measures.prf import PRF, PRFMeasure
    from ..measures.ranked import RankedLists

    measure = PRF(variant=variant, terms=terms)
    assert isinstance(measure, PRFMeasure)
    n = len(texts)
    lists = RankedLists(query_ids=np.array(["passages"], dtype=object), offsets=np.array([0, n]),
                        doc_ids=np.arange(n).astype(str).astype(object), scores=np.zeros(n), ranks=np.arange(n),
                        relevance=np.ones(n), columns={"text": np.asarray(list(texts), dtype=object)})
    return measure.bias_labels(lists)


def _gold_group(value: str, where: str) -> int:
    from .ibbr import GROUP_LABELS

    key = str(value).strip().lower()
    if key in GROUP_LABELS:
        return GROUP_LABELS[key]
    if key in ("-1", "0", "1"):
        return int(key)
    raise ValueError(f"{where}: group {value!r} is not one of male, female, neutral (or 1, -1, 0); use "
                     "--labels terms to label passages by their gender terms")


def _check_labels(labels: str) -> None:
    if labels not in LABEL_SOURCES:
        raise ValueError(f"labels must be one of {LABEL_SOURCES}, got {labels!r}")


def beir_triples(folder: str | os.PathLike, *, negatives: int = 4, candidates: int = 100, text: str = "text",
                 labels: str = "terms", held_out: Collection[str] = (), variant: str = "ibbr",
                 negatives_run: Optional[str | os.PathLike] = None) -> TrainingTriples:
    """Data pairs from a BEIR-layout folder, the K negatives mined with PISA BM25 over its corpus.

    Each relevant (score >= 1) passage of a query in ``qrels/train.tsv`` (else ``qrels/test.tsv``) makes one data
    pair; its negatives are the top ``negatives`` of the query's BM25 ranking (depth ``candidates``) that are not
    judged relevant to it, in rank order. ``negatives_run`` (a TREC or TSV run file) mines them from that run's
    ranking instead (any retriever's; its top ``candidates`` by score, ties by document id descending as in
    trec_eval). A query whose judged passages are all non-relevant is an error naming it; a query with fewer than K
    such candidates is skipped, with a warning (:class:`~pairmeasures.sideinfo.InputWarning`) and its id in
    ``source["skipped_queries"]`` (an error when every query is); ``held_out`` query ids are left out first.
    """
    import pandas as pd

    from ..io.beir import QRELS_HEADER, read_beir, read_qrels

    _check_labels(labels)
    if negatives < 1:
        raise ValueError(f"--negatives must be at least 1, got {negatives}")
    if candidates < negatives:
        raise ValueError(f"the BM25 depth ({candidates}) must be at least --negatives ({negatives})")
    root = Path(folder).expanduser()
    data = read_beir(root)
    qrels_file = "qrels/test.tsv"
    qrels = data.qrels
    if (root / "qrels" / "train.tsv").is_file():
        qrels_file = "qrels/train.tsv"
        rows = read_qrels(root / qrels_file, data.queries, data.corpus)
        qrels = pd.DataFrame([row[1:] for row in rows], columns=["query_id", "doc_id", "relevance"])
    unknown = sorted(set(held_out) - set(data.queries))
    if unknown:
        raise ValueError(f"{len(unknown)} held-out query ids are not in {root / 'queries.jsonl'}: "
                         f"{', '.join(unknown[:5])}")
    qrels = qrels[~qrels["query_id"].isin(set(held_out))]
    if qrels.empty:
        raise ValueError(f"{root / qrels_file} judges no query outside the held-out ones: nothing to train on "
                         f"(expected columns {' '.join(QRELS_HEADER)})")
    relevant = qrels[qrels["relevance"] >= 1]
    without = sorted(set(qrels["query_id"]) - set(relevant["query_id"]))
    if without:
        raise ValueError(f"{root / qrels_file}: query {without[0]!r} has no positive (no passage with score >= 1)"
                         + (f", nor do {len(without) - 1} more" if len(without) > 1 else "")
                         + ": judge a relevant passage for it or hold it out")
    query_ids = list(dict.fromkeys(relevant["query_id"]))
    ranked = _candidate_ranking(root, query_ids, data, candidates, text, negatives_run)
    judged_relevant = set(zip(relevant["query_id"], relevant["doc_id"]))
    mined: dict[str, list[str]] = {q: [] for q in query_ids}
    for qid, docno in zip(ranked["qid"], ranked["docno"]):
        if (qid, docno) not in judged_relevant and len(mined[qid]) < negatives:
            mined[qid].append(docno)
    short = [(q, len(mined[q])) for q in query_ids if len(mined[q]) < negatives]
    retriever = "BM25" if negatives_run is None else f"{negatives_run}'s"
    reason = f"fewer than --negatives {negatives} {retriever} candidates (of the top {candidates}) not judged relevant"
    if len(short) == len(query_ids):
        query, found = short[0]
        raise ValueError(f"query {query!r} has {found} {retriever} candidates (of the top {candidates}) that are not "
                         f"relevant, fewer than --negatives {negatives}"
                         + (f" (and {len(short) - 1} more queries: all of them)" if len(short) > 1 else "")
                         + ": lower --negatives or retrieve more passages")
    skipped = [q for q, _ in short]
    if skipped:  # e.g. Grep-BiasIR: BM25 finds only the query's own relevant passages
        warnings.warn(f"{len(skipped)} of {len(query_ids)} queries skipped: {reason} (e.g. {skipped[0]!r}); "
                      "training.json lists them", InputWarning, stacklevel=2)
        relevant = relevant[~relevant["query_id"].isin(set(skipped))]
    gold = {}
    if labels == "group":
        if data.labels is None:
            raise ValueError(f"--labels group reads {root / 'labels.tsv'}, which does not exist: use --labels terms")
        gold = {(q, d): g for q, d, g in zip(data.labels["query_id"], data.labels["doc_id"], data.labels["group"])}
    pairs = list(zip(relevant["query_id"], relevant["doc_id"]))
    if labels == "group":
        missing = [pair for pair in pairs if pair not in gold]
        if missing:
            raise ValueError(f"{root / 'labels.tsv'} has no group for the relevant passage {missing[0][1]!r} of query "
                             f"{missing[0][0]!r}: label it or use --labels terms")
    positives = [data.document_text(d, text) for _, d in pairs]
    groups = ([_gold_group(gold[pair], f"{root / 'labels.tsv'}, query {pair[0]!r}, passage {pair[1]!r}")
               for pair in pairs] if labels == "group" else passage_groups(positives, variant=variant).tolist())
    return TrainingTriples(
        query_ids=[q for q, _ in pairs], queries=[data.queries[q]["text"] for q, _ in pairs],
        positive_ids=[d for _, d in pairs], positives=positives,
        negative_ids=[list(mined[q]) for q, _ in pairs],
        negatives=[[data.document_text(d, text) for d in mined[q]] for q, _ in pairs], groups=groups,
        source={"kind": "beir", "path": str(root.resolve()), "qrels": qrels_file, "text": text,
                "negatives_from": (f"PISA BM25 top {candidates}, not judged relevant" if negatives_run is None else
                                   f"the run file negatives_run, top {candidates}, not judged relevant"),
                "negatives_run": None if negatives_run is None else str(Path(negatives_run).expanduser().resolve()),
                "labels": labels,
                "variant": variant if labels == "terms" else None,
                "skipped_queries": {"count": len(skipped), "reason": reason, "ids": skipped}})


def _candidate_ranking(root: Path, query_ids: Sequence[str], data, candidates: int, text: str,
                       negatives_run: Optional[str | os.PathLike]) -> "pd.DataFrame":
    """``qid, docno`` of each query's top ``candidates``, best first: PISA BM25 over the folder, or the run file."""
    import pandas as pd

    if negatives_run is None:
        from ..pipelines.retrieval import bm25

        topics = pd.DataFrame({"qid": list(query_ids), "query": [data.queries[q]["text"] for q in query_ids]})
        return bm25(root, num_results=candidates, text=text)(topics).sort_values(["qid", "rank"])
    from ..io.runfiles import read_run_file

    run = read_run_file(str(Path(negatives_run).expanduser()))
    unknown = sorted(set(run["doc_id"]) - set(data.corpus))
    if unknown:
        raise ValueError(f"--negatives-run {negatives_run}: {len(unknown)} document ids are not in "
                         f"{root / 'corpus.jsonl'}, e.g. {unknown[0]!r}: the run must rank this folder's corpus")
    run = run[run["query_id"].isin(set(query_ids))]
    missing = [q for q in query_ids if q not in set(run["query_id"])]
    if missing:
        raise ValueError(f"--negatives-run {negatives_run} ranks nothing for query {missing[0]!r}"
                         + (f" (nor for {len(missing) - 1} more training queries)" if len(missing) > 1 else "")
                         + ": give a run of every training query, or hold the query out")
    run = run.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False], kind="stable")
    run = run.groupby("query_id", sort=False).head(candidates)
    return pd.DataFrame({"qid": run["query_id"].to_numpy(), "docno": run["doc_id"].to_numpy()})


def docpairs_triples(dataset_id: str, *, negatives: int = 4, held_out: Collection[str] = (),
                     limit: Optional[int] = None, variant: str = "ibbr") -> TrainingTriples:
    """Data pairs from an ir_datasets dataset with docpairs (query, positive ``doc_id_a``, negative ``doc_id_b``).

    The negatives of a (query, positive) are the ``doc_id_b`` of its first ``negatives`` docpairs; pairs with
    fewer are dropped (counted in the source). ``limit`` stops after that many complete data pairs (MS MARCO's
    triples are tens of millions). Groups: IBBR's text labelling of the positive passage.
    """
    import ir_datasets

    if negatives < 1:
        raise ValueError(f"--negatives must be at least 1, got {negatives}")
    try:
        dataset = ir_datasets.load(dataset_id.removeprefix("irds:"))
    except KeyError:
        raise ValueError(f"{dataset_id!r} is neither a BEIR-layout folder nor an ir_datasets id") from None
    if not dataset.has_docpairs():
        raise ValueError(f"ir_datasets {dataset_id!r} has no docpairs (training triples): give a dataset such as "
                         "'msmarco-passage/train/triples-small', or a BEIR-layout folder")
    held = set(held_out)
    collected: dict[tuple[str, str], list[str]] = {}
    complete: list[tuple[str, str]] = []
    for pair in dataset.docpairs_iter():
        if pair.query_id in held:
            continue
        key = (pair.query_id, pair.doc_id_a)
        bucket = collected.setdefault(key, [])
        if len(bucket) < negatives and pair.doc_id_b != pair.doc_id_a and pair.doc_id_b not in bucket:
            bucket.append(pair.doc_id_b)
            if len(bucket) == negatives:
                complete.append(key)
                if limit is not None and len(complete) >= limit:
                    break
    if not complete:
        raise ValueError(f"no (query, positive) of {dataset_id!r} has {negatives} negatives in its docpairs: "
                         "lower --negatives")
    queries = {q.query_id: q.text for q in dataset.queries_iter()}
    store = dataset.docs_store()
    wanted = {d for key in complete for d in (key[1], *collected[key])}
    texts = {doc.doc_id: doc.text for doc in store.get_many_iter(wanted)}
    lost = sorted(wanted - set(texts))
    if lost:
        raise ValueError(f"{dataset_id!r}: docpairs name passage {lost[0]!r}, which its documents lack")
    positives = [texts[d] for _, d in complete]
    return TrainingTriples(
        query_ids=[q for q, _ in complete], queries=[queries[q] for q, _ in complete],
        positive_ids=[d for _, d in complete], positives=positives,
        negative_ids=[list(collected[key]) for key in complete],
        negatives=[[texts[d] for d in collected[key]] for key in complete],
        groups=passage_groups(positives, variant=variant).tolist(),
        source={"kind": "ir_datasets", "id": dataset_id, "negatives_from": "docpairs, first K per (query, positive)",
                "labels": "terms", "variant": variant, "incomplete_pairs": len(collected) - len(complete),
                "limit": limit})


def load_triples(source: str | os.PathLike, *, negatives: int = 4, candidates: int = 100, text: str = "text",
                 labels: str = "terms", held_out: Collection[str] = (), limit: Optional[int] = None,
                 variant: str = "ibbr", negatives_run: Optional[str | os.PathLike] = None) -> TrainingTriples:
    """:func:`beir_triples` for a folder, else :func:`docpairs_triples` for an ir_datasets id."""
    path = Path(source).expanduser()
    if path.is_dir():
        if not (path / "qrels").is_dir():
            raise ValueError(f"{str(path)!r} has no qrels folder: a BEIR-layout folder needs qrels/train.tsv or "
                             "qrels/test.tsv to know each query's positive")
        triples = beir_triples(path, negatives=negatives, candidates=candidates, text=text, labels=labels,
                               held_out=held_out, variant=variant, negatives_run=negatives_run)
        return triples if limit is None else _first(triples, limit)
    if negatives_run is not None:
        raise ValueError("--negatives-run mines negatives for a BEIR-layout folder; ir_datasets docpairs bring "
                         "their own negatives")
    if labels != "terms":
        raise ValueError("--labels group needs a BEIR-layout folder with labels.tsv; ir_datasets docpairs are "
                         "labelled by their gender terms")
    return docpairs_triples(str(source), negatives=negatives, held_out=held_out, limit=limit, variant=variant)


def _first(triples: TrainingTriples, limit: int) -> TrainingTriples:
    return TrainingTriples(triples.query_ids[:limit], triples.queries[:limit], triples.positive_ids[:limit],
                           triples.positives[:limit], triples.negative_ids[:limit], triples.negatives[:limit],
                           triples.groups[:limit], {**triples.source, "limit": limit})
