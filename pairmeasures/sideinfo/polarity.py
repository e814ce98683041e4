"""Polarity scores from text: per-query perspective axes fitted on embeddings (PAIR §4, A.5).

For each query, a :class:`PolarityModel` embeds the query's *fit documents* (texts argued from
both sides, e.g. the Wiki-Balance Synthetic documents of that query, or the judged documents
of a BEIR-layout debate folder), fits ``components`` principal axes on them
(:func:`pairmeasures.math.axes.fit_axes`) and projects any ranked document of that query
onto them. Embeddings come from an :class:`~pairmeasures.compute.embed.Embedder`, so every
text is embedded once across fits, runs and processes.

Orientation is deterministic; with gold labels on the fit documents, the axis points to the
``positive`` perspective. Spurious-correlation removal (A.5): given distractor texts grouped by
the perspective whose style they imitate, the difference of the two groups' mean embeddings is
projected out of every embedding before fitting and projecting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Iterable, Mapping, Optional, Sequence

import numpy as np

from ..compute.blas import one_blas_thread
from ..compute.embed import Embedder
from ..io.beir import TEXT_FIELDS, check_text_field, read_beir, record_text  # noqa: F401  (TEXT_FIELDS: re-exported)
from ..math.axes import Axes, anchored_axis, difference_of_means, fit_axes, project, remove_directions
from .text import TextSource

__all__ = ["FitSet", "PolarityModel", "PolarityError", "default_positive", "negation_anchors", "read_beir"]

#: Labels taken as perspective 1 (the positive pole) when the caller names none, in this order.
POSITIVE_LABELS = ("p1", "pro", "support", "1", "positive", "yes")


class PolarityError(ValueError):
    """Polarity cannot be computed for a query (no fit documents, too few for the axes...)."""


def default_positive(labels: Sequence) -> Optional[str]:
    """The label that stands for perspective 1: the first of :data:`POSITIVE_LABELS` present (``None``
    without labels); a :class:`PolarityError` listing the labels when none of them is one, so that the
    pole is named rather than guessed (e.g. Grep-BiasIR's female/male/neutral/both)."""
    present = sorted({str(label) for label in labels})
    chosen = next((label for label in POSITIVE_LABELS if label in present), None)
    if chosen is None and present:
        raise PolarityError(f"no label stands for perspective 1: the labels are {', '.join(map(repr, present))}, "
                            f"none of {', '.join(POSITIVE_LABELS)}; name the positive label")
    return chosen


def checked_positive(labels: Sequence, positive: Optional[str], labels_file) -> str:
    """``positive`` when it is one of ``labels`` (read from ``labels_file``), else :func:`default_positive`'s
    choice; a :class:`PolarityError` naming the file, the labels and ``--positive`` when neither works."""
    present = sorted({str(label) for label in labels})
    if positive is None:
        try:
            chosen = default_positive(present)
        except PolarityError as exc:
            raise PolarityError(f"{labels_file}: {exc} with --positive LABEL (positive= in Python)") from None
        if chosen is None:
            raise PolarityError(f"{labels_file} has no labels")
        return chosen
    if positive not in present:
        raise PolarityError(f"the positive label {positive!r} is not in {labels_file}, whose labels are "
                            f"{', '.join(map(repr, present))}")
    return positive


@dataclass(frozen=True)
class FitSet:
    """The fit documents of each query: ``texts[qid]`` and optionally gold ``labels[qid]``."""

    texts: Mapping[str, list]
    labels: Optional[Mapping[str, list]] = None
    positive: Optional[str] = None

    @classmethod
    def from_frame(cls, frame, text: str = "text", label: Optional[str] = "label",
                   positive: Optional[str] = None) -> "FitSet":
        """From a DataFrame with ``qid``, ``text`` and (optionally) a gold ``label`` column."""
        texts: dict = {}
        labels: dict = {}
        label_column = label if label is not None and label in frame.columns else None
        has_labels = label_column is not None
        for row in frame.itertuples(index=False):
            qid = str(row.qid)
            texts.setdefault(qid, []).append(getattr(row, text))
            if label_column is not None:
                labels.setdefault(qid, []).append(str(getattr(row, label_column)))
        if label_column is not None and positive is None:
            positive = default_positive(frame[label_column].astype(str))
        return cls(texts=texts, labels=labels if has_labels else None, positive=positive)

    @classmethod
    def from_beir(cls, folder, positive: Optional[str] = None, text: str = "text") -> "FitSet":
        """The labelled (else: judged) documents of each query of a BEIR-layout folder, their texts fetched from
        the folder's on-disk store (:class:`~pairmeasures.io.beirfolder.StoredFolder`), not the whole corpus.

        ``text``: ``"text"``, ``"title"``, or ``"title+text"`` (empty titles fall back to the text).
        """
        from ..io.beirfolder import StoredFolder

        return cls.from_frame(StoredFolder(folder).fit_frame(text), positive=positive)

    @classmethod
    def from_dataset(cls, dataset, text: str = "text", positive: Optional[str] = None) -> "FitSet":
        """The labelled documents of each query (its gold ``labels_iter()``) of an ``ir_datasets`` dataset,
        of PyTerrier's ``pt.get_dataset("irds:...")``, or of a dataset id (``"pair/procon"``), with their
        text from the dataset's docs store.

        ``text``: ``"text"``, ``"title"``, or ``"title+text"`` (empty titles fall back to the text).
        """
        import pandas as pd

        from . import SideInfoError
        from .irds import load_dataset

        check_text_field(text)
        if isinstance(dataset, str):
            dataset = load_dataset(dataset)
        elif hasattr(dataset, "irds_ref"):  # PyTerrier's wrapper of an ir_datasets dataset
            dataset = dataset.irds_ref()
        name = dataset.dataset_id() if hasattr(dataset, "dataset_id") else repr(dataset)
        if not hasattr(dataset, "labels_iter"):
            raise SideInfoError(f"dataset {name!r} has no gold labels, so no fit documents: fit on a BEIR folder "
                                "(pca:DIR, FitSet.from_beir) or on a frame of your own (FitSet.from_frame)")
        pairs = [(label.query_id, label.doc_id, label.group) for label in dataset.labels_iter()]
        if "text" not in dataset.docs_cls()._fields:
            raise SideInfoError(f"dataset {name!r}: documents have no 'text' field; fields: {list(dataset.docs_cls()._fields)}")
        documents = dataset.docs_store().get_many({doc_id for _, doc_id, _ in pairs})
        absent = next((doc_id for _, doc_id, _ in pairs if doc_id not in documents), None)
        if absent is not None:
            raise SideInfoError(f"dataset {name!r}: fit document {absent!r} is not among its documents")
        frame = pd.DataFrame(pairs, columns=["qid", "docno", "label"])
        frame["text"] = [record_text(documents[doc_id]._asdict(), text) for doc_id in frame["docno"]]
        return cls.from_frame(frame, positive=positive)


def negation_anchors(queries: Mapping[str, str]) -> dict:
    """``{qid: (statement, its negation)}`` for queries phrased as statements (a debate's claim).

    The negation is the template "It is not true that <statement>"; pass your own pairs of
    perspective statements to :class:`PolarityModel` where you have them (Wiki-Balance has two per query).
    """
    return {str(q): (t, f"It is not true that {t[:1].lower()}{t[1:]}") for q, t in queries.items()}


@dataclass
class PolarityModel:
    """Polarity scores of documents for queries, from axes fitted per query on ``fit``.

    ``fit``: a :class:`FitSet`, or ``None`` to fit each query's axes on the documents being
    scored (the candidate documents themselves). ``components``: number of axes (scores are
    then ``(n, components)``). ``distractors``: ``{group: [texts]}`` with two groups; their
    difference-of-means direction is removed first (A.5). ``anchors``: ``{qid: (statement 1,
    statement 2)}``; for those queries the axis runs from statement 2 to statement 1, projected
    onto the fit documents' ``anchor_within`` leading principal axes when that is > 0 (one axis
    only). Queries skipped by ``score(..., errors="skip")`` are listed in ``skipped`` with the reason.
    """

    fit: Optional[FitSet] = None
    embedder: Embedder = field(default_factory=Embedder)
    components: int = 1
    distractors: Optional[Mapping[str, Sequence[str]]] = None
    anchors: Optional[Mapping[str, tuple]] = None
    anchor_within: int = 0
    skipped: dict = field(default_factory=dict, init=False, repr=False)
    _axes: dict = field(default_factory=dict, init=False, repr=False)
    _failed: dict = field(default_factory=dict, init=False, repr=False)
    _spurious: Optional[np.ndarray] = field(default=None, init=False, repr=False)

    def __post_init__(self):
        if isinstance(self.components, bool) or not isinstance(self.components, int) or self.components < 1:
            raise ValueError(f"components must be a positive integer, got {self.components!r}")
        if isinstance(self.anchor_within, bool) or not isinstance(self.anchor_within, int) or self.anchor_within < 0:
            raise ValueError(f"anchor_within must be 0 (off) or a positive number of principal axes, got "
                             f"{self.anchor_within!r}")
        if self.distractors is not None:
            groups = list(self.distractors)
            if len(groups) != 2:
                raise ValueError(f"distractors must have exactly two groups (one per perspective); got {groups}")
            texts = [t for g in groups for t in self.distractors[g]]
            owners = [g for g in groups for _ in self.distractors[g]]
            self._spurious = difference_of_means(self.embedder.embed(texts), owners, groups[0], groups[1])
        if self.anchors is not None and self.components != 1:
            raise ValueError("anchors define one axis: use components=1")

    def _embed(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of the distinct texts (spurious directions removed) and each text's row among them."""
        if not len(texts):
            return np.zeros((0, 0)), np.zeros(0, np.intp)
        vectors, index = self.embedder.embed_distinct(texts)
        vectors = vectors.astype(np.float64)
        return (remove_directions(vectors, self._spurious) if self._spurious is not None else vectors), index

    def axes(self, qid: str) -> Axes:
        """The fitted axes of one query (from the fit set; cached)."""
        qid = str(qid)
        if self.fit is None:
            raise PolarityError("this model fits axes on the scored documents; it has no fit set")
        self._fit_queries(self.fit, [qid])
        if qid in self._failed:
            raise PolarityError(self._failed[qid])
        return self._axes[qid]

    def _fit_queries(self, fit: FitSet, qids: Iterable[str], texts: Sequence[str] = ()) -> tuple[np.ndarray, np.ndarray]:
        """Fit the axes of those ``qids`` not tried yet on ``fit``; a query that cannot be fitted is
        recorded in ``_failed`` with the reason. Their fit documents and ``texts`` are embedded in one
        call: returns its vectors and the rows of ``texts`` among them."""
        todo = [q for q in dict.fromkeys(qids) if q not in self._axes and q not in self._failed]
        for qid in todo:
            if not fit.texts.get(qid):
                self._failed[qid] = (f"query {qid!r} has no fit documents, so no perspective axis can be fitted; "
                                     "add fit documents for it or skip it")
        todo = [q for q in todo if q not in self._failed]
        fit_texts = [t for q in todo for t in fit.texts[q]]
        vectors, index = self._embed(fit_texts + list(texts))
        start = 0
        with one_blas_thread():  # one small SVD per query: no BLAS threads spinning between them
            for qid in todo:
                rows = index[start:start + len(fit.texts[qid])]
                start += len(rows)
                labels = fit.labels.get(qid) if fit.labels is not None else None
                try:
                    self._axes[qid] = self._fit(qid, vectors[rows], labels)
                except PolarityError as exc:
                    self._failed[qid] = str(exc)
        return vectors, index[len(fit_texts):]

    def _fit(self, qid: str, vectors: np.ndarray, labels) -> Axes:
        if vectors.shape[0] <= self.components:
            raise PolarityError(f"query {qid!r} has {vectors.shape[0]} fit document(s); {self.components} axis(es) "
                                f"need at least {self.components + 1}")
        anchor = self.anchors.get(qid) if self.anchors is not None else None
        try:
            if anchor is not None:
                anchors, rows = self._embed(list(anchor))
                first, second = anchors[rows]
                return anchored_axis(vectors, first - second, within=self.anchor_within)
            positive = self.fit.positive if self.fit is not None else None
            return fit_axes(vectors, self.components, labels=labels, positive=positive)
        except ValueError as exc:
            raise PolarityError(f"query {qid!r}: {exc}") from exc

    def score(self, qids: Iterable[str], texts: Sequence[str], errors: str = "raise") -> np.ndarray:
        """Polarity of each (query, document text) pair: shape ``(n,)``, or ``(n, components)``.

        ``errors="skip"``: a query whose axes cannot be fitted gets NaN scores instead of a
        :class:`PolarityError`, and is recorded in :attr:`skipped` (query id -> reason).
        """
        if errors not in ("raise", "skip"):
            raise ValueError(f"errors must be 'raise' or 'skip', got {errors!r}")
        position: dict = {}
        query_of = np.fromiter((position.setdefault(str(q), len(position)) for q in qids), dtype=np.intp)
        query_ids = list(position)
        if len(query_of) != len(texts):
            raise ValueError(f"score got {len(query_of)} query ids for {len(texts)} texts")
        if self.fit is not None:
            vectors, index = self._fit_queries(self.fit, query_ids, texts)
        else:
            vectors, index = self._embed(texts)
        scores = np.full((len(query_of), self.components), np.nan)
        order = np.argsort(query_of, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(query_of, minlength=len(query_ids)))])
        with one_blas_thread():  # small per-query SVDs and projections
            self._score_queries(query_ids, order, bounds, vectors, index, scores, errors)
        return scores[:, 0] if self.components == 1 else scores

    def _score_queries(self, query_ids: list, order: np.ndarray, bounds: np.ndarray, vectors: np.ndarray,
                       index: np.ndarray, scores: np.ndarray, errors: str) -> None:
        """Fill ``scores`` query by query (:meth:`score`)."""
        for number, qid in enumerate(query_ids):
            rows = order[bounds[number]:bounds[number + 1]]
            try:
                if self.fit is None:
                    axes = self._fit(qid, vectors[index[rows]], None)
                elif qid in self._failed:
                    raise PolarityError(self._failed[qid])
                else:
                    axes = self._axes[qid]
            except PolarityError as exc:
                if errors == "raise":
                    raise
                self.skipped[qid] = str(exc)
                continue
            scores[rows] = project(vectors[index[rows]], axes)


class PolaritySource:
    """A side-information source computing polarity with a :class:`PolarityModel` (scheme ``pca:``).

    Document texts come from the run's ``text`` column when it has one, else from ``documents`` (the
    BEIR folder's corpus or the dataset's docs store) by document id. A query whose axes cannot be
    fitted gets no polarity (the measure then reports the documents as lacking one, or skips them with
    ``missing='skip'``).
    """

    provides = "scores"

    def __init__(self, model: PolarityModel, documents: Optional[TextSource] = None):
        self.model = model
        self.documents = documents
        self._blank: set = set()  # (query id, document id) whose text is empty or blank, in the last lookup

    def lookup(self, query_ids, doc_ids, columns) -> np.ndarray:
        """Polarity per row; NaN where the query cannot be fitted or the document has no text at all."""
        texts = self._texts(query_ids, doc_ids, columns.get("text"))
        has_text = np.array([t is not None for t in texts], dtype=bool)
        scores = np.full((len(texts),) if self.model.components == 1 else (len(texts), self.model.components), np.nan)
        if has_text.any():
            scores[has_text] = self.model.score(np.asarray(query_ids, dtype=object)[has_text],
                                                [t for t in texts if t is not None], errors="skip")
        return scores

    def missing_reason(self, query_id: str, doc_id: str) -> Optional[str]:
        """Why a document got no polarity: its query's axes could not be fitted, or it has no text (or only blanks)."""
        if query_id in self.model.skipped:
            return self.model.skipped[query_id]
        if (query_id, doc_id) in self._blank:
            return f"the text of document {doc_id!r} for query {query_id!r} is empty: nothing to embed"
        return f"document {doc_id!r} has no text to embed"

    def _texts(self, query_ids, doc_ids, column) -> list:
        """The text to embed per row: the run's (a string), else the documents', else ``None``."""
        import pandas as pd

        if column is None and self.documents is None:
            raise PolarityError("polarity needs document text: add a 'text' column to the run")
        texts: list = []
        lacking: list = []  # rows without text in the run
        self._blank = set()  # of this lookup (missing_reason is asked about it)
        for row, doc_id in enumerate(doc_ids):
            value = column[row] if column is not None else None
            if value is not None and not isinstance(value, str) and not (pd.api.types.is_scalar(value) and pd.isna(value)):
                raise PolarityError(f"the text of document {doc_id!r} of query {query_ids[row]!r} is a "
                                    f"{type(value).__name__}, not a string; decode or convert it before evaluating")
            if isinstance(value, str) and not value.strip():  # empty text: nothing to embed (looked up below)
                self._blank.add((str(query_ids[row]), str(doc_id)))
                value = None
            texts.append(value if isinstance(value, str) else None)
            if not isinstance(value, str):
                lacking.append(row)
        if lacking and self.documents is not None:
            found = self.documents.lookup(np.asarray(query_ids, dtype=object)[lacking],
                                          np.asarray(doc_ids, dtype=object)[lacking], {})
            for row, text in zip(lacking, found):
                pair = (str(query_ids[row]), str(doc_ids[row]))
                if isinstance(text, str) and text.strip():
                    self._blank.discard(pair)  # empty in the run, found in the folder or dataset
                elif isinstance(text, str):
                    self._blank.add(pair)
                    text = None
                texts[row] = text
                if text is None and column is None and pair not in self._blank:  # not in the folder, no column to say so
                    raise PolarityError(f"document {doc_ids[row]!r} is not in {self.documents.name!r} and the run "
                                        "has no 'text' column to embed instead")
        return texts  # None where there is no text anywhere: the measure reports it (or skips it with missing='skip')

    def __repr__(self) -> str:
        return f"PolaritySource({self.model!r})"


def pca_scheme(argument: str) -> PolaritySource:
    """``pca:DIR[?model=M&components=m&text=title+text&positive=LABEL]``: axes fitted per query on
    the labelled (else judged) documents of the BEIR folder ``DIR``, with the embedding model ``M``;
    ``pca:irds:DATASET[?...]``: on the labelled documents of an ``ir_datasets`` dataset (:meth:`FitSet.from_dataset`)."""
    from . import SideInfoError, resource_options

    location, options = resource_options(argument, ("model", "components", "text", "positive"), "pca")
    text = check_text_field(options.get("text", "text").replace(" ", "+"))  # '+' arrives as a space
    if location.startswith("irds:"):
        from .irds import dataset_text, load_dataset

        try:
            dataset = load_dataset(location[len("irds:"):])
            fit = FitSet.from_dataset(dataset, text=text, positive=options.get("positive"))
        except ValueError as exc:  # the dataset's own errors too, e.g. a mirror folder without labels.tsv
            raise SideInfoError(f"pca:{argument}: {exc}") from exc
        documents = dataset_text(dataset, location, lambda doc: record_text(doc._asdict(), text))
    else:
        from ..io.beirfolder import StoredFolder

        data = StoredFolder(location)
        try:
            frame = data.fit_frame(text)  # the fit documents' texts only; the run's are fetched when looked up
        except FileNotFoundError as exc:
            raise SideInfoError(f"pca:{argument}: {exc}") from None
        try:
            fit = FitSet.from_frame(frame, positive=options.get("positive"))
        except PolarityError as exc:
            raise SideInfoError(f"pca:{argument}: {exc} with ?positive=LABEL") from None
        documents = TextSource(str(data.path), loader=data.text_loader(text), iterator=partial(data.iter_texts, text))
    model = PolarityModel(fit=fit, embedder=Embedder(options.get("model") or None),
                          components=int(options.get("components", 1)))
    return PolaritySource(model, documents)
