"""Polarity validation: how well the fitted axes separate gold perspectives (PAIR §5.1, Table 2)."""

from __future__ import annotations

import hashlib
import os
import time
import warnings
from collections import Counter
from typing import Collection, Optional, Sequence

import numpy as np

from ..compute.embed import Embedder
from ..math.polarization import consistent_accuracy, held_out_correct, per_query_accuracy, perspective_accuracy
from ..sideinfo.polarity import FitSet, PolarityModel, checked_positive, negation_anchors, read_beir

__all__ = ["validate_polarity", "nothing_measured", "bootstrap_accuracies", "ACCURACIES", "axis_evidence",
           "held_out_folds", "AxisWarning", "CHANCE", "FOLDS"]


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


#: The accuracy of an axis that does not separate the perspectives, on held-out documents.
CHANCE = 0.5

#: The folds :func:`axis_evidence` splits each query's labelled documents into (the audit's choice).
FOLDS = 5


class AxisWarning(UserWarning):
    """The held-out evidence of polarity axes reaches chance: DUO on them may not measure the perspectives."""


def held_out_folds(labels: Sequence, folds: int = FOLDS, seed: int = 0, query: str = "") -> np.ndarray:
    """The fold (0 ..) of each labelled document of one query, for :func:`axis_evidence`.

    ``min(folds, documents)`` folds, stratified by label: each label's documents (labels in sorted order) are
    shuffled and dealt round-robin, the next label continuing where the last one stopped, so fold sizes differ by
    at most one and a label with two or more documents keeps one outside every fold. The shuffle depends on
    ``seed`` and ``query`` only (a query's folds do not change when other queries are added).
    """
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise ValueError(f"folds must be an integer of at least 2, got {folds!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    names = np.asarray([str(label) for label in labels], dtype=object)
    rng = np.random.default_rng([int(seed), int.from_bytes(hashlib.sha256(str(query).encode()).digest()[:8], "little")])
    order = np.concatenate([rng.permutation(np.flatnonzero(names == label)) for label in sorted(set(names))]
                           or [np.zeros(0, np.intp)])
    fold = np.empty(len(names), dtype=np.intp)
    fold[order] = np.arange(len(order)) % max(1, min(int(folds), len(names)))
    return fold


def _fit_set(fit, text: str, positive: Optional[str]) -> tuple[Optional[FitSet], Optional[PolarityModel], str]:
    """The fit set, the model it came with (or None) and a name for messages, from what :func:`axis_evidence` takes."""
    if isinstance(fit, PolarityModel):
        return fit.fit, fit, "the model's fit documents"
    if fit is None or isinstance(fit, FitSet):
        return fit, None, "these fit documents"
    if isinstance(fit, os.PathLike) or (isinstance(fit, str) and os.path.isdir(fit)):
        return FitSet.from_beir(fit, positive=positive, text=text), None, str(fit)
    name = fit if isinstance(fit, str) else getattr(fit, "dataset_id", lambda: repr(fit))()
    return FitSet.from_dataset(fit, text=text, positive=positive), None, str(name)


def axis_evidence(fit, embedder: Optional[Embedder] = None, *, model: Optional[str] = None, text: str = "text",
                  positive: Optional[str] = None, folds: int = FOLDS, seed: int = 0, resamples: int = 10_000,
                  confidence: float = 0.95, name: Optional[str] = None, warn: bool = True) -> dict:
    """How well per-query polarity axes separate labelled perspectives, on documents held out of each axis's fit.

    ``fit``: a :class:`~pairmeasures.sideinfo.polarity.PolarityModel` (its fit set, embedder, components,
    distractors and anchors; only the first axis is checked), a :class:`FitSet`, a BEIR-layout folder, or a
    dataset (id, ``ir_datasets`` or ``pt.get_dataset`` object; read with ``text`` and ``positive``). Each query's
    labelled documents are split into ``folds`` by :func:`held_out_folds` (``seed``); each fold is scored on an axis
    fitted, like the model's, on the other folds, and the signs of both accuracies (:mod:`pairmeasures.math.
    polarization`) are chosen on those other folds too (:func:`~pairmeasures.math.polarization.held_out_correct`),
    so 0.5 is chance. Measured: queries with exactly two perspectives, one of them the positive label, each with at
    least two documents; the others are counted in ``skipped_queries``. Embeddings come through the embedder's
    cache: texts embedded before are read, not embedded again.

    Returns a JSON-ready dict: ``validated`` (some query measured; else ``reason``), ``accuracy`` and
    ``consistent_accuracy`` (``value``, ``low``, ``high``: averages over held-out documents with percentile bootstrap
    intervals over queries, ``resamples``, ``confidence``), ``reaches_chance`` (an interval's low end at or below
    0.5: it does not clear chance), ``warning`` (one line, or None), ``per_query`` records, ``scheme`` in words and counts, and
    ``in_hindsight``: both accuracies of the same held-out scores with their signs chosen on the scored documents,
    as :func:`validate_polarity` counts them (at least 0.5 on every query, whatever the labels). ``warn``: also
    issue the warning as an :class:`AxisWarning`.
    """
    fit_set, base, default_name = _fit_set(fit, text, positive)
    if base is not None and (embedder is not None or model is not None):
        raise ValueError("axis_evidence: a PolarityModel brings its own embedder; pass no embedder or model with it")
    name = name or default_name
    scheme = (f"{folds}-fold cross-validation within each query (seed {seed}): its labelled documents dealt into "
              f"{folds} folds stratified by perspective (one per fold when it has fewer); each fold scored on an axis "
              "fitted on the other folds, both accuracies' signs chosen on those folds")
    result: dict = {"validated": False, "reason": None, "scheme": scheme, "folds": folds, "seed": seed,
                    "model": None, "positive": None, "queries": 0, "documents": 0, "skipped_queries": {},
                    "accuracy": None, "consistent_accuracy": None, "resamples": resamples, "confidence": confidence,
                    "chance": CHANCE, "reaches_chance": None, "warning": None, "in_hindsight": None, "per_query": []}
    held_out_folds([], folds, seed)  # checks folds and seed before any work
    if fit_set is None or fit_set.labels is None:
        result["reason"] = (f"{name}: no labels to check the axes against" if fit_set is not None
                            else "the axes are fitted on the documents scored, which carry no labels")
        return result
    if base is not None or positive is None:
        positive = fit_set.positive
    positive = checked_positive([x for labels in fit_set.labels.values() for x in labels], positive, name)
    embedder = base.embedder if base is not None else (embedder or Embedder(model))
    result.update(model=embedder.model_name, positive=positive)
    units: dict = {}  # "<query> (fold f held out)" -> (query, its fit texts, whether each is of the positive label)
    held: list = []  # (unit, query, text, is positive) of every held-out document, query by query
    skipped: Counter = Counter()
    for qid, labels in fit_set.labels.items():
        counts = Counter(labels)
        if len(counts) != 2 or positive not in counts:
            skipped[_SKIPPED.get(len(counts), "more than two perspectives")] += 1
            continue
        if min(counts.values()) < 2:
            skipped["a perspective with one document (none to hold out)"] += 1
            continue
        fold = held_out_folds(labels, folds, seed, qid)
        texts = fit_set.texts[qid]
        for f in range(int(fold.max()) + 1):
            name_f = f"{qid} (fold {f + 1} held out)"
            units[name_f] = (qid, [t for t, g in zip(texts, fold) if g != f], [x for x, g in zip(labels, fold) if g != f])
            held += [(name_f, qid, t, x == positive) for t, x, g in zip(texts, labels, fold) if g == f]
    if not units:
        reasons = "; ".join(f"{n} with {why}" for why, n in skipped.most_common())
        result.update(skipped_queries=dict(skipped), reason=f"no query of {name} has two perspectives (one of them "
                      f"{positive!r}) of at least two documents each to hold out ({reasons or 'no labelled documents'})")
        return result
    template = base or PolarityModel(embedder=embedder)
    anchors = None if template.anchors is None else {u: template.anchors[q] for u, (q, _, _) in units.items()
                                                     if q in template.anchors}
    fold_model = PolarityModel(fit=FitSet(texts={u: t for u, (_, t, _) in units.items()},
                                          labels={u: x for u, (_, _, x) in units.items()}, positive=positive),
                               embedder=embedder, components=template.components, distractors=template.distractors,
                               anchors=anchors, anchor_within=template.anchor_within)
    fit_unit = [u for u, (_, texts, _) in units.items() for _ in texts]
    unit = np.array(fit_unit + [u for u, _, _, _ in held], dtype=object)
    scores = fold_model.score(unit, [t for _, texts, _ in units.values() for t in texts] + [t for _, _, t, _ in held],
                              errors="skip")  # one embedding lookup for all folds: each distinct text read once
    scores = scores if scores.ndim == 1 else scores[:, 0]
    failed = {q for u, (q, _, _) in units.items() if u in fold_model.skipped}
    if failed:
        skipped["an axis that could not be fitted on some fold"] += len(failed)
    is_positive = np.array([x == positive for _, _, labels in units.values() for x in labels] + [p for *_, p in held],
                           dtype=bool)
    query = np.array([units[u][0] for u in fit_unit] + [q for _, q, _, _ in held], dtype=object)
    keep = ~np.isin(query, list(failed))
    fit_part = keep & (np.arange(len(unit)) < len(fit_unit))
    held_part = keep & (np.arange(len(unit)) >= len(fit_unit))
    per, consistent = held_out_correct(scores[fit_part], unit[fit_part], is_positive[fit_part], scores[held_part],
                                       unit[held_part], is_positive[held_part])
    ids, codes = np.unique(query[held_part].astype(str), return_inverse=True)
    documents = np.bincount(codes, minlength=ids.size)
    right = np.bincount(codes, weights=per, minlength=ids.size), np.bincount(codes, weights=consistent, minlength=ids.size)
    fold_count = Counter(q for q, _, _ in units.values())
    order = {q: i for i, q in enumerate(ids)}
    for qid in (q for q in fit_set.labels if str(q) in order):
        i = order[str(qid)]
        result["per_query"].append({"query_id": qid, "accuracy": float(right[0][i] / documents[i]),
                                    "consistent_accuracy": float(right[1][i] / documents[i]),
                                    "documents": int(documents[i]), "folds": fold_count[qid], "positive": positive,
                                    "other": next(x for x in fit_set.labels[qid] if x != positive)})
    result.update(queries=len(result["per_query"]), documents=int(held_part.sum()), skipped_queries=dict(skipped))
    if result["per_query"]:  # the same held-out scores with signs chosen on the scored documents, as validate_polarity
        result["in_hindsight"] = {measure: score(scores[held_part], query[held_part].astype(str), is_positive[held_part])
                                  for measure, score in zip(ACCURACIES, (perspective_accuracy, consistent_accuracy))}
    if not result["per_query"]:
        result["reason"] = f"no axis of {name} could be fitted on the documents left after holding a fold out"
        return result
    stats = bootstrap_accuracies([{**result, "dataset": name}], resamples=resamples, seed=seed, confidence=confidence)
    for measure in ACCURACIES:
        result[measure] = stats[measure][0]
    reaching = [m for m in reversed(ACCURACIES) if result[m]["low"] <= CHANCE]
    result.update(validated=True, reaches_chance=bool(reaching))
    if reaching:
        shown = " and ".join(f"{m.replace('_', ' ')} {result[m]['value']:.3f} [{result[m]['low']:.3f}, "
                             f"{result[m]['high']:.3f}]" for m in reaching)
        result["warning"] = (f"the polarity axes of {name} are not shown to separate its labels: on held-out documents "
                             f"({result['queries']} queries), {shown} {'does' if len(reaching) == 1 else 'do'} not clear chance "
                             f"({CHANCE}; {confidence:.0%} intervals), so DUO on these axes may not measure the "
                             "perspectives")
        if warn:
            warnings.warn(result["warning"], AxisWarning, stacklevel=2)
    return result
