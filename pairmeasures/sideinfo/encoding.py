"""Encoding on a GPU: batches tokenized in threads ahead of the forward pass, and the choice of precision by
measurement (fp16 only when it agrees with fp32 and is faster). :class:`~pairmeasures.sideinfo.embed.Embedder` uses
them on CUDA devices; on the CPU it calls the model's own ``encode``. torch is imported inside the functions."""

from __future__ import annotations

import time
from typing import Iterator, Sequence

import numpy as np

__all__ = ["BATCH_SIZES", "FP16_MIN_COSINE", "PRECISIONS", "encode_pipelined", "choose_precision", "forward",
           "length_batches"]

#: Texts per batch by device type, unless ``batch_size`` is given.
BATCH_SIZES = {"cpu": 64, "cuda": 256}
#: The least cosine similarity between fp16 and fp32 vectors of the same texts for fp16 to be used.
FP16_MIN_COSINE = 0.9999
#: ``Embedder(precision=...)``: ``auto`` (fp16 on CUDA when it agrees and is faster), ``fp32``, ``fp16`` (when it agrees).
PRECISIONS = ("auto", "fp32", "fp16")


def forward(model, features: dict, half: bool) -> np.ndarray:
    """The model's sentence embeddings of tokenized ``features`` (moved to its device), as float32 NumPy."""
    import torch

    device = model.device
    features = {name: value.to(device, non_blocking=True) if hasattr(value, "to") else value
                for name, value in features.items()}
    with torch.inference_mode(), torch.autocast(device.type, dtype=torch.float16, enabled=half):
        vectors = model(features)["sentence_embedding"]
    return vectors.float().cpu().numpy()


def length_batches(texts: Sequence[str], size: int) -> list:
    """The positions of ``texts`` in batches of ``size``, longest text first (as sentence-transformers batches them,
    so each batch is padded to similar lengths)."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    return [order[start:start + size] for start in range(0, len(order), size)]


def encode_pipelined(model, batches: Sequence[Sequence[str]], half: bool = False, workers: int = 4,
                     ahead: int = 8) -> Iterator[np.ndarray]:
    """The vectors of each batch of texts, in order: ``workers`` threads tokenize up to ``ahead`` batches ahead of
    the forward pass, which runs on the model's device, in fp16 autocast with ``half``. What sentence-transformers'
    ``encode`` computes for the same batches, with the GPU kept fed as far as threads can: the tokenizer's Python
    side holds the interpreter lock, so on an H200 this path reaches about a quarter of the forward pass's rate
    (``benchmarks/embedding_gpu.py``); ``pairmeasures embed --engine ray`` tokenizes in CPU actors instead.
    (Tokenizing in spawned processes was tried and was slower on 60,000 texts, their start included.)"""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tokenize") as pool:
        queued: list = [pool.submit(model.tokenize, list(batch)) for batch in batches[:ahead]]
        for number in range(len(batches)):
            features = queued[number].result()
            queued[number] = None  # the tokens of a done batch are let go
            if number + ahead < len(batches):
                queued.append(pool.submit(model.tokenize, list(batches[number + ahead])))
            yield forward(model, features, half)


def choose_precision(model, texts: Sequence[str], precision: str = "auto") -> tuple:
    """``(precision, why)`` for the model's forward passes on a CUDA device: ``fp32`` unless asked; with ``"auto"`` or
    ``"fp16"``, fp16 when its vectors of ``texts`` agree with fp32's to a cosine of at least :data:`FP16_MIN_COSINE`
    (and, for ``"auto"``, when it is also faster on them, timed after a warm-up)."""
    if precision == "fp32":
        return "fp32", "asked for"
    import torch

    features = model.tokenize(list(texts))
    timings = {}
    vectors = {}
    for half in (False, True):
        forward(model, features, half)  # warm-up (kernels chosen, memory allocated)
        torch.cuda.synchronize(model.device)
        start = time.perf_counter()
        vectors[half] = forward(model, features, half)
        timings[half] = time.perf_counter() - start
    full, reduced = vectors[False].astype(np.float64), vectors[True].astype(np.float64)
    cosine = float(np.min(np.sum(full * reduced, axis=1) / np.maximum(
        np.linalg.norm(full, axis=1) * np.linalg.norm(reduced, axis=1), np.finfo(np.float64).tiny)))
    if cosine < FP16_MIN_COSINE:
        return "fp32", f"fp16 agrees with fp32 to cosine {cosine:.6f} only (< {FP16_MIN_COSINE})"
    if precision == "auto" and timings[True] >= timings[False]:
        return "fp32", f"fp16 was not faster ({timings[True]:.4f} s vs {timings[False]:.4f} s a batch)"
    return "fp16", f"cosine to fp32 {cosine:.6f}; {timings[True]:.4f} s vs {timings[False]:.4f} s a batch"
