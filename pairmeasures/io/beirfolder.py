"""A BEIR-layout folder served from disk: documents from its on-disk store, queries, qrels and labels in memory.

:func:`read_beir <pairmeasures.io.beir.read_beir>` holds every document of ``corpus.jsonl`` in a dict
(about +96 MB per 100k MS MARCO-length passages: some 8 GB at MS MARCO's 8.8M). A :class:`StoredFolder` reads the
same files with the same checks, each problem named by file and line, but keeps the documents in the on-disk store
of :mod:`~pairmeasures.io.docstore` (built once per version of ``corpus.jsonl`` under the cache folder, and
shared with :func:`~pairmeasures.datasets.open_corpus`, which reads folders through this class): what it holds
grows with the queries, judgements and labels, never with the corpus's text. Documents are fetched by id, only
those asked for (:meth:`StoredFolder.texts`: a run's documents, a fit set's).

The ``beir:``, ``corpus:`` and ``pca:DIR`` resources and :meth:`~pairmeasures.sideinfo.polarity.FitSet.from_beir`
read folders this way.
"""

from __future__ import annotations

import hashlib
import os
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Optional

from .beir import check_text_field, existing, fit_frame, fit_pairs, read_labels, read_qrels, read_records
from .memo import content_key

if TYPE_CHECKING:
    import pandas as pd

    from .docstore import DocStore

__all__ = ["StoredFolder", "REQUIRED_FILES"]

#: The files a BEIR-layout folder must have (each may be gzipped), in the order their absence is reported.
REQUIRED_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")


def _digest(value) -> str:
    return hashlib.sha1(repr(value).encode()).hexdigest()[:16]


class StoredFolder:
    """A BEIR-layout folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv``, optional ``labels.tsv``, each
    possibly gzipped), read on first use: see the module docstring. Opening costs nothing.

    :attr:`queries`, :attr:`qrels` and :attr:`labels` are those of ``read_beir`` (the same frames), read strictly:
    qrels and labels must name queries of ``queries.jsonl`` and documents of ``corpus.jsonl`` (looked up in the
    store)."""

    def __init__(self, folder: str | os.PathLike):
        self.path = Path(folder).expanduser()
        self._store: Optional["DocStore"] = None
        self._tables: Optional[tuple] = None

    def required(self, name: str) -> Path:
        """``name`` in the folder (or its ``.gz``); a FileNotFoundError naming the folder and the file when it is not a
        BEIR-layout folder."""
        if not self.path.is_dir():
            raise FileNotFoundError(f"{str(self.path)!r} does not exist or is not a folder; a BEIR-layout folder holds "
                                    "corpus.jsonl, queries.jsonl and qrels/test.tsv")
        try:
            return existing(self.path, name)
        except FileNotFoundError:
            raise FileNotFoundError(f"{str(self.path)!r} is not a BEIR-layout folder: it has no {name} "
                                    f"(nor {name}.gz)") from None

    @property
    def index_name(self) -> str:
        """A short name unique to the folder: its store's (and its indexes') name."""
        return f"{self.path.name}-{_digest(str(self.path.resolve()))[:8]}"

    def version(self) -> str:
        """A key of ``corpus.jsonl``'s content, from its size and time (no reading); FileNotFoundError without one."""
        return _digest(content_key(existing(self.path, "corpus.jsonl")))

    def store(self) -> "DocStore":
        """The on-disk store of the folder's documents (built on first use, once per version of ``corpus.jsonl``;
        a malformed line is a DataFileError naming it)."""
        if self._store is None:
            from .docstore import folder_store

            self._store = folder_store(self.required("corpus.jsonl"), self.index_name, self.version())
        return self._store

    def tables(self) -> tuple:
        """``(queries, qrels, labels)``: the query records by id, the qrels frame (``query_id``, ``doc_id``,
        ``relevance``) and the labels frame (``query_id``, ``doc_id``, ``group``) or ``None``. Every required file is
        checked to exist before any is read; then the corpus (into its store), the queries, the qrels and the labels
        are read in that order, as ``read_beir`` reads them."""
        if self._tables is None:
            import pandas as pd

            _, queries_path, qrels_path = (self.required(name) for name in REQUIRED_FILES)
            store = self.store()
            queries = read_records(queries_path, ("_id", "text"),
                                   lambda i, r: None if isinstance(r["text"], str) else f"record {i!r}: text must be text")
            columns = ["line", "query_id", "doc_id"]
            qrels = pd.DataFrame(read_qrels(qrels_path, queries, store), columns=[*columns, "relevance"])
            qrels = qrels.drop(columns="line").astype({"relevance": "int64"})
            labels = None
            try:
                labels_path = existing(self.path, "labels.tsv")
            except FileNotFoundError:
                pass
            else:
                labels = pd.DataFrame(read_labels(labels_path, queries, store),
                                      columns=[*columns, "group"]).drop(columns="line")
            self._tables = (queries, qrels, labels)
        return self._tables

    @property
    def queries(self) -> dict:
        """``{query id: record}`` of ``queries.jsonl``."""
        return self.tables()[0]

    @property
    def qrels(self) -> "pd.DataFrame":
        """The judgements: ``query_id``, ``doc_id``, ``relevance`` (int)."""
        return self.tables()[1]

    @property
    def labels(self) -> Optional["pd.DataFrame"]:
        """The gold labels (``query_id``, ``doc_id``, ``group``), or None without ``labels.tsv``."""
        return self.tables()[2]

    def texts(self, doc_ids: Iterable[str], text: str = "text") -> dict:
        """``{id: text field(s)}`` (one of ``text``, ``title``, ``title+text``) of those of ``doc_ids`` the corpus
        has, fetched from the store."""
        return self.store().texts(doc_ids, check_text_field(text))

    def text_loader(self, text: str = "text") -> Callable[[Iterable[str]], dict]:
        """:meth:`texts` of one field, as a function of the ids (picklable, for a
        :class:`~pairmeasures.sideinfo.text.TextSource`)."""
        return partial(self.texts, text=check_text_field(text))

    def iter_texts(self, text: str = "text") -> Iterator[str]:
        """The ``text`` field(s) of every document, in file order, streamed from the store."""
        return self.store().iter_texts(check_text_field(text))

    def fit_frame(self, text: str = "text") -> "pd.DataFrame":
        """One row per (query, fit document): ``qid``, ``docno``, ``text``, and ``label`` (the gold group) when the
        folder has labels; without labels, the judged relevant documents. The texts of those documents only are
        fetched (:meth:`BeirFolder.fit_frame <pairmeasures.io.beir.BeirFolder.fit_frame>`'s frame)."""
        check_text_field(text)
        pairs = fit_pairs(self.qrels, self.labels)
        found = self.texts(pairs["doc_id"].unique().tolist(), text)
        return fit_frame(pairs, [found[d] for d in pairs["doc_id"]], self.labels is not None)

    def __repr__(self) -> str:
        return f"StoredFolder({str(self.path)!r})"

