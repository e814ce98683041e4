"""The ProCon.org debates as crawled for PERSPECTRUM (Chen et al., NAACL 2019; ``data/raw_data/procon``
of ``CogComp/perspectrum``) as ``pair/procon``: each debate is a query, each of its arguments a
document, the argument's side (``pro``/``con``) its gold label.

Its records, the conversion of ``procon.json`` into the mirror folder ``procon/``, the builder of
records from that folder, its resource and its :class:`DatasetSpec`.
"""

# No ``from __future__ import annotations`` in record modules: PyTerrier's text loader (``pt.text.get_text``)
# keeps only fields whose annotation is the type ``str``.

from pathlib import Path
from typing import NamedTuple, Sequence
from urllib.parse import parse_qs, urlparse

from ..io.beir import read_records
from ._convert import clean_text, field, load_json, write_beir
from ._loaders import DatasetSpec, Tables, folder_labels, folder_qrels, strings
from ._records import Query
from ._resources import BEIR_FILES, UNKNOWN, DatasetError, Location, Resource, github_file
from .perspectrum import PERSPECTRUM_COMMIT


class ProconDoc(NamedTuple):
    """A ProCon.org argument: headline, description, its debate and side (``pro``/``con``)."""

    doc_id: str
    title: str
    text: str
    query_id: str
    group: str


class ProconQueryInfo(NamedTuple):
    """A ProCon.org debate's page."""

    query_id: str
    url: str


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
    for debate in load_json(path):
        url = field(path, debate, "url", "a debate")
        try:
            debate_id = procon_debate_id(url)
        except ValueError as exc:
            raise DatasetError(f"{path}: {exc}") from None
        for side, key in (("pro", "perspectives_for"), ("con", "perspectives_against")):
            for position, argument in enumerate(field(path, debate, key, f"debate {url}")):
                fragments = field(path, field(path, argument, "argument", f"an argument of {url}"), "description",
                                  f"an argument of {url}")
                text = clean_text(" ".join(fragments))
                if not text:
                    continue
                doc_id = f"{debate_id}_{side}_{position}"
                corpus.append({"_id": doc_id, "title": clean_text(argument.get("perspective_title", "")), "text": text,
                               "query_id": debate_id, "group": side, "position": position})
                judgements.append((debate_id, doc_id, 1))
                labels.append((debate_id, doc_id, side))
        queries.append({"_id": debate_id, "text": clean_text(field(path, debate, "claim_title", url)), "url": url})
    write_beir(target, corpus, queries, judgements, labels)


def build_procon(locations: Sequence[Location]) -> Tables:
    (folder,) = locations
    corpus = read_records(folder.file("corpus.jsonl"), ("_id", "title", "text", "query_id", "group"),
                          strings("title", "text", "query_id", "group"))
    queries = read_records(folder.file("queries.jsonl"), ("_id", "text", "url"), strings("text", "url"))
    return Tables(queries=tuple(Query(i, r["text"]) for i, r in queries.items()),
                  docs=tuple(ProconDoc(i, r["title"], r["text"], r["query_id"], r["group"]) for i, r in corpus.items()),
                  qrels=folder_qrels(folder, queries, corpus), labels=folder_labels(folder, queries, corpus),
                  query_info=tuple(ProconQueryInfo(i, r["url"]) for i, r in queries.items()))


PROCON = Resource(
    "procon", BEIR_FILES + ("labels.tsv",),
    (github_file("CogComp/perspectrum", PERSPECTRUM_COMMIT, "data/raw_data/procon/procon.json", UNKNOWN),),
    convert_procon, "CogComp/perspectrum on GitHub, its ProCon.org crawl",
    converted_sha256=(("corpus.jsonl", "650f1d69ac36de6fd88d6e549bf28850841514da5b2fa7dc188fd562c0ab01d1"),
                      ("labels.tsv", "7fd4d00bc9111277cf90b804f2c9b13107363393f079980d043f22147808d5b5"),
                      ("qrels/test.tsv", "cb74c7a292710c7d577ae6064b89023f20e86da815159de62f9c6732a3e5d94c"),
                      ("queries.jsonl", "2617b27e7f6c9b5644bdfacbc98a9a5175339e71ed27e33d1a03129b9aa37b6b")))

SPECS = (
    DatasetSpec("pair/procon", (PROCON,), build_procon, ProconDoc, ProconQueryInfo, {1: "an argument of the debate"}),
)
