"""A whole corpus embedded into the embedding cache and its pyterrier-dr index (``pairmeasures embed``).

Every distinct document text of the corpus is embedded once with the model, into the same cache entries the
audit's :class:`~pairmeasures.compute.embed.Embedder` reads (same model key, the model's raw vectors), then
the ``FlexIndex`` that the ``dense`` stage reads is built from the cache (no text embedded a second time). The
``local`` engine embeds in this process; the ``ray`` engine in a Ray Data actor pool
(:mod:`~pairmeasures.compute.raypool`), through shards on disk that this process merges.

Rerunning is cheap and safe: texts in the cache are never embedded again, shards left by a killed run are
merged first (damaged ones deleted and redone), and an index that exists is reused.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from .._owned import is_claimed
from ..compute.embed import Embedder
from ..compute.engines import ENGINES, check_engine_options
from ..compute.shards import SHARD_FOLDER, store_for
from ..datasets.corpus import open_corpus
from ..io.progress import progress_bar
from .corpus_cache import CHUNK, corpus_texts, distinct_texts, missing_texts

__all__ = ["EmbedResult", "embed_corpus", "ENGINES"]


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


def embed_corpus(source, model: Optional[str] = None, *, engine: str = "local", address: Optional[str] = None,
                 workers: Optional[int] = None, tokenizers: Optional[int] = None, text: Optional[str] = None,
                 data=None, batch_size: Optional[int] = None,
                 shard_size: Optional[int] = None, work: Optional[str | os.PathLike] = None, index: bool = True,
                 index_dir: Optional[str | os.PathLike] = None, num_cpus: Optional[int] = None) -> EmbedResult:
    """Embed every document of ``source`` (a dataset id, ``pair/...`` id or BEIR folder) with ``model`` (default:
    the offline all-MiniLM-L6-v2) into the embedding cache, then build its dense index (unless ``index=False``).

    ``engine``: ``"local"`` (this process) or ``"ray"`` (``address``: a cluster to join; default a private local
    Ray with ``num_cpus``). ``workers``: model actors of the Ray pool (default: one per GPU, else per CPU);
    ``tokenizers``: CPU actors tokenizing for the GPU actors (default: :func:`~pairmeasures.compute.raypool.
    pool_shape`'s). ``batch_size``: texts per forward pass (default: 64 on a CPU, 256 on a GPU).
    ``shard_size``: texts per shard (default 2048); ``work``: the shard folder (default ``shards/<model key>`` in
    the cache folder; on a cluster of several machines, a shared folder). ``index_dir``: where indexes live.

    The options (and ``address``: :func:`~pairmeasures.compute.raysession.check_address`) are checked before any
    work; a corpus without documents is an error naming it (nothing to embed, and no index can be built)."""
    check_engine_options(engine, address=address, workers=workers, tokenizers=tokenizers, shard_size=shard_size,
                         work=work, batch_size=batch_size)
    if engine == "ray":
        from ..compute.raysession import check_address, require_ray

        require_ray()
        check_address(address)
    start = time.perf_counter()
    embedder = Embedder(model, batch_size=batch_size, progress=False)
    cache = embedder.cache
    assert cache is not None
    store = store_for(embedder.key, work)
    if engine == "ray":  # refused, untouched, when it holds what is not a shard (before any work)
        store.claim("--work" if work is not None else None)
    # the local engine merges what a killed Ray run left in the model's shard folder, when pairmeasures made it
    shards = engine == "ray" or is_claimed(store.folder, SHARD_FOLDER)
    with store.locked() if shards else contextlib.nullcontext(store):
        keys, texts = distinct_texts(corpus_texts(source, text, data))
        if not keys:
            raise ValueError(f"{_corpus_file(source, data)} has no documents: nothing to embed, and no dense index "
                             f"can be built from it (check the file, or the dataset id)")
        if shards:
            store.recover(cache)  # shards a killed run finished: into the cache before anything is planned
        todo_keys, todo_texts = missing_texts(cache, embedder.key, keys, texts)
        if engine == "local":
            count = 1
            with progress_bar(total=len(todo_texts), desc="embedding", unit="text") as bar:  # lines in a log too
                embedder.on_batch = bar.update  # moved on every batch the model embeds, not once a chunk
                for begin in range(0, len(todo_texts), CHUNK):
                    chunk = todo_texts[begin:begin + CHUNK]
                    shown = bar.n
                    embedder.embed_distinct(chunk)
                    bar.update(len(chunk) - (bar.n - shown))  # texts of the chunk the model did not embed
            embedded = embedder.computed
        else:
            count, embedded = _embed_on_ray(embedder, store, todo_keys, todo_texts, address=address,
                                            workers=workers, tokenizers=tokenizers, batch_size=batch_size,
                                            shard_size=shard_size, num_cpus=num_cpus)
    folder = _index(source, model, text, data, index_dir) if index else None
    return EmbedResult(texts=len(keys), embedded=embedded, cached=len(keys) - embedded, engine=engine,
                       workers=count, seconds=round(time.perf_counter() - start, 3),
                       index=None if folder is None else str(folder))


def _embed_on_ray(embedder: Embedder, store, keys: list, texts: list, *, address, workers, tokenizers,
                  batch_size: Optional[int], shard_size: Optional[int], num_cpus) -> tuple:
    """``(actors, rows embedded)``: the missing texts as shards through the Ray pool, merged here as they finish."""
    from ..compute.raypool import RayPool

    if not keys:
        return 0, 0  # nothing to embed: no Ray started
    with RayPool(address, workers=workers, tokenizers=tokenizers, num_cpus=num_cpus,
                 shard_size=2048 if shard_size is None else shard_size, batch_size=batch_size) as pool, \
            progress_bar(total=len(keys), desc="embedding on Ray", unit="text") as bar:
        embedded = pool.embed(embedder, keys, texts, store=store, progress=bar.update)
        return pool.workers, embedded


def _corpus_file(source, data) -> str:
    """What a user reads as the corpus: a folder's ``corpus.jsonl``, else the dataset's name."""
    corpus = open_corpus(source, data)
    folder = getattr(corpus, "folder", None)
    return str(Path(folder) / "corpus.jsonl") if folder is not None else f"the corpus of {corpus.name}"


def _index(source, model, text, data, index_dir) -> Path:
    """The dense index the ``dense`` stage reads, built from the cache now filled (or the one that exists)."""
    from .dense import dense_index  # PyTerrier, only when an index is built

    _, folder = dense_index(source, model, text=text or open_corpus(source, data).default_text, data=data,
                            index_dir=index_dir)
    return Path(folder)
