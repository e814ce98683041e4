"""The training data of ``train-polarity``: the labelled texts of a BEIR-layout folder's training claims, split by
query, with the texts of named evaluation folders (and their perspective clusters) excluded, and extra examples
joined (:func:`with_extra`). Nothing here imports torch."""

from __future__ import annotations

import os
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional, Sequence, Union

if TYPE_CHECKING:
    import datasets

__all__ = ["EXAMPLE_COLUMNS", "PolarityTrainingSet", "check_overlap", "folder_texts", "normalise_text",
           "polarity_training_set", "with_extra"]

#: Columns of :meth:`PolarityTrainingSet.examples` and of ``extra_examples``: the claim's query id, the text,
#: and its stance (1 = the positive perspective, 0 = the other).
EXAMPLE_COLUMNS = ("query_id", "text", "stance")


def normalise_text(text: str) -> str:
    """Text as compared for leakage: casefolded, whitespace runs collapsed to one space, stripped."""
    return " ".join(str(text).casefold().split())


@dataclass
class PolarityTrainingSet:
    """The labelled texts of a folder's training claims, and what was left out and why.

    ``examples``: one dict per (claim, text) with :data:`EXAMPLE_COLUMNS`; ``train_queries`` /
    ``evaluation_queries``: the split by query; ``excluded``: counts of left-out claims, texts and pairs by
    reason; ``dropped_claims``: training claims without two texts of each stance (no triplet);
    ``evaluation_pairs_seen``: (evaluation query, text) pairs whose text was trained on under another claim (a
    perspective may belong to several claims, with different stances).
    """

    folder: Path
    text: str
    positive: str
    split: dict
    train_queries: list
    evaluation_queries: list
    examples: list
    excluded: dict = field(default_factory=dict)
    dropped_claims: dict = field(default_factory=dict)
    evaluation_pairs_seen: int = 0
    claim_texts: set = field(default_factory=set)
    texts: set = field(default_factory=set)

    def summary(self) -> dict:
        stances = Counter(example["stance"] for example in self.examples)
        return {"folder": str(self.folder), "text": self.text, "positive": self.positive, "split": self.split,
                "training_claims": len({e["query_id"] for e in self.examples}), "training_texts": len(self.examples),
                "positive_texts": stances.get(1, 0), "other_texts": stances.get(0, 0),
                "evaluation_queries": len(self.evaluation_queries), "excluded": self.excluded,
                "dropped_claims": self.dropped_claims,
                "evaluation_pairs_with_a_training_text": self.evaluation_pairs_seen}

    def overlap(self, folder: Union[str, os.PathLike]) -> tuple[list, list]:
        """Claims of training whose text is a query of ``folder``, and training texts in its corpus (normalised)."""
        queries, corpus = folder_texts(folder)
        return sorted(self.claim_texts & queries), sorted(self.texts & corpus)


def folder_texts(folder: Union[str, os.PathLike]) -> tuple[set, set]:
    """The normalised query texts and corpus texts (titles and texts) of a BEIR-layout folder."""
    from ..io.beir import read_beir

    data = read_beir(folder)
    queries = {normalise_text(q["text"]) for q in data.queries.values()}
    corpus = {normalise_text(d[name]) for d in data.corpus.values() for name in ("title", "text")
              if isinstance(d.get(name), str) and d[name].strip()}
    return queries, corpus


def polarity_training_set(folder: Union[str, os.PathLike], *, split_field: str = "split", train_split: str = "train",
                          evaluation_split: Optional[str] = None, held_out_fraction: float = 0.2,
                          exclude: Iterable[Union[str, os.PathLike]] = (), text: str = "text",
                          positive: Optional[str] = None, seed: int = 0) -> PolarityTrainingSet:
    """Training examples from a BEIR-layout folder with ``labels.tsv``: queries are claims, labels stances.

    The split is by query, never by document: queries whose ``split_field`` is ``train_split`` train; the
    others are evaluated (only those whose field is ``evaluation_split`` when given). A folder whose queries have
    no ``split_field`` at all is split at random (``seed``), ``held_out_fraction`` of the queries held out.
    Every folder in ``exclude`` removes from training each claim whose text is one of its queries, each text of
    its corpus (title or text), and every perspective cluster (``labels[].cluster_ids`` in corpus.jsonl) that
    holds such a text; texts are compared by :func:`normalise_text`. Claims without two texts of each stance
    are dropped. Every removal is counted by reason.
    """
    from ..io.beir import check_text_field, read_beir
    from ..sideinfo.polarity import checked_positive

    check_text_field(text)
    if not 0 < held_out_fraction < 1:
        raise ValueError(f"held_out_fraction must lie strictly between 0 and 1, got {held_out_fraction!r}")
    data = read_beir(folder)
    if data.labels is None:
        raise FileNotFoundError(f"{data.path} has no labels.tsv (query-id, corpus-id, group): training needs the gold "
                                "perspective of each document")
    positive = checked_positive(data.labels["group"].astype(str), positive, data.path / "labels.tsv")

    with_field = [q for q, record in data.queries.items() if split_field in record]
    if with_field and len(with_field) < len(data.queries):
        lacking = next(q for q in data.queries if split_field not in data.queries[q])
        raise ValueError(f"{data.path / 'queries.jsonl'}: query {lacking!r} has no {split_field!r} field but "
                         f"{len(with_field)} others have one: give every query a split, or none (a seeded split)")
    if with_field:
        values = Counter(str(data.queries[q][split_field]) for q in data.queries)
        if train_split not in values:
            raise ValueError(f"{data.path / 'queries.jsonl'}: no query has {split_field} = {train_split!r}; its values "
                             f"are {', '.join(f'{v!r} ({n})' for v, n in sorted(values.items()))}: choose --train-split")
        if evaluation_split is not None and evaluation_split not in values:
            raise ValueError(f"{data.path / 'queries.jsonl'}: no query has {split_field} = {evaluation_split!r}; its "
                             f"values are {', '.join(repr(v) for v in sorted(values))}")
        train = [q for q in data.queries if str(data.queries[q][split_field]) == train_split]
        held = [q for q in data.queries if str(data.queries[q][split_field]) != train_split
                and (evaluation_split is None or str(data.queries[q][split_field]) == evaluation_split)]
        split: dict = {"by": "query field", "field": split_field, "train": train_split,
                 "evaluation": evaluation_split or f"every query not in {train_split!r}", "counts": dict(values)}
    else:
        if evaluation_split is not None:
            raise ValueError(f"{data.path / 'queries.jsonl'} has no {split_field!r} field, so there is no split "
                             f"{evaluation_split!r} to evaluate: leave out the evaluation split")
        ids = sorted(data.queries)
        held_set = set(random.Random(seed).sample(ids, max(1, round(held_out_fraction * len(ids)))))
        train = [q for q in data.queries if q not in held_set]
        held = [q for q in data.queries if q in held_set]
        split = {"by": "seeded random split of queries", "seed": seed, "held_out_fraction": held_out_fraction}
    train_set = set(train)

    pairs = data.labels[data.labels["query_id"].isin(train_set)]
    excluded: dict = {}
    dropped_claims: Counter = Counter()
    perspectives = pairs.groupby("query_id")["group"].agg(lambda column: set(column.astype(str)))
    usable = {q for q, names in perspectives.items() if len(names) == 2 and positive in names}
    unusable = len(perspectives) - len(usable)
    if unusable:
        dropped_claims[f"not exactly two perspectives, one of them {positive!r}"] = unusable
    pairs = pairs[pairs["query_id"].isin(usable)]
    rows = [(q, d, str(g)) for q, d, g in zip(pairs["query_id"], pairs["doc_id"], pairs["group"])]

    excluded_claims: set = set()
    for excluded_folder in exclude:
        queries, corpus = folder_texts(excluded_folder)
        name = str(Path(excluded_folder).expanduser())
        claims = {q for q in {r[0] for r in rows} if normalise_text(data.queries[q]["text"]) in queries}
        documents = {d for _, d, _ in rows if normalise_text(data.document_text(d, text)) in corpus}
        clusters = {(q, c) for q, d, _ in rows if d in documents for c in _clusters(data.corpus[d], q)}
        in_cluster = {(q, d) for q, d, _ in rows if d not in documents
                      and any((q, c) in clusters for c in _clusters(data.corpus[d], q))}
        kept = [r for r in rows if r[0] not in claims and r[1] not in documents and (r[0], r[1]) not in in_cluster]
        excluded[name] = {"claims whose text is a query there": len(claims),
                          "texts that occur in its corpus": len(documents),
                          "(claim, text) pairs those texts had": sum(1 for r in rows if r[1] in documents),
                          "clusters holding such a text": len(clusters),
                          "other (claim, text) pairs of those clusters": len(in_cluster),
                          "(claim, text) pairs removed in all": len(rows) - len(kept)}
        rows = kept
        excluded_claims |= claims

    stances: dict = {}
    for q, _, group in rows:
        stances.setdefault(q, Counter())[group == positive] += 1
    too_few = {q for q, counts in stances.items() if counts[True] < 2 or counts[False] < 2}
    too_few |= usable - set(stances) - excluded_claims  # every text excluded
    if too_few:
        dropped_claims["fewer than two texts of each stance"] = len(too_few)
    examples = [{"query_id": q, "text": data.document_text(d, text), "stance": int(g == positive)}
                for q, d, g in rows if q not in too_few]
    claims_kept = {e["query_id"] for e in examples}
    texts = {normalise_text(e["text"]) for e in examples}
    evaluated = data.labels[data.labels["query_id"].isin(set(held))]
    seen = sum(normalise_text(data.document_text(d, text)) in texts for d in evaluated["doc_id"])
    return PolarityTrainingSet(
        folder=data.path, text=text, positive=positive, split=split, train_queries=[q for q in train if q in claims_kept],
        evaluation_queries=held, examples=examples, excluded=excluded, dropped_claims=dict(dropped_claims),
        claim_texts={normalise_text(data.queries[q]["text"]) for q in claims_kept},
        texts=texts, evaluation_pairs_seen=seen)


def _clusters(record: dict, query_id: str) -> list:
    """The perspective clusters a corpus record belongs to for one claim (PERSPECTRUM's ``labels[].cluster_ids``)."""
    return [c for label in record.get("labels") or () if isinstance(label, dict) and str(label.get("query_id")) == query_id
            for c in label.get("cluster_ids") or ()]


def check_overlap(training: PolarityTrainingSet, folders: Sequence[Path]) -> None:
    """Refuse an evaluation folder that shares claims or texts with the training data."""
    for folder in folders:
        claims, texts = training.overlap(folder)
        if claims or texts:
            example = (claims or texts)[0]
            raise ValueError(f"--evaluate {folder}: {len(claims)} training claims are queries there and {len(texts)} "
                             f"training texts are in its corpus (e.g. {example!r}): evaluating there would measure "
                             f"what was trained on; pass --exclude {folder} too to drop them from training")


def with_extra(training: PolarityTrainingSet, extra: Optional["datasets.Dataset"]) -> list:
    """The training examples plus ``extra`` (a datasets.Dataset with :data:`EXAMPLE_COLUMNS`): texts of training
    claims, or of claims from elsewhere (ids that are not the folder's, e.g. ``wiki-balance-sample/12_1``), never of
    the folder's evaluation queries."""
    examples = list(training.examples)
    if extra is None:
        return examples
    missing = [c for c in EXAMPLE_COLUMNS if c not in extra.column_names]
    if missing:
        raise ValueError(f"extra_examples lacks the column(s) {', '.join(missing)}: it needs {', '.join(EXAMPLE_COLUMNS)}")
    rows = [{c: row[c] for c in EXAMPLE_COLUMNS} for row in extra]
    held_out = sorted({str(r["query_id"]) for r in rows} & set(training.evaluation_queries))
    if held_out:
        raise ValueError(f"extra_examples has {len(held_out)} query ids that are evaluation queries of "
                         f"{training.folder}, e.g. {held_out[0]!r}: training on them would measure what was trained on")
    wrong = next((r for r in rows if r["stance"] not in (0, 1) or not str(r["text"]).strip()), None)
    if wrong is not None:
        raise ValueError(f"extra_examples: every stance must be 0 or 1 and every text non-empty; first bad row: {wrong}")
    return examples + [{"query_id": str(r["query_id"]), "text": str(r["text"]), "stance": int(r["stance"])}
                       for r in rows]
