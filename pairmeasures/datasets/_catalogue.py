"""The datasets pairmeasures registers: their files, public sources and gold labels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from . import _loaders as loaders
from ._convert import (GREP_CATEGORIES, convert_grep_biasir, convert_msmarco_gender, convert_perspectrum,
                       convert_procon, convert_wiki_balance, convert_wiki_balance_categories)
from ._records import (GrepBiasIRDoc, GrepBiasIRQueryInfo, PerspectrumDoc, PerspectrumQueryInfo, ProconDoc,
                       ProconQueryInfo, WikiBalanceDoc, WikiBalanceNaturalDoc, WikiBalanceQueryInfo)
from ._resources import Location, Resource, github_file, huggingface_file

BEIR_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")
#: Commits of the source repositories the files of ``shared/data`` were taken from.
PERSPECTRUM_COMMIT = "b42c27b85f20"
GREP_BIASIR_COMMIT = "ed44a461054b"
GENDER_BIAS_IR_COMMIT = "3b940f978e8db5a890899b953dba1fa3e05cc3d3"
FAIRNESS_RETRIEVAL_COMMIT = "81693da5305d"
PAIR_COMMIT = "769697f16801c2724fd1bc10602cf55a45b733dd"
#: Commits of the Hugging Face repositories (the qrels of the synthetic set: only its abbreviated hash is known).
WIKI_BALANCE_REVISIONS = {"synthetic": "681cb6331a5067262304a401b9bb38d54ef1cb00",
                          "synthetic-qrels": "15ac701",
                          "natural": "01fd7dd3e9133b4bccd05d19c4a224e425551ca1",
                          "natural-qrels": "19b2a6e4cde546732207260ff0e0d78a77e2cddb"}
#: No checksum of a public source file is known here (no network access when this was written): each
#: is recorded at its first download and required afterwards. The files converted from them are pinned
#: where the conversion of sources rebuilt from ``shared/data`` gives the bytes of ``shared/data``.
UNKNOWN = None

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
PROCON = Resource(
    "procon", BEIR_FILES + ("labels.tsv",),
    (github_file("CogComp/perspectrum", PERSPECTRUM_COMMIT, "data/raw_data/procon/procon.json", UNKNOWN),),
    convert_procon, "CogComp/perspectrum on GitHub, its ProCon.org crawl",
    converted_sha256=(("corpus.jsonl", "650f1d69ac36de6fd88d6e549bf28850841514da5b2fa7dc188fd562c0ab01d1"),
                      ("labels.tsv", "7fd4d00bc9111277cf90b804f2c9b13107363393f079980d043f22147808d5b5"),
                      ("qrels/test.tsv", "cb74c7a292710c7d577ae6064b89023f20e86da815159de62f9c6732a3e5d94c"),
                      ("queries.jsonl", "2617b27e7f6c9b5644bdfacbc98a9a5175339e71ed27e33d1a03129b9aa37b6b")))
GREP_BIASIR = Resource(
    "grep-biasir", BEIR_FILES + ("labels.tsv",),
    tuple(github_file("KlaraKrieg/GrepBiasIR", GREP_BIASIR_COMMIT, name, UNKNOWN)
          for name in ("queries.csv", *(f"queries-documents_{c}.csv" for c in GREP_CATEGORIES))),
    convert_grep_biasir, "KlaraKrieg/GrepBiasIR on GitHub")  # outputs not pinned: the rebuilt sources give another order
MSMARCO_GENDER = Resource(
    "msmarco-gender", ("qs1_queries.tsv", "qs2_queries.tsv"),
    (github_file("navid-rekabsaz/GenderBias_IR", GENDER_BIAS_IR_COMMIT, "resources/queries_gender_annotated.csv", UNKNOWN),
     github_file("CPJKU/FairnessRetrievalResults", FAIRNESS_RETRIEVAL_COMMIT, "dataset/msmarco_passage.dev.fair.tsv",
                 UNKNOWN)),
    convert_msmarco_gender, "navid-rekabsaz/GenderBias_IR and CPJKU/FairnessRetrievalResults on GitHub",
    converted_sha256=(("qs1_queries.tsv", "444406dbdf3baaea7441e40aa54eca9029d9517a29eb90828b79989941ba826a"),
                      ("qs2_queries.tsv", "10f72c543204a400edc95976afe24ad9c3c7d1467da7baf459398ee76369635a")))
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


@dataclass(frozen=True)
class DatasetSpec:
    """One registered dataset: its resources, how its records are built, its record types.

    ``documents_from``: the ir_datasets dataset supplying documents and qrels (restricted to this
    dataset's queries) instead of ``build``.
    """

    id: str
    resources: tuple[Resource, ...]
    build: Callable[[Sequence[Location]], loaders.Tables]
    doc_cls: Optional[type]
    query_info_cls: Optional[type]
    qrels_defs: dict
    documents_from: str = ""


SPECS = (
    DatasetSpec("pair/wiki-balance/synthetic", (WIKI_BALANCE_SYNTHETIC, WIKI_BALANCE_CATEGORIES),
                loaders.build_wiki_balance_synthetic, WikiBalanceDoc, WikiBalanceQueryInfo, _WIKI_BALANCE_QRELS),
    DatasetSpec("pair/wiki-balance/natural", (WIKI_BALANCE_NATURAL, WIKI_BALANCE_CATEGORIES),
                loaders.build_wiki_balance_natural, WikiBalanceNaturalDoc, WikiBalanceQueryInfo, _WIKI_BALANCE_QRELS),
    DatasetSpec("pair/msmarco-passage/dev/gender-qs1", (MSMARCO_GENDER,), loaders.gender_queries("qs1_queries.tsv"),
                None, None, {}, documents_from="msmarco-passage/dev"),
    DatasetSpec("pair/msmarco-passage/dev/gender-qs2", (MSMARCO_GENDER,), loaders.gender_queries("qs2_queries.tsv"),
                None, None, {}, documents_from="msmarco-passage/dev"),
    DatasetSpec("pair/perspectrum", (PERSPECTRUM,), loaders.build_perspectrum, PerspectrumDoc, PerspectrumQueryInfo,
                {1: "a perspective of the claim"}),
    DatasetSpec("pair/procon", (PROCON,), loaders.build_procon, ProconDoc, ProconQueryInfo,
                {1: "an argument of the debate"}),
    DatasetSpec("pair/grep-biasir", (GREP_BIASIR,), loaders.build_grep_biasir, GrepBiasIRDoc, GrepBiasIRQueryInfo,
                {0: "non-relevant", 1: "relevant"}),
)

SPEC_BY_ID = {spec.id: spec for spec in SPECS}
