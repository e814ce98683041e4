"""The Embedder's batches and its GPU path, checked on the CPU (no GPU here): the pipelined encoder (tokenizing in
threads ahead of the forward pass) computes what sentence-transformers' ``encode`` does; the batch size follows the
device; bad arguments are errors."""

from __future__ import annotations

import numpy as np
import pytest

from pairmeasures.sideinfo.embed import Embedder
from pairmeasures.sideinfo.encoding import BATCH_SIZES, choose_precision, encode_pipelined

TEXTS = [f"passage {i}: " + " ".join(["solar", "energy", "uniforms", "school", "debate"][: 1 + i % 5] * (1 + i % 7))
         for i in range(70)]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder(cache=False, progress=False, device="cpu")


def test_the_pipelined_encoder_computes_what_encode_does(embedder):
    model = embedder.load()
    assert embedder.batch_size == BATCH_SIZES["cpu"]
    order = sorted(range(len(TEXTS)), key=lambda i: -len(TEXTS[i]))
    batches = [[TEXTS[i] for i in order[start:start + 16]] for start in range(0, len(order), 16)]
    found = np.concatenate(list(encode_pipelined(model, batches, workers=3, ahead=2)))
    expected = np.concatenate([model.encode(batch, convert_to_numpy=True, show_progress_bar=False) for batch in batches])
    assert found.shape == expected.shape == (len(TEXTS), 384) and found.dtype == np.float32
    assert np.allclose(found, expected, atol=1e-5)
    assert list(encode_pipelined(model, [])) == []


def test_the_embedder_sorts_by_length_and_agrees_with_encode(embedder):
    vectors = embedder.embed(TEXTS)
    plain = embedder.load().encode(TEXTS, convert_to_numpy=True, show_progress_bar=False)
    cosine = (vectors * plain).sum(1) / np.linalg.norm(vectors, axis=1) / np.linalg.norm(plain, axis=1)
    assert cosine.min() > 0.99999
    assert embedder.precision_used is None  # chosen on CUDA only


def test_precision_and_batch_size_are_checked():
    assert choose_precision(None, [], "fp32") == ("fp32", "asked for")
    assert Embedder(batch_size=8, cache=False).batch_size == 8
    with pytest.raises(ValueError, match="precision must be one of auto, fp32, fp16"):
        Embedder(precision="bf16")
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        Embedder(batch_size=0)
