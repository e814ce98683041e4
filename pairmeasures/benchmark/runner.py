"""Running systems across a suite into a results folder: ``pairmeasures benchmark run`` and
``pm.benchmark.run(suite, {"name": transformer_or_spec}, results=DIR)`` (docs/leaderboard.md, "Run my system").

Everything is decided before anything runs: the suite and tasks, every system spec parsed and checked, each task's
data looked at (a task whose files are not here is skipped with one line naming what is missing and how to get
it; nothing is downloaded), and for every (system, task) whether its record is finished. A finished record (valid,
made from the same :func:`~pairmeasures.benchmark.taskrun.request`, its stored run intact) is skipped without
opening the dataset, building the system or embedding anything; a record made from another request (or a damaged
one) is an error naming it, before any work, unless ``replace`` (the earlier record is then kept beside the new
one: nothing in a results folder is deleted). Then each task is opened once, each system run to the task's depth
and evaluated (:func:`~pairmeasures.benchmark.taskrun.evaluate_run`), and its record and run written under the
folder's lock (:func:`~pairmeasures.benchmark.records.write_record`), one line on stderr as each task starts and
ends, and a bar over the (system, task) pairs on a terminal.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence

from .recordformat import read_record_file, record_folder_name, record_path, run_path, run_text, stored_run_sha256
from .records import RecordConflictError, write_record

if TYPE_CHECKING:
    from .suites import Suite

__all__ = ["RunSummary", "as_suite", "finished", "run", "select_tasks"]


@dataclass
class RunSummary:
    """What :func:`run` (or :func:`~pairmeasures.benchmark.submission.submit`) did: ``records_written``,
    ``records_skipped`` (finished before), ``tasks_skipped`` (task ids whose data is not here) with ``why`` (task id
    -> what is missing and how to get it), and the ``records`` written (paths)."""

    records_written: int = 0
    records_skipped: int = 0
    tasks_skipped: list = field(default_factory=list)
    why: dict = field(default_factory=dict)
    records: list = field(default_factory=list)

    def as_json(self) -> dict:
        """``{"records_written", "records_skipped", "tasks_skipped"}``: what ``--json`` prints."""
        return {"records_written": self.records_written, "records_skipped": self.records_skipped,
                "tasks_skipped": list(self.tasks_skipped)}


def _stderr(message: str) -> None:
    print(f"benchmark run: {message}", file=sys.stderr, flush=True)


def select_tasks(suite: "Suite", tasks: Optional[Sequence[str]]) -> list:
    """The suite's tasks named by ``tasks`` (each a task id of the suite; all when None), in the suite's order."""
    if not tasks:
        return list(suite.tasks)
    chosen = [suite.task(task_id).id for task_id in dict.fromkeys(tasks)]  # a ValueError names the suite's tasks
    return [task for task in suite.tasks if task.id in chosen]


def finished(target: Path, asked: dict) -> tuple[bool, str]:
    """Whether the record at ``target`` is finished for the request ``asked`` (valid, the same request, its stored
    run hashing to its ``run_sha256``), and else why not ("" when there is no record: nothing conflicts)."""
    if not target.exists():
        return False, ""
    record, _, reason = read_record_file(target)
    if record is None:
        return False, f"a damaged record ({reason})"
    if record["request"] != asked:
        differ = sorted(k for k in set(asked) | set(record["request"]) if record["request"].get(k) != asked.get(k))
        return False, f"a record made from another request (its {', '.join(differ)} differ)"
    if stored_run_sha256(run_path(target)) != record["run_sha256"]:
        return False, "same"  # its run is missing or damaged: made again, the same record rewrites the run only
    return True, ""


def as_suite(suite: "str | os.PathLike | Suite") -> "Suite":
    """``suite`` as a :class:`Suite`: a built-in suite's name or a TOML file loaded, a :class:`Suite` as it is."""
    from .suites import Suite, load_suite

    return suite if isinstance(suite, Suite) else load_suite(suite)


def _systems(systems: "Mapping[str, Any] | Sequence[str]") -> dict:
    """name -> (canonical spec or None, a parsed System or a transformer)."""
    from ..pipelines.specs import System

    named = dict(systems) if isinstance(systems, Mapping) else {str(s): str(s) for s in systems}
    if not named:
        raise ValueError("name at least one system: a spec such as bm25 or bm25>>dense, or a PyTerrier transformer")
    parsed: dict[str, tuple[Optional[str], Any]] = {}
    for name, system in named.items():
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"a system's name must be a non-empty text, got {name!r}")
        if isinstance(system, (str, System)):
            system = System.parse(system)
            system.check()  # run files readable, model folders present: before anything runs
            parsed[name] = (system.canonical, system)
        elif hasattr(system, "transform"):
            parsed[name] = (None, system)
        else:
            raise ValueError(f"system {name!r}: give a spec (a text such as 'bm25>>dense') or a PyTerrier transformer, "
                             f"not a {type(system).__name__}")
    return parsed


def run(suite: "str | os.PathLike | Suite", systems: "Mapping[str, Any] | Sequence[str]",
        results: str | os.PathLike, *, tasks: Optional[Sequence[str]] = None, data: Optional[str | os.PathLike] = None,
        engine: str = "local", address: Optional[str] = None, workers: Optional[int] = None, replace: bool = False,
        report: Optional[Callable[[str], None]] = None) -> RunSummary:
    """Run ``systems`` (name -> a system spec such as ``"bm25>>dense"`` or any PyTerrier transformer; or a list of
    specs, each its own name) on the tasks of ``suite`` (a built-in name, a TOML file or a :class:`Suite`;
    ``tasks``: some of its task ids) and write one record per (system, task) into the results folder ``results``
    (the module docstring). ``data``: the mirror folder of the datasets (default ``$PAIRMEASURES_DATA``);
    ``engine``: ``local`` or ``ray`` (the model work through the Ray pool: a private local one, or the cluster at
    ``address``, with ``workers`` model actors), its options checked before anything else; ``replace``: make again
    a record made from another request (the earlier one kept); ``report``: where the progress lines go (default:
    stderr)."""
    from ..audit.engine import compute_on
    from ..compute.engines import check_engine_options
    from ..pipelines.specs import System

    check_engine_options(engine, address=address, workers=workers)
    from .suites import task_pins
    from .taskrun import data_advice, request

    say = report or _stderr
    chosen_suite = as_suite(suite)
    chosen = select_tasks(chosen_suite, tasks)
    parsed = _systems(systems)
    summary = RunSummary()
    plan = []
    for task in chosen:
        here = task_pins(task, data)
        if not here.available:
            summary.tasks_skipped.append(task.id)
            summary.why[task.id] = data_advice(task, here)
            say(f"skipped task {task.id}: its data is not here: {summary.why[task.id]}")
            continue
        if here.differing():
            say(f"task {task.id}: {', '.join(here.differing())} here differ from the suite's pins: its records carry "
                "the pins of the data here and the board shows them apart")
        pins = here.pins()
        todo = []
        for name, (spec, system) in parsed.items():
            identity = system.identity() if isinstance(system, System) else None
            asked = request(chosen_suite, task, name, spec, "system", pins, identity)
            target = record_path(results, name, task.id)
            done, why = finished(target, asked)
            if done:
                summary.records_skipped += 1
            elif why and why != "same" and not replace:
                raise RecordConflictError(
                    f"--results {str(results)!r} already holds {why} of {name!r} on {task.id}: {target}; pass "
                    "--replace (replace=True) to make it again (the earlier one is kept beside it as "
                    f"{target.name.removesuffix('.json')}.replaced-<time>.json), or name another results folder")
            else:
                todo.append((name, spec, system, asked))
        plan.append((task, pins, todo))
    pairs = sum(len(todo) for _, _, todo in plan)
    if summary.records_skipped:
        say(f"{summary.records_skipped} records finished before: skipped (nothing run for them)")
    if pairs == 0:
        return summary
    from ..io.progress import is_terminal, progress_bar

    bar = progress_bar(total=pairs, desc="benchmark run", unit="record", show=None if is_terminal() else False)
    try:
        with compute_on(engine, address, workers) as pool:
            for number, (task, pins, todo) in enumerate([p for p in plan if p[2]], start=1):
                count = sum(1 for p in plan if p[2])
                say(f"[{number}/{count}] task {task.id}: running {len(todo)} systems ({', '.join(n for n, *_ in todo)})")
                written = _run_task(chosen_suite, task, pins, todo, results, data, pool, replace, bar)
                summary.records_written += len(written)
                summary.records += written
                say(f"[{number}/{count}] task {task.id}: done, {len(written)} records written")
    finally:
        bar.close()
    return summary


def _run_task(suite, task, pins, todo, results, data, pool, replace, bar) -> list:
    """Open ``task`` once, run and evaluate each system of ``todo``, write its record; the paths written."""
    import pandas as pd

    from ..pipelines.specs import System, SystemContext
    from .taskrun import cut_to_depth, evaluate_run, make_record, open_task, run_frame

    opened = open_task(task, data)
    profile = opened.profile
    reads = any(isinstance(system, System) and system.reads_polarity for _, _, system, _ in todo)
    context = SystemContext(source=profile.corpus, data=data, text=profile.text, num_results=task.depth,
                            polarity_model=opened.polarity_model() if reads else None, engine=pool)
    topics = pd.DataFrame({"qid": list(profile.queries), "query": list(profile.queries.values())})
    pipelines = {name: system.build(context) if isinstance(system, System) else system for name, _, system, _ in todo}
    written = []
    for name, spec, _, asked in todo:
        ranked = pipelines[name].transform(topics)
        text = run_text(cut_to_depth(ranked, task.depth), tag=record_folder_name(name))
        evaluated = evaluate_run(opened, run_frame(text))
        record = make_record(suite, task, name, spec, "system", pins, evaluated, asked)
        written.append(write_record(results, record, text, replace=replace))
        bar.update(1)
    return written

