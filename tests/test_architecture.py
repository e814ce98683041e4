"""The house rules of docs/architecture.md, checked on the package's source: imports (at the top, inside functions,
and as ``importlib.import_module`` strings or ``_LAZY`` tables) never run back up the floors nor in a circle, no
module imports another module's private name, no module outgrows 450 lines, and the package docstrings name the
floors the table gives."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pairmeasures as pm

PACKAGE = Path(pm.__file__).resolve().parent

#: The floors, bottom up (docs/architecture.md): a module may import its own floor and those below it.
FLOORS = {"_atomic": 0, "_exclusive": 0, "_owned": 0, "math": 1, "io": 2, "compute": 3, "sideinfo": 4, "measures": 5,
          "compat": 5, "plugins": 6, "datasets": 7, "demo": 7, "pipelines": 8, "generate": 9, "analysis": 10, "train": 11,
          "audit": 11, "benchmark": 12, "leaderboard": 13, "apps": 14, "__main__": 14}
#: The longest a module may be.
MAX_LINES = 450


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = modules()


def resolve(module: str, path: Path, name: str, level: int = 0) -> str:
    """The absolute name of ``name`` imported ``level`` packages up from ``module`` (in file ``path``)."""
    if not level:
        return name
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    base = package.split(".")[: len(package.split(".")) - level + 1]
    return ".".join(base + ([name] if name else []))


def relative(module: str, path: Path, text: str) -> str:
    """``importlib.import_module(text, package)``'s module, ``text`` absolute or relative (``.x``, ``..x``) to
    ``module``'s package."""
    level = len(text) - len(text.lstrip("."))
    return resolve(module, path, text[level:], level)


def import_module_string(node: ast.AST) -> str | None:
    """The literal module name of an ``importlib.import_module("...")`` / ``import_module("...")`` call, else None."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return node.args[0].value if called == "import_module" else None


def import_module_pattern(node: ast.AST, module: str, path: Path) -> list[str]:
    """The modules an ``import_module(f"...")`` call with an f-string can import: ``{__package__}`` and
    ``{__name__}`` are this module's package and name, any other ``{...}`` one dotted part (``apps/cli.py`` imports
    its commands as ``f"{__package__}.commands.{_MODULES[name]}"``: every ``pairmeasures.apps.commands`` module)."""
    import re

    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.JoinedStr)):
        return []
    func = node.func
    if (func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None) != \
            "import_module":
        return []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    pattern = ""
    for part in node.args[0].values:
        if isinstance(part, ast.Constant):
            pattern += re.escape(str(part.value))
        elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) and \
                part.value.id in ("__package__", "__name__"):
            pattern += re.escape(package if part.value.id == "__package__" else module)
        else:
            pattern += r"[A-Za-z_][A-Za-z0-9_]*"
    return [name for name in MODULES if re.fullmatch(pattern, name)]


def lazy_table(node: ast.AST) -> list[str]:
    """The module strings of a ``_LAZY = {name: "module"}`` table (``import_module(_LAZY[name], __name__)``)."""
    if not (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets)):
        return []
    return [c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)
            and (c.value.startswith(".") or c.value.startswith("pairmeasures."))]


def type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the import nodes under ``if TYPE_CHECKING:`` (never run)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(inner) for child in node.body for inner in ast.walk(child)}
    return skipped


def imports(module: str, path: Path, *, runtime: bool = False):
    """``(line, imported module, imported names)`` of every import of a pairmeasures module in ``module``'s file,
    also those inside functions, the literal ``importlib.import_module("...")`` strings and the module strings of
    a ``_LAZY`` table (``names`` is empty for those and for ``import x`` forms); ``runtime``: without those under
    ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = type_checking_only(tree) if runtime else set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            target = resolve(module, path, node.module or "", node.level)
            if target.split(".")[0] == "pairmeasures":
                yield node.lineno, target, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "pairmeasures":
                    yield node.lineno, alias.name, []
        else:
            for text in [import_module_string(node)] + lazy_table(node):
                target = relative(module, path, text) if text else ""
                if target.split(".")[0] == "pairmeasures":
                    yield node.lineno, target, []
            for target in import_module_pattern(node, module, path):
                yield node.lineno, target, []


def floor(module: str) -> int | None:
    parts = module.split(".")
    return FLOORS.get(parts[1]) if len(parts) > 1 else None


def test_every_subpackage_has_a_floor():
    assert {m.split(".")[1] for m in MODULES if "." in m} <= set(FLOORS)


def test_no_import_runs_back_up():
    wrong = []
    for module, path in MODULES.items():
        here = floor(module)
        if here is None:  # the top-level package: it exposes every floor
            continue
        for line, target, names in imports(module, path):
            if target == "pairmeasures" and set(names) <= {"__version__"}:
                continue  # the version, from the package itself
            there = floor(target) if target != "pairmeasures" else None
            for name in names if target == "pairmeasures" else []:
                there = max(there or 0, floor(f"pairmeasures.{name}") or 0)
            if there is not None and there > here:
                wrong.append(f"{path.relative_to(PACKAGE)}:{line}: {module} (floor {here}) imports {target} "
                             f"(floor {there})")
    assert not wrong, "\n".join(wrong)


#: Circles allowed for now, each with the change that removes it: none.
KNOWN_CIRCLES: list = []


def import_graph() -> dict[str, set[str]]:
    """Module -> the pairmeasures modules it imports when it runs (at its top or inside its functions, by
    ``import_module`` string or ``_LAZY`` table; not under ``if TYPE_CHECKING:``). The package itself, which
    exposes every floor, is left out; so is the implicit import of a module's parent packages."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        if module == "pairmeasures":
            continue
        edges = graph.setdefault(module, set())
        for _, target, names in imports(module, path, runtime=True):
            submodules = {f"{target}.{name}" for name in names} & set(MODULES)
            edges |= submodules
            if target in MODULES and (not names or len(submodules) < len(names)):
                edges.add(target)
        edges.discard(module)
        edges.discard("pairmeasures")
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each as one circle through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:  # the graph is a few hundred modules: recursion is shallow enough
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [circle_through(graph, group) for group in groups]


def circle_through(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """One circle of imports within ``group``, from its first module (breadth first: the shortest)."""
    start = min(group)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for other in sorted(graph[node] & group):
            if other == start:
                return paths[node] + [start]
            if other not in paths:
                paths[other] = paths[node] + [other]
                queue.append(other)
    return sorted(group)


def test_no_import_circles():
    found = circles(import_graph())
    unexpected = [circle for circle in found if set(circle) not in KNOWN_CIRCLES]
    assert not unexpected, "import circles:\n" + "\n".join(" -> ".join(circle) for circle in unexpected)
    gone = [known for known in KNOWN_CIRCLES if known not in [set(circle) for circle in found]]
    assert not gone, f"these circles are gone: remove them from KNOWN_CIRCLES: {gone}"


def test_the_circle_check_finds_circles_through_functions_and_strings():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert circles(graph) == [["a", "b", "c", "a"]]
    source = Path(__file__)  # any file: only the module name matters for the relative strings
    assert relative("pairmeasures.datasets", PACKAGE / "datasets" / "__init__.py", "._records") == \
        "pairmeasures.datasets._records"
    assert relative("pairmeasures.apps.cli", source, "..datasets") == "pairmeasures.datasets"
    tree = ast.parse("def f():\n    importlib.import_module('pairmeasures.apps.cli')\n")
    assert [import_module_string(node) for node in ast.walk(tree) if import_module_string(node)] == \
        ["pairmeasures.apps.cli"]


def private_part(target: str, name: str | None, importer: str) -> str | None:
    """Why importing ``name`` from ``target`` into ``importer`` reaches into another module's private name, or None.
    A private *module* (``datasets/_loaders.py``) may be imported by the modules of its own package; a private
    *name* (``_check_step``) only by its own module."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            owner = ".".join(parts[:i])
            if not (importer == owner or importer.startswith(owner + ".")):
                return f"the private module {'.'.join(parts[:i + 1])}"
    if name is None or not name.startswith("_") or name.startswith("__"):
        return None
    if f"{target}.{name}" in MODULES:  # a private submodule, imported by name
        return None if importer.startswith(target + ".") or importer == target else f"the private module {name}"
    return None if target == importer else f"the private name {name} of {target}"


def test_no_module_imports_another_modules_private_name():
    wrong = []
    for module, path in MODULES.items():
        for line, target, names in imports(module, path):
            for name in names or [None]:
                why = private_part(target, name, module)
                if why:
                    wrong.append(f"{path.relative_to(PACKAGE)}:{line}: {module} imports {why}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_over_the_limit(module):
    lines = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{MODULES[module].relative_to(PACKAGE)} has {lines} lines (at most {MAX_LINES})"


def test_the_checks_catch_what_they_are_for():
    """The rules themselves: a private name across modules, a private module from outside its package."""
    assert private_part("pairmeasures.math.duo", "_check_step", "pairmeasures.math.reorder")
    assert private_part("pairmeasures.datasets._loaders", "load_tables", "pairmeasures.audit.plan")
    assert not private_part("pairmeasures.datasets._loaders", "load_tables", "pairmeasures.datasets.corpus")
    assert not private_part("pairmeasures._atomic", "write_atomically", "pairmeasures.apps.audit.outputs")
    assert floor("pairmeasures.apps.cli") > floor("pairmeasures.pipelines.specs") > floor("pairmeasures.math.duo")


@pytest.mark.parametrize("package", sorted(m for m in MODULES if m.count(".") == 1 and MODULES[m].name == "__init__.py"))
def test_package_docstrings_name_their_floor(package):
    import re

    doc = ast.get_docstring(ast.parse(MODULES[package].read_text(encoding="utf-8"))) or ""
    assert not re.search(r"\blayer \d", doc, flags=re.I), f"{package}: the floors are called floors, not layers"
    named = re.findall(r"\bfloor (\d+)", doc, flags=re.I)
    assert all(int(n) == floor(package) for n in named), f"{package} says floor {named}, the table {floor(package)}"


def test_statistics_are_found_through_pm_analysis():
    """architecture.md: statistics are found through ``pm.analysis``, loaded on first use (not at import)."""
    import subprocess
    import sys

    code = ("import sys, pairmeasures as pm\n"
            "assert 'pairmeasures.analysis' not in sys.modules\n"
            "assert callable(pm.analysis.paired_bootstrap) and 'analysis' in dir(pm)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_no_extra_pins_torch_to_one_build():
    """A user with a CUDA build (or any other torch >= 2.0) installs every extra beside it: no extra asks for one
    exact torch."""
    import re

    tomllib = pytest.importorskip("tomllib", reason="Python 3.11's TOML reader")
    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for extra, requirements in project["optional-dependencies"].items():
        for requirement in requirements:
            name = re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()
            if name == "torch":
                assert "==" not in requirement and "<" not in requirement, f"extra {extra!r} pins {requirement!r}"
    assert not any(re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() == "torch" for r in project["dependencies"])


def _column_renames(path: Path) -> list:
    """Lines of ``path`` that rename between PyTerrier's and ir_measures' column names: a ``rename`` call, or a
    mapping literal, whose keys and values pair ``qid``/``docno``/``label`` with ``query_id``/``doc_id``/``relevance``."""
    pairs = {("qid", "query_id"), ("docno", "doc_id"), ("label", "relevance")}
    pairs |= {(b, a) for a, b in pairs}
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Dict):
            items = {(k.value, v.value) for k, v in zip(node.keys, node.values)
                     if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)}
            if items & pairs:
                found.append(node.lineno)
    return found


def test_pyterrier_and_ir_measures_names_meet_at_one_boundary():
    """Every rename between ``qid, docno, label`` and ``query_id, doc_id, relevance`` is io/frames.py's (issue 32:
    18 renames ran in one audit); elsewhere the package calls ``ir_frame``, ``ir_names`` or ``pyterrier_frame``."""
    elsewhere = {path.relative_to(PACKAGE).as_posix(): lines for path in sorted(PACKAGE.rglob("*.py"))
                 if path.relative_to(PACKAGE).as_posix() != "io/frames.py" and (lines := _column_renames(path))}
    assert not elsewhere, f"renames of PyTerrier's column names outside io/frames.py: {elsewhere}"
    assert _column_renames(PACKAGE / "io" / "frames.py")  # the check finds the one that is meant to be there
