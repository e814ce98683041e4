"""A whole corpus embedded into the embedding cache and its pyterrier-dr index (``pairmeasures embed``).

Every distinct document text of the corpus is embedded once with the model, into the same cache entries the
audit's :class:`~pairmeasures.sideinfo.embed.Embedder` reads (same model key, the model's raw vectors), then
the ``FlexIndex`` that the ``dense`` stage reads is built from the cache (no text embedded a second time). The
``local`` engine embeds in this process; the ``ray`` engine in a Ray Data actor pool
(:mod:`~pairmeasures.sideinfo.raypool`), through shards on disk that this process merges.

Rerunning is cheap and safe: texts in the cache are never embedded again, shards left by a killed run are
merged first (damaged ones deleted and redone), and an index that exists is reused.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator, Optional

from ..datasets.corpus import open_corpus
from ..sideinfo.beir import check_text_field, record_text
from ..sideinfo.cache import EmbeddingCache, text_key
from ..sideinfo.embed import Embedder
from ..sideinfo.progress import progress_bar
from ..sideinfo.shards import ShardError, plan_shards, store_for

__all__ = ["EmbedResult", "embed_corpus", "corpus_texts", "ENGINES"]

ENGINES = ("local", "ray")
_CHUNK = 8192  # texts per cache lookup and per local embedding call


@dataclass
class EmbedResult:
    """What :func:`embed_corpus` did: distinct ``texts`` of the corpus, how many this run ``embedded`` and how
    many were ``cached`` before (in the cache, or in shards a killed run left), the ``engine``, its
    ``workers`` (Ray actors; 0 when nothing was left to embed and no Ray was started) and the wall-clock ``seconds``; ``index``: the dense index folder (``None`` when not built)."""

    texts: int
    embedded: int
    cached: int
    engine: str
    workers: int
    seconds: float
    index: Optional[str] = None

    def summary(self) -> dict:
        """The JSON object ``pairmeasures embed --json`` prints."""
        out = asdict(self)
        del out["index"]
        return out


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


def _distinct(pairs: Iterator[tuple]) -> tuple:
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


def _missing(cache: EmbeddingCache, model_key: str, keys: list, texts: list) -> tuple:
    todo_keys, todo_texts = [], []
    for start in range(0, len(keys), _CHUNK):
        found = cache.get(model_key, keys[start:start + _CHUNK])
        for key, value in zip(keys[start:start + _CHUNK], texts[start:start + _CHUNK]):
            if key not in found:
                todo_keys.append(key)
                todo_texts.append(value)
    return todo_keys, todo_texts


def embed_corpus(source, model: Optional[str] = None, *, engine: str = "local", address: Optional[str] = None,
                 workers: Optional[int] = None, text: Optional[str] = None, data=None, batch_size: int = 64,
                 shard_size: int = 2048, work: Optional[str | os.PathLike] = None, index: bool = True,
                 index_dir: Optional[str | os.PathLike] = None, num_cpus: Optional[int] = None) -> EmbedResult:
    """Embed every document of ``source`` (a dataset id, ``pair/...`` id or BEIR folder) with ``model`` (default:
    the offline all-MiniLM-L6-v2) into the embedding cache, then build its dense index (unless ``index=False``).

    ``engine``: ``"local"`` (this process) or ``"ray"`` (``address``: a cluster to join; default a private local
    Ray with ``num_cpus``). ``workers``: actors of the Ray pool (default: one per GPU, else per CPU).
    ``shard_size``: texts per shard; ``work``: the shard folder (default ``shards/<model key>`` in the cache
    folder; on a cluster of several machines, a shared folder). ``index_dir``: where indexes live."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")
    start = time.perf_counter()
    embedder = Embedder(model, batch_size=batch_size, progress=False)
    cache = embedder.cache
    assert cache is not None
    keys, texts = _distinct(corpus_texts(source, text, data))
    store = store_for(embedder.key, work)
    store.recover(cache, embedder.key)  # shards a killed run finished: into the cache before anything is planned
    todo_keys, todo_texts = _missing(cache, embedder.key, keys, texts)
    if engine == "local":
        count = 1
        with progress_bar(total=len(todo_texts), desc="embedding", unit="text") as bar:  # lines in a log file too
            for begin in range(0, len(todo_texts), _CHUNK):
                chunk = todo_texts[begin:begin + _CHUNK]
                embedder.embed_distinct(chunk)
                bar.update(len(chunk))
        embedded = embedder.computed
    else:
        count, embedded = _embed_on_ray(embedder, store, cache, todo_keys, todo_texts, address=address,
                                        workers=workers, batch_size=batch_size, shard_size=shard_size,
                                        num_cpus=num_cpus)
    folder = _index(source, model, text, data, index_dir) if index else None
    return EmbedResult(texts=len(keys), embedded=embedded, cached=len(keys) - embedded, engine=engine,
                       workers=count, seconds=round(time.perf_counter() - start, 3),
                       index=None if folder is None else str(folder))


def _embed_on_ray(embedder: Embedder, store, cache: EmbeddingCache, keys: list, texts: list, *, address, workers,
                  batch_size: int, shard_size: int, num_cpus) -> tuple:
    """``(actors, rows embedded)``: the missing texts as shards through the Ray pool, merged here as they finish;
    shards that come back damaged are embedded again (twice at most)."""
    from ..sideinfo.raypool import embed_shards, pool_shape, ray_session

    if not keys:
        return 0, 0  # nothing to embed: no Ray started
    shards = plan_shards(keys, texts, shard_size)
    model = None if embedder.model_name == "all-MiniLM-L6-v2" else embedder.model_name
    embedded = 0
    with ray_session(address, num_cpus=num_cpus) as ray, \
            progress_bar(total=len(keys), desc="embedding on Ray", unit="text") as bar:
        count, gpus, cpus = pool_shape(ray, workers)
        failed: list = []

        def merge(shard: str) -> int:
            try:
                rows = store.merge(shard, cache, embedder.key)
            except ShardError:
                store.remove(shard)
                failed.append(shard)
                return 0
            bar.update(rows)  # as each shard comes back merged
            return rows

        for _attempt in range(3):
            failed.clear()
            embedded += embed_shards(ray, shards, store, merge, model=model, workers=count, gpus=gpus, cpus=cpus,
                                     batch_size=batch_size)
            if not failed:
                break
            shards = [s for s in shards if s.id in set(failed)]
        else:
            raise ShardError(f"{len(failed)} shards came back damaged three times in {store.folder}; check the disk")
    return count, embedded


def _index(source, model, text, data, index_dir) -> Path:
    """The dense index the ``dense`` stage reads, built from the cache now filled (or the one that exists)."""
    from .dense import dense_retriever

    retriever = dense_retriever(source, model, text=text or open_corpus(source, data).default_text, data=data,
                                index_dir=index_dir)
    return Path(retriever._transformers[-1].flex_index.index_path)  # pyterrier's Compose: encoder >> retriever
