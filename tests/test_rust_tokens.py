"""The Embedder's Rust tokenizer path (``compute/batchtokens.py``): the features it builds equal the model's own
``tokenize``'s, and the vectors equal sentence-transformers' ``encode`` to a cosine of at least 0.9999 on every text
(real texts, long ones cut at the model's 256 tokens, empty strings, unicode); a model without a fast tokenizer falls
back to its own ``tokenize``; the precision choice follows what was measured (timings injected: no GPU needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pairmeasures.compute.batchtokens import BUILT_ATTRIBUTE, batch_tokenizer, rust_tokenizer
from pairmeasures.compute.embed import Embedder
from pairmeasures.compute.encoding import (
    FP16_MIN_COSINE,
    decide_precision,
    encode_pipelined,
    length_batches,
    sample_batches,
)

ODD = ["", " ", "Ünïcödé façade – naïve café 東京 😀 ﷺ", "  leading and trailing  ", "\u200b\u00a0", "x " * 600,
       "Tab\tnew\nline\r\n", "a"]


@pytest.fixture(scope="module")
def model():
    return Embedder(cache=False, progress=False, device="cpu").load()


def real_texts(data: Path) -> list[str]:
    """PERSPECTRUM's first 150 perspectives, ProCon's first 40 arguments and its 20 longest (over 256 tokens)."""
    with (data / "perspectrum" / "corpus.jsonl").open() as handle:
        texts = [json.loads(line)["text"] for _, line in zip(range(150), handle)]
    with (data / "procon" / "corpus.jsonl").open() as handle:
        arguments = [json.loads(line)["text"] for line in handle]
    return texts + arguments[:40] + sorted(arguments, key=len)[-20:]


def encoded_both_ways(model, texts: list[str], size: int = 16):
    tokenize, how = batch_tokenizer(model)
    assert how == "rust"
    batches = [[texts[i] for i in batch] for batch in length_batches(texts, size)]
    ours = np.concatenate(list(encode_pipelined(model, batches, tokenize=tokenize)))
    theirs = np.concatenate([model.encode(batch, convert_to_numpy=True, show_progress_bar=False) for batch in batches])
    return batches, ours.astype(np.float64), theirs.astype(np.float64)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-300)


def test_rust_features_equal_the_models_own_on_odd_texts(model):
    tokenize, how = batch_tokenizer(model)
    assert how == "rust"
    for batch in (ODD, ODD[:1], ODD[5:6]):
        ours, theirs = tokenize(batch), {n: v.numpy() for n, v in model.tokenize(batch).items() if hasattr(v, "numpy")}
        assert set(theirs) <= set(ours)
        for name, value in theirs.items():
            assert ours[name].dtype == np.int64 and np.array_equal(ours[name], value), name
    assert tokenize(["x " * 600])["input_ids"].shape == (1, 256)  # cut at the model's max_seq_length


def test_vectors_equal_encode_on_every_real_and_odd_text(model, data_dir):
    texts = list(dict.fromkeys(real_texts(data_dir) + ODD))
    long = [t for t in texts if len(model.tokenize([t])["input_ids"][0]) >= 256]
    assert len(long) >= 5  # texts over 256 tokens are among them, cut the same way
    _, ours, theirs = encoded_both_ways(model, texts)
    found = cosines(ours, theirs)
    assert found.shape == (len(texts),) and found.min() >= 0.9999, texts[int(found.argmin())]


def test_odd_texts_without_data(model):
    _, ours, theirs = encoded_both_ways(model, ODD, size=3)
    assert cosines(ours, theirs).min() >= 0.9999


def test_the_embedder_uses_the_rust_path_and_agrees_with_encode():
    embedder = Embedder(cache=False, progress=False, device="cpu")
    texts = [t for t in ODD if t.strip()]
    vectors = embedder.embed(texts)
    assert embedder.tokenizer_used == "rust"
    assert cosines(vectors.astype(np.float64), embedder.load().encode(texts).astype(np.float64)).min() >= 0.9999


def test_a_model_without_a_fast_tokenizer_falls_back_to_its_own_tokenize(model, monkeypatch):
    tokenizer = model[0].tokenizer
    monkeypatch.setattr(type(tokenizer), "is_fast", property(lambda self: False))
    model.__dict__.pop(BUILT_ATTRIBUTE, None)  # built once per model: built again here, without the fast tokenizer
    try:
        assert rust_tokenizer(model) is None
        tokenize, how = batch_tokenizer(model)
        assert how == "model"
        ours = np.concatenate(list(encode_pipelined(model, [ODD[2:5]], tokenize=tokenize))).astype(np.float64)
        theirs = model.encode(ODD[2:5], convert_to_numpy=True, show_progress_bar=False).astype(np.float64)
        assert cosines(ours, theirs).min() >= 0.9999
    finally:
        model.__dict__.pop(BUILT_ATTRIBUTE, None)  # the other tests' model has its fast tokenizer again
    monkeypatch.undo()
    assert batch_tokenizer(model)[1] == "rust"


def test_the_rust_tokenizer_is_built_once_per_model(model):
    assert batch_tokenizer(model) is batch_tokenizer(model)
    assert batch_tokenizer(model, fast=False)[1] == "model"


def test_precision_follows_the_measurement():
    fast, slow = [0.010, 0.011, 0.009], [0.020, 0.019, 0.021]
    assert decide_precision("auto", 0.99999, slow, fast)[0] == "fp16"
    chosen, why, measured = decide_precision("auto", 0.99999, fast, slow)
    assert chosen == "fp32" and "not faster" in why and measured["fp16_median_s"] == 0.02
    assert measured["fp32_s"] == fast and measured["cosine_min"] == 0.99999
    assert decide_precision("fp16", 0.99999, fast, slow)[0] == "fp16"  # asked for: agreement is enough
    assert decide_precision("auto", FP16_MIN_COSINE - 1e-6, slow, fast)[0] == "fp32"  # faster, but disagrees
    # a noisy round does not decide it: the median of the timed rounds does
    assert decide_precision("auto", 0.99999, [0.02, 0.02, 0.02], [0.001, 0.03, 0.03])[0] == "fp32"
    assert decide_precision("auto", 0.99999, [0.02, 0.02, 0.02], [0.05, 0.01, 0.01])[0] == "fp16"


def test_the_precision_sample_spans_the_batch_shapes():
    batches = [[str(i)] for i in range(40)]
    sample = sample_batches(batches, 6)
    assert len(sample) == 6 and sample[0] == batches[0] and sample[-1] == batches[-1]
    assert sample_batches(batches[:3]) == batches[:3]


def test_the_manifest_records_the_precision_chosen_with_its_measurement(monkeypatch):
    from pairmeasures.analysis.manifest import Manifest
    from pairmeasures.compute import embedded
    from pairmeasures.compute.embedded import precisions_chosen, record_precision

    monkeypatch.setattr(embedded, "_PRECISIONS", {})  # this process's record, as it was after the test
    assert "embedding_precision" not in Manifest().as_dict()  # nothing ran on a GPU: no entry

    chosen, why, measured = decide_precision("auto", 0.99999, [0.02, 0.02, 0.02], [0.01, 0.01, 0.01])
    record_precision("all-MiniLM-L6-v2", "cuda:0", {"precision": chosen, "why": why, **measured})
    record = Manifest().as_dict()["embedding_precision"]["all-MiniLM-L6-v2 on cuda:0"]
    assert record["precision"] == "fp16" and record["fp16_median_s"] == 0.01 and record["fp32_s"] == [0.02] * 3
    assert precisions_chosen()["all-MiniLM-L6-v2 on cuda:0"] == record
