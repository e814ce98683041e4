"""What the training commands share about sentence-transformers' trainer: the warm-up argument, and the checkpoint
folder beside the model (``MODEL.checkpoints/``), where the trainer's state lives while it trains, visible and
resumable (``--resume``), so that an interrupted training leaves nothing hidden."""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

__all__ = ["warmup_argument", "checkpoint_folder", "check_checkpoints", "last_checkpoint", "checkpoints_kept"]


def warmup_argument(ratio: float, transformers_version: Optional[str] = None) -> dict:
    """The trainer argument of a warm-up over ``ratio`` of the steps: Transformers 5 takes it as a float
    ``warmup_steps`` (and deprecates ``warmup_ratio``), Transformers 4 as ``warmup_ratio``. The version is the
    installed one unless given."""
    if transformers_version is None:
        import transformers

        transformers_version = transformers.__version__
    major = int(transformers_version.split(".")[0])
    return {"warmup_steps": ratio} if major >= 5 else {"warmup_ratio": ratio}


def checkpoint_folder(out: Path) -> Path:
    """``MODEL.checkpoints`` beside the model folder ``out``."""
    return out.with_name(out.name + ".checkpoints")


def last_checkpoint(checkpoints: Path) -> Optional[str]:
    """The latest ``checkpoint-N`` folder in ``checkpoints``, or None."""
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(checkpoints)) if checkpoints.is_dir() else None


def check_checkpoints(out: Path, *, force: bool, resume: bool, scratch: tuple[str, ...] = ()) -> Path:
    """The checkpoint folder of ``out`` (claimed with it), after refusing to overwrite what --force does not allow:
    --resume needs a checkpoint there; without it, checkpoints of an earlier run are removed only with --force.
    ``scratch`` names folders of the command's own that an interrupted run may have left there (removed)."""
    checkpoints = checkpoint_folder(out)
    for name in scratch:
        shutil.rmtree(checkpoints / name, ignore_errors=True)
    if resume:
        if last_checkpoint(checkpoints) is None:
            raise ValueError(f"--resume: no checkpoint in {checkpoints}; train with --checkpoint-every N first")
    elif checkpoints.exists() and any(checkpoints.iterdir()):
        if not force:
            raise ValueError(f"{checkpoints} holds checkpoints of an earlier run: pass --resume to continue it, or "
                             "--force to start over")
        shutil.rmtree(checkpoints)
    return checkpoints


@contextmanager
def checkpoints_kept(checkpoints: Path) -> Iterator[None]:
    """A Ctrl-C inside the block says where the training state is kept and how to continue."""
    try:
        yield
    except KeyboardInterrupt:
        latest = last_checkpoint(checkpoints)
        if latest is None:
            if checkpoints.is_dir() and not any(checkpoints.iterdir()):
                checkpoints.rmdir()  # the trainer made it, and saved nothing there
            raise
        raise KeyboardInterrupt(f"the training state is kept in {latest}: the same command with --resume continues "
                                "from it") from None
