"""Which file of a model folder is damaged: a sentence-transformers folder that fails to load names the file to
replace, not the library's "header too large" or "invalid load key" alone (:func:`model_load_problem`).

The weight files are opened as their libraries open them, their contents left unread: a ``*.safetensors`` file's
header and its length (``safetensors.safe_open``), a ``pytorch_model*.bin`` file with ``weights_only`` (memory-mapped
in torch's zip format; an older format is read). ``safetensors`` and ``torch`` are imported only when there is such a file to check.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Optional

__all__ = ["damaged_model_file", "model_load_problem"]

#: The weight files a model folder may hold, by how they are checked.
_SAFETENSORS, _TORCH = "*.safetensors", "pytorch_model*.bin"


def damaged_model_file(folder: str | os.PathLike) -> Optional[tuple[Path, str]]:
    """``(file, why)`` of the first weight file of the model folder ``folder`` (and its module folders) that cannot
    be opened, or None when every one opens (or there is none, or ``folder`` is not a folder)."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    for path in sorted(folder.rglob(_SAFETENSORS)):
        try:
            from safetensors import safe_open

            with safe_open(str(path), framework="numpy"):
                pass
        except Exception as exc:  # safetensors' SafetensorError, an OSError of a short read
            return path, _said(exc)
    for path in sorted(folder.rglob(_TORCH)):
        try:
            import torch

            torch.load(str(path), map_location="cpu", weights_only=True, mmap=zipfile.is_zipfile(path))
        except Exception as exc:  # pickle's UnpicklingError, a RuntimeError of a damaged archive, EOFError
            return path, _said(exc)
    return None


def _said(error: BaseException) -> str:
    """``Kind: message`` of ``error`` in one line; of torch's refusal to unpickle, the refusal alone (never its
    advice to load the file unsafely)."""
    text = " ".join(str(error).split())
    if "WeightsUnpickler error:" in text:
        text = text.split("WeightsUnpickler error:", 1)[1].split(" Check the documentation", 1)[0].strip()
    return f"{type(error).__name__}: {text}"


def model_load_problem(folder: str | os.PathLike, error: BaseException) -> str:
    """What to say after ``error`` where the model folder ``folder`` failed to load: the library's error, then the
    damaged weight file and what to do, or what a model folder must hold when no weight file is damaged."""
    said = _said(error)
    damaged = damaged_model_file(folder)
    if damaged is not None:
        path, why = damaged
        return (f"{said}; {path} is damaged or cut short ({why}): replace it, or the whole folder, with an intact "
                "copy of the model")
    return (f"{said}; check that it is a whole sentence-transformers model folder (modules.json, config.json, the "
            "tokenizer's files and the weights)")
