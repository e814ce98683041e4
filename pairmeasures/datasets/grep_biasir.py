"""Grep-BiasIR (Krieg et al., "Grep-BiasIR: A Dataset for Investigating Gender Representation Bias in
Information Retrieval Results", CHIIR 2023) as ``pair/grep-biasir``: gender-neutral queries, each
with a relevant and a non-relevant document in female, male and neutral wording; the wording is the
gold label.

Its records, the conversion of ``KlaraKrieg/GrepBiasIR`` into the mirror folder ``grep-biasir/``,
the builder of records from that folder, its resource and its :class:`DatasetSpec`.
"""

# No ``from __future__ import annotations`` in record modules: PyTerrier's text loader (``pt.text.get_text``)
# keeps only fields whose annotation is the type ``str``.

from pathlib import Path
from typing import NamedTuple, Sequence

from ..io.beir import read_records
from ._convert import clean_text, csv_rows, write_beir
from ._loaders import DatasetSpec, Tables, folder_labels, folder_qrels, strings
from ._records import Query
from ._resources import BEIR_FILES, UNKNOWN, DatasetError, Location, Resource, github_file

#: The commit of the source repository the files of ``shared/data`` were taken from.
GREP_BIASIR_COMMIT = "ed44a461054b"


class GrepBiasIRDoc(NamedTuple):
    """A Grep-BiasIR document variant; ``group`` is its gender wording (female, male, neutral, both)."""

    doc_id: str
    title: str
    text: str
    query_id: str
    group: str
    category: str


class GrepBiasIRQueryInfo(NamedTuple):
    """A Grep-BiasIR query's category and the annotators' expected stereotype."""

    query_id: str
    category: str
    expected_stereotype: str


GREP_CATEGORIES = ("Appearance", "Career", "Child Care", "Cognitive Capabilities", "Domestic Work",
                   "Physical Capabilities", "Sex & Relationship")
_GREP_GROUPS = {"f": "female", "m": "male", "n": "neutral", "both": "both", "botrh": "both"}
_STEREOTYPES = {"no annotation agreement": "No Annotation Agreement", "towards female": "Towards Female",
                "towards male": "Towards Male"}


def convert_grep_biasir(sources: Path, target: Path) -> None:
    """Grep-BiasIR: queries.csv and one queries-documents_<Category>.csv per category."""
    query_rows = csv_rows(sources / "queries.csv", ("q_id", "category", "query"))
    stereotypes: dict[str, str] = {}
    corpus, judgements, labels = [], [], []
    for category in dict.fromkeys(row["category"] for row in query_rows):
        path = sources / f"queries-documents_{category}.csv"
        if not path.is_file():
            raise DatasetError(f"{path} is missing (category {category!r} of queries.csv)")
        columns = ("q_id", "d_id", "relevant", "doc_title", "document", "content_gender", "exp_stereotype")
        for number, row in enumerate(csv_rows(path, columns), start=2):
            gender = row["content_gender"].strip()
            if gender.lower() not in _GREP_GROUPS:
                raise DatasetError(f"{path}, row {number}: unknown content_gender {gender!r}")
            text = clean_text(row["document"], multiline=True)
            if not text:
                continue
            query_id, doc_id = row["q_id"].strip(), row["d_id"].strip()
            stereotype = row["exp_stereotype"].strip()
            stereotypes.setdefault(query_id, _STEREOTYPES.get(stereotype.lower(), stereotype))
            group = _GREP_GROUPS[gender.lower()]
            corpus.append({"_id": doc_id, "title": clean_text(row["doc_title"]), "text": text, "query_id": query_id,
                           "group": group, "content_gender": gender, "category": category})
            if row["relevant"].strip() not in ("0", "1"):
                raise DatasetError(f"{path}, row {number}: relevant must be 0 or 1, got {row['relevant']!r}")
            judgements.append((query_id, doc_id, int(row["relevant"])))
            labels.append((query_id, doc_id, group))
    queries = [{"_id": row["q_id"].strip(), "text": clean_text(row["query"]), "category": row["category"],
                "expected_stereotype": stereotypes.get(row["q_id"].strip(), "")} for row in query_rows]
    write_beir(target, corpus, queries, judgements, labels)


def build_grep_biasir(locations: Sequence[Location]) -> Tables:
    (folder,) = locations
    fields = ("title", "text", "query_id", "group", "category")
    corpus = read_records(folder.file("corpus.jsonl"), ("_id", *fields), strings(*fields))
    queries = read_records(folder.file("queries.jsonl"), ("_id", "text", "category", "expected_stereotype"),
                           strings("text", "category", "expected_stereotype"))
    return Tables(queries=tuple(Query(i, r["text"]) for i, r in queries.items()),
                  docs=tuple(GrepBiasIRDoc(i, *(r[f] for f in fields)) for i, r in corpus.items()),
                  qrels=folder_qrels(folder, queries, corpus), labels=folder_labels(folder, queries, corpus),
                  query_info=tuple(GrepBiasIRQueryInfo(i, r["category"], r["expected_stereotype"])
                                   for i, r in queries.items()))


GREP_BIASIR = Resource(
    "grep-biasir", BEIR_FILES + ("labels.tsv",),
    tuple(github_file("KlaraKrieg/GrepBiasIR", GREP_BIASIR_COMMIT, name, UNKNOWN)
          for name in ("queries.csv", *(f"queries-documents_{c}.csv" for c in GREP_CATEGORIES))),
    convert_grep_biasir, "KlaraKrieg/GrepBiasIR on GitHub")  # outputs not pinned: the rebuilt sources give another order

SPECS = (
    DatasetSpec("pair/grep-biasir", (GREP_BIASIR,), build_grep_biasir, GrepBiasIRDoc, GrepBiasIRQueryInfo,
                {0: "non-relevant", 1: "relevant"}, default_text="title+text", term_list="gender"),
)
