"""Embedding shards on a Ray cluster: Ray Data's ``map_batches`` over a pool of model actors.

One actor per GPU (the model in fp16) when the cluster has GPUs, else one per CPU (float32, one torch thread
each). Each actor embeds whole shards (:mod:`~pairmeasures.sideinfo.shards`) and writes them into the shard
folder; the driver merges each finished shard into the embedding cache as it arrives, so the SQLite file keeps
one writer. Ray Data restarts a killed actor and runs its shard again (its actors are created with unlimited
restarts and task retries); a shard is written whole or not at all, so a rerun after the driver was killed
merges what was finished and embeds the rest.

Without an address a private local Ray is started on 127.0.0.1 (no dashboard, its own temporary folder, never a
left-over session) and shut down at the end; with one, the cluster there is joined (every node needs
``pairmeasures[ray]`` installed and the shard folder on a file system all nodes and the driver share).
``ray`` is imported only here, inside the functions.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import tempfile
from contextlib import contextmanager
from typing import Callable, Iterator, Optional, Sequence

from .shards import Shard, ShardError, ShardStore

__all__ = ["ray_session", "pool_shape", "embed_shards", "RayEngineError"]

#: Set before ``import ray`` so that a local Ray advertises 127.0.0.1, not the machine's network interface.
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


class RayEngineError(RuntimeError):
    """Ray is missing, or a cluster cannot be used; the message says what to do."""


def _import_ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise RayEngineError(f"--engine ray needs Ray Data ({exc}): pip install 'pairmeasures[ray]'") from None
    return ray


@contextmanager
def ray_session(address: Optional[str] = None, *, num_cpus: Optional[int] = None,
                num_gpus: Optional[int] = None) -> Iterator[object]:
    """Ray, initialised for the ``with`` block: joined at ``address``; else the Ray this process already runs;
    else a private local one on 127.0.0.1 (``num_cpus``/``num_gpus``: its resources, default the machine's),
    shut down (and its temporary folder removed) when the block ends. Yields the ``ray`` module."""
    if address is None and "ray" not in __import__("sys").modules:
        os.environ.setdefault(LOOPBACK_ENV, "0")
    ray = _import_ray()
    if ray.is_initialized():
        yield ray
        return
    temporary = None
    if address is None:
        temporary = tempfile.mkdtemp(prefix="pm-ray-")
        options = dict(address="local", num_cpus=num_cpus, num_gpus=num_gpus, include_dashboard=False,
                       _node_ip_address="127.0.0.1", _temp_dir=temporary, log_to_driver=False)
    else:
        options = dict(address=address, log_to_driver=False)
    logging.getLogger("ray").setLevel(logging.WARNING)  # Ray Data's progress lines every 10 s: not for our users
    try:
        ray.init(**options)
        ray.data.DataContext.get_current().enable_progress_bars = False
    except Exception as exc:
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)
        where = f"the Ray cluster at {address!r}" if address else "a local Ray"
        raise RayEngineError(f"could not start or join {where}: {type(exc).__name__}: {exc}") from None
    try:
        yield ray
    finally:
        ray.shutdown()
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)


def pool_shape(ray, workers: Optional[int] = None) -> tuple:
    """``(actors, gpus per actor, cpus per actor)`` for the cluster ``ray`` is joined to: one actor per GPU
    when it has GPUs, else one per CPU; ``workers`` caps the count."""
    resources = ray.cluster_resources()
    gpus, cpus = int(resources.get("GPU", 0)), int(resources.get("CPU", 0))
    if gpus:
        count, shape = gpus, (1, 1)
    else:
        count, shape = max(cpus, 1), (0, 1)
    if workers is not None:
        if workers < 1:
            raise ValueError(f"--workers must be at least 1; got {workers}")
        count = min(workers, count) if gpus else workers
    return (count, *shape)


class ShardEmbedder:
    """A Ray Data actor: loads the model once, then embeds each shard it is given and writes it to the store.

    A batch holds shards (``shard``: id, ``texts``: a JSON list); the result names each shard, its rows and
    the node that wrote it."""

    def __init__(self, model: Optional[str], folder: str, batch_size: int, gpu: bool):
        from .embed import Embedder

        if not gpu:
            import torch

            torch.set_num_threads(1)
        self.embedder = Embedder(model, cache=False, batch_size=batch_size, device="cuda" if gpu else "cpu",
                                 progress=False)
        loaded = self.embedder.load()
        if gpu:
            loaded.half()
        self.store = ShardStore(folder)

    def __call__(self, batch: dict) -> dict:
        from .cache import text_key
        from .shards import shard_id

        rows = []
        for shard, texts in zip(batch["shard"], batch["texts"]):
            texts = json.loads(texts)
            keys = [text_key(t) for t in texts]
            if shard_id(keys) != shard:
                raise ShardError(f"shard {shard} was sent with other texts than it was made of")
            self.store.write(shard, keys, self.embedder.embed(texts))
            rows.append(len(texts))
        return {"shard": list(batch["shard"]), "rows": rows, "node": [socket.gethostname()] * len(rows)}


def embed_shards(ray, shards: Sequence[Shard], store: ShardStore, merge: Callable[[str], int], *,
                 model: Optional[str], workers: int, gpus: int, cpus: int, batch_size: int = 64) -> int:
    """Embed ``shards`` in a pool of ``workers`` :class:`ShardEmbedder` actors, each with ``gpus`` GPUs and
    ``cpus`` CPUs, writing into ``store``; ``merge(shard id)`` is called in the driver for each shard as it
    finishes and returns its rows. Returns the rows merged."""
    if not shards:
        return 0
    items = [{"shard": s.id, "texts": json.dumps(s.texts)} for s in shards]
    data = ray.data.from_items(items, override_num_blocks=len(items))
    embedded = data.map_batches(
        ShardEmbedder, batch_size=1, batch_format="numpy", concurrency=min(workers, len(items)),
        num_gpus=gpus or None, num_cpus=cpus,
        fn_constructor_kwargs={"model": model, "folder": str(store.folder), "batch_size": batch_size,
                               "gpu": bool(gpus)})
    done = 0
    for row in embedded.iter_rows():
        if not (store.folder / f"{row['shard']}.done").is_file():
            raise RayEngineError(
                f"shard {row['shard']} was written by a worker on {row['node']} into {store.folder}, but the driver "
                "does not see it there: on a cluster of several machines pass --work a folder on a file system "
                "every node and the driver share")
        done += merge(str(row["shard"]))
    return done
