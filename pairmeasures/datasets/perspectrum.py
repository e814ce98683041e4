"""PERSPECTRUM (Chen et al., "Seeing Things from a Different Angle: Discovering Diverse Perspectives
about Claims", NAACL 2019) as ``pair/perspectrum``: claims are queries, perspective sentences are
documents, the stance of each (claim, perspective) is its gold label.

Its records, the conversion of ``CogComp/perspectrum`` into the mirror folder ``perspectrum/``,
the builder of records from that folder, its resource and its :class:`DatasetSpec`.
"""

# No ``from __future__ import annotations`` in record modules: PyTerrier's text loader (``pt.text.get_text``)
# keeps only fields whose annotation is the type ``str``.

import json
from pathlib import Path
from typing import NamedTuple, Sequence

from ..io.beir import read_records
from ._convert import clean_text, field, load_json, write_beir, write_jsonl, write_tsv
from ._loaders import DatasetSpec, Tables, folder_labels, folder_qrels, strings
from ._records import Query
from ._resources import BEIR_FILES, UNKNOWN, DatasetError, Location, Resource, github_file

#: The commit of the source repository the files of ``shared/data`` were taken from.
PERSPECTRUM_COMMIT = "b42c27b85f20"


class PerspectrumDoc(NamedTuple):
    """A PERSPECTRUM perspective sentence; its stance depends on the claim (see ``labels_iter()``)."""

    doc_id: str
    text: str
    source: str


class PerspectrumQueryInfo(NamedTuple):
    """A PERSPECTRUM claim's split (train/dev/test), source site and topics (may be empty)."""

    query_id: str
    split: str
    source: str
    topics: tuple


def convert_perspectrum(sources: Path, target: Path) -> None:
    """PERSPECTRUM v1.0: claims are queries, perspectives attached to a claim are documents."""
    claims_path = sources / "perspectrum_with_answers_v1.0.json"
    pool_path = sources / "perspective_pool_v1.0.json"
    pool = {str(field(pool_path, p, "pId", "a perspective")): p for p in load_json(pool_path)}
    split = {str(k): v for k, v in load_json(sources / "dataset_split_v1.0.json").items()}
    topics_path = sources / "topic.json"
    topics = {str(field(topics_path, t, "claim_id", "an entry")): t.get("topics", []) for t in load_json(topics_path)}
    corpus: dict[str, dict] = {}
    pairs: dict[tuple[str, str], dict] = {}
    queries, clusters = [], []
    for claim in load_json(claims_path):
        claim_id = str(field(claims_path, claim, "cId", "a claim"))
        for index, cluster in enumerate(field(claims_path, claim, "perspectives", f"claim {claim_id}")):
            cluster_id = f"{claim_id}_{index}"
            group = str(field(claims_path, cluster, "stance_label_3", f"cluster {cluster_id}")).lower()
            members = []
            for pid in map(str, field(claims_path, cluster, "pids", f"cluster {cluster_id}")):
                if pid not in pool:
                    raise DatasetError(f"{pool_path}: perspective {pid} of claim {claim_id} is missing")
                text = clean_text(pool[pid]["text"])
                if not text:
                    continue
                document = corpus.setdefault(pid, {"_id": pid, "title": "", "text": text,
                                                   "source": pool[pid].get("source", ""), "labels": []})
                if (claim_id, pid) in pairs:
                    if pairs[claim_id, pid]["group"] != group:
                        raise DatasetError(f"{claims_path}: perspective {pid} is in clusters of claim {claim_id} "
                                           "with different stances")
                    pairs[claim_id, pid]["cluster_ids"].append(cluster_id)
                else:
                    pairs[claim_id, pid] = {"query_id": claim_id, "group": group, "cluster_ids": [cluster_id]}
                    document["labels"].append(pairs[claim_id, pid])
                members.append(pid)
            if members:
                clusters.append({"_id": cluster_id, "query_id": claim_id, "group": group,
                                 "stance_label_5": str(cluster.get("stance_label_5", "")).lower(),
                                 "voter_counts": cluster.get("voter_counts", []), "corpus_ids": members})
        queries.append({"_id": claim_id, "text": clean_text(claim["text"]), "split": split.get(claim_id, ""),
                        "source": claim.get("source", ""), "topics": topics.get(claim_id, [])})
    judged = {claim_id for claim_id, _ in pairs}
    write_beir(target, list(corpus.values()), queries, [(q, d, 1) for q, d in pairs],
               [(q, d, label["group"]) for (q, d), label in pairs.items()])
    write_jsonl(target / "clusters.jsonl", clusters)
    write_tsv(target / "perspectrum-topics.tsv", ("query-id", "topics"),
              ((q["_id"], json.dumps(q["topics"], ensure_ascii=False)) for q in queries if q["_id"] in judged))


def build_perspectrum(locations: Sequence[Location]) -> Tables:
    (folder,) = locations
    corpus = read_records(folder.file("corpus.jsonl"), ("_id", "text", "source"), strings("text", "source"))
    queries = read_records(folder.file("queries.jsonl"), ("_id", "text", "split", "source", "topics"),
                           strings("text", "split", "source"))
    return Tables(queries=tuple(Query(i, r["text"]) for i, r in queries.items()),
                  docs=tuple(PerspectrumDoc(i, r["text"], r["source"]) for i, r in corpus.items()),
                  qrels=folder_qrels(folder, queries, corpus), labels=folder_labels(folder, queries, corpus),
                  query_info=tuple(PerspectrumQueryInfo(i, r["split"], r["source"], tuple(r["topics"]))
                                   for i, r in queries.items()))


PERSPECTRUM = Resource(
    "perspectrum", BEIR_FILES + ("labels.tsv",),
    tuple(github_file("CogComp/perspectrum", PERSPECTRUM_COMMIT, f"data/dataset/{name}", UNKNOWN)
          for name in ("perspectrum_with_answers_v1.0.json", "perspective_pool_v1.0.json", "dataset_split_v1.0.json",
                       "topic.json")),
    convert_perspectrum, "CogComp/perspectrum on GitHub",
    converted_sha256=(("clusters.jsonl", "fb54f9df496fa0a767502d44363c8af5814f8c3cdcd27a038ed2fd76488f6bf8"),
                      ("corpus.jsonl", "d4365feaad47c7f9f359edf73999f9c71d5802bed6513b582ce2d84151dfa88f"),
                      ("labels.tsv", "4fe0228e5cf3954cd43b4f46fa150038ac4eb3be5fd8503f824629309c537b9a"),
                      ("perspectrum-topics.tsv", "b380dc3feabcc2c954d15900e0a4e6a5b4dbfbc2d113128f143433f1e647add7"),
                      ("qrels/test.tsv", "98e90bdb403702dd470bd481a7afd5e63b6c620e7cc7cf59292c44281d53a74e"),
                      ("queries.jsonl", "33006791f8f35599495806a4e3300db35bab31aab2378a317607c746429b83ba")))

SPECS = (
    DatasetSpec("pair/perspectrum", (PERSPECTRUM,), build_perspectrum, PerspectrumDoc, PerspectrumQueryInfo,
                {1: "a perspective of the claim"}),
)
