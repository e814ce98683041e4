"""The MS MARCO passage dev query sets of the gender-bias studies as
``pair/msmarco-passage/dev/gender-qs1`` (the queries annotated non-gendered, Rekabsaz & Schedl, "Do
Neural Ranking Models Intensify Gender Bias?", SIGIR 2020) and ``.../gender-qs2`` (the 215
bias-sensitive queries, Rekabsaz et al., "Societal Biases in Retrieved Contents: Measurement Framework
and Adversarial Mitigation for BERT Rankers", SIGIR 2021); passages and qrels come from ir_datasets'
``msmarco-passage/dev``. ``pair/msmarco-passage/trec-dl-2019/gender``: the 29 bias-sensitive TREC DL 2019
passage queries of the same study, with the deep judgements of ir_datasets' ``msmarco-passage/trec-dl-2019/judged``.

The conversion of the query lists into the mirror folder ``msmarco-gender/``, the builders of queries from
it, its resources, the three :class:`DatasetSpec` with the measures an audit of them evaluates by default
(:func:`audit_measures`: as the papers report them) and the NFaiRR paper's published runs of QS2 and TREC DL 2019
(:data:`PUBLISHED_RUNS`, :data:`RUN_NAMES`; ``--systems published``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Sequence

from ..io.beir import DataFileError, iter_tsv
from ._convert import clean_text, write_tsv
from ._irdsfiles import IrdsFile
from ._loaders import DatasetSpec, Tables
from ._records import Query
from ._resources import UNKNOWN, DatasetError, Location, Resource, github_file

__all__ = ["DL19_ID", "FAIRNESS_RETRIEVAL_COMMIT", "GENDER_BIAS_IR_COMMIT", "MSMARCO_GENDER", "MSMARCO_GENDER_DL19",
           "PUBLISHED_RUNS", "QS1_ID", "QS2_ID", "RUN_NAMES", "SPECS", "audit_measures", "convert_msmarco_gender",
           "gender_queries"]

QS1_ID = "pair/msmarco-passage/dev/gender-qs1"
QS2_ID = "pair/msmarco-passage/dev/gender-qs2"
DL19_ID = "pair/msmarco-passage/trec-dl-2019/gender"
#: The TREC DL 2019 annotation file, kept verbatim in the mirror (CRLF, a header, 29 queries).
DL19_FILE = "trecdeep19_passage.fair.FULL_ANNOTATION.tsv"
#: Its columns.
ANNOTATION_HEADER = ("QID", "Query", "Categories", "Domains", "Subdomains", "Example/Description")

#: The commits of the source repositories the files of ``shared/data`` were taken from.
GENDER_BIAS_IR_COMMIT = "3b940f978e8db5a890899b953dba1fa3e05cc3d3"
FAIRNESS_RETRIEVAL_COMMIT = "81693da5305d"


def convert_msmarco_gender(sources: Path, target: Path) -> None:
    """The MS MARCO gender query sets: QS1, the non-gendered (``n``) queries of
    ``queries_gender_annotated.csv`` (unquoted commas allowed in the text), QS2, and the TREC DL 2019
    annotation file, copied verbatim."""
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
    (target / DL19_FILE).write_bytes((sources / DL19_FILE).read_bytes())  # verbatim, as in the mirror


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


def annotated_queries(locations: Sequence[Location]) -> Tables:
    """The queries (``QID``, ``Query``) of the TREC DL 2019 annotation file of the ``msmarco-gender`` folder."""
    (folder,) = locations
    path = folder.file(DL19_FILE)
    first_line: dict[str, int] = {}
    queries = []
    for line, fields in iter_tsv(path, ANNOTATION_HEADER):
        query_id, text = fields[0].strip(), clean_text(fields[1])
        if not query_id.isdigit() or not text:
            raise DataFileError(path, line, f"expected a numeric query id and a query text, got {fields[:2]!r}")
        if query_id in first_line:
            raise DataFileError(path, line, f"query {query_id!r} already appears on line {first_line[query_id]}")
        first_line[query_id] = line
        queries.append(Query(query_id, text))
    return Tables(queries=tuple(queries))


_REMOTE = (github_file("navid-rekabsaz/GenderBias_IR", GENDER_BIAS_IR_COMMIT, "resources/queries_gender_annotated.csv",
                       UNKNOWN),
           github_file("CPJKU/FairnessRetrievalResults", FAIRNESS_RETRIEVAL_COMMIT, "dataset/msmarco_passage.dev.fair.tsv",
                       UNKNOWN),
           github_file("CPJKU/FairnessRetrievalResults", FAIRNESS_RETRIEVAL_COMMIT, f"dataset/{DL19_FILE}",
                       "99182715a7d6875e2c843c694dfb46cac69ca627c31710d6143a75b5fb9fe81a"))
_SOURCE = "navid-rekabsaz/GenderBias_IR and CPJKU/FairnessRetrievalResults on GitHub"
_CONVERTED = (("qs1_queries.tsv", "444406dbdf3baaea7441e40aa54eca9029d9517a29eb90828b79989941ba826a"),
              ("qs2_queries.tsv", "10f72c543204a400edc95976afe24ad9c3c7d1467da7baf459398ee76369635a"),
              (DL19_FILE, "99182715a7d6875e2c843c694dfb46cac69ca627c31710d6143a75b5fb9fe81a"))

#: The folder of the QS1 and QS2 query lists (a download also brings the TREC DL 2019 file: one folder, one download).
MSMARCO_GENDER = Resource("msmarco-gender", ("qs1_queries.tsv", "qs2_queries.tsv"), _REMOTE, convert_msmarco_gender,
                          _SOURCE, optional=(DL19_FILE,), converted_sha256=_CONVERTED)
#: The same folder, as the TREC DL 2019 set needs it (a folder downloaded before this set existed lacks the file).
MSMARCO_GENDER_DL19 = Resource("msmarco-gender", (DL19_FILE,), _REMOTE, convert_msmarco_gender, _SOURCE,
                               converted_sha256=_CONVERTED)

#: ir_datasets' msmarco-passage files the sets read: the collection (``collection.tsv``, which ir_datasets extracts
#: from ``collectionandqueries.tar.gz`` and marks ``v2`` in ``irds_version.txt``) and each set's qrels.
COLLECTION = IrdsFile("msmarco-passage", "docs", "collection.tsv", "collectionandqueries", extracted=True,
                      version=("irds_version.txt", "v2"))
DEV_QRELS = IrdsFile("msmarco-passage/dev", "qrels", "dev/qrels", "dev/qrels")
DL19_QRELS = IrdsFile("msmarco-passage/trec-dl-2019", "qrels", "trec-dl-2019/qrels", "trec-dl-2019/qrels")

#: NFaiRR as the reference code computes it (the representative word list, whitespace tokens, a term counted for
#: each group it is listed for), over the whole collection as background, as the TExFAIR paper evaluates it.
NFAIRR = ("NFaiRR(background='collection',text='irds:msmarco-passage',terms='gender-representative',"
          "tokenizer='whitespace',overlap='each')@10")
#: TExFAIR over the same word list and tokens (the TExFAIR paper adopts the NFaiRR paper's terms).
TEXFAIR = "TExFAIR(terms='gender-representative',tokenizer='whitespace',overlap='each')@10"


def audit_measures(dataset_id: str) -> list:
    """The measures an audit of one of these sets evaluates by default (none for another dataset): MRR@10 and
    nDCG@10 (on TREC DL 2019, whose judgements are graded 0-3, MRR counts grade 2 and above as relevant, as TREC DL
    does), NFaiRR@10 over the collection, TExFAIR@10, and RaB/ARaB@10 with the gender-specific word list (the RaB
    reference's). No Duo: it needs a polarity model, which a user names by asking for it (``--measures``)."""
    if dataset_id not in (QS1_ID, QS2_ID, DL19_ID):
        return []
    rr = "RR(rel=2)@10" if dataset_id == DL19_ID else "RR@10"
    rab = "terms='gender-specific',tokenizer='whitespace'"
    return [rr, "nDCG@10", NFAIRR, TEXFAIR, f"RaB({rab})@10", f"ARaB({rab})@10"]


#: The ten runs, as the repository names their files (``NAME.run``) and the paper its rankers.
RUN_NAMES = {"BM25": "BM25", "RM3": "BM25+RM3", "knrm": "KNRM", "conv_knrm": "ConvKNRM", "match_pyramid": "MatchPyramid",
             "tk": "TK", "bert_L2": "BERT-L2", "bert_L4": "BERT-L4", "advbert_L2": "AdvBERT-L2",
             "advbert_L4": "AdvBERT-L4"}

#: SHA-256 of the run files known here (those of ``shared/data``, whose README gives their provenance); the others
#: are recorded at their first download and required afterwards.
_PINNED = {("msmarco_passage", "BM25"): "4915d75f95c0f68f90a0589d51dba7363fe2cc43faebe6518f9f972c83aed9be",
           ("msmarco_passage", "bert_L2"): "71120c4692524179dba4730a84ef00ca1c2afe8163d705ea7ca481fbac6ec333"}


def _copy(sources: Path, target: Path) -> None:
    target.mkdir(parents=True)
    for name in RUN_NAMES:
        shutil.copyfile(sources / f"{name}.run", target / f"{name}.run")


def _runs(folder: str, name: str) -> Resource:
    remote = tuple(github_file("CPJKU/FairnessRetrievalResults", FAIRNESS_RETRIEVAL_COMMIT,
                               f"measurement/sample_trec_runs/{folder}/{run}.run", _PINNED.get((folder, run), UNKNOWN))
                   for run in RUN_NAMES)
    return Resource(name, tuple(f"{run}.run" for run in RUN_NAMES), remote, _copy,
                    f"CPJKU/FairnessRetrievalResults on GitHub (measurement/sample_trec_runs/{folder})")


#: The published runs of each dataset they rank (mirror folders ``msmarco-gender-runs-qs2/``, ``-dl19/``; a file
#: may be gzipped: ``BM25.run.gz``).
PUBLISHED_RUNS = {QS2_ID: _runs("msmarco_passage", "msmarco-gender-runs-qs2"),
                  DL19_ID: _runs("trecdl2019_passage", "msmarco-gender-runs-dl19")}

SPECS = (
    DatasetSpec(QS1_ID, (MSMARCO_GENDER,), gender_queries("qs1_queries.tsv"),
                None, None, {}, documents_from="msmarco-passage/dev", term_list="gender",
                documents_files=(COLLECTION, DEV_QRELS), measures=tuple(audit_measures(QS1_ID))),
    DatasetSpec(QS2_ID, (MSMARCO_GENDER,), gender_queries("qs2_queries.tsv"),
                None, None, {}, documents_from="msmarco-passage/dev", term_list="gender",
                documents_files=(COLLECTION, DEV_QRELS), measures=tuple(audit_measures(QS2_ID)),
                published_runs=PUBLISHED_RUNS[QS2_ID]),
    DatasetSpec(DL19_ID, (MSMARCO_GENDER_DL19,), annotated_queries,
                None, None, {}, documents_from="msmarco-passage/trec-dl-2019/judged", term_list="gender",
                documents_files=(COLLECTION, DL19_QRELS), measures=tuple(audit_measures(DL19_ID)),
                published_runs=PUBLISHED_RUNS[DL19_ID]),
)
