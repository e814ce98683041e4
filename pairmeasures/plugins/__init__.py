"""Floor 6: plugins. Built-in and third-party measure families register through the same pluggy hooks.

Third-party plugins are found through the ``pairmeasures`` entry-point group. A plugin that
fails to load (import error or ``sys.exit`` at import, misspelt hook, hook raising or exiting) is
skipped with a :class:`PluginLoadWarning` naming it; everything else keeps working. A plugin
measure named like a built-in one, or without a ``NAME``, and a resource scheme that is not an identifier
are skipped too, each with a warning naming the plugin: built-ins win. Set
``PAIRMEASURES_DISABLE_PLUGIN_AUTOLOAD=1`` to load no third-party plugin, or
``PAIRMEASURES_DISABLE_PLUGINS=name,other`` to block some by entry-point name.
"""

from __future__ import annotations

import os
import warnings
from importlib import metadata

import pluggy

from .hookspecs import hookimpl

ENTRY_POINT_GROUP = "pairmeasures"

__all__ = ["hookimpl", "hook_results", "PluginLoadWarning", "plugin_manager", "register_plugins", "ENTRY_POINT_GROUP"]


class PluginLoadWarning(UserWarning):
    """A plugin could not be loaded or registered and was skipped."""


def _warn(name: str, what: str, exc: BaseException) -> None:
    warnings.warn(f"pairmeasures plugin {name!r} {what} and is skipped: {type(exc).__name__}: {exc}",
                  PluginLoadWarning, stacklevel=3)


def plugin_manager(load_entry_points: bool = True) -> pluggy.PluginManager:
    """A plugin manager with the built-in plugin and (unless disabled) every installed plugin."""
    from . import builtin, hookspecs

    manager = pluggy.PluginManager(ENTRY_POINT_GROUP)
    manager.add_hookspecs(hookspecs)
    manager.register(builtin, name="builtin")
    for name in filter(None, os.environ.get("PAIRMEASURES_DISABLE_PLUGINS", "").split(",")):
        manager.set_blocked(name.strip())
    if not load_entry_points or os.environ.get("PAIRMEASURES_DISABLE_PLUGIN_AUTOLOAD"):
        return manager
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if manager.is_blocked(entry_point.name) or manager.has_plugin(entry_point.name):
            continue
        try:
            manager.register(entry_point.load(), name=entry_point.name)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a broken plugin (even one calling sys.exit) must not break the package
            _warn(entry_point.name, f"({entry_point.value}) could not be loaded", exc)
            continue
        try:
            manager.check_pending()
        except pluggy.PluginValidationError as exc:
            manager.unregister(name=entry_point.name)
            _warn(entry_point.name, "implements a hook pairmeasures does not define", exc)
    return manager


def hook_results(manager: pluggy.PluginManager, hook_name: str, convert):
    """(plugin name, ``convert(result)``) per implementation of the hook ``hook_name``, built-in first, then in
    registration order; an implementation that raises, exits or returns what ``convert`` refuses is skipped with a
    :class:`PluginLoadWarning`."""
    impls = list(reversed(getattr(manager.hook, hook_name).get_hookimpls()))
    impls.sort(key=lambda impl: impl.plugin_name != "builtin")  # whatever tryfirst/trylast say
    for impl in impls:
        try:
            result = convert(impl.function() or ())
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # raising, exiting, or returning something unusable
            _warn(impl.plugin_name, f"failed in {hook_name}()", exc)
            continue
        yield impl.plugin_name, result


def register_plugins(manager: pluggy.PluginManager) -> None:
    """Register every plugin's resource schemes and measures, and the provider, with ir_measures."""
    import ir_measures

    from .. import sideinfo
    from ..measures import BUILTIN_MEASURES, PairMeasure, provider

    for name, schemes in hook_results(manager, "pairmeasures_side_info_schemes", dict):
        for scheme, factory in schemes.items():
            if scheme in sideinfo.schemes() and name != "builtin":
                warnings.warn(f"pairmeasures plugin {name!r}: resource scheme {scheme!r} is taken; skipped",
                              PluginLoadWarning, stacklevel=2)
                continue
            try:
                sideinfo.register_scheme(scheme, factory)
            except (ValueError, TypeError, AttributeError) as exc:  # e.g. a scheme that is not an identifier
                if name == "builtin":
                    raise
                warnings.warn(f"pairmeasures plugin {name!r}: resource scheme {scheme!r} cannot be registered "
                              f"({exc}); skipped", PluginLoadWarning, stacklevel=2)

    registry = ir_measures.measures.registry
    builtin_types: dict = {m.NAME: type(m) for m in BUILTIN_MEASURES}
    for name, measures in hook_results(manager, "pairmeasures_measures", list):
        for measure in measures:
            if not isinstance(measure, PairMeasure):
                warnings.warn(f"pairmeasures plugin {name!r}: {measure!r} is not a pairmeasures.PairMeasure; skipped",
                              PluginLoadWarning, stacklevel=2)
                continue
            if not isinstance(measure.NAME, str) or not measure.NAME.isidentifier():
                warnings.warn(f"pairmeasures plugin {name!r}: its measure class {type(measure).__qualname__} has NAME = "
                              f"{measure.NAME!r}; skipped (set NAME to the name measure strings use, e.g. "
                              f"NAME = {type(measure).__name__.lstrip('_')!r})", PluginLoadWarning, stacklevel=2)
                continue
            if name != "builtin" and builtin_types.get(measure.NAME, type(measure)) is not type(measure):
                warnings.warn(f"pairmeasures plugin {name!r}: {measure.NAME!r} is the name of a built-in measure, "
                              "which wins; skipped (rename the plugin's measure)", PluginLoadWarning, stacklevel=2)
                continue
            known = registry.get(measure.NAME)
            if known is None:
                ir_measures.measures.register(measure, name=measure.NAME)
            elif type(known) is not type(measure):
                warnings.warn(f"pairmeasures plugin {name!r}: a measure named {measure.NAME!r} is already "
                              f"registered ({type(known).__module__}); skipped", PluginLoadWarning, stacklevel=2)

    pipeline = ir_measures.DefaultPipeline.providers
    if all(getattr(p, "NAME", None) != provider.NAME for p in pipeline):
        pipeline.append(provider)
        ir_measures.providers.register(provider)
