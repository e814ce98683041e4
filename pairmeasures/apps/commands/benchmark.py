"""``pairmeasures benchmark``: benchmark suites (``suites``: list them, or ``--describe`` one with whether its data
is here), running systems across one (``run``) and submitting run files (``submit``: both in :mod:`.benchmark_run`). A suite is a built-in name (``pair-bias-v1``) or a TOML file (docs/leaderboard.md)."""

from __future__ import annotations

import argparse
import json

HELP = "benchmark suites of bias and relevance: list them, run systems across one, submit run files"
DESCRIPTION = ("Benchmark suites: named, versioned TOML files of tasks (a dataset with the sha256 of its files, the "
               "measures, the depth, the baseline). 'benchmark suites' lists the built-in suites and any TOML files "
               "named; 'benchmark suites --describe NAME_OR_FILE' shows one, and whether its data is here; 'benchmark run' runs "
               "systems across a suite into a results folder, 'benchmark submit' adds run files to one. "
               "docs/leaderboard.md describes the format.")

#: Each step by name: (help line, description, its add_arguments, its run); a step is one entry here.
STEPS: dict = {}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    steps = parser.add_subparsers(dest="step", required=True, metavar="STEP")
    for name, (help_line, description, add, _) in STEPS.items():
        step = steps.add_parser(name, help=help_line, description=description)
        add(step)


def run(args: argparse.Namespace) -> int:
    return STEPS[args.step][3](args)


def _suites_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="*", metavar="FILE", help="suite TOML files to list beside the built-in ones")
    parser.add_argument("--describe", metavar="NAME_OR_FILE", default=None,
                        help="show one suite: its tasks, measures, depth, baseline, and whether its data is here")
    parser.add_argument("--data", metavar="DIR", default=None,
                        help="with --describe: a mirror folder laid out like shared/data (default: $PAIRMEASURES_DATA)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def _suites(args: argparse.Namespace) -> int:
    from ...benchmark.suites import builtin_suites, load_suite

    if args.describe is not None:
        if args.files:
            raise ValueError("--describe shows one suite: name it alone (without other FILE arguments)")
        suite = load_suite(args.describe, require_pins=False)
        described = describe(suite, args.data)
        print(json.dumps(described, indent=2) if args.json else describe_text(described))
        return 0
    suites = [load_suite(name) for name in builtin_suites()] + [load_suite(path) for path in args.files]
    rows = [{"suite": s.name, "version": s.version, "tasks": len(s.tasks), "baseline": s.baseline, "depth": s.depth,
             "source": "built in" if s.builtin else str(s.source), "description": s.description} for s in suites]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        print(f"{row['suite']} version {row['version']} ({row['source']}): {row['tasks']} tasks, baseline "
              f"{row['baseline']}, depth {row['depth']}" + (f"\n  {row['description']}" if row["description"] else ""))
    print("\n'pairmeasures benchmark suites --describe NAME_OR_FILE' shows a suite's tasks and whether their data is here.")
    return 0


def describe(suite, data=None) -> dict:
    """A suite as ``--describe`` shows it: its tasks with their measures and the state of their data here."""
    from ...benchmark.suites import task_pins

    tasks = []
    for task in suite.tasks:
        here = task_pins(task, data)
        facts = task.facts()
        if not task.files:
            state, advice = "not pinned", "add the [task.files] table below to the suite (the sha256 of the data here)"
        elif here.problem:
            state, advice = "no", here.problem
        elif here.missing or here.ir_datasets_missing:
            state, advice = "no", _advice(task, here)
        elif here.differing():
            state = "differs"
            advice = ("; ".join(f"{name} has sha256 {here.files[name][:12]}… here, the suite pins "
                                f"{task.files[name][:12]}…" for name in here.differing()) +
                      ": records made from the data here are shown apart on the board (other pins)")
        else:
            state, advice = "yes", "every pinned file is here with its sha256"
        tasks.append({"id": task.id, "dataset": task.dataset, "folder": task.folder, "description": task.description,
                      "paper": task.paper, "measures": [{"measure": m, "direction": f.direction, "arrow": f.arrow,
                                                         "bias": f.bias} for m, f in facts.items()],
                      "overview": list(task.overview), "depth": task.depth, "baseline": task.baseline,
                      "pins": task.files, "ir_datasets": list(task.ir_datasets), "data": state, "advice": advice,
                      "missing": list(here.missing) + list(here.ir_datasets_missing),
                      "here": here.files if not task.files else {}})
    return {"suite": suite.name, "version": suite.version, "description": suite.description,
            "source": "built in" if suite.builtin else str(suite.source), "file": str(suite.source),
            "baseline": suite.baseline, "depth": suite.depth, "tasks": tasks}


def _advice(task, here) -> str:
    parts = []
    if here.missing:
        folders = sorted({name.split("/")[0] for name in here.missing})
        where = (f"the folder {task.dataset}" if task.folder else
                 f"{', '.join(f + ('/' if '.' not in f else '') for f in folders)} of a mirror laid out like shared/data, "
                 "in $PAIRMEASURES_DATA or --data DIR (docs/datasets.md), or let benchmark run download it where "
                 "there is network access ('pairmeasures datasets' shows where each dataset resolves from)")
        parts.append(f"missing {', '.join(here.missing)}: put them into {where}")
    if here.ir_datasets_missing:
        from ...datasets import ir_datasets_home

        parts.append(f"ir_datasets lacks {', '.join(here.ir_datasets_missing)} under {ir_datasets_home()}: it "
                     "downloads them on first use where there is network access (it checks their md5); offline, copy "
                     "its msmarco-passage/ folder from a machine that has them (docs/msmarco.md)")
    return "; ".join(parts)


def describe_text(described: dict) -> str:
    lines = [f"{described['suite']} version {described['version']} ({described['source']})",
             f"{described['description']}", f"baseline {described['baseline']}, depth {described['depth']}, "
             f"{len(described['tasks'])} tasks", ""]
    for task in described["tasks"]:
        measures = ", ".join(f"{m['measure']} {m['arrow']}".strip() for m in task["measures"])
        lines += [f"{task['id']}" + (f": {task['description']}" if task["description"] else ""),
                  f"  {'folder' if task['folder'] else 'dataset'} {task['dataset']}; depth {task['depth']}; "
                  f"baseline {task['baseline']}",
                  f"  measures: {measures}", f"  on the board's overview: {', '.join(task['overview'])}"]
        if task["paper"]:
            lines.append(f"  as reported by: {task['paper']}")
        lines.append(f"  data here: {task['data']}: {task['advice']}")
        if task["here"]:
            lines.append("  [task.files]")
            lines += [f'  "{name}" = "{digest}"' for name, digest in sorted(task["here"].items())]
        lines.append("")
    lines.append("↑ higher is better or fairer, ↓ lower is fairer, ↕ closer to 0 is fairer.")
    return "\n".join(lines)


STEPS["suites"] = ("list the benchmark suites, or describe one (--describe)", DESCRIPTION, _suites_arguments, _suites)


def _more_steps() -> None:
    from .benchmark_run import RUN, SUBMIT

    STEPS["run"] = RUN
    STEPS["submit"] = SUBMIT


_more_steps()
