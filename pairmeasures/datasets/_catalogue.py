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

PERSPECTRUM = Resource(
    "perspectrum", BEIR_FILES + ("labels.tsv",),
    tuple(github_file("CogComp/perspectrum", PERSPECTRUM_COMMIT, f"data/dataset/{name}")
          for name in ("perspectrum_with_answers_v1.0.json", "perspective_pool_v1.0.json", "dataset_split_v1.0.json",
                       "topic.json")),
    convert_perspectrum, "CogComp/perspectrum on GitHub")
PROCON = Resource(
    "procon", BEIR_FILES + ("labels.tsv",),
    (github_file("CogComp/perspectrum", PERSPECTRUM_COMMIT, "data/raw_data/procon/procon.json"),),
    convert_procon, "CogComp/perspectrum on GitHub, its ProCon.org crawl")
GREP_BIASIR = Resource(
    "grep-biasir", BEIR_FILES + ("labels.tsv",),
    tuple(github_file("KlaraKrieg/GrepBiasIR", GREP_BIASIR_COMMIT, name)
          for name in ("queries.csv", *(f"queries-documents_{c}.csv" for c in GREP_CATEGORIES))),
    convert_grep_biasir, "KlaraKrieg/GrepBiasIR on GitHub")
MSMARCO_GENDER = Resource(
    "msmarco-gender", ("qs1_queries.tsv", "qs2_queries.tsv"),
    (github_file("navid-rekabsaz/GenderBias_IR", GENDER_BIAS_IR_COMMIT, "resources/queries_gender_annotated.csv"),
     github_file("CPJKU/FairnessRetrievalResults", FAIRNESS_RETRIEVAL_COMMIT, "dataset/msmarco_passage.dev.fair.tsv")),
    convert_msmarco_gender, "navid-rekabsaz/GenderBias_IR and CPJKU/FairnessRetrievalResults on GitHub")
WIKI_BALANCE_CATEGORIES = Resource(
    "wiki-balance-categories.tsv", (), (github_file("SALT-NLP/pair", PAIR_COMMIT, "categories.csv"),),
    convert_wiki_balance_categories, "SALT-NLP/pair on GitHub")


def _wiki_balance(subset: str, revision: str, optional: tuple[str, ...] = ()) -> Resource:
    repo = f"SALT-NLP/wiki-balance-{subset}"
    return Resource(f"wiki-balance-{subset}", BEIR_FILES,
                    (huggingface_file(repo, revision, "corpus.jsonl.gz"), huggingface_file(repo, revision, "queries.jsonl.gz"),
                     huggingface_file(f"{repo}-qrels", "main", "test.tsv")),
                    convert_wiki_balance, f"{repo} on Hugging Face", optional)


WIKI_BALANCE_SYNTHETIC = _wiki_balance("synthetic", "681cb6331a5067262304a401b9bb38d54ef1cb00")
WIKI_BALANCE_NATURAL = _wiki_balance("natural", "01fd7dd3e9133b4bccd05d19c4a224e425551ca1", ("labels.tsv",))

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
