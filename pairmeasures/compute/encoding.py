"""Encoding: batches tokenized in a thread ahead of the forward pass (by the Rust tokenizer:
:mod:`~pairmeasures.compute.batchtokens`), and the choice of precision on a GPU by measurement (fp16 only when it
agrees with fp32 and its median timed round is faster, every batch shape warmed up first).
:class:`~pairmeasures.compute.embed.Embedder` uses them with its ``torch`` backend. torch is imported inside the
functions."""

from __future__ import annotations

import contextlib
import time
from typing import Callable, Iterator, Optional, Sequence

import numpy as np

__all__ = ["BATCH_SIZES", "FP16_MIN_COSINE", "PRECISIONS", "encode_pipelined", "choose_precision", "decide_precision",
           "forward", "length_batches", "sample_batches"]

#: Texts per batch by device type, unless ``batch_size`` is given.
BATCH_SIZES = {"cpu": 64, "cuda": 256}
#: The least cosine similarity between fp16 and fp32 vectors of the same texts for fp16 to be used.
FP16_MIN_COSINE = 0.9999
#: ``Embedder(precision=...)``: ``auto`` (fp16 on CUDA when it agrees and is faster), ``fp32``, ``fp16`` (when it agrees).
PRECISIONS = ("auto", "fp32", "fp16")


def forward(model, features: dict, half: bool) -> np.ndarray:
    """The model's sentence embeddings of tokenized ``features`` (NumPy arrays or tensors, moved to its device), as
    float32 NumPy."""
    import torch

    from .batchtokens import as_tensors

    device = model.device
    features = {name: value.to(device, non_blocking=True) if hasattr(value, "to") else value
                for name, value in as_tensors(features).items()}
    autocast = torch.autocast(device.type, dtype=torch.float16) if half else contextlib.nullcontext()
    with torch.inference_mode(), autocast:  # no autocast context at all in fp32: on the CPU it only costs
        vectors = model(features)["sentence_embedding"]
    return vectors.float().cpu().numpy()


def length_batches(texts: Sequence[str], size: int) -> list:
    """The positions of ``texts`` in batches of ``size``, longest text first (as sentence-transformers batches them,
    so each batch is padded to similar lengths)."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    return [order[start:start + size] for start in range(0, len(order), size)]


def encode_pipelined(model, batches: Sequence[Sequence[str]], half: bool = False, ahead: int = 4,
                     tokenize: Optional[Callable[[Sequence[str]], dict]] = None) -> Iterator[np.ndarray]:
    """The vectors of each batch of texts, in order: a thread tokenizes up to ``ahead`` batches ahead of the forward
    pass (``ahead=0``: each batch just before its forward pass, in this thread), which runs on the model's device, in fp16 autocast with ``half``. ``tokenize``: default the model's
    :func:`~pairmeasures.compute.batchtokens.batch_tokenizer` (the Rust tokenizer, whose ``encode_batch`` releases
    the interpreter lock and runs on its own threads, so one Python thread keeps ahead). What sentence-transformers'
    ``encode`` computes for the same batches."""
    from concurrent.futures import ThreadPoolExecutor

    from .batchtokens import batch_tokenizer

    if tokenize is None:
        tokenize = batch_tokenizer(model)[0]
    if ahead < 1:  # in line: on the CPU a tokenizing thread only competes with the forward pass's threads
        for batch in batches:
            yield forward(model, tokenize(list(batch)), half)
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize") as pool:
        queued: list = [pool.submit(tokenize, list(batch)) for batch in batches[:ahead]]
        try:
            for number in range(len(batches)):
                features = queued[number].result()
                queued[number] = None  # the tokens of a done batch are let go
                if number + ahead < len(batches):
                    queued.append(pool.submit(tokenize, list(batches[number + ahead])))
                yield forward(model, features, half)
        finally:
            for future in queued:
                if future is not None:
                    future.cancel()  # a consumer that stops early (an interrupt) does not wait for the rest


def decide_precision(precision: str, cosine: float, fp32_seconds: Sequence[float],
                     fp16_seconds: Sequence[float]) -> tuple:
    """``(precision, why, measurement)`` from what was measured: the least cosine of fp16's vectors to fp32's and the
    seconds of each timed round (after every batch shape was warmed up) in each precision. fp16 when it agrees to
    :data:`FP16_MIN_COSINE` and, for ``"auto"``, when its median round is faster; else fp32. ``measurement`` is what
    a manifest records."""
    fast32 = float(np.median(fp32_seconds)) if len(fp32_seconds) else float("nan")
    fast16 = float(np.median(fp16_seconds)) if len(fp16_seconds) else float("nan")
    measurement = {"cosine_min": round(cosine, 6), "fp32_s": [round(t, 5) for t in fp32_seconds],
                   "fp16_s": [round(t, 5) for t in fp16_seconds], "fp32_median_s": round(fast32, 5),
                   "fp16_median_s": round(fast16, 5)}
    if cosine < FP16_MIN_COSINE:
        return "fp32", f"fp16 agrees with fp32 to cosine {cosine:.6f} only (< {FP16_MIN_COSINE})", measurement
    if precision == "auto" and not fast16 < fast32:
        return "fp32", (f"fp16 was not faster: median {fast16:.4f} s vs {fast32:.4f} s a round of "
                        f"{len(fp32_seconds)} timed rounds, every batch shape warmed up first"), measurement
    return "fp16", (f"cosine to fp32 {cosine:.6f}; median {fast16:.4f} s vs {fast32:.4f} s a round of "
                    f"{len(fp32_seconds)} timed rounds, every batch shape warmed up first"), measurement


def sample_batches(batches: Sequence[Sequence[str]], count: int = 6) -> list:
    """Up to ``count`` of ``batches``, spread from the first (longest texts) to the last, for timing."""
    if len(batches) <= count:
        return list(batches)
    step = (len(batches) - 1) / (count - 1)
    return [batches[round(i * step)] for i in range(count)]


def choose_precision(model, batches: Sequence[Sequence[str]], precision: str = "auto", rounds: int = 5,
                     tokenize: Optional[Callable[[Sequence[str]], dict]] = None) -> tuple:
    """``(precision, why, measurement)`` for the model's forward passes on a CUDA device: ``fp32`` unless asked; with
    ``"auto"`` or ``"fp16"``, fp16's vectors are compared with fp32's on a sample of ``batches``
    (:func:`sample_batches`: the longest and shortest shapes and some between), each sampled shape is run once in
    each precision to warm its kernels up, then the sample is timed ``rounds`` times in each precision, alternately;
    :func:`decide_precision` decides."""
    if precision == "fp32" or not batches:
        return "fp32", "asked for" if precision == "fp32" else "nothing to embed", {}
    import torch

    from .batchtokens import batch_tokenizer

    tokenize = tokenize or batch_tokenizer(model)[0]
    features = [tokenize(list(batch)) for batch in sample_batches(batches)]
    vectors: dict = {False: [], True: []}
    for half in (False, True):  # warm-up of every sampled shape (kernels chosen, memory allocated)
        vectors[half] = [forward(model, batch, half) for batch in features]
    seconds: dict = {False: [], True: []}
    for _ in range(rounds):
        for half in (False, True):
            torch.cuda.synchronize(model.device)
            start = time.perf_counter()
            for batch in features:
                forward(model, batch, half)  # host to host: the copy back synchronises
            seconds[half].append(time.perf_counter() - start)
    full = np.concatenate(vectors[False]).astype(np.float64)
    reduced = np.concatenate(vectors[True]).astype(np.float64)
    cosine = float(np.min(np.sum(full * reduced, axis=1) / np.maximum(
        np.linalg.norm(full, axis=1) * np.linalg.norm(reduced, axis=1), np.finfo(np.float64).tiny)))
    return decide_precision(precision, cosine, seconds[False], seconds[True])
