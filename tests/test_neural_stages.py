"""Neural stages: the pyterrier-dr bi-encoder on the embedding cache, and the CrossEncoder re-ranker."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pairmeasures as pm


@pytest.fixture
def procon_bm25(data_mirror, tmp_path):
    import pyterrier as pt

    dataset = pt.get_dataset("irds:pair/procon")
    topics = dataset.get_topics().iloc[:5]
    return dataset, topics, pm.bm25("pair/procon", num_results=20, index_dir=tmp_path) >> pt.text.get_text(dataset, "text")


def test_bi_encoder_reranks_bm25_through_the_embedding_cache(procon_bm25):
    pytest.importorskip("pyterrier_dr")
    import ir_measures
    import pyterrier as pt

    from pairmeasures.compute.cache import EmbeddingCache

    dataset, topics, bm25 = procon_bm25
    encoder = pm.bi_encoder()
    reranked = (bm25 >> encoder)(topics)
    first = bm25(topics)
    assert set(zip(reranked.qid, reranked.docno)) == set(zip(first.qid, first.docno))
    orders = [list(f.sort_values(["qid", "rank"]).docno) for f in (first, reranked)]
    assert orders[0] != orders[1]  # the order changes

    # Scores are the cosine similarities of the cached embeddings.
    vectors = dict(zip(reranked.docno, pm.Embedder(normalize=True).embed(reranked.text.tolist())))
    queries = dict(zip(topics.qid, pm.Embedder(normalize=True).embed(topics["query"].tolist())))
    expected = [float(queries[q] @ vectors[d]) for q, d in zip(reranked.qid, reranked.docno)]
    np.testing.assert_allclose(reranked.score, expected, rtol=1e-5)

    cache = EmbeddingCache()
    keys = encoder.embedder.key
    stored = cache.get(keys, [pm.compute.cache.text_key(t) for t in reranked.text])
    assert len(stored) == reranked.text.nunique()  # every document vector went into the cache
    again = pm.bi_encoder()
    (bm25 >> again)(topics)
    assert again.embedder.computed == 0  # a second encoder embeds nothing: all from the cache

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        table = pt.Experiment([bm25, bm25 >> encoder], topics, dataset.get_qrels(), names=["BM25", "BM25 >> dense"],
                              eval_metrics=[ir_measures.nDCG @ 10], plan="tree")
    assert list(table["name"]) == ["BM25", "BM25 >> dense"] and (table["nDCG@10"] > 0.3).all()


def test_dense_retrieval_over_a_cached_flex_index(procon_subset, tmp_path):
    pytest.importorskip("pyterrier_dr")
    import pyterrier as pt

    from pairmeasures.sideinfo.polarity import read_beir

    data = read_beir(procon_subset)
    retriever = pm.dense_retriever(procon_subset, num_results=10, index_dir=tmp_path)
    (folder,) = tmp_path.iterdir()
    assert folder.suffix == ".flex"
    queries = pt.new.queries([q["text"] for q in data.queries.values()], qid=list(data.queries))
    retrieved = retriever(queries)
    documents = list(data.corpus)
    embedder = pm.Embedder(normalize=True)
    scores = embedder.embed(queries["query"].tolist()) @ embedder.embed([data.document_text(d) for d in documents]).T
    best = [documents[i] for i in scores.argmax(axis=1)]
    assert list(retrieved[retrieved["rank"] == 0].set_index("qid").loc[queries.qid, "docno"]) == best
    assert retrieved.groupby("qid").size().eq(10).all()
    before = folder.stat().st_mtime_ns
    again = pm.dense_retriever(procon_subset, num_results=10, index_dir=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [folder.name] and folder.stat().st_mtime_ns == before
    assert again(queries)["docno"].tolist() == retrieved["docno"].tolist()


def save_tiny_cross_encoder(folder, num_labels: int = 1):
    """A randomly initialised two-layer BERT cross-encoder saved to ``folder`` (no weights install offline)."""
    import torch
    from sentence_transformers import CrossEncoder
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + "a the school uniforms are good bad for students".split()
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]",
                                        cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    config = BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, num_labels=num_labels)
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    CrossEncoder(str(folder), device="cpu").save(str(folder))
    return folder


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    return save_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


def test_cross_encoder_scores_query_text_pairs(tiny_cross_encoder):
    import pandas as pd
    import pyterrier as pt
    from sentence_transformers import CrossEncoder

    frame = pd.DataFrame({"qid": ["1", "1", "1", "2"], "query": ["school uniforms"] * 3 + ["students"],
                          "docno": ["a", "b", "c", "a"], "score": [3.0, 2.0, 1.0, 1.0], "rank": [0, 1, 2, 0],
                          "text": ["uniforms are good", "uniforms are bad", "good for students", "uniforms are good"]})
    reranker = pm.cross_encoder(tiny_cross_encoder, device="cpu")
    out = reranker(frame)
    expected = CrossEncoder(str(tiny_cross_encoder), device="cpu").predict(list(zip(frame["query"], frame["text"])))
    np.testing.assert_allclose(out.set_index(["qid", "docno"]).loc[list(zip(frame.qid, frame.docno)), "score"],
                               expected, rtol=1e-5)
    assert sorted(out.columns) == sorted(frame.columns)  # every input column kept
    assert (out.groupby("qid")["rank"].min() == 0).all()
    empty = reranker(frame.iloc[:0])
    assert len(empty) == 0 and "score" in empty.columns
    with pytest.raises(KeyError, match="text"):
        reranker(frame.drop(columns="text"))
    assert str(reranker).startswith("CrossEncoderReranker(") and isinstance(reranker, pt.Transformer)


def test_cross_encoders_that_cannot_rerank_are_named(tmp_path):
    import pandas as pd

    with pytest.raises(FileNotFoundError, match="does not exist"):
        pm.cross_encoder(tmp_path / "missing")
    two_labels = pm.cross_encoder(save_tiny_cross_encoder(tmp_path / "nli", num_labels=2), device="cpu")
    frame = pd.DataFrame({"qid": ["1"], "query": ["school uniforms"], "docno": ["a"], "score": [1.0], "rank": [0],
                          "text": ["uniforms are good"]})
    with pytest.raises(ValueError, match="2 scores per"):
        two_labels(frame)
