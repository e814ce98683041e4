"""Embedding backends: int8 variants embed offline, are cached apart from float32, and fail clearly."""

from __future__ import annotations

import importlib.util
import json
import logging
import subprocess
import sys

import numpy as np
import pytest

from pairmeasures.compute.cache import EmbeddingCache
from pairmeasures.compute.embed import BACKENDS, Embedder, EmbeddingModelError

TEXTS = ["Cars should be banned from city centres.", "Car bans hurt people who cannot walk far."]
NO_ONNX = "onnx-int8 needs onnxruntime and onnx: pip install 'pairmeasures[onnx]'"
HAS_ONNX = all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "onnx"))
INT8 = [pytest.param("torch-int8"),
        pytest.param("onnx-int8", marks=pytest.mark.skipif(not HAS_ONNX, reason=NO_ONNX))]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.mark.parametrize("backend", INT8)
def test_int8_backend_embeds_offline_and_is_cached_apart(backend, tmp_path, embedder, monkeypatch, caplog):
    monkeypatch.setenv("PAIRMEASURES_CACHE_DIR", str(tmp_path))  # the ONNX model is built here
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    fp32 = Embedder(cache=cache)
    fp32._model = embedder.load()
    reference = fp32.embed(TEXTS)
    with caplog.at_level(logging.INFO, logger="pairmeasures.compute.embed"):
        int8 = Embedder(cache=cache, backend=backend)
        vectors = int8.embed(TEXTS)
    assert int8.computed == 2 and int8.key != fp32.key  # never served float32's vectors
    assert vectors.shape == reference.shape and not np.array_equal(vectors, reference)
    assert cosines(vectors, reference).min() > 0.85
    again = Embedder(cache=cache, backend=backend)
    assert np.array_equal(again.embed(TEXTS), vectors) and again.computed == 0 and again._model is None
    assert np.array_equal(Embedder(cache=cache).embed(TEXTS), reference)
    assert f"all-MiniLM-L6-v2 (backend={backend})" in {m["description"] for m in cache.stats().models}
    built = [r.getMessage() for r in caplog.records if "building an int8 ONNX model" in r.getMessage()]
    if backend == "onnx-int8":  # built once, into the cache directory, and reused by the next embedder
        assert len(built) == 1 and str(tmp_path / "onnx") in built[0]
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="pairmeasures.compute.embed"):
            assert np.allclose(Embedder(cache=False, backend=backend).embed(TEXTS), vectors, atol=1e-5)
        assert not caplog.records
    else:
        assert not built


def test_unknown_backend_names_the_choices():
    with pytest.raises(ValueError, match="backend must be one of torch, torch-int8, onnx-int8; got 'fp16'"):
        Embedder(backend="fp16")
    assert BACKENDS == ("torch", "torch-int8", "onnx-int8")


@pytest.mark.parametrize("backend", ["torch-int8", "onnx-int8"])
def test_int8_backends_refuse_cuda_and_default_to_the_cpu(backend, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # as on a GPU machine
    with pytest.raises(EmbeddingModelError, match=f"backend '{backend}' runs on the CPU only.*device='cpu'"):
        Embedder(backend=backend, device="cuda", cache=False).load()
    if backend == "torch-int8":  # no device given: the CPU, though CUDA is there
        assert str(Embedder(backend=backend, cache=False).load().device) == "cpu"


def test_missing_onnxruntime_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if not installed: import raises ImportError
    monkeypatch.setitem(sys.modules, "onnxruntime.quantization", None)
    with pytest.raises(EmbeddingModelError, match=r"needs onnxruntime and onnx .*pip install 'pairmeasures\[onnx\]'"):
        Embedder(backend="onnx-int8", cache=False).load()


def test_validate_polarity_command_takes_a_backend(procon_subset, tmp_path):
    command = [sys.executable, "-m", "pairmeasures", "validate-polarity", str(procon_subset), "--json",
               "--backend", "torch-int8", "--cache", str(tmp_path / "c.sqlite")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["backend"] == "torch-int8" and report["queries"] == 4 and report["accuracy"] > 0.5
    assert "Warning" not in done.stderr  # torch's notes on its quantisation API are not the user's business
    wrong = subprocess.run(command[:-4] + ["--backend", "int4"], capture_output=True, text=True, timeout=600)
    assert wrong.returncode == 2 and "invalid choice: 'int4'" in wrong.stderr
