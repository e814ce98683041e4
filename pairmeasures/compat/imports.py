"""Run code right after another library's module is imported, and replace its functions once.

:func:`after_import` is the one ``sys.meta_path`` finder of pairmeasures: the datasets register with ir_datasets
(:func:`pairmeasures.datasets.register_when_ir_datasets_loads`) and ``pt.Experiment`` is adapted
(:func:`pairmeasures.compat.adapt_when_loaded`) through it, so that ``import pairmeasures`` imports neither library.
:func:`replace_once` is how every patch of :mod:`pairmeasures.compat` is installed.
"""

from __future__ import annotations

import importlib.abc
import sys
from typing import Any, Callable, Iterable

__all__ = ["after_import", "replace_once"]


def after_import(module_name: str, callback: Callable[[], None]) -> None:
    """Call ``callback()`` now if ``module_name`` is imported, else once, right after an import has executed it.

    Nothing is imported here. The same ``callback`` given twice for one module runs once. The finder stays in
    ``sys.meta_path`` until the module is executed, so asking for its spec without importing it
    (``importlib.util.find_spec``) does not use it up; it finds nothing itself: the spec is the one the finders after
    it give, with the same loader object, whose ``exec_module`` runs the callbacks once it has run the module (and
    is the loader's own method again afterwards).
    """
    if module_name in sys.modules:
        callback()
        return
    finder = next((f for f in sys.meta_path if isinstance(f, _AfterImport)), None)
    if finder is None:
        finder = _AfterImport()
        sys.meta_path.insert(0, finder)
    waiting = finder.callbacks.setdefault(module_name, [])
    if callback not in waiting:
        waiting.append(callback)


class _AfterImport(importlib.abc.MetaPathFinder):
    """The finder of :func:`after_import`: module name -> the callbacks waiting for it."""

    def __init__(self) -> None:
        self.callbacks: dict[str, list[Callable[[], None]]] = {}

    def find_spec(self, name, path=None, target=None):
        if name not in self.callbacks:
            return None
        later = sys.meta_path[sys.meta_path.index(self) + 1:] if self in sys.meta_path else []
        for finder in later:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                if hasattr(spec.loader, "exec_module"):
                    self._call_after_execution(name, spec.loader)
                return spec
        return None

    def _call_after_execution(self, name: str, loader: Any) -> None:
        execute = loader.exec_module
        if getattr(execute, "_pairmeasures_after_import", None) == name:
            return  # already wrapped for this module

        def exec_module(module):
            execute(module)
            if module.__name__ != name or sys.modules.get(name) is not module:
                return  # a loader shared with other modules, or a module executed outside the import system
            if vars(loader).get("exec_module") is exec_module:
                del loader.exec_module  # the loader's own method again
            callbacks = self.callbacks.pop(name, [])
            if not self.callbacks and self in sys.meta_path:
                sys.meta_path.remove(self)
            for callback in callbacks:
                callback()

        exec_module._pairmeasures_after_import = name  # type: ignore[attr-defined]
        loader.exec_module = exec_module


#: The replacements installed by :func:`replace_once` (each installed once).
_INSTALLED: set = set()


def replace_once(owner: Any, name: str, adapt: Callable[[Callable], Callable], importers: Iterable[Any] = ()) -> bool:
    """Replace ``owner.name`` (a module's function or a class's method, also one the class inherits) by
    ``adapt(it)``, once, also in the ``importers`` (modules that imported it by name); ``False`` when there is none."""
    original = getattr(owner, name, None) if owner is not None else None
    if original is None:
        return False
    if original in _INSTALLED:
        return True
    adapted = adapt(original)
    _INSTALLED.add(adapted)
    setattr(owner, name, adapted)
    for target in importers:
        if vars(target).get(name) is original:
            setattr(target, name, adapted)
    return True
