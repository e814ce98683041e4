"""The house rules of docs/architecture.md, checked on the package's source: imports never run back up the floors,
no module imports another module's private name, and no module outgrows 450 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pairmeasures as pm

PACKAGE = Path(pm.__file__).resolve().parent

#: The floors, bottom up (docs/architecture.md): a module may import its own floor and those below it.
FLOORS = {"_atomic": 0, "_exclusive": 0, "_moved": 0, "math": 1, "sideinfo": 2, "measures": 3, "plugins": 4, "datasets": 5,
          "demo": 5, "pipelines": 6, "generate": 7, "analysis": 8, "train": 9, "audit": 9, "benchmark": 10, "leaderboard": 11,
          "apps": 12, "__main__": 12}
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


def imports(module: str, path: Path):
    """``(line, imported module, imported names)`` of every import of a pairmeasures module in ``module``'s file,
    also those inside functions; ``names`` is empty for ``import x`` forms."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "pairmeasures":
                yield node.lineno, target, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "pairmeasures":
                    yield node.lineno, alias.name, []


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
