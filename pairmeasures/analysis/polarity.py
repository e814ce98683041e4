"""Polarity validation: how well the fitted axes separate gold perspectives (PAIR §5.1, Table 2)."""

from __future__ import annotations

import time
from collections import Counter
from typing import Collection, Optional, Sequence

import numpy as np

from ..math.polarization import consistent_accuracy, per_query_accuracy, perspective_accuracy
from ..sideinfo.embed import Embedder
from ..sideinfo.polarity import FitSet, PolarityModel, checked_positive, negation_anchors, read_beir

__all__ = ["validate_polarity", "nothing_measured", "bootstrap_accuracies", "ACCURACIES"]


ANCHORS = ("none", "negated-query")

#: Why a query is not measured, by the number of its perspectives.
_SKIPPED = {1: "one perspective only", 2: "two perspectives, neither the positive label"}


#: The two accuracies :func:`validate_polarity` reports, both averaged over documents.
ACCURACIES = ("accuracy", "consistent_accuracy")


def validate_polarity(folder, model: Optional[str] = None, text: str = "text", positive: Optional[str] = None,
                      embedder: Optional[Embedder] = None, anchors: str = "none", anchor_within: int = 0,
                      queries: Optional[Collection[str]] = None, fit=None, distractors: bool = False) -> dict:
    """Fit one axis per query on its labelled documents and score them against the gold labels.

    ``fit``: another BEIR-layout folder (e.g. a generated fit set) whose documents of the same query the
    axis is fitted on instead; queries it lacks are skipped and counted. ``distractors``: remove the
    spurious direction of ``fit``'s ``distractors.jsonl`` first (A.5).

    ``anchors="negated-query"`` orients each axis from the query statement's negation to the
    statement itself (projected onto the documents' ``anchor_within`` leading principal axes
    when > 0) instead of taking the first principal axis; no label is used either way.

    ``positive`` is the label of perspective 1 (default: the first of ``POSITIVE_LABELS`` present; an
    error listing the labels when there is none). A query is measured when its documents have exactly
    two perspectives, one of them ``positive``: it is compared with the query's other label. The
    others are counted in ``skipped_queries`` by reason. ``queries`` (ids) restricts validation to those
    queries, e.g. the ones a model was not trained on. Returns ``accuracy`` (the reference code's
    per-perspective measure), ``consistent_accuracy`` (one sign per query), both ``None`` when no
    query could be measured, ``queries``, ``documents``, ``per_query`` (one record per measured query:
    both accuracies, its documents and its two labels) and details.
    """
    if anchors not in ANCHORS:
        raise ValueError(f"anchors must be one of {ANCHORS}, got {anchors!r}")
    if isinstance(anchor_within, bool) or not isinstance(anchor_within, int) or anchor_within < 0:
        raise ValueError(f"anchor_within must be 0 (off) or a positive number of principal axes, got {anchor_within!r}")
    started = time.perf_counter()
    data = read_beir(folder)
    if data.labels is None:
        raise FileNotFoundError(f"{str(data.path)!r} has no labels.tsv (query-id, corpus-id, group): "
                                "validation needs the gold perspective of each document")
    frame = data.fit_frame(text)
    if queries is not None:
        chosen = {str(q) for q in queries}
        unknown = sorted(chosen - set(data.queries))
        if unknown:
            raise ValueError(f"{len(unknown)} of the queries to validate are not in {data.path / 'queries.jsonl'}, "
                             f"e.g. {unknown[0]!r}")
        frame = frame[frame["qid"].isin(chosen)].reset_index(drop=True)
    frame["label"] = frame["label"].astype(str)
    positive = checked_positive(frame["label"].unique(), positive, data.path / "labels.tsv")
    perspectives = frame.groupby("qid", sort=False)["label"].agg(lambda column: sorted(set(column)))
    measured = perspectives.map(lambda names: len(names) == 2 and positive in names)
    skipped = Counter(_SKIPPED.get(len(names), "more than two perspectives") for names in perspectives[~measured])
    keep = perspectives.index[measured].tolist()
    fit_frame = fit_path = None
    if fit is not None:
        fit_data = read_beir(fit)
        fit_frame, fit_path = fit_data.fit_frame(text), str(fit_data.path)
        unfitted = [q for q in keep if q not in set(fit_frame["qid"])]
        if unfitted:
            skipped["no documents in the fit set"] += len(unfitted)
            keep = [q for q in keep if q not in set(unfitted)]
    elif distractors:
        raise ValueError("distractors come from a fit set: pass --fit DIR (fit= in Python) too")
    frame = frame[frame["qid"].isin(keep)]
    embedder = embedder or Embedder(model)
    result = {"dataset": str(data.path), "model": embedder.model_name, "backend": embedder.backend, "text": text, "anchors": anchors,
              "anchor_within": anchor_within, "positive": positive, "accuracy": None, "consistent_accuracy": None,
              "queries": len(keep), "documents": int(len(frame)), "skipped_queries": dict(skipped),
              "fit": fit_path, "distractors": distractors}
    per_query: list = []
    if keep:
        anchor_pairs = (negation_anchors({q: data.queries[q]["text"] for q in keep if q in data.queries})
                        if anchors == "negated-query" else None)
        if fit_frame is None:
            fit_set = FitSet.from_frame(frame, positive=positive)
        else:
            fit_set = FitSet.from_frame(fit_frame[fit_frame["qid"].isin(keep)])
        spurious = None
        if distractors:
            from ..generate import read_distractors

            spurious = read_distractors(fit)
        polarity = PolarityModel(fit=fit_set, embedder=embedder, anchors=anchor_pairs, anchor_within=anchor_within,
                                 distractors=spurious)
        scores = polarity.score(frame["qid"].to_numpy(), frame["text"].tolist())
        is_positive = (frame["label"] == positive).to_numpy()
        query = frame["qid"].to_numpy()
        result["accuracy"] = perspective_accuracy(scores, query, is_positive)
        result["consistent_accuracy"] = consistent_accuracy(scores, query, is_positive)
        each = per_query_accuracy(scores, query, is_positive)
        per_query = [{"query_id": q, "accuracy": float(a), "consistent_accuracy": float(c), "documents": int(n),
                      "positive": positive, "other": next(x for x in perspectives[q] if x != positive)}
                     for q, a, c, n in zip(each.query.tolist(), each.accuracy, each.consistent_accuracy, each.documents)]
    result.update({
        "embedded_now": embedder.computed,
        "seconds": round(time.perf_counter() - started, 2),
        "mean_documents_per_query": round(float(np.mean(frame.groupby("qid").size())) if len(frame) else 0.0, 2),
        "per_query": per_query,
    })
    return result


def nothing_measured(result: dict) -> Optional[str]:
    """Why :func:`validate_polarity` measured no query, in one line, or ``None`` when it measured some."""
    if result["queries"]:
        return None
    counts = "; ".join(f"{n} {'has' if n == 1 else 'have'} {reason}"
                       for reason, n in sorted(result["skipped_queries"].items(), key=lambda item: -item[1]))
    return (f"nothing to measure in {result['dataset']}: no query has documents of exactly two perspectives, one of "
            f"them the positive label {result['positive']!r} ({counts or 'no labelled documents'})")


def bootstrap_accuracies(results: Sequence[dict], resamples: int = 10_000, seed: int = 0,
                         confidence: float = 0.95) -> dict:
    """Percentile bootstrap intervals over queries of :func:`validate_polarity` results on the same queries.

    Both accuracies are averages over documents, so each resample takes the ratio of correctly placed documents
    to documents over the drawn queries (:func:`pairmeasures.analysis.paired_ratio_bootstrap`); the same draws
    serve every result (paired). For each of :data:`ACCURACIES`: ``value``, ``low``, ``high`` per result and,
    from the second result on, ``difference`` to the first with ``difference_low``/``difference_high``.
    """
    from .bootstrap import paired_ratio_bootstrap

    if not results:
        raise ValueError("bootstrap_accuracies needs at least one validate_polarity result")
    order = [record["query_id"] for record in results[0]["per_query"]]
    if not order:
        raise ValueError(f"nothing was measured in {results[0]['dataset']}: no interval to compute")
    for result in results[1:]:
        if sorted(r["query_id"] for r in result["per_query"]) != sorted(order):
            raise ValueError(f"the results measured different queries ({result['model']} and {results[0]['model']} "
                             "on the same folder must measure the same ones): compare them on the same data")
    documents = {r["query_id"]: r["documents"] for r in results[0]["per_query"]}
    sizes = [documents[q] for q in order]
    out: dict = {"resamples": resamples, "seed": seed, "confidence": confidence, "queries": len(order),
                 "models": [result["model"] for result in results]}
    for name in ACCURACIES:
        correct = []
        for result in results:
            by_query = {r["query_id"]: r[name] * r["documents"] for r in result["per_query"]}
            correct.append([by_query[q] for q in order])
        stats = paired_ratio_bootstrap(correct, sizes, baseline=0, resamples=resamples, confidence=confidence,
                                       seed=seed)
        rows = []
        for index in range(len(results)):
            row = {"value": float(stats["mean"][index]), "low": float(stats["low"][index]),
                   "high": float(stats["high"][index])}
            if index:
                row.update(difference=float(stats["diff"][index]), difference_low=float(stats["diff_low"][index]),
                           difference_high=float(stats["diff_high"][index]))
            rows.append(row)
        out[name] = rows
    return out
