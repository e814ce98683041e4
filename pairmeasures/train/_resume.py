"""``--resume`` of the training commands (train-polarity, train-ibbr), checked against what the checkpoints hold.

The trainer saves checkpoints into ``MODEL.checkpoints/checkpoint-N``. Once it has written one, :func:`callbacks`
adds the record :data:`RECORD` to it (last, through a temporary file and a rename): the command and the run it
belongs to (a random id that a resumed run keeps), the base model, the training data (count and sha256 of the
examples in order; a base or data folder written relative to the checkpoint, absolute with ``--absolute-paths``,
and compared as the absolute path it names), the recipe (the options that must not change on resume), the length the run was started with
(its options and steps in all), the library versions, and the size and sha256 of every file of the checkpoint.
``--resume`` then:

1. continues from the newest *intact* checkpoint (:func:`resume_point`): one without a record (the run stopped while
   it was saved, or an older pairmeasures saved it) or whose files differ from it (truncated, overwritten, missing)
   is named in a :class:`ResumeWarning` and the one before it is taken; when none is intact it is an error naming
   each and what is wrong. A checkpoint that still fails to load is an error naming it (never torch's advice to
   load it unsafely);
2. refuses a checkpoint of another training (:func:`check_same_training`): another command, ``--base``, other data
   or another recipe, naming both values;
3. may change the length (``--epochs``, ``--max-steps``), not below the checkpoint's step: the learning-rate
   schedule is then the new length's from the checkpoint's step on (warm-up and decay recomputed), with a warning;
4. may replace the model folder that the same training wrote (same run id) without ``--force``
   (:func:`replaces_model`); another model of the command only with it.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Optional

from .._atomic import FolderOutput, check_replaceable, write_atomically
from ..analysis.manifest import PathRecord

__all__ = ["RECORD", "ResumeWarning", "ResumeError", "Training", "Resume", "fingerprint", "base_name",
           "resume_point", "check_same_training", "recorded_training", "replaces_model", "model_run", "newest_recorded",
           "callbacks", "checkpoint_loading"]

#: The record of a checkpoint, inside ``checkpoint-N/``.
RECORD = "pairmeasures-checkpoint.json"
_FORMAT = "pairmeasures-checkpoint"
_CHECKPOINT = re.compile(r"^checkpoint-([0-9]+)$")
_AGAIN = "start over with --force instead of --resume (it discards these checkpoints)"


class ResumeWarning(UserWarning):
    """What a ``--resume`` does that its user must know: a damaged checkpoint passed over, a changed length."""


class ResumeError(ValueError):
    """A ``--resume`` refused once the trainer runs (not a failure to load the checkpoint)."""


def fingerprint(rows: Iterable[Any]) -> str:
    """sha256 of ``rows`` in order, each as one line of sorted-key JSON."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8") + b"\n")
    return digest.hexdigest()


def base_name(base: Optional[str], default: str) -> str:
    """``--base`` as a checkpoint compares it: a local folder by its absolute path (so that ``./m`` and ``../x/m``
    compare equal), a model name as given, ``default`` when none was given. (The record writes a folder relative
    to the checkpoint, :meth:`Training.as_record`, and :func:`check_same_training` reads it back to this form.)"""
    if not base:
        return default
    path = Path(base).expanduser()
    return str(path.resolve()) if path.exists() else str(base)


@dataclass(frozen=True)
class Training:
    """What a training is, for its checkpoints: ``command`` (``"train-polarity"``), ``base`` (:func:`base_name`),
    ``data`` (``source``, ``examples``, ``sha256`` of the examples), ``recipe`` (option → value: must be the same to
    resume), ``length`` (option → value: ``--epochs`` and ``--max-steps``, which may change), whether ``--base`` was
    given (``base_given``), and, for messages, the command's options that choose the data (``data_options``)."""

    command: str
    base: str
    data: Mapping[str, Any]
    recipe: Mapping[str, Any]
    length: Mapping[str, Any]
    base_given: bool = True
    data_options: str = "the data options"

    def as_record(self, paths: Optional[PathRecord] = None) -> dict:
        """The record of the training; ``paths``: how it writes the base and the data source where they are folders
        (absolute here, :func:`base_name`): relative to the checkpoint, say; ``base_folder`` and ``source_folder``
        say that they are, for :func:`recorded_training` to read them back."""
        data = dict(self.data)
        record = {"command": self.command, "base": self.base, "base_given": self.base_given, "data": data,
                  "recipe": dict(self.recipe), "length": dict(self.length)}
        if paths is not None:
            if _is_folder(self.base):
                record.update(base=paths(self.base), base_folder=True)
            if _is_folder(data.get("source")):
                data.update(source=paths(data["source"]), source_folder=True)
        return record


def _is_folder(value: Any) -> bool:
    """Whether a base or data source of a :class:`Training` is a folder of this machine (:func:`base_name` gives
    those as absolute paths; a model name or dataset id never is one)."""
    return isinstance(value, str) and Path(value).is_absolute()


def recorded_training(record: Mapping[str, Any], checkpoint: Path) -> dict:
    """The ``training`` of a checkpoint's record with its folders (written relative to ``checkpoint``, or absolute
    with ``--absolute-paths`` or by an earlier pairmeasures) as absolute paths of this machine, as
    :class:`Training` holds them: what :func:`check_same_training` compares."""
    saved = dict(record.get("training") or {})
    paths = PathRecord(checkpoint)
    if saved.get("base_folder") and isinstance(saved.get("base"), str):
        saved["base"] = str(paths.locate(saved["base"]))
    data = dict(saved.get("data") or {})
    if data.get("source_folder") and isinstance(data.get("source"), str):
        data["source"] = str(paths.locate(data["source"]))
    saved["data"] = data
    return saved


@dataclass(frozen=True)
class Resume:
    """The checkpoint a ``--resume`` continues from: its folder, step, run id and record."""

    checkpoint: Path
    step: int
    run: str
    record: dict


def _checkpoints(folder: Path) -> list:
    """``(step, path)`` of the ``checkpoint-N`` folders in ``folder``, newest first."""
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), entry) for entry in folder.iterdir()
             if (m := _CHECKPOINT.match(entry.name)) and entry.is_dir() and not entry.is_symlink()]
    return sorted(found, reverse=True)


def _read_record(checkpoint: Path) -> Optional[dict]:
    try:
        record = json.loads((checkpoint / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != _FORMAT or not isinstance(record.get("files"), dict) \
            or not isinstance(record.get("training"), dict) or not isinstance(record.get("run"), str):
        return None
    return record


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _damage(checkpoint: Path) -> tuple[Optional[str], Optional[dict]]:
    """What is wrong with ``checkpoint`` (None when it is whole, as saved) and its record."""
    if not (checkpoint / RECORD).exists():
        return (f"it has no {RECORD}: the run stopped while saving it, or a pairmeasures without checkpoint records "
                "saved it"), None
    record = _read_record(checkpoint)
    if record is None:
        return f"its {RECORD} is damaged", None
    for name, saved in sorted(record["files"].items()):
        path = checkpoint / name
        try:
            size = path.stat().st_size if path.is_file() and not path.is_symlink() else None
            if size is None:
                return f"{name} is missing", record
            if size != saved["bytes"]:
                return f"{name} has {size:,} bytes where {saved['bytes']:,} were saved (truncated or overwritten)", record
            if _sha256(path) != saved["sha256"]:
                return f"{name} differs from what was saved (sha256; overwritten or damaged)", record
        except (OSError, KeyError, TypeError) as error:
            return f"{name} cannot be checked ({error})", record
    return None, record


def resume_point(checkpoints: Path, command: str, *, max_steps: Optional[int] = None) -> Resume:
    """The newest intact checkpoint in ``checkpoints`` (see the module's step 1), after a :class:`ResumeWarning`
    naming each newer damaged one; a ValueError when there is none, it was saved by another command, or it has
    trained more steps than ``max_steps``."""
    found = _checkpoints(checkpoints)
    if not found:
        raise ValueError(f"--resume: no checkpoint in {checkpoints}; train with --checkpoint-every N first")
    damaged = []
    for step, path in found:
        problem, record = _damage(path)
        if problem is not None:
            damaged.append(f"{path} is damaged: {problem}")
            continue
        assert record is not None
        if record["training"].get("command") != command:
            raise ValueError(f"--resume: {path} was saved by pairmeasures {record['training'].get('command')}, not "
                             f"{command}: choose another --out, or {_AGAIN}")
        if max_steps is not None and max_steps < step:
            raise ValueError(f"--resume: {path} has trained {step} steps, more than --max-steps {max_steps}: give at "
                             f"least --max-steps {step}")
        if damaged:
            warnings.warn(ResumeWarning(f"{'; '.join(damaged)}; continuing from {path.name}, the newest intact "
                                        "checkpoint"), stacklevel=2)
        return Resume(path, step, record["run"], record)
    raise ValueError(f"--resume: no intact checkpoint in {checkpoints}: {'; '.join(damaged)}; {_AGAIN}")


def _shown(option: str, value: Any) -> str:
    if isinstance(value, bool):
        return f"{option} {'on' if value else 'off'}"
    return f"{option} {'(not recorded)' if value is None else value}"


def check_same_training(resume: Resume, training: Training) -> None:
    """Refuse (ValueError naming both values) to continue ``resume``'s checkpoint with another base, other data or
    another recipe than ``training``'s."""
    saved = recorded_training(resume.record, resume.checkpoint)
    where = f"--resume: {resume.checkpoint}"
    if saved.get("base") != training.base:
        def base(record: Mapping, given: bool) -> str:
            return f"--base {record.get('base')}" if given else f"no --base (the default, {record.get('base')})"

        then = base(saved, saved.get("base_given", True))
        raise ValueError(f"{where} was trained from {then}, this command gives {base(training.as_record(), training.base_given)}: "
                         f"{'give ' + then if saved.get('base_given', True) else 'leave out --base'} to continue it, "
                         f"or {_AGAIN}")
    data = saved.get("data") or {}
    if data.get("sha256") != training.data["sha256"]:
        def described(d: Mapping) -> str:
            return f"{d.get('examples')} examples of {d.get('source')} (sha256 {str(d.get('sha256'))[:12]})"

        raise ValueError(f"{where} was trained on other data: {described(data)}; this command's data are "
                         f"{described(training.data)}: give the data and {training.data_options} it was trained "
                         f"with, or {_AGAIN}")
    recipe = json.loads(json.dumps(dict(training.recipe), default=str))
    before = saved.get("recipe") or {}
    differ = [f"{_shown(option, before.get(option))} (this command: {_shown(option, recipe.get(option))})"
              for option in sorted(set(before) | set(recipe)) if before.get(option) != recipe.get(option)]
    if differ:
        raise ValueError(f"{where} was trained with {', '.join(differ)}: give the checkpoint's values to continue it, "
                         f"or {_AGAIN}")


def model_run(out: Path, training_file: str) -> Optional[str]:
    """The run id in the model folder ``out``'s ``training_file`` (None: none there)."""
    try:
        record = json.loads((out / training_file).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    run = record.get("run") if isinstance(record, dict) else None
    return run if isinstance(run, str) else None


def newest_recorded(checkpoints: Path) -> Optional[Path]:
    """The newest checkpoint in ``checkpoints`` that holds a record (its files are not checked), or None."""
    return next((path for _, path in _checkpoints(checkpoints) if _read_record(path) is not None), None)


def replaces_model(out: Path, kind: FolderOutput, checkpoints: Path, training_file: str, *, resume: bool,
                   force: bool) -> bool:
    """Whether the command may replace an existing ``out``: with ``force``, or on ``resume`` when ``out`` is the model
    of the very training whose checkpoints it continues (same run id). Another model of ``kind``'s command is refused
    with a ValueError saying that ``--force`` replaces it; anything else is left to :func:`output_folder`."""
    if force or not resume or out.is_symlink() or not out.is_dir():
        return force
    recorded = newest_recorded(checkpoints)
    newest = (_read_record(recorded) or {}).get("run") if recorded is not None else None
    if newest is not None and model_run(out, training_file) == newest:
        return True
    try:
        check_replaceable(out, kind, force=True)
    except ValueError:
        return False  # not a model of this command: output_folder says so
    raise ValueError(f"--out {out} holds the model of another training than the checkpoints in {checkpoints} that "
                     "--resume continues: pass --force to replace it with the resumed training's model, or choose "
                     "another --out")


def callbacks(training: Training, run: str, checkpoints: Path, resume: Optional[Resume], *,
              absolute_paths: bool = False) -> list:
    """The trainer callbacks of a training with checkpoints: the record of each checkpoint saved (add them after
    every callback that writes into a checkpoint; its folders relative to the checkpoint, absolute with
    ``absolute_paths``), and on ``resume`` the length check (an error below the
    checkpoint's step; a changed length warns and puts the learning rate on the new length's schedule from the
    checkpoint's step on). Their ``loading`` is true until the first step begins (:func:`checkpoint_loading`)."""
    import torch
    import transformers
    from transformers import TrainerCallback

    class Record(TrainerCallback):
        def __init__(self) -> None:
            self.loading = resume is not None

        def on_save(self, args, state, control, **kwargs):
            folder = checkpoints / f"checkpoint-{state.global_step}"
            if not folder.is_dir():
                return
            files = {str(path.relative_to(folder)): {"bytes": path.stat().st_size, "sha256": _sha256(path)}
                     for path in sorted(folder.rglob("*"))
                     if path.is_file() and not path.is_symlink() and path.name != RECORD
                     and not path.name.startswith(f".{RECORD}.")}
            record = {"format": _FORMAT, "version": 1, "written_by": f"pairmeasures {training.command}", "run": run,
                      "step": state.global_step, "steps": state.max_steps,
                      "training": training.as_record(PathRecord(folder, absolute_paths)),
                      "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                                   "python": sys.version.split()[0]},
                      "files": files}
            write_atomically(folder / RECORD, json.dumps(record, indent=2, default=str) + "\n")

        def on_train_begin(self, args, state, control, optimizer=None, lr_scheduler=None, **kwargs):
            if resume is None:
                return
            steps = resume.record.get("steps")
            if state.max_steps < state.global_step:
                raise ResumeError(f"--resume: {resume.checkpoint} has trained {state.global_step} steps, more than "
                                 f"the {state.max_steps} of this command's --epochs/--max-steps: give at least "
                                 f"--max-steps {state.global_step}")
            if steps is None or steps == state.max_steps:
                return
            rates = _restart_schedule(optimizer, lr_scheduler)
            then = ", ".join(f"{o} {v}" for o, v in (resume.record["training"].get("length") or {}).items()
                             if v is not None)
            warnings.warn(ResumeWarning(
                f"--resume: {resume.checkpoint.name} is step {state.global_step} of a {steps}-step run ({then}); this "
                f"command runs {state.max_steps} steps, so from there on the learning rate follows a "
                f"{state.max_steps}-step run's linear schedule"
                + (f" ({rates[0]:.3g} at step {state.global_step + 1})" if rates else "") +
                f", and the model is neither the {steps}-step nor the {state.max_steps}-step run's; resume with "
                f"{then or 'the length it was started with'} to finish the run as it started"), stacklevel=2)

        def on_step_begin(self, args, state, control, **kwargs):
            self.loading = False

    return [Record()]


def _restart_schedule(optimizer: Any, scheduler: Any) -> list:
    """Put each parameter group's learning rate where ``scheduler`` (a LambdaLR, as the linear schedule is) puts it at
    its restored step. The optimizer state restored from a checkpoint holds the old schedule's rate, which the
    trainer would otherwise use for one step (0 when that schedule had ended there). Returns the rates set."""
    if optimizer is None or scheduler is None or not hasattr(scheduler, "lr_lambdas"):
        return []
    rates = [base * function(scheduler.last_epoch) for base, function in zip(scheduler.base_lrs, scheduler.lr_lambdas)]
    for group, rate in zip(optimizer.param_groups, rates):
        group["lr"] = rate
    scheduler._last_lr = list(rates)  # what get_last_lr() gives, and the trainer logs as the step's rate
    return rates


@contextmanager
def checkpoint_loading(resume: Optional[Resume], recorders: list) -> Iterator[None]:
    """Around the trainer's ``train``: an exception before its first step of a resumed run is the checkpoint's
    loading failing, although its files are as saved (e.g. another transformers version): a ValueError naming the
    checkpoint and the earlier ones, never the library's advice to load it unsafely."""
    import transformers

    verbosity = transformers.logging.get_verbosity()
    if resume is not None:  # the trainer's own comparison of its arguments: what matters is checked here
        transformers.logging.set_verbosity_error()
    try:
        yield
    except ResumeError:
        raise
    except Exception as error:
        if resume is None or not any(getattr(callback, "loading", False) for callback in recorders):
            raise
        saved = (resume.record.get("versions") or {}).get("transformers")
        earlier = [path.name for step, path in _checkpoints(resume.checkpoint.parent) if step < resume.step]
        folder = resume.checkpoint.parent
        instead = (f"move {resume.checkpoint.name} out of {folder} (anything else in it is refused) to continue from "
                   f"{earlier[0]}, or {_AGAIN}" if earlier else _AGAIN)
        raise ValueError(f"--resume: {resume.checkpoint} could not be loaded ({type(error).__name__}), although its "
                         f"files are as saved (saved with transformers {saved}, this is {transformers.__version__}): "
                         f"{instead}") from error
    finally:
        transformers.logging.set_verbosity(verbosity)
