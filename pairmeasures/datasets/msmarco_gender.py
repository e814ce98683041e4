"""The MS MARCO passage dev query sets of the gender-bias studies as
``pair/msmarco-passage/dev/gender-qs1`` (the queries annotated non-gendered, Rekabsaz & Schedl, "Do
Neural Ranking Models Intensify Gender Bias?", SIGIR 2020) and ``.../gender-qs2`` (the 215
bias-sensitive queries, Rekabsaz et al., "Societal Biases in Retrieved Contents: Measurement Framework
and Adversarial Mitigation for BERT Rankers", SIGIR 2021); passages and qrels come from ir_datasets'
``msmarco-passage/dev``.

The conversion of the two query lists into the mirror folder ``msmarco-gender/``, the builders of
queries from it, its resource and the two :class:`DatasetSpec`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..sideinfo.beir import DataFileError, iter_tsv
from ._convert import clean_text, write_tsv
from ._loaders import DatasetSpec, Tables
from ._records import Query
from ._resources import UNKNOWN, DatasetError, Location, Resource, github_file

#: The commits of the source repositories the files of ``shared/data`` were taken from.
GENDER_BIAS_IR_COMMIT = "3b940f978e8db5a890899b953dba1fa3e05cc3d3"
FAIRNESS_RETRIEVAL_COMMIT = "81693da5305d"


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
    write_tsv(target / "qs1_queries.tsv", ("qid", "text"), qs1)
    write_tsv(target / "qs2_queries.tsv", ("qid", "text"), qs2)


def gender_queries(file_name: str):
    """A builder reading one MS MARCO gender query list (``qid``, ``text``) of the ``msmarco-gender`` folder."""
    def build(locations: Sequence[Location]) -> Tables:
        (folder,) = locations
        path = folder.file(file_name)
        first_line: dict[str, int] = {}
        queries = []
        for line, (query_id, text) in iter_tsv(path, ("qid", "text")):
            if not query_id or not text:
                raise DataFileError(path, line, "empty query id or text")
            if query_id in first_line:
                raise DataFileError(path, line, f"query {query_id!r} already appears on line {first_line[query_id]}")
            first_line[query_id] = line
            queries.append(Query(query_id, text))
        return Tables(queries=tuple(queries))
    return build


MSMARCO_GENDER = Resource(
    "msmarco-gender", ("qs1_queries.tsv", "qs2_queries.tsv"),
    (github_file("navid-rekabsaz/GenderBias_IR", GENDER_BIAS_IR_COMMIT, "resources/queries_gender_annotated.csv", UNKNOWN),
     github_file("CPJKU/FairnessRetrievalResults", FAIRNESS_RETRIEVAL_COMMIT, "dataset/msmarco_passage.dev.fair.tsv",
                 UNKNOWN)),
    convert_msmarco_gender, "navid-rekabsaz/GenderBias_IR and CPJKU/FairnessRetrievalResults on GitHub",
    converted_sha256=(("qs1_queries.tsv", "444406dbdf3baaea7441e40aa54eca9029d9517a29eb90828b79989941ba826a"),
                      ("qs2_queries.tsv", "10f72c543204a400edc95976afe24ad9c3c7d1467da7baf459398ee76369635a")))

SPECS = (
    DatasetSpec("pair/msmarco-passage/dev/gender-qs1", (MSMARCO_GENDER,), gender_queries("qs1_queries.tsv"),
                None, None, {}, documents_from="msmarco-passage/dev", term_list="gender"),
    DatasetSpec("pair/msmarco-passage/dev/gender-qs2", (MSMARCO_GENDER,), gender_queries("qs2_queries.tsv"),
                None, None, {}, documents_from="msmarco-passage/dev", term_list="gender"),
)
