"""What an audit, SEME material and the benchmarks read of a dataset: :class:`Profile`, from :func:`load_profile`,
and the polarity model an audit scores its documents with (:func:`polarity_model`).

A profile is a :class:`~pairmeasures.datasets.corpus.Corpus` with the choices made for one audit: the document
field(s) read, the queries (all, or those of a ``--queries`` file), their qrels, gold labels and fields for
breakdowns, and whether a term list applies. Documents stay in the corpus and are looked up by id.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Optional

from ..io.memo import sha256_file
from .corpus import Corpus, open_corpus

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PolarityChoice", "Profile", "load_profile", "only_queries", "polarity_model"]


@dataclass
class Profile:
    """A dataset as one audit reads it: its ``corpus`` (documents by id), the document field(s) ``text`` read,
    ``queries`` (qid -> text), ``qrels`` (``query_id, doc_id, relevance``), gold ``labels`` (``query_id, doc_id,
    group``; None without), query ``fields`` for ``--by`` (field -> qid -> values), whether a gender ``terms``
    list applies, and the sha256 of every file read (``files``)."""

    corpus: Corpus
    text: str
    queries: dict
    qrels: "pd.DataFrame"
    labels: Optional["pd.DataFrame"]
    fields: dict
    terms: bool
    files: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The dataset as the user named it (a dataset id, or a folder as written)."""
        return self.corpus.name

    @property
    def source(self) -> str:
        """The dataset id, or the resolved folder: what systems are built over."""
        return self.corpus.source

    @property
    def data(self) -> Optional[str]:
        return self.corpus.data

    @property
    def perspectives(self) -> list:
        """The two labelled perspectives (e.g. pro/con), or [] when the labels are not two groups."""
        groups = sorted(set(self.labels["group"])) if self.labels is not None else []
        return groups if len(groups) == 2 else []

    def texts(self, doc_ids: Iterable[str]) -> list:
        """The :attr:`text` field(s) of each document, in order (a document the corpus lacks is an error)."""
        return self.corpus.texts(doc_ids, self.text)

    def titles(self, doc_ids: Iterable[str]) -> list:
        """Each document's ``title`` as a reader sees it ("" where it has none)."""
        found = self.corpus.documents(set(ids := list(doc_ids)))
        return [str(found[d].get("title") or "") for d in ids]

    def bodies(self, doc_ids: Iterable[str]) -> list:
        """Each document's ``text`` field as a reader sees it."""
        found = self.corpus.documents(set(ids := list(doc_ids)))
        return [str(found[d].get("text") or "") for d in ids]

    def run_key(self) -> str:
        """A key of what runs depend on: every file but the qrels, and the text field."""
        parts = sorted((n, h) for n, h in self.files.items() if not Path(n).name.startswith(("test.tsv", "qrels")))
        return hashlib.sha256(json.dumps([self.source, self.text, parts]).encode()).hexdigest()


@dataclass
class PolarityChoice:
    """The polarity model of an audit and where its axes come from, in words (for the manifest)."""

    model: Any
    source: str

    def key(self) -> str:
        """What identifies the model's scores: the fit documents and labels (or ``candidates``)."""
        fit = self.model.fit
        if fit is None:
            return "candidates"
        return hashlib.sha256(json.dumps([sorted(fit.texts.items()), sorted((fit.labels or {}).items()),
                                          fit.positive]).encode()).hexdigest()


def polarity_model(profile: "Profile", positive: Optional[str] = None, embedder=None) -> PolarityChoice:
    """The polarity model an audit of ``profile`` scores documents with: fitted per query on the labelled documents
    when two perspectives are labelled (``positive``: the label of polarity +1; default: the first pro-like label),
    else on each run's candidates; ``embedder``: the :class:`~pairmeasures.compute.embed.Embedder` (default:
    the offline default model)."""
    import pandas as pd

    from ..sideinfo.polarity import FitSet, PolarityModel

    labels = profile.labels
    if labels is not None and profile.perspectives:
        frame = pd.DataFrame({"qid": labels["query_id"], "label": labels["group"], "text": profile.texts(labels["doc_id"])})
        fit = FitSet.from_frame(frame, positive=positive)
        return PolarityChoice(PolarityModel(fit, embedder=embedder),
                              f"per-query axis fitted on the labelled documents ({' vs '.join(profile.perspectives)}; "
                              f"positive {fit.positive!r})")
    return PolarityChoice(PolarityModel(embedder=embedder),
                          "per-query axis fitted on each run's candidates (no two labelled perspectives)")


def _values(value) -> list:
    if value is None or value == "" or value == []:
        return []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def _query_fields(records: dict, corpus: Corpus, judged: "pd.DataFrame") -> dict:
    """Query fields: every field of the query records but ``_id``/``query_id``/``text``, and ``domain``
    from the ``categories`` of a query's judged documents (Wiki-Balance) where documents carry them."""
    fields: dict = {}
    for qid, record in records.items():
        for name, value in record.items():
            if name not in ("_id", "query_id", "text"):
                fields.setdefault(name, {})[qid] = _values(value)
    documents = corpus.documents(set(judged["doc_id"]))
    if any("categories" in d for d in documents.values()):
        domains: dict = {}
        for qid, doc_id in zip(judged["query_id"], judged["doc_id"]):
            domains.setdefault(qid, {}).update(dict.fromkeys(_values(documents[doc_id].get("categories"))))
        fields["domain"] = {qid: list(values) for qid, values in domains.items()}
    return fields


def load_profile(dataset: "str | os.PathLike | Corpus", data: Optional[str | os.PathLike] = None,
                 text: Optional[str] = None) -> Profile:
    """The profile of a BEIR-layout folder or a pairmeasures dataset id (``pair/procon``, from ``data`` or
    ``$PAIRMEASURES_DATA``; see :func:`~pairmeasures.datasets.corpus.open_corpus`). ``text``: the document
    field(s) read (default: the dataset's, ``title+text`` for Grep-BiasIR, whose gender wording is often in
    the title only, else ``text``)."""
    from ..io.beir import check_text_field

    corpus = open_corpus(dataset, data)
    records = corpus.query_records()
    qrels = corpus.qrels()
    return Profile(corpus=corpus, text=check_text_field(text or corpus.default_text),
                   queries={q: r["text"] for q, r in records.items()}, qrels=qrels, labels=corpus.labels(),
                   fields=_query_fields(records, corpus, qrels), terms=corpus.term_list is not None,
                   files=corpus.files())


def only_queries(profile: Profile, file: str | os.PathLike) -> Profile:
    """``profile`` cut to the query ids listed in ``file`` (one a line, ``#`` comments), every one of which must be
    a query of the dataset; the documents stay (systems still rank the whole corpus)."""
    from ..io.runfiles import read_query_ids

    keep = read_query_ids(file)
    unknown = sorted(keep - set(profile.queries))
    if unknown:
        raise ValueError(f"--queries {file}: {len(unknown)} query ids are not queries of {profile.name}, e.g. "
                         f"{unknown[0]!r}")
    if not keep:
        raise ValueError(f"--queries {file} lists no query id: write one a line")

    def subset(frame):
        return None if frame is None else frame[frame["query_id"].isin(keep)].reset_index(drop=True)

    return replace(profile, queries={q: t for q, t in profile.queries.items() if q in keep}, qrels=subset(profile.qrels),
                   labels=subset(profile.labels),
                   fields={name: {q: v for q, v in values.items() if q in keep} for name, values in profile.fields.items()},
                   files={**profile.files, f"queries file {Path(file).name}": sha256_file(Path(file))})
