"""One corpus source: a pairmeasures dataset id or a BEIR-layout folder, resolved in one place.

:func:`open_corpus` is the only place in the package that decides whether a name is a dataset id
(``pair/procon``, ``irds:pair/procon``) or a BEIR-layout folder. The :class:`Corpus` it returns serves
what the audit, the retrieval stages, the document-text stage and the SEME material read:

- documents **by id** (:meth:`Corpus.documents`, :meth:`Corpus.texts`) and as a **stream**
  (:meth:`Corpus.docs_iter`), so nothing requires the whole corpus in memory (a dataset whose documents
  come from ir_datasets, such as MS MARCO passage, is served from ir_datasets' docstore);
- queries with their fields, qrels and gold labels (small: held in memory);
- what a user need not say: the ``default_text`` field(s) and the ``term_list`` whose term measures
  apply, from the dataset's spec (a folder: ``text``, and the gender list when its labels are
  ``female``/``male``);
- identities: ``source`` (the dataset id, or the resolved folder), ``version()`` (a key of the
  documents' content, read from file sizes and times, without parsing), ``index_name`` (for index
  folders) and ``files()`` (the sha256 of every file read, keyed relative to the dataset, for manifests).

Opening costs nothing: files are read on first use, once per process while they are unchanged. A folder's
``corpus.jsonl`` is read once per version of the file into an on-disk store under the cache folder
(:mod:`~pairmeasures.io.docstore`), which later audits and processes open: no corpus is held in memory.
"""

from __future__ import annotations

import hashlib
import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Optional

from ..io.beir import check_text_field, record_text
from ..io.beirfolder import StoredFolder
from ..io.memo import Memo, content_key, sha256_file

if TYPE_CHECKING:
    import pandas as pd

    from ..io.docstore import DocStore
    from ._loaders import DatasetSpec

__all__ = ["Corpus", "CorpusSourceError", "MissingDocumentsError", "open_corpus", "GENDER_GROUPS"]

#: Gold labels that mark a folder as a term-based (gender) benchmark: the gender term list applies.
GENDER_GROUPS = frozenset({"female", "male"})

#: The files of a BEIR-layout folder that a corpus reads (their sha256 goes into manifests).
_FOLDER_FILES = ("corpus", "queries", "test", "labels")


class CorpusSourceError(ValueError):
    """A name that is neither a pairmeasures dataset id nor a BEIR-layout folder."""


class MissingDocumentsError(ValueError):
    """Documents asked for by id that the corpus does not have."""


class Corpus(ABC):
    """A dataset's documents (by id, or streamed), queries, qrels and gold labels: see the module docstring.

    ``name``: the name a user gave (a dataset id, or the folder as written); ``source``: the dataset id or the
    resolved folder path (the same on every call); ``data``: the mirror folder a dataset id is read from
    (``None``: ``$PAIRMEASURES_DATA`` and the download cache)."""

    name: str
    source: str
    data: Optional[str]
    default_text: str = "text"
    #: The ir_datasets dataset whose documents and qrels this dataset uses ("" where it has its own).
    documents_from: str = ""

    @property
    def is_folder(self) -> bool:
        """Whether the corpus is a BEIR-layout folder (else a registered dataset)."""
        return False

    @property
    @abstractmethod
    def index_name(self) -> str:
        """A short name for the folders of this corpus's indexes (unique per dataset or folder)."""

    @abstractmethod
    def version(self) -> str:
        """A key of the documents' content: it changes when they do (read from file sizes and times)."""

    @abstractmethod
    def files(self) -> dict:
        """``{file: sha256}`` of every file the corpus reads, keyed relative to the dataset: a folder's files by their
        path in it (``qrels/test.tsv``), a dataset id's by their path in the mirror layout (``procon/qrels/test.tsv``,
        ``wiki-balance-categories.tsv``), wherever the folder or mirror lies."""

    @abstractmethod
    def query_records(self) -> dict:
        """``{query id: record}``: each query's fields (``text`` and any others: category, topic, url...)."""

    @abstractmethod
    def qrels(self) -> "pd.DataFrame":
        """The judgements: ``query_id``, ``doc_id``, ``relevance`` (int)."""

    @abstractmethod
    def labels(self) -> Optional["pd.DataFrame"]:
        """The gold labels (``query_id``, ``doc_id``, ``group``), or None for a corpus without any."""

    @abstractmethod
    def docs_count(self) -> int:
        """How many documents the corpus has."""

    @abstractmethod
    def docs_iter(self) -> Iterator[dict]:
        """Every document record (a dict with ``doc_id``, ``text`` and the corpus's other fields), streamed."""

    @abstractmethod
    def documents(self, doc_ids: Iterable[str]) -> dict:
        """``{doc id: record}`` of the documents among ``doc_ids`` that the corpus has (the others left out)."""

    @property
    def measures(self) -> tuple:
        """The measure strings an audit evaluates when a user names none, as the dataset's papers report them (its
        spec's); empty where the audit chooses (a folder, most datasets)."""
        return ()

    @property
    def term_list(self) -> Optional[str]:
        """The term list whose term measures apply (``"gender"``), or None."""
        labels = self.labels()
        return "gender" if labels is not None and GENDER_GROUPS <= set(labels["group"]) else None

    def missing(self, doc_ids: Iterable[str]) -> list:
        """The distinct ids among ``doc_ids`` that are not documents of the corpus, sorted."""
        wanted = set(_id_list(doc_ids))
        return sorted(wanted - set(self.documents(wanted)))

    def texts(self, doc_ids: Iterable[str], text: Optional[str] = None) -> list:
        """The ``text`` field(s) (one of ``"text"``, ``"title"``, ``"title+text"``; default: :attr:`default_text`)
        of each of ``doc_ids``, in order; a :class:`MissingDocumentsError` names the first id the corpus lacks."""
        field = check_text_field(text or self.default_text)
        ids = _id_list(doc_ids)
        wanted = set(ids)
        found = self._texts(wanted, field)
        if len(found) < len(wanted):
            absent = next(d for d in ids if d not in found)
            raise MissingDocumentsError(f"document {absent!r} is not in {self.name} "
                                        f"({len(wanted - set(found))} of the {len(wanted)} documents asked for "
                                        "are missing): the run and the dataset do not match")
        return list(map(found.__getitem__, ids))

    def _texts(self, doc_ids: set, field: str) -> dict:
        """``{id: text field(s)}`` of the documents among ``doc_ids`` that the corpus has."""
        return {d: record_text(record, field) for d, record in self.documents(doc_ids).items()}

    def __repr__(self) -> str:
        return f"open_corpus({self.name!r})"


def _id_list(doc_ids: Iterable[str]) -> list:
    """``doc_ids`` as a list, a pandas column or NumPy array converted at once (not boxed element by element)."""
    tolist = getattr(doc_ids, "tolist", None)
    return tolist() if callable(tolist) else list(doc_ids)


def _digest(value) -> str:
    return hashlib.sha1(repr(value).encode()).hexdigest()[:16]


class _FolderCorpus(Corpus):
    """A BEIR-layout folder, read strictly on first use (:class:`~pairmeasures.io.beirfolder.StoredFolder`): its
    ``corpus.jsonl`` into an on-disk store built once per version of the file, its queries, qrels and labels into
    memory."""

    def __init__(self, folder: Path, name: str):
        self.folder = folder
        self.name = name
        self.source = str(folder.resolve())
        self.data = None
        self.stored = StoredFolder(folder)

    @property
    def is_folder(self) -> bool:
        return True

    def store(self) -> "DocStore":
        """The on-disk store of the folder's documents (built on first use, once per version of ``corpus.jsonl``)."""
        return self.stored.store()

    @property
    def index_name(self) -> str:
        return self.stored.index_name

    def version(self) -> str:
        try:
            return self.stored.version()
        except FileNotFoundError:
            raise CorpusSourceError(f"{self.folder} has no corpus.jsonl: give a BEIR-layout folder or a dataset id "
                                    "like 'pair/procon'") from None

    def files(self) -> dict:
        corpus = self.stored.required("corpus.jsonl")
        return {str(p.relative_to(self.folder)): self.store().sha256 if p == corpus else sha256_file(p)
                for p in sorted(self.folder.rglob("*")) if p.is_file() and p.name.split(".")[0] in _FOLDER_FILES}

    def query_records(self) -> dict:
        return self.stored.queries

    def qrels(self) -> "pd.DataFrame":
        return self.stored.qrels

    def labels(self) -> Optional["pd.DataFrame"]:
        return self.stored.labels

    def docs_count(self) -> int:
        return len(self.store())

    def docs_iter(self) -> Iterator[dict]:
        return ({**record, "doc_id": doc_id} for doc_id, record in self.store())

    def documents(self, doc_ids: Iterable[str]) -> dict:
        return self.store().get_many(doc_ids)

    def missing(self, doc_ids: Iterable[str]) -> list:
        wanted = set(_id_list(doc_ids))
        return sorted(wanted - self.store().present(wanted))

    def _texts(self, doc_ids: set, field: str) -> dict:
        return self.store().texts(doc_ids, field)


class _DatasetCorpus(Corpus):
    """A registered pairmeasures dataset: its records parsed once (:func:`~._loaders.load_tables`), or, for a
    dataset whose documents are another ir_datasets dataset's (MS MARCO passage), that dataset's docstore."""

    def __init__(self, spec: "DatasetSpec", data: Optional[str | os.PathLike]):
        self.spec = spec
        self.name = self.source = spec.id
        self.data = None if data is None else str(data)
        self.default_text = spec.default_text
        self.documents_from = spec.documents_from
        self._index: tuple = ("", {})

    def _tables(self):
        from ._loaders import load_tables

        return load_tables(self.spec, self.data)

    def _base(self):
        """The ir_datasets dataset the documents come from (``documents_from``), once the documents' files are here
        (ir_datasets fetches them on first use; a DatasetUnavailableError naming them where it cannot)."""
        import ir_datasets

        from ._irdsfiles import ensure_irds_files

        ensure_irds_files(self.spec.id, tuple(file for file in self.spec.documents_files if file.kind == "docs"))
        return ir_datasets.load(self.spec.documents_from)

    @property
    def measures(self) -> tuple:
        return self.spec.measures

    @property
    def term_list(self) -> Optional[str]:
        return self.spec.term_list if self.spec.term_list is not None else super().term_list

    def _collection(self) -> str:
        """The ir_datasets dataset that owns the documents (``msmarco-passage`` for every MS MARCO query set): the
        folder of its documents' file, without asking ir_datasets (which would touch the collection's files)."""
        docs = [file.group for file in self.spec.documents_files if file.kind == "docs"]
        if docs:
            return docs[0]
        import ir_datasets

        return ir_datasets.docs_parent_id(self.spec.documents_from)

    @property
    def index_name(self) -> str:  # the query sets of one collection share its indexes: built once
        return self._collection() if self.documents_from else self.spec.id.replace("/", "-")

    def version(self) -> str:
        if self.documents_from:  # an ir_datasets collection: fixed by its id (ir_datasets checks its download's
            # md5) and count (read from its metadata, not by iterating 8.8M passages)
            import ir_datasets

            return _digest(f"{self._collection()}:{self._base().docs_count()}:{ir_datasets.__version__}")
        from ._loaders import tables_key

        return _digest(tables_key(self.spec, self.data))

    def files(self) -> dict:
        from ._loaders import resource_files
        from ._resources import locate

        files = {}
        for resource in self.spec.resources:
            location = locate(resource, self.data, self.spec.id)
            for path in resource_files(location):  # keyed as in the mirror layout: unique per dataset, on any machine
                relative = Path(resource.name) / path.relative_to(location.path) if resource.files else Path(resource.name)
                files[relative.as_posix()] = sha256_file(path)
        return files

    def query_records(self) -> dict:
        tables = self._tables()
        records = {q.query_id: q._asdict() for q in tables.queries}
        for info in tables.query_info:
            records.setdefault(info.query_id, {}).update(info._asdict())
        return records

    def qrels(self) -> "pd.DataFrame":
        import pandas as pd

        if self.documents_from:
            from ._irdsfiles import ensure_irds_files
            from ._load import load

            ensure_irds_files(self.spec.id, self.spec.documents_files)  # all of them: what an audit needs, fetched at once
            rows = [(q.query_id, q.doc_id, int(q.relevance)) for q in load(self.spec.id, self.data).qrels_iter()]
        else:
            rows = [(q.query_id, q.doc_id, int(q.relevance)) for q in self._tables().qrels]
        return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])

    def labels(self) -> Optional["pd.DataFrame"]:
        import pandas as pd

        labels = self._tables().labels
        if not labels:
            return None
        return pd.DataFrame([(g.query_id, g.doc_id, str(g.group)) for g in labels], columns=["query_id", "doc_id", "group"])

    def docs_count(self) -> int:
        return self._base().docs_count() if self.documents_from else len(self._tables().docs)

    def docs_iter(self) -> Iterator[dict]:
        docs = self._base().docs_iter() if self.documents_from else self._tables().docs
        return (doc._asdict() for doc in docs)

    def documents(self, doc_ids: Iterable[str]) -> dict:
        if self.documents_from:
            return {d: doc._asdict() for d, doc in self._base().docs_store().get_many(set(doc_ids)).items()}
        tables = self._tables()
        if self._index[0] != tables.key:
            self._index = (tables.key, {doc.doc_id: doc._asdict() for doc in tables.docs})
        found = self._index[1]
        return {d: found[d] for d in doc_ids if d in found}


#: Folders read in this process, by path, kept while their files are unchanged.
_FOLDERS = Memo("corpus folders")


def open_corpus(source: "str | os.PathLike | Corpus", data: Optional[str | os.PathLike] = None) -> Corpus:
    """The corpus named by ``source``: a BEIR-layout folder (``corpus.jsonl``, ``queries.jsonl``,
    ``qrels/test.tsv``, optional ``labels.tsv``), or a pairmeasures dataset id (``"pair/procon"``, with or
    without ``irds:``) read from ``data`` (a mirror folder; default ``$PAIRMEASURES_DATA``, then the download
    cache). A :class:`Corpus` is returned as it is. Nothing is read until it is used."""
    if isinstance(source, Corpus):
        return source
    folder = Path(source).expanduser()
    if folder.is_dir():
        resolved = folder.resolve()
        return _FOLDERS.get((str(resolved), str(source)), content_key(resolved),
                            lambda: _FolderCorpus(folder, str(source)))
    from ._catalogue import SPEC_BY_ID

    name = str(source).removeprefix("irds:")
    if name not in SPEC_BY_ID:
        import difflib

        close = difflib.get_close_matches(name, list(SPEC_BY_ID), n=1, cutoff=0.6)
        raise CorpusSourceError(
            f"{str(source)!r} is neither a folder nor a pairmeasures dataset"
            f"{f'; did you mean {close[0]!r}?' if close else ''}; known datasets: {', '.join(SPEC_BY_ID)}; a "
            "BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/test.tsv, optional labels.tsv) works too")
    return _DatasetCorpus(SPEC_BY_ID[name], data)
