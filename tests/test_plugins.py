"""Plugins: built-ins through the hooks, a broken plugin warns, the example plugin installs and runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import ir_measures
import pytest

import pairmeasures as pm
from pairmeasures.plugins import PluginLoadWarning, plugin_manager

ROOT = Path(__file__).resolve().parents[1]


def fake_distribution(folder: Path, name: str, entry_points: str) -> None:
    """A ``<dist>.dist-info`` on sys.path is discovered like an installed package."""
    info = folder / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[pairmeasures]\n{entry_points}\n")


def test_builtin_measures_come_through_the_hooks():
    manager = plugin_manager(load_entry_points=False)
    names = [m.NAME for result in manager.hook.pairmeasures_measures() for m in result]
    assert {"Duo", "rND", "rKL", "rRD"} <= set(names)
    schemes = {k for result in manager.hook.pairmeasures_side_info_schemes() for k in result}
    assert {"tsv", "beir"} <= schemes
    assert isinstance(ir_measures.measures.registry["Duo"], pm.PairMeasure)
    assert any(p.NAME == "pairmeasures" for p in ir_measures.DefaultPipeline.providers)


def test_the_builtin_measures_and_every_name_list_come_from_the_family_modules():
    """A family module registers its measures and lists them in its __all__; BUILTIN_MEASURES (in the order of the
    family imports in pairmeasures/measures/__init__.py), pm.measures' and pm's names and __all__ follow."""
    import ast
    import importlib

    from pairmeasures.measures import BUILTIN_MEASURES

    source = (ROOT / "pairmeasures" / "measures" / "__init__.py").read_text(encoding="utf-8")
    starred = [f"pairmeasures.measures.{node.module}" for node in ast.parse(source).body
               if isinstance(node, ast.ImportFrom) and node.level == 1 and [a.name for a in node.names] == ["*"]]
    by_module: dict[str, list[str]] = {}
    for measure in BUILTIN_MEASURES:
        by_module.setdefault(type(measure).__module__, []).append(measure.NAME)
    families = [module for module in starred if module in by_module]
    assert list(by_module) == families, "each family registers its measures when imported, in the import order"
    for module, names in by_module.items():
        assert importlib.import_module(module).__all__ == names, f"{module}.__all__ lists exactly its measures"
    for measure in BUILTIN_MEASURES:
        assert getattr(pm, measure.NAME) is getattr(pm.measures, measure.NAME) is measure
        assert ir_measures.measures.registry[measure.NAME] is measure
    assert set(pm.measures.__all__) <= set(pm.__all__)
    for name in pm.measures.__all__:
        assert getattr(pm, name) is getattr(pm.measures, name)
    assert "BUILTIN_MEASURES" in pm.measures.__all__ and "Duo" in pm.__all__


def test_broken_plugins_warn_and_the_rest_keeps_working(tmp_path, monkeypatch):
    fake_distribution(tmp_path, "broken_plugin", "broken = no_such_module_for_pairmeasures")
    (tmp_path / "typo_plugin.py").write_text(textwrap.dedent("""
        import pairmeasures
        @pairmeasures.hookimpl
        def pairmeasures_measurez():
            return []
    """))
    fake_distribution(tmp_path, "typo_plugin", "typo = typo_plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(PluginLoadWarning) as record:
        manager = plugin_manager()
    messages = " ".join(str(w.message) for w in record)
    assert "'broken'" in messages and "no_such_module_for_pairmeasures" in messages
    assert "'typo'" in messages and "pairmeasures_measurez" in messages
    assert manager.has_plugin("builtin") and not manager.has_plugin("typo")
    monkeypatch.setenv("PAIRMEASURES_DISABLE_PLUGINS", "broken,typo")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", PluginLoadWarning)
        plugin_manager()


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=300)


@pytest.fixture(scope="module")
def installed_example_plugin(tmp_path_factory) -> Path:
    """pip-install the example plugin into a private folder, as a user would install it, from a copy of its
    source (a build leaves build/ and *.egg-info beside the source, which must stay clean)."""
    source = tmp_path_factory.mktemp("source") / "pairmeasures-exposure"
    shutil.copytree(ROOT / "plugins" / "pairmeasures-exposure", source,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(source)], check=True, capture_output=True, text=True, timeout=600)
    return target


def test_example_plugin_parses_and_runs_in_pt_experiment(installed_example_plugin):
    result = run_python("""
        import warnings
        import ir_measures, numpy as np, pandas as pd, pyterrier as pt
        import pairmeasures as pm
        measure = ir_measures.parse_measure("ExposureEntropy@3")
        assert type(measure).__module__ == "pairmeasures_exposure", type(measure)
        run = pd.DataFrame({"qid": ["1"] * 4, "docno": list("abcd"), "score": [4.0, 3, 2, 1],
                            "group": ["m", "m", "f", "f"]})
        qrels = pd.DataFrame({"qid": ["1"], "docno": ["a"], "label": [1]})
        topics = pd.DataFrame({"qid": ["1"], "query": ["q"]})
        table = pt.Experiment([pt.Transformer.from_df(run)], topics, qrels, eval_metrics=[measure],
                              names=["sys"], validate="error")
        shares = np.array([1 + 1 / np.log2(3), 1 / 2]) / (1 + 1 / np.log2(3) + 1 / 2)  # m at ranks 1, 2; f at 3
        expected = -(shares * np.log(shares)).sum() / np.log(2)
        assert abs(table["ExposureEntropy@3"].iloc[0] - expected) < 1e-12, table
        print("ok", table["ExposureEntropy@3"].iloc[0])
    """, PYTHONPATH=str(installed_example_plugin))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok")


def test_example_plugin_can_be_blocked(installed_example_plugin):
    result = run_python("""
        import ir_measures, pairmeasures
        print("ExposureEntropy" in ir_measures.measures.registry)
    """, PYTHONPATH=str(installed_example_plugin), PAIRMEASURES_DISABLE_PLUGINS="exposure")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_measure_name_clash_is_skipped_with_a_warning(tmp_path, monkeypatch):
    (tmp_path / "clash_plugin.py").write_text(textwrap.dedent("""
        import pairmeasures as pm
        class _Duo(pm.PairMeasure):
            NAME = "Duo"
        @pm.hookimpl
        def pairmeasures_measures():
            return [_Duo()]
    """))
    fake_distribution(tmp_path, "clash_plugin", "clash = clash_plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(PluginLoadWarning, match="'clash'.*'Duo' is the name of a built-in measure"):
        pm.register_plugins(plugin_manager())
    assert type(ir_measures.measures.registry["Duo"]).__module__ == "pairmeasures.measures.duo"


def test_a_plugin_cannot_take_a_builtin_name_even_when_it_registers_first(tmp_path, monkeypatch):
    (tmp_path / "early_plugin.py").write_text(textwrap.dedent("""
        import pairmeasures as pm
        class _rKL(pm.PairMeasure):
            NAME = "rKL"
        @pm.hookimpl(tryfirst=True)
        def pairmeasures_measures():
            return [_rKL()]
    """))
    fake_distribution(tmp_path, "early_plugin", "early = early_plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(ir_measures.measures.registry, "rKL")  # as in a fresh process
    with pytest.warns(PluginLoadWarning, match="'early'.*'rKL' is the name of a built-in measure"):
        pm.register_plugins(plugin_manager())
    assert ir_measures.measures.registry["rKL"] is pm.rKL


def test_plugins_that_exit_or_raise_base_exceptions_are_contained(tmp_path, monkeypatch):
    (tmp_path / "exiting_plugin.py").write_text("import sys\nsys.exit('no GPU here')\n")
    fake_distribution(tmp_path, "exiting_plugin", "exiting = exiting_plugin")
    (tmp_path / "hook_exit_plugin.py").write_text(textwrap.dedent("""
        import sys
        import pairmeasures as pm
        @pm.hookimpl
        def pairmeasures_measures():
            sys.exit(3)
        @pm.hookimpl
        def pairmeasures_side_info_schemes():
            return 42
    """))
    fake_distribution(tmp_path, "hook_exit_plugin", "hook_exit = hook_exit_plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(PluginLoadWarning) as record:
        pm.register_plugins(plugin_manager())
    messages = " ".join(str(w.message) for w in record)
    assert "'exiting'" in messages and "SystemExit: no GPU here" in messages
    assert "'hook_exit' failed in pairmeasures_measures() and is skipped: SystemExit: 3" in messages
    assert "'hook_exit' failed in pairmeasures_side_info_schemes()" in messages
    assert isinstance(ir_measures.measures.registry["Duo"], pm.PairMeasure)


def test_example_plugin_in_help_and_measures(installed_example_plugin):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(installed_example_plugin), str(ROOT)])}
    run = [sys.executable, "-m", "pairmeasures"]
    help_text = subprocess.run([*run, "--help"], capture_output=True, text=True, env=env, timeout=300).stdout
    assert "pairmeasures_exposure  ExposureEntropy" in help_text
    shown = subprocess.run([*run, "measures", "ExposureEntropy"], capture_output=True, text=True, env=env, timeout=300)
    assert shown.returncode == 0, shown.stderr
    assert "- direction: `higher-fairer`" in shown.stdout and "- range: [0, 1]" in shown.stdout


def test_example_plugin_measure_is_not_a_builtin():
    """The example plugin shows how to add what the library lacks: its measure must not be a built-in."""
    source = ROOT / "plugins" / "pairmeasures-exposure" / "pairmeasures_exposure" / "__init__.py"
    namespace: dict = {}
    exec(compile(source.read_text(encoding="utf-8"), str(source), "exec"), namespace)
    names = {m.NAME for m in pm.measures.BUILTIN_MEASURES}
    measure = namespace["ExposureEntropy"]
    assert measure.NAME not in names


def commands_with_plugins(folder: Path) -> list[subprocess.CompletedProcess]:
    """``import pairmeasures`` and two commands, as a user with the plugins in ``folder`` installed runs them."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)])}
    runs = [[sys.executable, "-c", "import pairmeasures, ir_measures; print(ir_measures.parse_measure('Duo@3'))"],
            [sys.executable, "-m", "pairmeasures", "measures", "Duo"],
            [sys.executable, "-m", "pairmeasures", "demo", "--measures", "Duo@5", "--format", "csv", "--quiet"]]
    return [subprocess.run(command, capture_output=True, text=True, env=env, timeout=300) for command in runs]


def test_a_plugin_scheme_that_is_not_an_identifier_is_skipped_naming_the_plugin(tmp_path):
    """It made ``import pairmeasures`` itself fail, with a ValueError naming no plugin."""
    (tmp_path / "dashed_plugin.py").write_text(textwrap.dedent("""
        import pairmeasures as pm
        @pm.hookimpl
        def pairmeasures_side_info_schemes():
            return {"my-scheme": lambda argument: None, "myscheme": lambda argument: None}
    """))
    fake_distribution(tmp_path, "dashed_plugin", "dashed = dashed_plugin")
    for result in commands_with_plugins(tmp_path):
        assert result.returncode == 0, result.stderr
        assert "PluginLoadWarning: pairmeasures plugin 'dashed': resource scheme 'my-scheme' cannot be registered (a " \
               "side-information scheme must be an identifier, got 'my-scheme'); skipped" in result.stderr
    check = run_python("import pairmeasures as pm; print(pm.sideinfo.schemes())", PYTHONPATH=os.pathsep.join(
        [str(tmp_path), str(ROOT)]))
    assert "'myscheme'" in check.stdout and "'my-scheme'" not in check.stdout  # the plugin's other scheme works


def test_a_plugin_measure_without_a_name_is_skipped_naming_the_plugin(tmp_path):
    """A class that sets ir_measures' ``__name__`` to a built-in's and no ``NAME`` killed every command with a bare
    AssertionError from ir_measures' registry."""
    (tmp_path / "nameless_plugin.py").write_text(textwrap.dedent("""
        import pairmeasures as pm
        class Duo(pm.PairMeasure):
            __name__ = "Duo"
        @pm.hookimpl
        def pairmeasures_measures():
            return [Duo()]
    """))
    fake_distribution(tmp_path, "nameless_plugin", "nameless = nameless_plugin")
    first, shown, demo = commands_with_plugins(tmp_path)
    for result in (first, shown, demo):
        assert result.returncode == 0, result.stderr
        assert "PluginLoadWarning: pairmeasures plugin 'nameless': its measure class Duo has NAME = None; skipped (set " \
               "NAME to the name measure strings use, e.g. NAME = 'Duo')" in result.stderr
        assert "AssertionError" not in result.stderr
    assert first.stdout.strip() == "Duo@3" and shown.stdout.startswith("## Duo: ")
