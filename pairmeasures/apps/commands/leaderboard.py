"""``pairmeasures leaderboard build DIR... --out SITE``: the static leaderboard site of one or more results folders;
``pairmeasures leaderboard verify DIR...``: every record recomputed from its stored run (docs/leaderboard.md)."""

from __future__ import annotations

import argparse
import json

HELP = "build the static leaderboard site of benchmark results folders, or verify their records"
DESCRIPTION = ("Build a static site (no server, no CDN) from the records of one or more results folders: an overview "
               "of systems × tasks with relevance and bias side by side, mean ranks, significance against the "
               "suite's baseline, one page per task with relevance-against-bias scatters and each record's "
               "provenance, leaderboard.json and leaderboard.csv. Records on other pins than the suite's are shown "
               "apart; damaged ones are named and left out.")
EXTRA = "audit"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    steps = parser.add_subparsers(dest="step", required=True, metavar="STEP")
    build = steps.add_parser("build", help="build the site of results folders",
                             description="Build the leaderboard site of the results folders DIR... into --out.")
    build.add_argument("dirs", nargs="+", metavar="DIR", help="results folders (benchmark run / submit --results)")
    build.add_argument("--out", required=True, metavar="SITE",
                       help="the folder to write (a new folder, or an earlier site with --force)")
    build.add_argument("--suite", default=None, metavar="NAME_OR_FILE",
                       help="the suite to build against: a built-in name or a TOML file (default: the built-in suite "
                            "the records name)")
    build.add_argument("--force", action="store_true", help="replace an earlier site at --out")
    build.add_argument("--json", action="store_true", help="print what was built as JSON")
    build.set_defaults(extra=EXTRA, needs=("scipy",))
    verify = steps.add_parser(
        "verify", help="recompute every record from its stored run and report any drift",
        description="Recompute every record of the results folders DIR... from the run stored beside it (its task "
                    "rebuilt from the record's request: dataset, text field, measures, depth; the data here checked "
                    "against the record's pins) and print one line per value that differs from the stored one (a "
                    "mean, an n, a per-query value; beyond 1e-9 of its size). Exit status 0 when every record "
                    "recomputes to its values, 1 on any drift or any record that cannot be verified (damaged, its run "
                    "missing, its data not here or other data): each named in one line.")
    verify.add_argument("dirs", nargs="+", metavar="DIR", help="results folders (benchmark run / submit --results)")
    verify.add_argument("--data", metavar="DIR", default=None,
                        help="a mirror folder of the datasets laid out like shared/data (default: $PAIRMEASURES_DATA)")
    verify.add_argument("--json", action="store_true",
                        help='print {"checked", "same", "drift": [lines], "unverified": [{"file", "why"}]}')
    verify.set_defaults(extra=EXTRA, needs=("pyterrier",))


def run(args: argparse.Namespace) -> int:
    if args.step == "verify":
        return _verify(args)
    from ...leaderboard import build
    from ..console import say

    built = build(args.dirs, args.out, args.suite, force=args.force)
    if args.json:
        print(json.dumps({"out": str(built.out), "suite": built.suite, "records": built.records,
                          "other_pins": built.other,
                          "left_out": [{"file": str(f), "reason": r} for f, r in built.left_out]}, indent=2))
    else:
        print(f"wrote {built.out}/index.html: {built.suite}, {built.records} records on the suite's pins"
              + (f", {built.other} on other pins (shown apart)" if built.other else ""))
    for path, reason in built.left_out:
        say("leaderboard build", f"left out {path}: {reason}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from ...benchmark.verification import verify
    from ...measures.base import DegenerateQueryWarning
    from ..console import say, warnings_shown

    with warnings_shown("leaderboard verify", ("once", Warning), ("ignore", DegenerateQueryWarning)):
        found = verify(args.dirs, data=args.data, report=lambda line: say("leaderboard verify", line))
    if args.json:
        print(json.dumps(found.as_json(), indent=2))
    else:
        for line in found.drift:
            print(f"drift: {line}")
        for path, why in found.unverified:
            print(f"not verified: {path}: {why}")
        print(f"{found.checked} records recomputed: {found.same} the same, {found.checked - found.same} drifted; "
              f"{len(found.unverified)} not verified")
    return 0 if found.ok else 1
