"""The patches of other libraries (``pairmeasures/compat/``): checked against the versions they were written for,
every patched name still there, and the one import hook, :func:`pairmeasures.compat.after_import`, run as a user's
interpreter runs it (a fresh subprocess, a real module file)."""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT

from pairmeasures.compat import CHECKED_WITH

#: The distribution each library of CHECKED_WITH is installed as.
DISTRIBUTIONS = {"ir_measures": "ir_measures", "pyterrier": "pyterrier"}


def series(version: str) -> str:
    return ".".join(version.split(".")[:2])


@pytest.mark.parametrize("library", sorted(CHECKED_WITH))
def test_the_installed_library_is_the_series_the_patches_were_checked_with(library):
    checked, patches = CHECKED_WITH[library]
    installed = importlib.metadata.version(DISTRIBUTIONS[library])
    assert series(installed) == checked, (
        f"{library} {installed} is installed, but pairmeasures' patches of it were checked with {checked}.x: check "
        f"again that each still adds what docs/architecture.md ('Patches of other libraries') says, against the new "
        f"source of: {', '.join(patches)}; then set CHECKED_WITH[{library!r}] in pairmeasures/compat/__init__.py "
        f"and the range in pyproject.toml")


@pytest.mark.parametrize("library", sorted(CHECKED_WITH))
def test_pyproject_allows_the_checked_series(library):
    checked, _ = CHECKED_WITH[library]
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    requirement = re.search(rf'"{re.escape(DISTRIBUTIONS[library])}([<>=!~][^";]*)"', text)
    assert requirement, f"pyproject.toml names no version range of {library}"
    from packaging.specifiers import SpecifierSet

    assert f"{checked}.99" in SpecifierSet(requirement.group(1)) or f"{checked}.0" in SpecifierSet(requirement.group(1)), \
        f"pyproject.toml's {library}{requirement.group(1)} excludes the series {checked} the patches were checked with"


@pytest.mark.parametrize("target", [t for _, patches in CHECKED_WITH.values() for t in patches])
def test_every_patched_name_is_still_there(target):
    """A patch whose target is gone installs nothing (and warns): name it here first."""
    parts = target.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:]:
            assert hasattr(owner, name), f"{target}: {'.'.join(parts[:split])} has no {name}; check the patch of it"
            owner = getattr(owner, name)
        assert callable(owner), target
        return
    pytest.fail(f"{target}: no module of it imports")


AFTER_IMPORT = textwrap.dedent("""
    import importlib.util, sys
    sys.path.insert(0, sys.argv[1])
    from pairmeasures.compat import after_import

    calls = []
    def callback():
        calls.append(sys.modules["watched"].VALUE)
    after_import("watched", callback)
    after_import("watched", callback)  # the same callback twice runs once
    assert importlib.util.find_spec("watched") is not None and calls == []  # looking is not importing
    import watched
    assert calls == [42], calls
    hooks = [f for f in sys.meta_path if type(f).__name__ == "_AfterImport"]
    assert len(hooks) == 1 and "watched" not in hooks[0].callbacks, hooks  # one hook; done with 'watched'
    import ir_datasets, pyterrier  # what import pairmeasures waits for: then the hook is gone
    assert not any(type(f).__name__ == "_AfterImport" for f in sys.meta_path), sys.meta_path
    after_import("watched", lambda: calls.append("now"))  # already imported: now
    assert calls == [42, "now"], calls
    print("ok")
""")


def test_after_import_runs_a_callback_once_right_after_the_module_is_executed(tmp_path):
    (tmp_path / "watched.py").write_text("VALUE = 42\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-c", AFTER_IMPORT, str(tmp_path)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_import_pairmeasures_adds_one_import_hook_and_imports_neither_library():
    code = ("import sys, pairmeasures\n"
            "hooks = [f for f in sys.meta_path if type(f).__module__.startswith('pairmeasures')]\n"
            "print(len(hooks), sorted(hooks[0].callbacks), 'ir_datasets' in sys.modules, "
            "'pyterrier' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "['ir_datasets',", "'pyterrier._evaluation']", "False", "False"]
