"""Registering a spec stage as docs/architecture.md's recipe does, in a notebook: re-running the cell replaces the
stage (same module and qualified name of ``build``); another ``build`` under a taken name is one clear error."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from conftest import ROOT

#: Runs the recipe's notebook cell (given on stdin) twice in one ``__main__`` namespace, as re-running a cell does,
#: then registers a stage named like it from another function.
RERUN = r"""
import json, sys
cell = json.load(sys.stdin)
namespace = {"__name__": "__main__"}
exec(compile(cell, "cell", "exec"), namespace)
exec(compile(cell, "cell", "exec"), namespace)  # the cell again: no 'already registered'
from pairmeasures.pipelines.stages import StageType, register_stage
from pairmeasures.pipelines.stages.registry import stage_types
again = stage_types()["top"]
assert again.build is namespace["build"], "the second run's stage replaces the first"

def other_build(stage, context, position):
    raise AssertionError("never built")

try:
    register_stage(StageType("top", "top(N)", "another top", "bm25>>top(3)", other_build))
except ValueError as exc:
    print(json.dumps(str(exc)))
else:
    sys.exit("another build under a taken name was registered")
try:
    register_stage(StageType("bm25", "bm25", "mine", "bm25", namespace["build"]))
except ValueError as exc:
    print(json.dumps(str(exc)))
else:
    sys.exit("a built-in stage was replaced")
"""


def test_rerunning_the_recipes_cell_replaces_the_stage_and_other_code_may_not(tmp_path):
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    cell = next(block for block in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "register_stage" in block)
    result = subprocess.run([sys.executable, "-c", RERUN], input=json.dumps(cell), cwd=tmp_path, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    top, bm25 = [json.loads(line) for line in result.stdout.splitlines()[-2:]]
    assert top == ("a spec stage named 'top' is already registered (built by __main__.build); choose another name")
    assert bm25.startswith("a spec stage named 'bm25' is already registered (built by "
                           "pairmeasures.pipelines.stages.bm25.") and "choose another name" in bm25
