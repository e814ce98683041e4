"""Conversions of the public source files into the mirror layout (the layout of ``shared/data``).

Each ``convert_*(sources, target)`` reads the downloaded files in the folder ``sources`` and
writes the resource ``target`` (a folder, or the categories file) as ``shared/data/README.md``
describes it: BEIR layout, text cleaning, documents with empty text dropped with their
judgements, queries left without documents dropped. A source that does not look as expected
raises :class:`DatasetError` naming the file.
"""

from __future__ import annotations

import ast
import csv
import json
import re
import shutil
import unicodedata
from pathlib import Path
from typing import Iterable, Sequence
from urllib.parse import parse_qs, urlparse

from ..sideinfo.beir import LABELS_HEADER, QRELS_HEADER
from ._resources import DatasetError

_INVISIBLE = {"Cc", "Cf", "Co", "Cs"}
_LINE_BREAKS = str.maketrans({"\r": "\n", "\u2028": "\n", "\u2029": "\n", "\t": " "})



def clean_text(text: str, multiline: bool = False) -> str:
    """Line breaks unified, invisible characters removed, runs of spaces collapsed, ends stripped;
    ``multiline`` keeps paragraph breaks (at most one empty line), else breaks become spaces."""
    text = text.replace("\r\n", "\n").translate(_LINE_BREAKS)
    text = "".join(c for c in text if c == "\n" or unicodedata.category(c) not in _INVISIBLE)
    if not multiline:
        return re.sub(" {2,}", " ", text.replace("\n", " ")).strip()
    lines = [re.sub(" {2,}", " ", line).strip() for line in text.split("\n")]
    return re.sub("\n{3,}", "\n\n", "\n".join(lines)).strip()


def _load_json(path: Path):
    try:
        with path.open(encoding="utf-8") as handle:
            return json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: not the expected JSON ({exc}); delete it to download it again") from exc


def _field(path: Path, record: dict, name: str, where: str):
    try:
        return record[name]
    except (KeyError, TypeError):
        raise DatasetError(f"{path}: {where} has no {name!r} field; the source format has changed") from None


def _write_jsonl(path: Path, records: Iterable[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def _write_tsv(path: Path, header: Sequence[str], rows: Iterable[Sequence]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        handle.write("\t".join(header) + "\n")
        for row in rows:
            handle.write("\t".join(str(value) for value in row) + "\n")


def _write_beir(target: Path, corpus: list[dict], queries: list[dict], judgements: list[tuple],
                labels: Sequence[tuple]) -> None:
    """BEIR files and labels from records; queries without any judged document are left out."""
    judged = {query_id for query_id, _, _ in judgements}
    _write_jsonl(target / "corpus.jsonl", corpus)
    _write_jsonl(target / "queries.jsonl", (q for q in queries if q["_id"] in judged))
    _write_tsv(target / "qrels" / "test.tsv", QRELS_HEADER, judgements)
    _write_tsv(target / "labels.tsv", LABELS_HEADER, labels)


def convert_perspectrum(sources: Path, target: Path) -> None:
    """PERSPECTRUM v1.0: claims are queries, perspectives attached to a claim are documents."""
    claims_path = sources / "perspectrum_with_answers_v1.0.json"
    pool_path = sources / "perspective_pool_v1.0.json"
    pool = {str(_field(pool_path, p, "pId", "a perspective")): p for p in _load_json(pool_path)}
    split = {str(k): v for k, v in _load_json(sources / "dataset_split_v1.0.json").items()}
    topics_path = sources / "topic.json"
    topics = {str(_field(topics_path, t, "claim_id", "an entry")): t.get("topics", []) for t in _load_json(topics_path)}
    corpus: dict[str, dict] = {}
    pairs: dict[tuple[str, str], dict] = {}
    queries, clusters = [], []
    for claim in _load_json(claims_path):
        claim_id = str(_field(claims_path, claim, "cId", "a claim"))
        for index, cluster in enumerate(_field(claims_path, claim, "perspectives", f"claim {claim_id}")):
            cluster_id = f"{claim_id}_{index}"
            group = str(_field(claims_path, cluster, "stance_label_3", f"cluster {cluster_id}")).lower()
            members = []
            for pid in map(str, _field(claims_path, cluster, "pids", f"cluster {cluster_id}")):
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
    _write_beir(target, list(corpus.values()), queries, [(q, d, 1) for q, d in pairs],
                [(q, d, label["group"]) for (q, d), label in pairs.items()])
    _write_jsonl(target / "clusters.jsonl", clusters)
    _write_tsv(target / "perspectrum-topics.tsv", ("query-id", "topics"),
               ((q["_id"], json.dumps(q["topics"], ensure_ascii=False)) for q in queries if q["_id"] in judged))


def procon_debate_id(url: str) -> str:
    """``videogames`` for https://videogames.procon.org, ``headline-005411`` for a headline page."""
    parsed = urlparse(url)
    host = parsed.hostname or ""
    if host == "www.procon.org" and parsed.path.endswith("headline.php"):
        headline = parse_qs(parsed.query).get("headlineID")
        if headline:
            return f"headline-{headline[0]}"
    elif host.endswith(".procon.org") and host != "www.procon.org":
        return host[: -len(".procon.org")]
    raise ValueError(f"cannot derive a debate id from the URL {url!r}")


def convert_procon(sources: Path, target: Path) -> None:
    """ProCon.org debates as crawled for PERSPECTRUM: each argument of a debate is a document."""
    path = sources / "procon.json"
    corpus, queries, judgements, labels = [], [], [], []
    for debate in _load_json(path):
        url = _field(path, debate, "url", "a debate")
        try:
            debate_id = procon_debate_id(url)
        except ValueError as exc:
            raise DatasetError(f"{path}: {exc}") from None
        for side, key in (("pro", "perspectives_for"), ("con", "perspectives_against")):
            for position, argument in enumerate(_field(path, debate, key, f"debate {url}")):
                fragments = _field(path, _field(path, argument, "argument", f"an argument of {url}"), "description",
                                   f"an argument of {url}")
                text = clean_text(" ".join(fragments))
                if not text:
                    continue
                doc_id = f"{debate_id}_{side}_{position}"
                corpus.append({"_id": doc_id, "title": clean_text(argument.get("perspective_title", "")), "text": text,
                               "query_id": debate_id, "group": side, "position": position})
                judgements.append((debate_id, doc_id, 1))
                labels.append((debate_id, doc_id, side))
        queries.append({"_id": debate_id, "text": clean_text(_field(path, debate, "claim_title", url)), "url": url})
    _write_beir(target, corpus, queries, judgements, labels)


GREP_CATEGORIES = ("Appearance", "Career", "Child Care", "Cognitive Capabilities", "Domestic Work",
                   "Physical Capabilities", "Sex & Relationship")
_GREP_GROUPS = {"f": "female", "m": "male", "n": "neutral", "both": "both", "botrh": "both"}
_STEREOTYPES = {"no annotation agreement": "No Annotation Agreement", "towards female": "Towards Female",
                "towards male": "Towards Male"}


def _csv_rows(path: Path, columns: Sequence[str]) -> list[dict]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        absent = [c for c in columns if c not in (reader.fieldnames or [])]
        if absent:
            raise DatasetError(f"{path}: no column {', '.join(absent)} (found {reader.fieldnames}); "
                               "the source format has changed")
        return list(reader)


def convert_grep_biasir(sources: Path, target: Path) -> None:
    """Grep-BiasIR: queries.csv and one queries-documents_<Category>.csv per category."""
    query_rows = _csv_rows(sources / "queries.csv", ("q_id", "category", "query"))
    stereotypes: dict[str, str] = {}
    corpus, judgements, labels = [], [], []
    for category in dict.fromkeys(row["category"] for row in query_rows):
        path = sources / f"queries-documents_{category}.csv"
        if not path.is_file():
            raise DatasetError(f"{path} is missing (category {category!r} of queries.csv)")
        columns = ("q_id", "d_id", "relevant", "doc_title", "document", "content_gender", "exp_stereotype")
        for number, row in enumerate(_csv_rows(path, columns), start=2):
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
    _write_beir(target, corpus, queries, judgements, labels)


def convert_msmarco_gender(sources: Path, target: Path) -> None:
    """The two MS MARCO gender query sets: QS1, the non-gendered (``n``) queries of
    ``queries_gender_annotated.csv`` (unquoted commas allowed in the text), and QS2."""
    qs1 = []
    annotated = sources / "queries_gender_annotated.csv"
    with annotated.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.rstrip("\r\n").split(",")
            if len(fields) < 3:
                raise DatasetError(f"{annotated}:{number}: expected qid,text,label")
            if fields[-1].strip() == "n":
                qs1.append((fields[0].strip(), clean_text(",".join(fields[1:-1]))))
    qs2 = []
    fair = sources / "msmarco_passage.dev.fair.tsv"
    with fair.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != 2:
                raise DatasetError(f"{fair}:{number}: expected qid<TAB>text")
            qs2.append((fields[0].strip(), clean_text(fields[1])))
    _write_tsv(target / "qs1_queries.tsv", ("qid", "text"), qs1)
    _write_tsv(target / "qs2_queries.tsv", ("qid", "text"), qs2)


def convert_wiki_balance_categories(sources: Path, target: Path) -> None:
    """PAIR's ``categories.csv`` (title, id, key, categories as a Python list) as a TSV of domains."""
    path = sources / "categories.csv"
    rows = []
    for number, row in enumerate(_csv_rows(path, ("id", "key", "categories")), start=2):
        try:
            domains = ast.literal_eval(row["categories"]) if row["categories"].strip() else []
        except (ValueError, SyntaxError):
            raise DatasetError(f"{path}, row {number}: categories {row['categories']!r} is not a list") from None
        rows.append((row["id"].strip(), clean_text(row["key"]), json.dumps(list(dict.fromkeys(domains)))))
    _write_tsv(target, ("topic-id", "topic", "domains"), rows)


def convert_wiki_balance(sources: Path, target: Path) -> None:
    """The Hugging Face release is already in BEIR layout: corpus and queries (gzip), qrels ``test.tsv``."""
    (target / "qrels").mkdir(parents=True)
    shutil.copyfile(sources / "corpus.jsonl.gz", target / "corpus.jsonl.gz")
    shutil.copyfile(sources / "queries.jsonl.gz", target / "queries.jsonl.gz")
    shutil.copyfile(sources / "test.tsv", target / "qrels" / "test.tsv")
