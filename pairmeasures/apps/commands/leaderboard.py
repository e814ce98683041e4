"""``pairmeasures leaderboard build DIR... --out SITE``: the static leaderboard site of one or more results folders
(docs/leaderboard.md)."""

from __future__ import annotations

import argparse
import json

HELP = "build the static leaderboard site of benchmark results folders"
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


def run(args: argparse.Namespace) -> int:
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
