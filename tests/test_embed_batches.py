"""The Embedder's batches and its GPU path, checked on the CPU (no GPU here): the pipelined encoder (tokenizing in
threads ahead of the forward pass) computes what sentence-transformers' ``encode`` does; the batch size follows the
device; bad arguments are errors."""

from __future__ import annotations

import numpy as np
import pytest

from pairmeasures.compute.embed import Embedder
from pairmeasures.compute.encoding import BATCH_SIZES, choose_precision, encode_pipelined

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
    found = np.concatenate(list(encode_pipelined(model, batches, ahead=2)))
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
    assert choose_precision(None, [], "fp32") == ("fp32", "asked for", {})
    assert Embedder(batch_size=8, cache=False).batch_size == 8
    with pytest.raises(ValueError, match="precision must be one of auto, fp32, fp16"):
        Embedder(precision="bf16")
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        Embedder(batch_size=0)


def test_texts_tokenized_in_one_process_embed_in_another_as_encode_does(embedder):
    """The Ray pool's GPU path on CPU: a tokenizing actor's bytes (``tokenized``) through a model actor's forward
    passes (``from_tokens``) give the texts' vectors in the texts' order, as sentence-transformers computes them."""
    import pickle

    from pairmeasures.compute.raypool import from_tokens, tokenized

    model = embedder.load()
    payload = tokenized(model, TEXTS, 16)
    assert isinstance(payload, bytes) and len(pickle.loads(payload)["features"]) == 5  # 70 texts, 16 a batch
    found = from_tokens(model, payload, half=False)
    expected = model.encode(TEXTS, convert_to_numpy=True, show_progress_bar=False)
    assert found.shape == (len(TEXTS), 384) and found.dtype == np.float32
    assert np.abs(found - expected).max() <= 1e-5


class Cluster:
    """What pool_shape reads of a joined Ray: its resources."""

    def __init__(self, **resources):
        self.resources = resources

    def cluster_resources(self) -> dict:
        return self.resources


def test_the_pool_has_one_model_actor_per_gpu_fed_by_tokenizers_else_one_per_cpu():
    from pairmeasures.compute.raypool import pool_shape

    assert pool_shape(Cluster(CPU=16.0, GPU=1.0)) == (1, 1, 1, 4)  # actors, GPUs and CPUs each, tokenizing actors
    assert pool_shape(Cluster(CPU=16.0, GPU=4.0)) == (4, 1, 1, 11)  # the CPUs left: 16 - 4 actors - 1 driver
    assert pool_shape(Cluster(CPU=3.0, GPU=1.0)) == (1, 1, 1, 1)
    assert pool_shape(Cluster(CPU=16.0, GPU=2.0), workers=1, tokenizers=0) == (1, 1, 1, 0)
    assert pool_shape(Cluster(CPU=2.0)) == (2, 0, 1, 0)
    assert pool_shape(Cluster(CPU=2.0), workers=3, tokenizers=1) == (3, 0, 1, 1)
    with pytest.raises(ValueError, match="--workers must be at least 1"):
        pool_shape(Cluster(CPU=2.0), workers=0)
    with pytest.raises(ValueError, match="--tokenizers must be 0 or more"):
        pool_shape(Cluster(CPU=2.0), tokenizers=-1)
