"""The steps ``benchmark run`` and ``benchmark submit`` of ``pairmeasures benchmark`` (registered in
:data:`pairmeasures.apps.commands.benchmark.STEPS`): argv into :func:`pairmeasures.benchmark.run` and
:func:`pairmeasures.benchmark.submit`, their summary printed (docs/leaderboard.md)."""

from __future__ import annotations

import argparse
import json

from . import add_engine_arguments

__all__ = ["RUN", "SUBMIT"]

RUN_DESCRIPTION = (
    "Run each system (a system spec, as 'pairmeasures audit --systems' takes it: bm25, bm25>>dense, "
    "bm25>>dense>>duogreedy(0.5), run:FILE, module:attr; docs/pipelines.md) on every task of SUITE (a built-in "
    "suite such as pair-bias-v1, or a suite TOML file) and write one record per (system, task) into --results: "
    "RESULTS/<system>/<task>.json with the mean and n of each measure, every per-query value, the request, the "
    "pins and versions, and the run beside it (<task>.run.gz). Finished records (the same request, their run "
    "intact) are skipped without running anything, so an interrupted run resumes. A task whose data is not here is "
    "skipped with one line naming what is missing and how to get it. One line on stderr as each task starts and "
    "ends (and a bar on a terminal). A record made from another request is an error naming it unless --replace "
    "(the earlier one is then kept beside the new one; nothing in a results folder is deleted).")

SUBMIT_DESCRIPTION = (
    "Submit run files (TREC, or a TSV with a header; gzip allowed) as the system NAME: one file per task, "
    "--run TASK=FILE repeated, or --runs FOLDER holding <task id>.run files. Every file is checked before anything "
    "is written (its queries are the task's, its documents the dataset's, no document ranked twice for a query, "
    "every line reads; a problem names the file and line), then cut to the task's depth, evaluated with the task's "
    "pins and written into --results as records of kind 'submission', each with its run. The same run submitted "
    "again changes nothing; another run under the same NAME is an error unless --replace.")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("suite", metavar="SUITE", help="a built-in suite (pair-bias-v1) or a suite TOML file")
    parser.add_argument("--results", required=True, metavar="DIR",
                        help="the results folder (created and marked on the first record; records are added to it)")
    parser.add_argument("--data", metavar="DIR", default=None,
                        help="a mirror folder of the datasets laid out like shared/data (default: $PAIRMEASURES_DATA)")
    parser.add_argument("--replace", action="store_true",
                        help="write a record where one made from another request or run is (the earlier one is kept "
                             "as <task>.replaced-<UTC time>.json beside it)")
    parser.add_argument("--json", action="store_true",
                        help='print {"records_written": N, "records_skipped": M, "tasks_skipped": [...]} on stdout')


def _run_arguments(parser: argparse.ArgumentParser) -> None:
    _common(parser)
    parser.add_argument("--systems", required=True, nargs="+", metavar="SPEC",
                        help="system specs, each also the system's name on the board, e.g. bm25 'bm25>>dense' "
                             "'bm25>>dense>>duogreedy(0.5)' run:FILE")
    parser.add_argument("--tasks", nargs="+", metavar="TASK", default=None,
                        help="only these task ids of the suite (e.g. pair/procon pair/perspectrum); default: every task")
    add_engine_arguments(parser, "where the model work runs: this process (local, default) or a Ray pool (the texts "
                                 "the systems and the polarity embed, as 'pairmeasures audit --engine ray')",
                         "a private local Ray on this machine")


def _submit_arguments(parser: argparse.ArgumentParser) -> None:
    _common(parser)
    parser.add_argument("--name", required=True, metavar="NAME", help="the submission's system name on the board")
    parser.add_argument("--run", action="append", default=[], metavar="TASK=FILE", dest="run_files",
                        help="the run file of one task (repeat for each task)")
    parser.add_argument("--runs", metavar="FOLDER", default=None,
                        help="a folder of run files named <task id>.run (or .trec, .txt, .tsv, optionally .gz; the "
                             "task id's '/' as folders)")


def _warnings(command: str):
    """Warnings as one line each, once; the queries a bias measure leaves out are in each record's ``n``."""
    from ...measures.base import DegenerateQueryWarning
    from ..console import warnings_shown

    return warnings_shown(command, ("once", Warning), ("ignore", DegenerateQueryWarning))


def _print(summary, args) -> None:
    from ..console import say

    if args.json:
        print(json.dumps(summary.as_json()))
        return
    line = f"{summary.records_written} records written, {summary.records_skipped} finished before (skipped)"
    if summary.tasks_skipped:
        line += f"; tasks skipped (data not here): {', '.join(summary.tasks_skipped)}"
    say(f"benchmark {args.step}", f"{line}; results in {args.results}")


def _run(args: argparse.Namespace) -> int:
    from ...benchmark.runner import run
    from ..console import say

    with _warnings("benchmark run"):
        summary = run(args.suite, list(dict.fromkeys(args.systems)), args.results, tasks=args.tasks, data=args.data,
                      engine=args.engine, address=args.address, workers=args.workers, replace=args.replace,
                      report=lambda line: say("benchmark run", line))
    _print(summary, args)
    return 0


def _pairs(items: list) -> dict:
    runs: dict = {}
    for item in items:
        task, sep, path = item.partition("=")
        if not sep or not task or not path:
            raise ValueError(f"--run {item!r}: write TASK=FILE, e.g. --run pair/procon=runs/procon.trec")
        if task in runs:
            raise ValueError(f"--run names task {task} twice ({runs[task]} and {path}): give one file per task")
        runs[task] = path
    return runs


def _submit(args: argparse.Namespace) -> int:
    from ...benchmark.runner import as_suite
    from ...benchmark.submission import runs_in_folder, submit
    from ..console import say

    runs = _pairs(args.run_files)
    if args.runs is not None:
        for task, path in runs_in_folder(args.runs, as_suite(args.suite)).items():
            if task in runs:
                raise ValueError(f"task {task} has a file in --runs ({path}) and a --run ({runs[task]}): give one")
            runs[task] = str(path)
    if not runs:
        raise ValueError("give the run files: --run TASK=FILE (repeated) or --runs FOLDER")
    with _warnings("benchmark submit"):
        summary = submit(args.suite, args.name, args.results, runs, data=args.data, replace=args.replace,
                         report=lambda line: say("benchmark submit", line))
    _print(summary, args)
    return 0


RUN = ("run systems across a suite's tasks into a results folder (resumable)", RUN_DESCRIPTION, _run_arguments, _run)
SUBMIT = ("submit run files as a system's records, checked before anything is written", SUBMIT_DESCRIPTION,
          _submit_arguments, _submit)
