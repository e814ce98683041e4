"""Polarity validation: how well the fitted axes separate gold perspectives (PAIR §5.1, Table 2)."""

from __future__ import annotations

import time
from collections import Counter
from typing import Optional

import numpy as np

from ..math.polarization import consistent_accuracy, perspective_accuracy
from ..sideinfo.embed import Embedder
from ..sideinfo.polarity import FitSet, PolarityModel, default_positive, negation_anchors, read_beir

__all__ = ["validate_polarity"]


ANCHORS = ("none", "negated-query")


def validate_polarity(folder, model: Optional[str] = None, text: str = "text", positive: Optional[str] = None,
                      embedder: Optional[Embedder] = None, anchors: str = "none", anchor_within: int = 0) -> dict:
    """Fit one axis per query on its labelled documents and score them against the gold labels.

    ``anchors="negated-query"`` orients each axis from the query statement's negation to the
    statement itself (projected onto the documents' ``anchor_within`` leading principal axes
    when > 0) instead of taking the first principal axis; no label is used either way.

    Queries need documents of exactly two perspectives and at least two documents; the others are
    counted in ``skipped_queries`` by reason. Returns ``accuracy`` (the reference code's
    per-perspective measure), ``consistent_accuracy`` (one sign per query), ``queries``,
    ``documents`` and details.
    """
    if anchors not in ANCHORS:
        raise ValueError(f"anchors must be one of {ANCHORS}, got {anchors!r}")
    started = time.perf_counter()
    data = read_beir(folder)
    if data.labels is None:
        raise FileNotFoundError(f"{str(data.path)!r} has no labels.tsv (query-id, corpus-id, group): "
                                "validation needs the gold perspective of each document")
    frame = data.fit_frame(text)
    positive = positive or default_positive(frame["label"])
    skipped: Counter = Counter()
    keep = []
    for qid, rows in frame.groupby("qid", sort=False):
        groups = rows["label"].nunique()
        if groups < 2:
            skipped["one perspective only"] += 1
        elif groups > 2:
            skipped["more than two perspectives"] += 1
        else:
            keep.append(qid)
    frame = frame[frame["qid"].isin(keep)]
    embedder = embedder or Embedder(model)
    anchor_pairs = (negation_anchors({q: data.queries[q]["text"] for q in keep if q in data.queries})
                    if anchors == "negated-query" else None)
    polarity = PolarityModel(fit=FitSet.from_frame(frame, positive=positive), embedder=embedder,
                             anchors=anchor_pairs, anchor_within=anchor_within)
    scores = polarity.score(frame["qid"].to_numpy(), frame["text"].tolist())
    is_positive = (frame["label"] == positive).to_numpy()
    query = frame["qid"].to_numpy()
    return {
        "dataset": str(data.path),
        "model": embedder.model_name,
        "backend": embedder.backend,
        "text": text,
        "anchors": anchors,
        "anchor_within": anchor_within,
        "positive": positive,
        "accuracy": perspective_accuracy(scores, query, is_positive),
        "consistent_accuracy": consistent_accuracy(scores, query, is_positive),
        "queries": len(keep),
        "documents": int(len(frame)),
        "skipped_queries": dict(skipped),
        "embedded_now": embedder.computed,
        "seconds": round(time.perf_counter() - started, 2),
        "mean_documents_per_query": round(float(np.mean(frame.groupby("qid").size())) if len(frame) else 0.0, 2),
    }
