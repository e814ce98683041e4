"""Wiki-Balance (Ziems et al., "Measuring and Addressing Indexical Bias in Information Retrieval",
PAIR) as ``pair/wiki-balance/synthetic`` (generated single-perspective documents, the perspective
``p1``/``p2`` as gold label) and ``pair/wiki-balance/natural`` (Wikipedia passages), with PAIR's
table of each controversial topic's domains (``wiki-balance-categories.tsv``, used by both).

Their records, the conversions of the Hugging Face releases and of PAIR's ``categories.csv``, the
builders of records from the mirror, the topic -> domains table, their resources and the two
:class:`DatasetSpec`.
"""

# No ``from __future__ import annotations`` in record modules: PyTerrier's text loader (``pt.text.get_text``)
# keeps only fields whose annotation is the type ``str``.

import ast
import json
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import NamedTuple, Optional, Sequence, cast

from ..io.beir import DataFileError, iter_tsv, read_records
from ._convert import clean_text, csv_rows, write_tsv
from ._loaders import DatasetSpec, Tables, folder_labels, folder_qrels, strings
from ._records import GroupLabel, Query
from ._resources import BEIR_FILES, UNKNOWN, DatasetError, Location, Resource, github_file, huggingface_file

#: The commit of the source repository the categories table of ``shared/data`` was taken from.
PAIR_COMMIT = "769697f16801c2724fd1bc10602cf55a45b733dd"
#: Commits of the Hugging Face repositories (the qrels of the synthetic set: only its abbreviated hash is known).
WIKI_BALANCE_REVISIONS = {"synthetic": "681cb6331a5067262304a401b9bb38d54ef1cb00",
                          "synthetic-qrels": "15ac701",
                          "natural": "01fd7dd3e9133b4bccd05d19c4a224e425551ca1",
                          "natural-qrels": "19b2a6e4cde546732207260ff0e0d78a77e2cddb"}


class WikiBalanceDoc(NamedTuple):
    """A Wiki-Balance Synthetic document; ``perspective`` (``p1``/``p2``) comes from its id
    ``{topic_id}_{query index}_p{1|2}_d{n}``."""

    doc_id: str
    title: str
    text: str
    query_id: str
    topic_id: str
    perspective: str


class WikiBalanceNaturalDoc(NamedTuple):
    """A Wiki-Balance Natural document (a Wikipedia passage)."""

    doc_id: str
    title: str
    text: str


class WikiBalanceQueryInfo(NamedTuple):
    """A Wiki-Balance query's controversial topic and its domains (the 15 Wiki-Balance domains;
    empty when the topic is not in the categories table)."""

    query_id: str
    topic_id: str
    topic: str
    domains: tuple


def convert_wiki_balance_categories(sources: Path, target: Path) -> None:
    """PAIR's ``categories.csv`` (title, id, key, categories as a Python list) as a TSV of domains."""
    path = sources / "categories.csv"
    rows = []
    for number, row in enumerate(csv_rows(path, ("id", "key", "categories")), start=2):
        try:
            domains = ast.literal_eval(row["categories"]) if row["categories"].strip() else []
        except (ValueError, SyntaxError):
            raise DatasetError(f"{path}, row {number}: categories {row['categories']!r} is not a list") from None
        rows.append((row["id"].strip(), clean_text(row["key"]), json.dumps(list(dict.fromkeys(domains)))))
    write_tsv(target, ("topic-id", "topic", "domains"), rows)


def convert_wiki_balance(sources: Path, target: Path) -> None:
    """The Hugging Face release is already in BEIR layout: corpus and queries (gzip), qrels ``test.tsv``."""
    (target / "qrels").mkdir(parents=True)
    shutil.copyfile(sources / "corpus.jsonl.gz", target / "corpus.jsonl.gz")
    shutil.copyfile(sources / "queries.jsonl.gz", target / "queries.jsonl.gz")
    shutil.copyfile(sources / "test.tsv", target / "qrels" / "test.tsv")


_SYNTHETIC_ID = re.compile(r"(-?\d+)_(\d+)_p([12])_d(\d+)")


def _synthetic_id(doc_id: str, record: dict) -> Optional[str]:
    if not _SYNTHETIC_ID.fullmatch(doc_id):
        return f"document id {doc_id!r} does not follow {{topic id}}_{{query index}}_p{{1|2}}_d{{n}}"
    return strings("title", "text")(doc_id, record)


class Categories:
    """The topic -> domains table of Wiki-Balance (``wiki-balance-categories.tsv``)."""

    def __init__(self, path: Path):
        self.domains: dict[tuple[str, str], tuple] = {}
        self.titles: dict[str, list[str]] = {}
        for line, (topic_id, topic, domains) in iter_tsv(path, ("topic-id", "topic", "domains")):
            try:
                parsed = json.loads(domains)
            except json.JSONDecodeError:
                parsed = None
            if not isinstance(parsed, list) or not all(isinstance(d, str) for d in parsed):
                raise DataFileError(path, line, f"domains must be a JSON array of text, got {domains!r}")
            self.domains[topic_id, topic] = tuple(parsed)
            self.titles.setdefault(topic_id, []).append(topic)

    def topic(self, topic_id: str, document_titles: Sequence[str]) -> str:
        """A query's topic title: its documents' most frequent title that the table lists for the
        topic id; else the table's title when the id has exactly one; else the documents' most frequent title."""
        listed = self.titles.get(topic_id, [])
        frequent = [title for title, _ in Counter(document_titles).most_common()]
        chosen = next((t for t in frequent if t in listed), None)
        if chosen is None and len(listed) == 1:
            chosen = listed[0]
        return chosen if chosen is not None else (frequent[0] if frequent else "")


def _wiki_balance_info(queries: dict, qrels: tuple, titles: dict, categories: Categories) -> tuple:
    judged_titles: dict[str, list[str]] = {}
    for qrel in qrels:
        judged_titles.setdefault(qrel.query_id, []).append(titles[qrel.doc_id])
    info = []
    for query_id, record in queries.items():
        topic_id = str(record.get("topic_id") or query_id.rsplit("_", 1)[0])
        topic = str(record.get("topic") or categories.topic(topic_id, judged_titles.get(query_id, [])))
        info.append(WikiBalanceQueryInfo(query_id, topic_id, topic, categories.domains.get((topic_id, topic), ())))
    return tuple(info)


def build_wiki_balance_synthetic(locations: Sequence[Location]) -> Tables:
    folder, table = locations
    corpus = read_records(folder.file("corpus.jsonl"), ("_id", "title", "text"), _synthetic_id)
    queries = read_records(folder.file("queries.jsonl"), ("_id", "text"), strings("text"))
    docs = []
    for doc_id, record in corpus.items():
        parts = cast(re.Match, _SYNTHETIC_ID.fullmatch(doc_id))  # every id was checked by _synthetic_id
        topic_id, query_index, perspective, _ = parts.groups()
        docs.append(WikiBalanceDoc(doc_id, record["title"], record["text"], f"{topic_id}_{query_index}", topic_id,
                                   f"p{perspective}"))
    qrels = folder_qrels(folder, queries, corpus)
    by_id = {doc.doc_id: doc for doc in docs}
    labels = tuple(GroupLabel(q.query_id, q.doc_id, by_id[q.doc_id].perspective) for q in qrels
                   if by_id[q.doc_id].query_id == q.query_id)
    titles = {doc.doc_id: doc.title for doc in docs}
    return Tables(queries=tuple(Query(i, r["text"]) for i, r in queries.items()), docs=tuple(docs), qrels=qrels,
                  labels=labels, query_info=_wiki_balance_info(queries, qrels, titles, Categories(table.path)))


def build_wiki_balance_natural(locations: Sequence[Location]) -> Tables:
    folder, table = locations
    corpus = read_records(folder.file("corpus.jsonl"), ("_id", "title", "text"), strings("title", "text"))
    queries = read_records(folder.file("queries.jsonl"), ("_id", "text"), strings("text"))
    qrels = folder_qrels(folder, queries, corpus)
    labels = folder_labels(folder, queries, corpus) if (folder.path / "labels.tsv").is_file() else None
    titles = {doc_id: record["title"] for doc_id, record in corpus.items()}
    return Tables(queries=tuple(Query(i, r["text"]) for i, r in queries.items()),
                  docs=tuple(WikiBalanceNaturalDoc(i, r["title"], r["text"]) for i, r in corpus.items()),
                  qrels=qrels, labels=labels,
                  query_info=_wiki_balance_info(queries, qrels, titles, Categories(table.path)))


WIKI_BALANCE_CATEGORIES = Resource(
    "wiki-balance-categories.tsv", (), (github_file("SALT-NLP/pair", PAIR_COMMIT, "categories.csv", UNKNOWN),),
    convert_wiki_balance_categories, "SALT-NLP/pair on GitHub",
    converted_sha256=(("", "28fedf7768e074c582a4d0b77c9f893d7eb45026f6cd47ea12f49e8debc51cf4"),))


def _wiki_balance(subset: str, optional: tuple[str, ...] = ()) -> Resource:
    """A Wiki-Balance release (the sample in ``shared/data`` is no conversion of it: its outputs are not pinned)."""
    repo, revision, qrels_revision = (f"SALT-NLP/wiki-balance-{subset}", WIKI_BALANCE_REVISIONS[subset],
                                      WIKI_BALANCE_REVISIONS[f"{subset}-qrels"])
    return Resource(f"wiki-balance-{subset}", BEIR_FILES,
                    (huggingface_file(repo, revision, "corpus.jsonl.gz", UNKNOWN),
                     huggingface_file(repo, revision, "queries.jsonl.gz", UNKNOWN),
                     huggingface_file(f"{repo}-qrels", qrels_revision, "test.tsv", UNKNOWN)),
                    convert_wiki_balance, f"{repo} on Hugging Face", optional)


WIKI_BALANCE_SYNTHETIC = _wiki_balance("synthetic")
WIKI_BALANCE_NATURAL = _wiki_balance("natural", ("labels.tsv",))

_WIKI_BALANCE_QRELS = {4: "a document of the query (Wiki-Balance takes relevance >= 4 as the query's own documents)",
                       5: "a document written for the query"}

SPECS = (
    DatasetSpec("pair/wiki-balance/synthetic", (WIKI_BALANCE_SYNTHETIC, WIKI_BALANCE_CATEGORIES),
                build_wiki_balance_synthetic, WikiBalanceDoc, WikiBalanceQueryInfo, _WIKI_BALANCE_QRELS),
    DatasetSpec("pair/wiki-balance/natural", (WIKI_BALANCE_NATURAL, WIKI_BALANCE_CATEGORIES),
                build_wiki_balance_natural, WikiBalanceNaturalDoc, WikiBalanceQueryInfo, _WIKI_BALANCE_QRELS),
)
