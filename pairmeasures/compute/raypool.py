"""Embedding shards on a Ray cluster: Ray Data's ``map_batches`` over a pool of model actors.

On a cluster without GPUs, one actor per CPU (float32, one torch thread each) embeds whole shards
(:mod:`~pairmeasures.compute.shards`). With GPUs, one actor per GPU runs the forward passes (fp16 where it agrees
with fp32 and is faster, chosen as the single-machine path chooses) and a set of CPU actors tokenizes the shards
ahead of it, so the GPU is not kept waiting on the tokenizer (``tokenizers=0``: each GPU actor tokenizes in its own
threads, as the single-machine path does). Each shard is written into the shard folder by the actor that embedded
it; the driver merges each finished shard into the embedding cache as it arrives, so the SQLite file keeps one
writer. Ray Data restarts a killed actor and runs its shard again (its actors are created with unlimited
restarts and task retries); a shard is written whole or not at all, so a rerun after the driver was killed
merges what was finished and embeds the rest.

The session is :func:`~.raysession.ray_session`'s: without an address a private local Ray on 127.0.0.1 that
nothing outlives (its processes and folder, even when the driver is killed); with one, the cluster there,
checked within seconds, is joined (every node needs ``pairmeasures[ray]`` installed and the shard folder on a
file system all nodes and the driver share). ``ray`` is imported only inside the functions.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import socket
from contextlib import ExitStack, nullcontext
from typing import Callable, Optional, Sequence

import numpy as np

from .raysession import LOOPBACK_ENV, RayEngineError, ray_session, require_ray
from .shardprogress import BatchReporter, ShardCounter, ShardProgress, polled
from .shards import RUN_FOLDER, Shard, ShardError, ShardStore, plan_shards, shard_id, store_for

__all__ = ["ray_session", "pool_shape", "embed_shards", "RayEngineError", "RayPool", "require_ray", "tokenized",
           "from_tokens", "LOOPBACK_ENV"]


def pool_shape(ray, workers: Optional[int] = None, tokenizers: Optional[int] = None) -> tuple:
    """``(actors, gpus per actor, cpus per actor, tokenizing actors)`` for the cluster ``ray`` is joined to: one
    actor per GPU when it has GPUs, fed by ``tokenizers`` CPU actors (default: the CPUs left after one per GPU actor
    and one for the driver, at most four per GPU); else one actor per CPU and no tokenizing actors. ``workers``
    caps the model actors."""
    resources = ray.cluster_resources()
    gpus, cpus = int(resources.get("GPU", 0)), int(resources.get("CPU", 0))
    if workers is not None and workers < 1:
        raise ValueError(f"--workers must be at least 1; got {workers}")
    if tokenizers is not None and tokenizers < 0:
        raise ValueError(f"--tokenizers must be 0 or more; got {tokenizers}")
    if not gpus:  # tokenizing actors only when asked (they feed CPU actors no faster: how tests run that path)
        return (workers or max(cpus, 1), 0, 1, tokenizers or 0)
    count = min(workers, gpus) if workers else gpus
    if tokenizers is None:
        tokenizers = max(0, min(cpus - count - 1, 4 * count))
    return (count, 1, 1, tokenizers)


def _check_shard(shard: str, texts: list, model_key: str) -> list:
    from .cache import text_key

    keys = [text_key(t) for t in texts]
    if shard_id(keys, model_key) != shard:
        raise ShardError(f"shard {shard} was sent with other texts than it was made of")
    return keys


def _result(shards: Sequence[str], rows: list) -> dict:
    return {"shard": list(shards), "rows": rows, "node": [socket.gethostname()] * len(rows)}


def _actor_embedder(model: Optional[str], gpu: bool, batch_size: Optional[int] = None):
    """The model of an actor, loaded: on a GPU, or on a CPU with one torch thread (one actor per CPU)."""
    from .embed import Embedder

    if not gpu:
        import torch

        torch.set_num_threads(1)
    embedder = Embedder(model, cache=False, batch_size=batch_size, device="cuda" if gpu else "cpu", progress=False)
    embedder.load()
    return embedder


class ShardEmbedder:
    """A Ray Data actor: loads the model once, then embeds each shard it is given (tokenizing it itself) and writes
    it to the store, telling ``counter`` (a :class:`~.shardprogress.ShardCounter`, or None) how far it is after its
    batches. A batch holds shards (``shard``: id, ``texts``: a JSON list); the result names each shard, its rows
    and the node that wrote it."""

    def __init__(self, model: Optional[str], folder: str, model_key: str, batch_size: Optional[int], gpu: bool,
                 counter=None):
        self.embedder = _actor_embedder(model, gpu, batch_size)
        self.store = ShardStore(folder, model_key)
        self.counter = counter

    def __call__(self, batch: dict) -> dict:
        rows = []
        for shard, texts in zip(batch["shard"], batch["texts"]):
            texts = json.loads(texts)
            reporter = self.embedder.on_batch = BatchReporter(self.counter, str(shard))
            self.store.write(shard, _check_shard(shard, texts, self.store.model_key), self.embedder.embed(texts))
            reporter.finish(len(texts))
            rows.append(len(texts))
        return _result(batch["shard"], rows)


def tokenized(model, texts: Sequence[str], batch_size: int) -> bytes:
    """The texts tokenized by ``model`` in its batches (longest first, each padded to its longest text), as the
    bytes a GPU actor reads back with :func:`from_tokens`."""
    from .batchtokens import batch_tokenizer
    from .encoding import length_batches

    positions = length_batches(texts, batch_size)
    tokenize = batch_tokenizer(model)[0]  # the Rust tokenizer where the model has one, as the Embedder tokenizes
    features = [{name: value for name, value in tokenize([texts[i] for i in batch]).items()
                 if isinstance(value, np.ndarray)} for batch in positions]
    return pickle.dumps({"positions": positions, "features": features}, protocol=pickle.HIGHEST_PROTOCOL)


def from_tokens(model, payload: bytes, half: bool, on_batch: Optional[Callable[[int], object]] = None) -> np.ndarray:
    """The vectors of the texts :func:`tokenized` made ``payload`` of, in the texts' order: ``model``'s forward passes
    (in fp16 autocast with ``half``); ``on_batch(texts)`` after each."""
    import torch

    from .encoding import forward

    data = pickle.loads(payload)
    out: Optional[np.ndarray] = None
    for batch, features in zip(data["positions"], data["features"]):
        vectors = forward(model, {name: torch.from_numpy(value) for name, value in features.items()}, half)
        if out is None:
            out = np.empty((sum(len(b) for b in data["positions"]), vectors.shape[1]), np.float32)
        out[batch] = vectors
        if on_batch is not None:
            on_batch(len(batch))
    return out if out is not None else np.zeros((0, 0), np.float32)


class ShardTokenizer:
    """A Ray Data CPU actor that tokenizes shards for a :class:`ShardForward` actor (adds ``tokens``)."""

    def __init__(self, model: Optional[str], batch_size: int):
        self.model = _actor_embedder(model, gpu=False).load()
        self.batch_size = batch_size

    def __call__(self, batch: dict) -> dict:
        tokens = [tokenized(self.model, json.loads(texts), self.batch_size) for texts in batch["texts"]]
        return {"shard": list(batch["shard"]), "texts": list(batch["texts"]), "tokens": tokens}


class ShardForward:
    """A Ray Data GPU actor: the forward passes of shards a :class:`ShardTokenizer` tokenized, written to the store.
    The precision is chosen on the first shard as the single-machine path chooses it (fp16 where it agrees with
    fp32 and is faster)."""

    def __init__(self, model: Optional[str], folder: str, model_key: str, batch_size: int, gpu: bool = True,
                 counter=None):
        self.model = _actor_embedder(model, gpu).load()
        self.store = ShardStore(folder, model_key)
        self.batch_size = batch_size
        self.counter = counter
        self.half: Optional[bool] = None if gpu else False  # float32 on a CPU

    def __call__(self, batch: dict) -> dict:
        from .encoding import choose_precision, length_batches

        rows = []
        for shard, texts, tokens in zip(batch["shard"], batch["texts"], batch["tokens"]):
            texts = json.loads(texts)
            keys = _check_shard(shard, texts, self.store.model_key)
            if self.half is None:
                batches = [[texts[i] for i in batch] for batch in length_batches(texts, self.batch_size)]
                self.half = choose_precision(self.model, batches)[0] == "fp16"
            reporter = BatchReporter(self.counter, str(shard))
            self.store.write(shard, keys, from_tokens(self.model, tokens, self.half, on_batch=reporter))
            reporter.finish(len(texts))
            rows.append(len(texts))
        return _result(batch["shard"], rows)


def embed_shards(ray, shards: Sequence[Shard], store: ShardStore, merge: Callable[[str], int], *,
                 model: Optional[str], workers: int, gpus: int, cpus: int, batch_size: Optional[int] = None,
                 tokenizers: int = 0, where: str = "pass --work a folder on a file system every node and the "
                                                   "driver share", progress: Optional[ShardProgress] = None) -> int:
    """Embed ``shards`` in a pool of ``workers`` model actors, each with ``gpus`` GPUs and ``cpus`` CPUs (with GPUs
    or not, and ``tokenizers`` > 0, fed by that many :class:`ShardTokenizer` actors), writing into ``store``;
    ``merge(shard id)`` is called in the driver for each shard as it finishes and returns its rows. ``batch_size``:
    texts per forward pass (default: the device's). ``progress``: told the texts the actors have embedded, every
    second (:mod:`~.shardprogress`), and each shard merged. Returns the rows merged."""
    if not shards:
        return 0
    counter = ray.remote(num_cpus=0)(ShardCounter).remote() if progress is not None else None
    try:
        return _embed_shards(ray, shards, store, merge, model=model, workers=workers, gpus=gpus, cpus=cpus,
                             batch_size=batch_size, tokenizers=tokenizers, where=where, progress=progress,
                             counter=counter)
    finally:
        if counter is not None:
            try:
                ray.kill(counter)
            except Exception:  # noqa: BLE001 - a session already gone takes its actors with it; the error is the job's
                pass


def _embed_shards(ray, shards: Sequence[Shard], store: ShardStore, merge: Callable[[str], int], *, model, workers,
                  gpus, cpus, batch_size, tokenizers, where, progress, counter) -> int:
    """:func:`embed_shards`, with the counter the actors report to (or None)."""
    from .encoding import BATCH_SIZES

    def pool(size: int):
        return ray.data.ActorPoolStrategy(size=size)

    items = [{"shard": s.id, "texts": json.dumps(s.texts)} for s in shards]
    data = ray.data.from_items(items, override_num_blocks=len(items))
    folder, model_key = str(store.folder), store.model_key
    if tokenizers:  # (on CPU actors too, where it is only slower: how the tests run this path without a GPU)
        size = batch_size or BATCH_SIZES["cuda" if gpus else "cpu"]
        data = data.map_batches(ShardTokenizer, batch_size=1, batch_format="numpy", num_cpus=1,
                                compute=pool(min(tokenizers, len(items))),
                                fn_constructor_kwargs={"model": model, "batch_size": size})
        embedded = data.map_batches(ShardForward, batch_size=1, batch_format="numpy", num_gpus=gpus or None,
                                    num_cpus=cpus, compute=pool(min(workers, len(items))),
                                    fn_constructor_kwargs={"model": model, "folder": folder, "model_key": model_key,
                                                           "batch_size": size, "gpu": bool(gpus), "counter": counter})
    else:
        embedded = data.map_batches(
            ShardEmbedder, batch_size=1, batch_format="numpy", compute=pool(min(workers, len(items))),
            num_gpus=gpus or None, num_cpus=cpus,
            fn_constructor_kwargs={"model": model, "folder": folder, "model_key": model_key, "batch_size": batch_size,
                                   "gpu": bool(gpus), "counter": counter})
    done = 0
    with polled(ray, counter, progress) if progress is not None else nullcontext():
        for row in embedded.iter_rows():
            if not (store.folder / f"{row['shard']}.done").is_file():
                raise RayEngineError(
                    f"shard {row['shard']} was written by a worker on {row['node']} into {store.folder}, but the "
                    f"driver does not see it there: on a cluster of several machines {where}")
            rows = merge(str(row["shard"]))
            if rows and progress is not None:
                progress.merged(str(row["shard"]))
            done += rows
    return done


class RayPool:
    """The Ray engine of ``pairmeasures embed --engine ray`` and ``pairmeasures audit --engine ray``: a Ray session
    (joined at ``address``, else a private local one with ``num_cpus``), started on first use and shut down when the
    ``with`` block ends, and the actor pool of :func:`pool_shape`. :meth:`embed` puts texts into an embedder's cache
    through shards; :meth:`compute` is the compute-engine interface of :mod:`~pairmeasures.compute.engines`.

    ``work``: the shard folder (default ``shards/<model key>`` beside the cache; on a cluster of several machines a
    folder every node shares); with ``private``, a folder of this pool's own inside it, removed when the block
    ends (the audit's: its shards are merged as they finish, and no other run's recovery touches them).
    ``shard_size``: texts per shard at most (smaller when there are fewer texts than actors, so every actor gets
    work)."""

    def __init__(self, address: Optional[str] = None, *, workers: Optional[int] = None,
                 tokenizers: Optional[int] = None, num_cpus: Optional[int] = None, shard_size: int = 2048,
                 batch_size: Optional[int] = None, work: Optional[str | os.PathLike] = None, private: bool = False,
                 where: str = "pass --work a folder on a file system every node and the driver share"):
        from .engines import check_engine_options

        check_engine_options("ray", workers=workers, tokenizers=tokenizers, shard_size=shard_size,
                             batch_size=batch_size)
        self.address, self.work, self.where, self.private = address, work, where, private
        self.requested = (workers, tokenizers)
        self.num_cpus, self.shard_size, self.batch_size = num_cpus, shard_size, batch_size
        self.embedded = 0
        self.partitioned = 0  # stage runs over query partitions on this pool's Ray (pipelines.onray.OnRay)
        self._stack = ExitStack()
        self._own: dict = {}  # with private: this pool's shard folder per model key
        self._ray = None
        self._shape: tuple = ()

    def __enter__(self) -> "RayPool":
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()
        self._ray = None

    @property
    def workers(self) -> int:
        """Model actors of the pool (0 until Ray is started)."""
        return self._shape[0] if self._shape else 0

    @property
    def tokenizers(self) -> int:
        """Tokenizing actors feeding them (0 until Ray is started)."""
        return self._shape[3] if self._shape else 0

    @property
    def started(self) -> bool:
        """Whether this pool has started (or joined) Ray: only when something needed computing."""
        return self._ray is not None

    def start(self):
        """Ray, started or joined now if it is not yet (the ``ray`` module); :meth:`embed` calls it when needed."""
        return self._session()

    def _store(self, model_key: str) -> ShardStore:
        store = store_for(model_key, self.work).claim("--work" if self.work is not None else None)
        if not self.private:
            return store
        if model_key not in self._own:
            own = ShardStore(store.folder / f"run-{os.getpid()}-{id(self):x}", model_key, RUN_FOLDER).claim()
            self._own[model_key] = own
            self._stack.callback(own.remove_folder)  # its shards and marker, removed when the block ends
        return self._own[model_key]

    def _session(self):
        if self._ray is None:
            self._ray = self._stack.enter_context(ray_session(self.address, num_cpus=self.num_cpus))
            self._shape = pool_shape(self._ray, *self.requested)
        return self._ray

    def embed(self, embedder, keys: list, texts: list, *, store: Optional[ShardStore] = None,
              progress: Optional[Callable[[int], object]] = None) -> int:
        """Embed ``texts`` (with their ``keys``) into ``embedder``'s cache through shards in ``store`` (default:
        the model's); ``progress(rows)`` is called with the texts newly embedded as the actors report them (every
        second: :mod:`~.shardprogress`) and as shards are merged, adding up to ``len(texts)``. Shards that come back
        damaged are embedded again (twice at most). Returns the rows embedded."""
        if not keys:
            return 0
        cache = embedder.cache
        if cache is None:
            raise ValueError("the Ray pool fills an embedder's cache: this embedder has none (cache=False)")
        from .embed import DEFAULT_MODEL

        ray = self._session()
        store = store or self._store(embedder.key)
        count, gpus, cpus, tokenizers = self._shape
        size = max(1, min(self.shard_size, math.ceil(len(keys) / count)))
        shards = plan_shards(keys, texts, size, embedder.key)
        model = None if embedder.model_name == DEFAULT_MODEL else embedder.model_name  # actors load it by the same rule
        failed: list = []
        tracker = ShardProgress([(s.id, len(s.keys)) for s in shards], progress) if progress is not None else None

        def merge(shard: str) -> int:
            try:
                return store.merge(shard, cache)
            except ShardError:
                store.remove(shard)
                failed.append(shard)
                return 0

        embedded = 0
        for _attempt in range(3):
            failed.clear()
            embedded += embed_shards(ray, shards, store, merge, model=model, workers=count, gpus=gpus, cpus=cpus,
                                     batch_size=self.batch_size, tokenizers=tokenizers, where=self.where,
                                     progress=tracker)
            if not failed:
                break
            shards = [s for s in shards if s.id in set(failed)]
        else:
            raise ShardError(f"{len(failed)} shards came back damaged three times in {store.folder}; check the disk")
        self.embedded += embedded
        return embedded

    def compute(self, embedder, texts: list, keys: list) -> dict:
        """``{key: vector}`` of ``texts``, embedded in the pool into ``embedder``'s cache and read back from it (the
        compute-engine interface: an :class:`~pairmeasures.compute.embed.Embedder` calls it for what it lacks)."""
        from ..io.progress import progress_bar

        with progress_bar(total=len(texts), desc="embedding on Ray", unit="text", show=embedder.progress) as bar:
            self.embed(embedder, list(keys), list(texts), progress=bar.update)
        found = embedder.cache.get(embedder.key, list(keys))
        missing = len(keys) - len(found)
        if missing:
            raise RayEngineError(f"the Ray pool merged its shards but {missing} of {len(keys)} vectors are not in the "
                                 f"cache {embedder.cache.path}: was it changed meanwhile?")
        return found
