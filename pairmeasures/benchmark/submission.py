"""Submitting run files to a results folder: ``pairmeasures benchmark submit SUITE --name NAME --results DIR --run
TASK=FILE ...`` and :func:`submit` (docs/leaderboard.md, "Submit run files").

Every file is checked before anything is written: its task is one of the suite's and its data is here; the file
reads strictly (a line that does not read, a rank or score that is not a number, a document ranked twice for a
query: :func:`pairmeasures.io.runfiles.load_run_file`, naming the line); every query is a query of the task
and every document one of its documents (the first line naming another is the error). Then each run is cut to the
task's depth, evaluated with the task's pins (:func:`~pairmeasures.benchmark.taskrun.evaluate_run`) and written as a
record of kind ``submission`` with the run beside it (a resubmission of the same run changes nothing; another run
under the same name is an error unless ``replace``, the earlier record then kept beside the new one).
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Optional

from ..io.frames import pyterrier_frame
from .recordformat import read_record_file, record_folder_name, record_path, run_sha256, run_text
from .records import RecordConflictError, write_record
from .runner import RunSummary, finished

if TYPE_CHECKING:
    import pandas as pd

    from .suites import Suite

__all__ = ["RUN_SUFFIXES", "check_run_file", "runs_in_folder", "submit"]

#: The names a run file of a task may have in a ``--runs`` folder: ``<task id><suffix>`` (the id's ``/`` as folders).
RUN_SUFFIXES = (".run", ".trec", ".txt", ".tsv", ".run.gz", ".trec.gz", ".txt.gz", ".tsv.gz")


def runs_in_folder(folder: str | os.PathLike, suite: "Suite") -> dict:
    """``{task id: file}`` of the run files in ``folder``: ``<task id>.run`` (or ``.trec``, ``.txt``, ``.tsv``, each
    optionally gzipped), the task id's ``/`` as folders; a task with two such files is an error naming both."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise ValueError(f"--runs {str(folder)!r} is not a folder: name a folder of <task id>.run files")
    found = {}
    for task in suite.tasks:
        files = [root / f"{task.id}{suffix}" for suffix in RUN_SUFFIXES if (root / f"{task.id}{suffix}").is_file()]
        if len(files) > 1:
            raise ValueError(f"--runs {str(folder)!r}: two run files for task {task.id}: {files[0]} and {files[1]}; "
                             "keep one")
        if files:
            found[task.id] = files[0]
    if not found:
        raise ValueError(f"--runs {str(folder)!r} holds no run file of a task of {suite.name}: name them <task id>.run "
                         f"(e.g. {suite.tasks[0].id}.run)")
    return found


def _lines(path: Path):
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as stream:
        yield from enumerate(stream, start=1)


def _first_line(path: Path, column: int, values: set, header: bool) -> int:
    """The number of the first line of ``path`` whose field ``column`` (whitespace-separated; tab-separated after a
    header) is among ``values``."""
    for number, line in _lines(path):
        if header and number == 1:
            continue
        fields = line.rstrip("\n").split("\t") if header else line.split()
        if len(fields) > column and fields[column] in values:
            return number
    return 0


def _columns(path: Path) -> tuple[int, int, bool]:
    """The query and document fields of a run file: TREC (0 and 2), or a TSV's header positions."""
    for _, line in _lines(path):
        names = line.rstrip("\n").split("\t")
        query = next((names.index(k) for k in ("query_id", "qid", "query-id") if k in names), None)
        doc = next((names.index(k) for k in ("doc_id", "docno", "corpus-id") if k in names), None)
        return (query, doc, True) if query is not None and doc is not None else (0, 2, False)
    return 0, 2, False


def check_run_file(path: str | os.PathLike, opened, report: Callable[[str], None]) -> "pd.DataFrame":
    """The run file ``path`` read strictly and checked against the task ``opened``
    (:class:`~pairmeasures.benchmark.taskrun.TaskData`): ``qid, docno, score`` (and ``rank``) for
    :func:`~pairmeasures.benchmark.taskrun.cut_to_depth`. A problem is a ValueError naming the file and line."""
    from ..io.runfiles import examples, load_run_file

    file = Path(path).expanduser()
    run = load_run_file(str(file)).frame()
    task, profile = opened.task, opened.profile
    query_at, doc_at, header = _columns(file)
    run["query_id"] = run["query_id"].astype(str)
    run["doc_id"] = run["doc_id"].astype(str)
    unknown = set(run["query_id"]) - set(profile.queries)
    if unknown:
        line = _first_line(file, query_at, unknown, header)
        raise ValueError(f"{path}:{line}: query {_example(file, line, query_at, header)!r} is not "
                         f"a query of task {task.id} ({len(unknown)} such queries, e.g. {examples(unknown)}): submit "
                         "the task's queries only ('pairmeasures datasets export ID queries' lists them)")
    missing = set(profile.corpus.missing(run["doc_id"]))
    if missing:
        line = _first_line(file, doc_at, missing, header)
        raise ValueError(f"{path}:{line}: document {_example(file, line, doc_at, header)!r} is "
                         f"not a document of task {task.id} ({len(missing)} such documents, e.g. {examples(missing)}): "
                         "rank the task's documents only")
    lacking = set(profile.queries) - set(run["query_id"])
    if lacking:
        report(f"RUN file {str(path)!r} ranks nothing for {len(lacking)} of the {len(profile.queries)} queries of "
               f"{task.id} (e.g. {examples(lacking)}): no measure measures them")
    frame = pyterrier_frame(run)
    return frame[[c for c in ("qid", "docno", "score") if c in frame.columns]]  # ordered by score, as trec_eval


def _example(file: Path, line: int, column: int, header: bool) -> str:
    for number, text in _lines(file):
        if number == line:
            fields = text.rstrip("\n").split("\t") if header else text.split()
            return fields[column]
    return ""


def submit(suite: "str | os.PathLike | Suite", name: str, results: str | os.PathLike,
           runs: Mapping[str, str | os.PathLike], *, data: Optional[str | os.PathLike] = None, replace: bool = False,
           report: Optional[Callable[[str], None]] = None) -> RunSummary:
    """Check every run file of ``runs`` (task id -> file) against its task of ``suite``, then evaluate each and write
    it into ``results`` as the records of the submission ``name`` (the module docstring). ``data``: the datasets'
    mirror folder (default ``$PAIRMEASURES_DATA``); ``report``: where warnings and progress go (default stderr)."""
    import sys

    from .runner import as_suite
    from .suites import task_pins
    from .taskrun import cut_to_depth, data_advice, evaluate_run, make_record, open_task, request, run_frame

    def say(message: str) -> None:
        (report or (lambda m: print(f"benchmark submit: {m}", file=sys.stderr, flush=True)))(message)

    if not isinstance(name, str) or not name.strip():
        raise ValueError("--name must name the submission (e.g. the lab's system), not be empty")
    chosen = as_suite(suite)
    if not runs:
        raise ValueError("give at least one run file: --run TASK=FILE (or --runs FOLDER)")
    checked = []
    for task_id, path in runs.items():
        task = chosen.task(task_id)
        if not Path(path).expanduser().is_file():
            raise FileNotFoundError(f"RUN file {str(path)!r} (for task {task_id}) does not exist")
        here = task_pins(task, data)
        if not here.available:
            raise ValueError(f"task {task.id}: its data is not here, so {str(path)!r} cannot be checked: "
                             f"{data_advice(task, here)}")
        pins = here.pins()
        opened = open_task(task, data)
        frame = check_run_file(path, opened, say)
        text = run_text(cut_to_depth(frame, task.depth), tag=record_folder_name(name))
        asked = request(chosen, task, name, None, "submission", pins)
        target = record_path(results, name, task.id)
        done, why = finished(target, asked)
        if done:
            earlier, _, _ = read_record_file(target)
            done = earlier is not None and earlier["run_sha256"] == run_sha256(text)
            why = "" if done else f"a record of another run (run sha256 {earlier['run_sha256'][:12] if earlier else '?'}…)"
        if target.exists() and not replace and why not in ("", "same"):
            raise RecordConflictError(f"--results {str(results)!r} already holds {why} of {name!r} on {task.id}: "
                                      f"{target}; pass --replace to write the new one (the earlier one is kept beside "
                                      "it), or submit under another --name")
        checked.append((task, opened, pins, text, asked, done, target))
    summary = RunSummary()
    for task, opened, pins, text, asked, done, target in checked:
        if done:
            summary.records_skipped += 1
            say(f"task {task.id}: {name}'s record holds this run already: {target}")
            continue
        evaluated = evaluate_run(opened, run_frame(text))
        record = make_record(chosen, task, name, None, "submission", pins, evaluated, asked)
        summary.records.append(write_record(results, record, text, replace=replace))
        summary.records_written += 1
        say(f"task {task.id}: {name} evaluated on {sum(1 for v in evaluated.n.values() if v)} measures, record "
            f"{summary.records[-1]}")
    return summary

