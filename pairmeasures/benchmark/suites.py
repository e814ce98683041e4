"""Benchmark suites: named, versioned TOML files of tasks, each a dataset with the sha256 of its files, the measures
with their parameters, the depth and the baseline (docs/leaderboard.md, "Suites").

:func:`load_suite` takes a built-in suite's name (``pair-bias-v1``, a file of ``benchmark/suites/``) or the path of a
user's TOML file; both are read the same way and checked before anything runs: unknown keys, missing fields,
measures that do not parse (``ir_measures.parse_measure``, pairmeasures' measures registered), dataset ids that do
not exist are each a :class:`SuiteError`, one line naming the file and the task. :func:`task_pins` hashes the
dataset files of a task found here, to compare with the suite's pins (what is missing is reported, not raised).
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

__all__ = ["BUILTIN", "MeasureFacts", "Suite", "SuiteError", "Task", "TaskPins", "builtin_suites", "load_suite",
           "measure_facts", "same_pins", "task_pins"]

#: The folder of the built-in suites (one ``NAME.toml`` each).
BUILTIN = Path(__file__).resolve().parent / "suites"

_SUITE_KEYS = {"name": True, "version": True, "baseline": True, "depth": True, "description": False}
_TASK_KEYS = {"id", "dataset", "folder", "measures", "depth", "baseline", "text", "description", "paper", "overview",
              "files", "ir_datasets"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
#: The files of a BEIR-layout folder a task reads (plain or ``.gz``), pinned when a folder task pins none.
_FOLDER_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "labels.tsv")


class SuiteError(ValueError):
    """A suite file that cannot be used: the message names the file, the task and what to change."""


@dataclass(frozen=True)
class MeasureFacts:
    """What a board needs to know of a measure string: ``measure`` (canonical), ``label`` (short, for headers),
    ``direction`` (``higher-better`` for relevance measures, else a key of ``pairmeasures.measures.DIRECTIONS``)
    and ``bias`` (a pairmeasures measure, else relevance)."""

    measure: str
    label: str
    direction: str
    bias: bool

    @property
    def arrow(self) -> str:
        """The direction's arrow: ↑ higher is better or fairer, ↓ lower is fairer, ↕ closer to 0 is fairer."""
        return {"higher-better": "↑", "higher-fairer": "↑", "lower-fairer": "↓", "signed": "↕"}.get(self.direction, "")


def measure_facts(text: str) -> MeasureFacts:
    """The :class:`MeasureFacts` of a measure string (a ValueError naming it when it does not parse)."""
    import ir_measures

    from ..measures import PairMeasure

    try:
        measure = ir_measures.parse_measure(text)
    except Exception as error:  # ir_measures raises NameError, ValueError, TypeError, AssertionError...
        raise ValueError(f"measure {text!r} does not parse ({type(error).__name__}: {error}); measures are written as "
                         "in ir_measures, e.g. 'nDCG@10' or \"RaB(terms='gender-specific')@10\"") from None
    canonical = str(measure)
    name = getattr(measure, "NAME", canonical.split("(")[0].split("@")[0])
    params = {k: v for k, v in dict(getattr(measure, "params", {}) or {}).items() if k != "cutoff"}
    cutoff = dict(getattr(measure, "params", {}) or {}).get("cutoff")
    label = canonical
    if params and len(canonical) > 18:
        label = f"{name}(…)" + (f"@{cutoff}" if cutoff is not None else "")
    if isinstance(measure, PairMeasure):
        return MeasureFacts(canonical, label, measure.direction(), True)
    return MeasureFacts(canonical, label, "higher-better", False)


@dataclass(frozen=True)
class Task:
    """One task of a suite: ``id`` (a dataset id, or a name of the user's for a folder), ``dataset`` (the dataset id,
    or the folder's absolute path when ``folder``), ``measures`` (canonical strings, in the suite's order),
    ``depth``, ``baseline``, ``files`` (the pins: relative file name -> sha256), ``ir_datasets`` (ir_datasets' own
    files it reads, under ``$IR_DATASETS_HOME``, checked by ir_datasets), ``overview`` (the measures the board's
    overview shows), ``text`` (the document field, None: the dataset's default), ``description``, ``paper``."""

    id: str
    dataset: str
    folder: bool
    measures: tuple[str, ...]
    depth: int
    baseline: str
    files: dict = field(default_factory=dict, hash=False, compare=True)
    ir_datasets: tuple[str, ...] = ()
    overview: tuple[str, ...] = ()
    text: Optional[str] = None
    description: str = ""
    paper: str = ""

    def pins(self) -> dict:
        """The suite's pins of this task: ``{"dataset_files", "measures", "depth"}`` (a record's ``pins``)."""
        return {"dataset_files": dict(sorted(self.files.items())), "measures": list(self.measures), "depth": self.depth}

    def facts(self) -> dict:
        """``{measure: MeasureFacts}`` in the task's order."""
        return {m: measure_facts(m) for m in self.measures}


@dataclass(frozen=True)
class Suite:
    """A suite: ``name``, ``version``, ``description``, ``baseline`` and ``depth`` (the defaults of its tasks),
    ``tasks`` in the file's order, ``source`` (the file) and ``builtin``."""

    name: str
    version: str
    description: str
    baseline: str
    depth: int
    tasks: tuple[Task, ...]
    source: Path
    builtin: bool = False

    def task(self, task_id: str) -> Task:
        """The task ``task_id``, or a ValueError naming the suite's tasks."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise ValueError(f"suite {self.name}: no task {task_id!r}; its tasks: {', '.join(t.id for t in self.tasks)}")

    @property
    def ref(self) -> dict:
        """What a record stores of its suite: ``{"name", "version"}``."""
        return {"name": self.name, "version": self.version}


def same_pins(a: Any, b: Any) -> bool:
    """Whether two pins (``{"dataset_files", "measures", "depth"}``) name the same data files, measures (in any
    order) and depth."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return False
    try:
        return (dict(a["dataset_files"]) == dict(b["dataset_files"]) and sorted(a["measures"]) == sorted(b["measures"])
                and int(a["depth"]) == int(b["depth"]))
    except (KeyError, TypeError, ValueError):
        return False


def builtin_suites() -> list[str]:
    """The names of the built-in suites."""
    return sorted(path.stem for path in BUILTIN.glob("*.toml"))


def load_suite(ref: str | os.PathLike, *, require_pins: bool = True) -> Suite:
    """The suite ``ref`` names: a built-in suite's name, or a TOML file. Every problem is a :class:`SuiteError` (one
    line: the file, the task, what to change). ``require_pins=False`` accepts tasks without ``[task.files]`` (to
    describe a suite being written: ``pairmeasures benchmark suites --describe`` prints its pins)."""
    text = str(ref)
    if text in builtin_suites():
        return _parse(BUILTIN / f"{text}.toml", builtin=True, require_pins=require_pins)
    path = Path(text).expanduser()
    if path.is_file():
        return _parse(path, builtin=False, require_pins=require_pins)
    if path.is_dir():
        raise SuiteError(f"suite {text!r} is a folder: name a suite's TOML file, or a built-in suite "
                         f"({', '.join(builtin_suites())})")
    if path.suffix == ".toml" or os.sep in text:
        raise FileNotFoundError(f"suite file {text!r} does not exist")
    raise SuiteError(f"no suite {text!r}: built-in suites are {', '.join(builtin_suites())}; or name a TOML file "
                     "(docs/leaderboard.md: the format)")


def _toml(path: Path) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise SuiteError(f"suite {path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except tomllib.TOMLDecodeError as error:
        raise SuiteError(f"suite {path}: not valid TOML: {error}") from None


def _parse(path: Path, *, builtin: bool, require_pins: bool) -> Suite:
    data = _toml(path)
    where = f"suite {path}"
    unknown = sorted(set(data) - {"suite", "task"})
    if unknown:
        raise SuiteError(f"{where}: unknown top-level key {unknown[0]!r}: a suite has a [suite] table and [[task]] "
                         "tables")
    head = data.get("suite")
    if not isinstance(head, dict):
        raise SuiteError(f"{where}: no [suite] table (name, version, baseline, depth, description)")
    _keys(head, _SUITE_KEYS, f"{where}: [suite]")
    name, version = _string(head, "name", f"{where}: [suite]"), head["version"]
    if not _NAME.match(name):
        raise SuiteError(f"{where}: [suite] name {name!r}: use letters, digits, '.', '_' and '-'")
    if isinstance(version, int) and not isinstance(version, bool):
        version = str(version)
    if not isinstance(version, str) or not version.strip():
        raise SuiteError(f"{where}: [suite] version must be a string, e.g. version = \"1\"")
    baseline = _string(head, "baseline", f"{where}: [suite]")
    depth = _depth(head["depth"], f"{where}: [suite]")
    tasks_data = data.get("task")
    if not isinstance(tasks_data, list) or not tasks_data:
        raise SuiteError(f"{where}: no [[task]] tables: a suite has at least one task")
    tasks: list[Task] = []
    for number, entry in enumerate(tasks_data, start=1):
        task = _task(entry, number, path, baseline, depth, require_pins)
        if any(t.id == task.id for t in tasks):
            raise SuiteError(f"{where}: task {task.id!r} appears twice: give each task its own id")
        tasks.append(task)
    return Suite(name, version, str(head.get("description", "")), baseline, depth, tuple(tasks), path, builtin)


def _keys(table: dict, known, where: str) -> None:
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise SuiteError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
    if isinstance(known, dict):
        absent = [key for key, required in known.items() if required and key not in table]
        if absent:
            raise SuiteError(f"{where}: missing {', '.join(repr(a) for a in absent)}")


def _string(table: dict, key: str, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SuiteError(f"{where}: {key!r} must be a non-empty string")
    return value


def _depth(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SuiteError(f"{where}: depth must be a whole number of at least 1, got {value!r}")
    return value


def _task(entry: Any, number: int, path: Path, baseline: str, depth: int, require_pins: bool) -> Task:
    if not isinstance(entry, dict):
        raise SuiteError(f"suite {path}: task #{number} is not a table")
    named = entry.get("id") or entry.get("dataset") or entry.get("folder")
    where = f"suite {path}: task {named!r}" if isinstance(named, str) else f"suite {path}: task #{number}"
    _keys(entry, _TASK_KEYS, where)
    if ("dataset" in entry and "folder" in entry) or not any(k in entry for k in ("id", "dataset", "folder")):
        raise SuiteError(f"{where}: give either dataset = \"ID\" (a pairmeasures dataset id; the task's id by default) "
                         "or folder = \"PATH\" (a BEIR-layout folder, relative to the suite file)")
    if "folder" not in entry:
        dataset = _dataset_id(_string(entry, "dataset" if "dataset" in entry else "id", where), where)
        folder, task_id = False, entry.get("id", dataset)
    else:
        folder_text = _string(entry, "folder", where)
        dataset = str((path.parent / Path(folder_text).expanduser()).absolute())
        folder, task_id = True, entry.get("id")
        if task_id is None:
            raise SuiteError(f"{where}: a folder task needs an id, e.g. id = \"my/task\"")
    if not isinstance(task_id, str) or not _TASK_ID.match(task_id) or task_id != task_id.strip():
        raise SuiteError(f"{where}: id {task_id!r} must be words of letters, digits, '.', '_' and '-' separated by "
                         "'/' (it names the records' files)")
    where = f"suite {path}: task {task_id!r}"
    measures = entry.get("measures")
    if not isinstance(measures, list) or not measures or not all(isinstance(m, str) for m in measures):
        raise SuiteError(f"{where}: 'measures' must be a list of measure strings, e.g. [\"nDCG@10\", \"Duo@10\"]")
    canonical = []
    for text in measures:
        try:
            facts = measure_facts(text)
        except ValueError as error:
            raise SuiteError(f"{where}: {error}") from None
        if facts.measure in canonical:
            raise SuiteError(f"{where}: measure {text!r} is listed twice")
        canonical.append(facts.measure)
    overview = _overview(entry.get("overview"), measures, canonical, where)
    files = entry.get("files", {})
    if not isinstance(files, dict):
        raise SuiteError(f"{where}: [task.files] must be a table of \"file\" = \"sha256\"")
    for name, digest in files.items():
        if not isinstance(digest, str) or not _SHA256.match(digest):
            raise SuiteError(f"{where}: [task.files] {name!r} = {digest!r} is not a sha256 (64 lower-case hex digits)")
        if name.startswith("/") or ".." in Path(name).parts:
            raise SuiteError(f"{where}: [task.files] {name!r}: name files relative to the dataset")
    if not files and require_pins:
        raise SuiteError(f"{where}: no [task.files]: pin the sha256 of each dataset file the task reads; "
                         f"'pairmeasures benchmark suites --describe {path}' prints them from the data here")
    irds = entry.get("ir_datasets", [])
    if not isinstance(irds, list) or not all(isinstance(f, str) and f for f in irds):
        raise SuiteError(f"{where}: 'ir_datasets' must be a list of files under $IR_DATASETS_HOME, e.g. "
                         "[\"msmarco-passage/collection.tsv\"]")
    for key in ("text", "description", "paper"):
        if key in entry and not isinstance(entry[key], str):
            raise SuiteError(f"{where}: {key!r} must be a string")
    task_baseline = _string(entry, "baseline", where) if "baseline" in entry else baseline
    return Task(task_id, dataset, folder, tuple(canonical), _depth(entry.get("depth", depth), where), task_baseline,
                dict(files), tuple(irds), overview, entry.get("text"), entry.get("description", ""),
                entry.get("paper", ""))


def _dataset_id(text: str, where: str) -> str:
    from ..datasets import DATASET_IDS

    name = text.removeprefix("irds:")
    if name not in DATASET_IDS:
        import difflib

        close = difflib.get_close_matches(name, DATASET_IDS, n=1, cutoff=0.6)
        raise SuiteError(f"{where}: no dataset {text!r}" + (f" (did you mean {close[0]!r}?)" if close else "") +
                         f"; known: {', '.join(DATASET_IDS)}; a BEIR-layout folder is given as folder = \"PATH\"")
    return name


def _overview(value: Any, written: list, canonical: list, where: str) -> tuple[str, ...]:
    """The overview's measures: those named (each one of the task's), else the first relevance and first bias one."""
    if value is None:
        facts = [measure_facts(m) for m in canonical]
        first = [next((f.measure for f in facts if f.bias == bias), None) for bias in (False, True)]
        return tuple(m for m in first if m is not None)
    if not isinstance(value, list) or not value or not all(isinstance(m, str) for m in value):
        raise SuiteError(f"{where}: 'overview' must be a list of some of the task's measures")
    chosen = []
    for text in value:
        try:
            measure = measure_facts(text).measure
        except ValueError as error:
            raise SuiteError(f"{where}: overview: {error}") from None
        if measure not in canonical:
            raise SuiteError(f"{where}: overview names {text!r}, which is not among the task's measures "
                             f"({', '.join(written)})")
        chosen.append(measure)
    return tuple(dict.fromkeys(chosen))


@dataclass(frozen=True)
class TaskPins:
    """The current state of a task's data here: ``files`` (name -> sha256 of each pinned file found here; every file
    the dataset reads when the task pins none), ``missing`` (pinned files not here), ``ir_datasets_missing``,
    ``problem`` (why the data could not be looked at, e.g. an incomplete mirror folder; "" when none)."""

    task: Task
    files: dict
    missing: tuple[str, ...] = ()
    ir_datasets_missing: tuple[str, ...] = ()
    problem: str = ""

    @property
    def available(self) -> bool:
        """Whether every file the task reads is here."""
        return not (self.missing or self.ir_datasets_missing or self.problem)

    def differing(self) -> list[str]:
        """The pinned files found here with another sha256."""
        return [name for name, digest in self.task.files.items() if name in self.files and self.files[name] != digest]

    @property
    def matches(self) -> bool:
        """Whether the data here is the data the suite pins (every file here, each with its pinned sha256)."""
        return self.available and bool(self.task.files) and self.files == self.task.files

    def pins(self) -> dict:
        """The pins of a record made from the data here (compare with :meth:`Task.pins`)."""
        return {"dataset_files": dict(sorted(self.files.items())), "measures": list(self.task.measures),
                "depth": self.task.depth}


def task_pins(task: Task, data: Optional[str | os.PathLike] = None) -> TaskPins:
    """The sha256 of ``task``'s dataset files found here (``data``: a mirror folder, default ``$PAIRMEASURES_DATA``,
    then the download cache; nothing is downloaded), with what is missing named, never raised."""
    from ..io.memo import sha256_file

    if task.folder:
        root = Path(task.dataset)
        names = list(task.files) or [n for n in _FOLDER_FILES if (root / n).is_file() or (root / f"{n}.gz").is_file()]
        here: dict = {}
        for name in names:
            plain, packed = root / name, root / f"{name}.gz"
            here[name if plain.is_file() or not packed.is_file() else f"{name}.gz"] = \
                plain if plain.is_file() else packed if packed.is_file() else None
        problem = "" if root.is_dir() else f"the folder {root} does not exist"
    else:
        from ..datasets import DatasetError, local_files

        try:
            here, problem = local_files(task.dataset, data), ""
        except DatasetError as error:
            here, problem = {}, str(error).splitlines()[0]
        if task.files:
            here = {name: _pinned_here(name, here) for name in task.files}
    found = {name: sha256_file(path) for name, path in here.items() if path is not None}
    missing = tuple(name for name, path in here.items() if path is None)
    return TaskPins(task, found, missing, tuple(_irds_missing(task)), problem)


def _pinned_here(name: str, here: dict) -> Optional[Path]:
    """Where the pinned file ``name`` is here (its ``.gz`` copy counts as that file, and then differs)."""
    return here.get(name) or here.get(f"{name}.gz")


def _irds_missing(task: Task) -> list[str]:
    from ..datasets import ir_datasets_home

    home = ir_datasets_home()
    return [name for name in task.ir_datasets if not (home / name).is_file()]
