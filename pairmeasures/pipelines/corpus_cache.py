"""A corpus's texts into the embedding cache: the one place that reads a corpus for embedding and fills the cache.

:func:`corpus_texts` reads every document's text (an error names a document without any), :func:`distinct_texts`
keys each distinct text once, :func:`missing_texts` keeps those the cache lacks, and :func:`fill_cache` has the
active compute engine (the Ray pool of ``pairmeasures audit --engine ray``) embed them into the cache in one job.
``pairmeasures embed`` (:mod:`~pairmeasures.pipelines.corpus_embedding`) and the dense index
(:func:`~pairmeasures.pipelines.dense.dense_index`) both start from it.
"""

from __future__ import annotations

from typing import Iterator, Optional

from ..compute.cache import EmbeddingCache, text_key
from ..compute.embed import Embedder
from ..datasets.corpus import open_corpus
from ..io.beir import check_text_field, record_text
from ..io.progress import progress_bar

__all__ = ["CHUNK", "corpus_texts", "distinct_texts", "missing_texts", "fill_cache"]

CHUNK = 8192  # texts per cache lookup and per local embedding call


def corpus_texts(source, text: Optional[str] = None, data=None) -> Iterator[tuple]:
    """``(doc_id, text)`` of every document of ``source`` (:func:`open_corpus`) in corpus order, ``text`` its
    field(s) (default: the corpus's own); a document without text is an error naming it."""
    corpus = open_corpus(source, data)
    field = check_text_field(text or corpus.default_text)
    for record in corpus.docs_iter():
        value = record_text(record, field)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"document {record['doc_id']!r} of {corpus.name} has no {field}: every document to "
                             f"embed needs text (pass --text another field, or remove the document)")
        yield record["doc_id"], value


def distinct_texts(pairs: Iterator[tuple]) -> tuple:
    """``(keys, texts)``: each distinct text of the ``(doc_id, text)`` pairs once, in first-seen order, with its
    cache key (:func:`~pairmeasures.compute.cache.text_key`)."""
    keys: list = []
    texts: list = []
    seen: set = set()
    for _, value in pairs:
        key = text_key(value)
        if key not in seen:
            seen.add(key)
            keys.append(key)
            texts.append(value)
    return keys, texts


def missing_texts(cache: EmbeddingCache, model_key: str, keys: list, texts: list) -> tuple:
    """``(keys, texts)`` of those of ``keys``/``texts`` that ``cache`` has no vector of for ``model_key``, read in
    chunks of :data:`CHUNK`."""
    todo_keys, todo_texts = [], []
    for start in range(0, len(keys), CHUNK):
        found = cache.get(model_key, keys[start:start + CHUNK])
        for key, value in zip(keys[start:start + CHUNK], texts[start:start + CHUNK]):
            if key not in found:
                todo_keys.append(key)
                todo_texts.append(value)
    return todo_keys, todo_texts


def fill_cache(source, embedder: Embedder, *, text: Optional[str] = None, data=None) -> int:
    """Put every document text of ``source`` that ``embedder``'s cache lacks into it through the enclosing compute
    engine (the Ray pool) in one job (:meth:`Embedder.fill_elsewhere`); returns the texts embedded. What a dense
    index built inside ``pairmeasures audit --engine ray`` does first, so its indexing batches then find every
    vector in the cache."""
    cache = embedder.cache
    if cache is None:
        raise ValueError("fill_cache fills an embedder's cache: this embedder has none (cache=False)")
    keys, texts = distinct_texts(corpus_texts(source, text, data))
    todo_keys, todo_texts = missing_texts(cache, embedder.key, keys, texts)
    with progress_bar(total=len(todo_keys), desc="embedding the corpus on Ray", unit="text") as bar:
        return embedder.fill_elsewhere(todo_keys, todo_texts, progress=bar.update)
