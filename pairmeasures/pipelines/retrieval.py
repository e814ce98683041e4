"""BM25 retrieval through ``pyterrier-pisa`` over a pairmeasures dataset or a BEIR-layout folder.

The PISA index is built once, into a folder keyed by the corpus content under the pairmeasures
cache directory (``$PAIRMEASURES_CACHE_DIR``, else ``~/.cache/pairmeasures``), and reused by later
calls and processes; a changed corpus gets a new index and the old one is removed. The index is
built into a temporary folder beside its final place and renamed, so an interrupted build leaves
nothing that a later call would take for an index. PISA's own output goes to ``build.log`` in the index folder.
"""

from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Callable, Iterator, Optional

from .._owned import WorkFolder, is_claimed, mark_folder, move_aside, put_in_place, remove_folder, scratch_folder
from ..compute.cache import default_cache_path
from ..datasets.corpus import Corpus, CorpusSourceError, open_corpus
from ..io.beir import check_text_field, record_text

#: A retrieval source that is neither a pairmeasures dataset id nor a BEIR-layout folder (raised by
#: :func:`~pairmeasures.datasets.corpus.open_corpus`, the one place that resolves them).
RetrievalSourceError = CorpusSourceError


#: The file in an index folder that holds what the index builder wrote to stdout and stderr (with ``log=True``).
BUILD_LOG = "build.log"


class IndexBuildError(RuntimeError):
    """An index build that failed; the message ends with the tail of the builder's log."""


@contextmanager
def _output_to(log: Path) -> Iterator[IO[str]]:
    """File descriptors 1 and 2 (also C++ code's output) redirected into ``log``; yields a stream on the terminal's
    stderr for progress bars."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    terminal = os.fdopen(os.dup(saved[2]), "w", buffering=1)
    with open(log, "ab") as handle:
        try:
            for fd in (1, 2):
                os.dup2(handle.fileno(), fd)
            yield terminal
        finally:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            terminal.close()


def _tail(log: Path, lines: int = 20) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.is_file() else "(no log)"


#: An index folder built here: everything in it is pairmeasures', proven by its marker (written when it is built).
_INDEX = WorkFolder("pairmeasures", "index", "--index-dir", (r".+",), "choose another --index-dir")


def cached_index(source: "str | os.PathLike | Corpus", kind: str, build: Callable[[Path, Iterator[dict]], None], *,
                 text: str = "text", data: Optional[str | os.PathLike] = None,
                 index_dir: Optional[str | os.PathLike] = None, variant: str = "", log: bool = False,
                 prepare: Optional[Callable[[], object]] = None) -> Path:
    """The folder of ``source``'s index of ``kind`` (the folder's suffix), made by ``build(folder, documents)``
    unless one exists for the same corpus content, fields and ``variant`` (such as a model's key); ``prepare()``
    runs first when it is built (before its progress bar), e.g. to embed the corpus elsewhere.

    It is built into a temporary folder beside its place and renamed when complete, so a folder that
    exists is a whole index; versions for older content are removed. ``index_dir``: where indexes live
    (default: ``indexes/`` in the pairmeasures cache directory). ``log``: send everything written to file
    descriptors 1 and 2 while building (a C++ indexer's lines) into :data:`BUILD_LOG` in the index folder, the
    progress bar still showing; a failed build's error ends with the log's tail.
    """
    from tqdm.auto import tqdm

    check_text_field(text)
    corpus = open_corpus(source, data)
    root = Path(index_dir).expanduser() if index_dir is not None else default_cache_path().parent / "indexes"
    name = f"{corpus.index_name}-{text.replace('+', '_')}{variant and '-' + variant}"
    target = root / f"{name}-{corpus.version()}.{kind}"
    if not target.is_dir():
        if prepare is not None:
            prepare()
        root.mkdir(parents=True, exist_ok=True)
        with scratch_folder(root, f".{name}-", ".building") as building:
            documents = ({"docno": record["doc_id"], "text": record_text(record, text)} for record in corpus.docs_iter())
            count = corpus.docs_count()
            if log:
                record = building / BUILD_LOG
                try:
                    with _output_to(record) as terminal:
                        build(building / "index", tqdm(documents, total=count, desc=f"indexing {name}", unit="doc",
                                                       file=terminal))
                except Exception as error:
                    raise IndexBuildError(f"building the {kind} index of {corpus.name} failed: {type(error).__name__}: "
                                          f"{error}\nlast lines of its log:\n{_tail(record)}") from error
                put_in_place(record, building / "index" / BUILD_LOG)
            else:
                build(building / "index", tqdm(documents, total=count, desc=f"indexing {name}", unit="doc"))
            mark_folder(building / "index", _INDEX)  # marked as pairmeasures' own: what makes it removable later
            try:
                move_aside(building / "index", target)
            except OSError:  # another process finished the same index first: keep theirs
                if not target.is_dir():
                    raise
        # earlier versions of this index (older content): its exact name with another version, marked as ours
        stale_name = re.compile(rf"{re.escape(name)}-[0-9a-f]{{16}}\.{re.escape(kind)}")
        for stale in root.iterdir():
            if stale != target and stale_name.fullmatch(stale.name) and is_claimed(stale, _INDEX):
                remove_folder(stale, _INDEX)
    return target


def _pisa_index_class() -> type:
    """``pyterrier_pisa.PisaIndex``; without the ``pisa`` extra, a ModuleNotFoundError that names it."""
    try:
        from pyterrier_pisa import PisaIndex
    except ModuleNotFoundError as exc:
        missing = "pyterrier-pisa" if exc.name in (None, "pyterrier_pisa") else f"{exc.name}, which pyterrier-pisa needs"
        raise ModuleNotFoundError(f"BM25 (pm.bm25, pm.pisa_index, the bm25 stage) needs {missing}: pip install "
                                  "'pairmeasures[pisa]'", name=exc.name) from exc
    return PisaIndex


def pisa_index(source: "str | os.PathLike | Corpus", *, text: str = "text", data: Optional[str | os.PathLike] = None,
               index_dir: Optional[str | os.PathLike] = None, threads: int = 1):
    """The ``pyterrier_pisa.PisaIndex`` of ``source`` (a pairmeasures dataset id such as ``"pair/procon"``,
    a BEIR-layout folder, or a :class:`~pairmeasures.datasets.corpus.Corpus`), built on first use (with a
    progress bar) and reused while the corpus is unchanged.

    ``text``: the document fields indexed (``"text"``, ``"title"`` or ``"title+text"``). ``data``: the mirror
    folder of a dataset (default: ``$PAIRMEASURES_DATA``). ``index_dir``: where indexes live (default:
    ``indexes/`` in the pairmeasures cache directory).
    """
    PisaIndex = _pisa_index_class()

    def build(folder: Path, documents: Iterator[dict]) -> None:
        PisaIndex(str(folder), text_field="text", threads=threads).index(documents)

    folder = cached_index(source, "pisa", build, text=text, data=data, index_dir=index_dir, log=True)
    return PisaIndex(str(folder), text_field="text", threads=threads)


def bm25(source: "str | os.PathLike | Corpus", *, num_results: int = 1000, text: str = "text",
         data: Optional[str | os.PathLike] = None, index_dir: Optional[str | os.PathLike] = None,
         threads: int = 1, **options):
    """A PISA BM25 retriever over ``source`` (a pairmeasures dataset id or a BEIR-layout folder; see
    :func:`pisa_index`, which builds or reuses its index). ``options`` go to ``PisaIndex.bm25``
    (``k1``, ``b``, ...); PISA's output while it prepares the scored index goes to the index's ``build.log``."""
    index = pisa_index(source, text=text, data=data, index_dir=index_dir, threads=threads)
    with _output_to(Path(index.path) / BUILD_LOG):  # PISA builds the scored index on first use, saying so on stdout
        return index.bm25(num_results=num_results, **options)
