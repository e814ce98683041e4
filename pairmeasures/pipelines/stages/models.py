"""What the stages that read a model folder (``dense(PATH)``, ``ce(PATH)``) share: the folder's check and its
identity for the run cache (a fingerprint of its files, so a model retrained into the same folder runs again)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from .registry import SpecError, Stage

__all__ = ["model_folder", "check_model_folder", "model_identity"]


def model_folder(stage: Stage) -> Optional[str]:
    """The model folder a stage names (its first argument), or None where it names none."""
    return str(Path(str(stage.args[0])).expanduser()) if stage.args else None


def check_model_folder(stage: Stage, what: str, advice: str) -> None:
    """A :class:`SpecError` unless the stage's model folder exists (a stage naming none passes)."""
    folder = model_folder(stage)
    if folder is not None and not Path(folder).is_dir():
        raise SpecError(f"stage {stage.text!r}: {what} {str(stage.args[0])!r} does not exist; {advice}")


def model_identity(stage: Stage) -> str:
    """The stage's canonical text, its model folder replaced by a fingerprint of the folder's files."""
    from ...compute.embed import folder_fingerprint

    folder = model_folder(stage)
    if folder is None:
        return stage.canonical()
    return f"{stage.name}({folder_fingerprint(Path(folder)) if Path(folder).is_dir() else folder})"
