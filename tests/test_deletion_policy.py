"""The house rule on deleting (STYLE.md "Deleting, moving, replacing"), checked on the package's source: every call
that deletes, moves or replaces something on disk is in the one policy module, ``pairmeasures/_owned.py``, or in
``pairmeasures/_atomic.py`` (the ``--out`` policy and its atomic writes), or listed below with the reason it may
be elsewhere. A new ``unlink`` in a command fails here: route it through ``_owned`` with what proves the command
wrote what it deletes."""

from __future__ import annotations

import ast
from pathlib import Path

import pairmeasures as pm

PACKAGE = Path(pm.__file__).resolve().parent
#: The other code of the repository that touches a user's disk: the benchmark scripts (they take --work and --out
#: folders), the tools and the example plugin. Checked by the same rule; their files are named from the root.
OTHER_CODE = ("benchmarks", "tools", "plugins")

#: Where deleting, moving and replacing may happen: the policy modules.
POLICY = {"_owned.py", "_atomic.py"}

#: ``(file, function, call)`` allowed elsewhere, each with its reason.
ALLOWED = {
    ("_exclusive.py", "rename_noreplace", "os.rename"):
        "the no-replace rename itself (the policy modules' primitive): it refuses a target that exists",
    ("_exclusive.py", "release", ".unlink"):
        "the lock file this process created and holds locked, removed as the lock is released",
    ("compute/raywatch.py", "remove_session_folder", "shutil.rmtree"):
        "a Ray session folder, removed only when its marker names the session this code made (checked just before)",
    ("benchmarks/audits.py", "run_audit", ".unlink"):
        "the per_query.csv the audit it ran just wrote into its own --out folder (too large for the repository)",
}

#: Module-level functions that delete, move or replace, by module.
FUNCTIONS = {"os": {"remove", "unlink", "rmdir", "removedirs", "rename", "renames", "replace"},
             "shutil": {"rmtree", "move"}}
#: Methods that do (``Path.unlink``, ``Path.rmdir``; ``rename``/``replace`` with one argument: a path's, not a
#: string's ``replace(old, new)`` or a frame's ``rename(columns=...)``).
METHODS = {"unlink", "rmdir"}
ONE_ARGUMENT_METHODS = {"rename", "replace"}


def sites(path: Path):
    """``(line, function, call)`` of every deleting, moving or replacing call or reference in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = {}  # names bound by ``from os import remove`` and the like
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in FUNCTIONS:
            for alias in node.names:
                if alias.name in FUNCTIONS[node.module]:
                    imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def visit(node, function: str):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name) and \
                    child.attr in FUNCTIONS.get(child.value.id, ()):
                yield child.lineno, function, f"{child.value.id}.{child.attr}"
            elif isinstance(child, ast.Name) and child.id in imported:
                yield child.lineno, function, imported[child.id]
            elif isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and \
                    not (isinstance(child.func.value, ast.Name) and child.func.value.id in FUNCTIONS):
                method = child.func.attr
                one = len(child.args) + sum(1 for k in child.keywords if k.arg == "target") == 1 and \
                    all(k.arg == "target" for k in child.keywords)
                if method in METHODS or (method in ONE_ARGUMENT_METHODS and one):
                    yield child.lineno, function, f".{method}"
            yield from visit(child, name)

    yield from visit(tree, "<module>")


def found() -> dict:
    """``{(file, function, call): [lines]}`` outside the policy modules: the package's files by their path in it,
    the rest of the repository's code (:data:`OTHER_CODE`) by its path from the root."""
    out: dict = {}
    files = [(path, path.relative_to(PACKAGE).as_posix()) for path in sorted(PACKAGE.rglob("*.py"))]
    root = PACKAGE.parent
    files += [(path, path.relative_to(root).as_posix()) for folder in OTHER_CODE
              for path in sorted((root / folder).rglob("*.py")) if ".venv" not in path.parts]
    for path, relative in files:
        if relative in POLICY:
            continue
        for line, function, call in sites(path):
            out.setdefault((relative, function, call), []).append(line)
    return out


def test_every_delete_move_or_replace_goes_through_the_policy_module():
    stray = {site: lines for site, lines in found().items() if site not in ALLOWED}
    assert not stray, "deleting, moving or replacing outside pairmeasures/_owned.py (route it there, with what " \
                      "proves the command wrote it): " + "; ".join(
                          f"{file}:{lines[0]} {call} in {function}()" for (file, function, call), lines in stray.items())


def test_the_allow_list_holds_only_sites_that_exist():
    assert set(ALLOWED) <= set(found()), f"allowed but gone (remove them): {sorted(set(ALLOWED) - set(found()))}"


def test_the_check_finds_each_kind_of_call(tmp_path):
    """The walker itself: each form is found, a string's replace and a frame's rename are not."""
    source = tmp_path / "example.py"
    source.write_text(
        "import os, shutil\nfrom shutil import rmtree as gone\n"
        "def f(p, frame, text):\n"
        "    p.unlink()\n    p.rmdir()\n    p.rename(p)\n    p.replace(p)\n    os.remove(p)\n    os.replace(p, p)\n"
        "    p.rename(target=p)\n    p.replace(target=p)\n"
        "    shutil.move(p, p)\n    gone(p)\n    callback(shutil.rmtree, p)\n"
        "    text.replace('a', 'b')\n    frame.rename(columns={})\n", encoding="utf-8")
    assert sorted(call for _, _, call in sites(source)) == sorted(
        [".unlink", ".rmdir", ".rename", ".replace", "os.remove", "os.replace", "shutil.move", "shutil.rmtree",
         "shutil.rmtree", ".rename", ".replace"])
    assert {function for _, function, _ in sites(source)} == {"f"}
