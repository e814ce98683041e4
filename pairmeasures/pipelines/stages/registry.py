"""What a stage of a system spec is: :class:`Stage` (one parsed stage), :class:`StageType` (its declaration) and
the registry of stage types.

A stage type is declared once, in its own module of :mod:`pairmeasures.pipelines.stages`, next to the code that
builds its transformer: its name and signature, an example, whether it retrieves (first stage only), re-ranks
(a later stage) or does either, what it needs inserted before it (document ``text``, ``polarity``), how it is
built from a :class:`~pairmeasures.pipelines.context.SystemContext`, what identifies it for the run cache, and
its help line. Plugins add stage types through the ``pairmeasures_stages`` hook. Nothing here imports PyTerrier.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, AbstractSet, Any, Callable, Optional

if TYPE_CHECKING:
    from ..context import SystemContext

__all__ = ["SpecError", "Stage", "StageType", "register_stage", "stage_type", "stage_types", "literal_text"]


class SpecError(ValueError):
    """A system spec that cannot be parsed or built; the message names the spec, the stage and the fix."""


def literal_text(value) -> str:
    """A literal as the canonical spec writes it: ``0``, ``0.0`` and ``0.`` all become ``0``."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


@dataclass(frozen=True)
class Stage:
    """One stage of a spec: ``name`` (``"run"`` and ``"module"`` for the two path forms), positional
    ``args`` and keyword ``options`` as parsed literals, and the stage's text."""

    name: str
    args: tuple = ()
    options: tuple = ()  # sorted (key, value) pairs
    text: str = ""

    def canonical(self) -> str:
        """The stage in one normal form (no spaces, numbers as Python writes them)."""
        if self.name in ("run", "module"):
            return self.text
        parts = [literal_text(a) for a in self.args] + [f"{k}={literal_text(v)}" for k, v in self.options]
        return self.name + (f"({','.join(parts)})" if parts else "")

    @property
    def type(self) -> "StageType":
        """The declaration of this stage (a :class:`SpecError` for an unknown name)."""
        return stage_type(self.name)


#: Where a stage may stand: ``first`` (it retrieves: first stage only), ``later`` (it re-ranks: after a first
#: stage that retrieves) or ``any`` (it retrieves as the first stage and re-ranks after one).
PLACES = ("first", "later", "any")

#: After which stages the result frame is a new one, so that ``text`` and ``polarity`` are inserted again
#: before a later stage that needs them: ``first`` (when it is the first stage) or ``always`` (a stage one
#: knows nothing of, such as a user's transformer); ``never`` (a re-ranker keeps the frame's columns).
FRESH = ("never", "first", "always")


@dataclass(frozen=True)
class StageType:
    """The declaration of a spec stage.

    - ``name``: as written in specs (``duogreedy``); ``syntax``: how it is written with its arguments, as the
      help lists it (``duogreedy(LAMBDA[, k=K][, mode=exact])``); ``help``: what it does, in one line;
      ``example``: a spec using it (``bm25>>duogreedy(0.5, k=20)``); ``usage``: the stage as error messages
      suggest writing it (``duogreedy(0.5, k=10)``).
    - ``arguments``/``required``: positional arguments taken and required; ``options``: keyword options.
    - ``place``: ``first``, ``later`` or ``any`` (:data:`PLACES`); ``fresh``: :data:`FRESH`.
    - ``needs``: what is inserted before it when no earlier stage added it: ``"text"`` (document text),
      ``"polarity"`` (the context's polarity scorer); ``"vectors"`` says it reads document vectors, which
      ``build`` gets from the context's bi-encoder.
    - ``build(stage, context, position)``: its ``pt.Transformer``; ``validate(stage)``: raises ``ValueError`` for
      argument values it cannot take (called before anything of any stage is built, so a bad value never waits
      for an index); ``check(stage)``: raises :class:`SpecError` for what must exist on disk (run files,
      model folders), without loading anything; ``identity(stage)``: what identifies it for the run cache (the
      content of the files it reads; ``None``: it cannot be cached, e.g. user code), by default its canonical
      text; ``match(text)``: for stages not written ``name(args)`` (``run:PATH``), the arguments of a stage
      text of this form, else None.
    """

    name: str
    syntax: str
    help: str
    example: str
    build: Callable[[Stage, "SystemContext", int], Any]
    usage: str = ""
    arguments: int = 0
    required: int = 0
    options: tuple = ()
    place: str = "later"
    fresh: str = "never"
    needs: AbstractSet[str] = frozenset()
    validate: Optional[Callable[[Stage], None]] = None
    check: Optional[Callable[[Stage], None]] = None
    identity: Optional[Callable[[Stage], Optional[str]]] = None
    match: Optional[Callable[[str], Optional[tuple]]] = None

    def __post_init__(self):
        if self.place not in PLACES or self.fresh not in FRESH:
            raise ValueError(f"stage {self.name!r}: place must be one of {PLACES} and fresh one of {FRESH}")
        if not 0 <= self.required <= self.arguments:
            raise ValueError(f"stage {self.name!r}: required must be between 0 and arguments")
        object.__setattr__(self, "needs", frozenset(self.needs))
        object.__setattr__(self, "usage", self.usage or self.name)

    @property
    def listing(self) -> str:
        """What ``pairmeasures audit --help`` says of it: the help line and the example."""
        return f"{self.help}, e.g. {self.example}"

    def cache_identity(self, stage: Stage) -> Optional[str]:
        return stage.canonical() if self.identity is None else self.identity(stage)


_TYPES: dict[str, StageType] = {}
_PLUGINS_LOADED = False
_LOCK = threading.Lock()


def register_stage(stage_type: StageType) -> StageType:
    """Add a stage type to the registry; returns it, so a module can write ``MY_STAGE = register_stage(StageType(...))``.

    A name already taken is a ``ValueError``, unless the stage type registered under it was built by the same
    function (the same module and qualified name of ``build``): then the new one replaces it, so that re-running the
    notebook cell or reloading the module that registers a stage works."""
    if not isinstance(stage_type, StageType):
        raise TypeError(f"register_stage takes a StageType, got {type(stage_type).__name__}")
    with _LOCK:
        known = _TYPES.get(stage_type.name)
        if known is not None and known is not stage_type and _defined_at(known) != _defined_at(stage_type):
            module, qualname = _defined_at(known)
            raise ValueError(f"a spec stage named {stage_type.name!r} is already registered (built by "
                             f"{module}.{qualname}); choose another name")
        _TYPES[stage_type.name] = stage_type
    return stage_type


def _defined_at(stage_type: StageType) -> tuple[str, str]:
    """Where the stage type's ``build`` is defined: its module and qualified name."""
    build = stage_type.build
    return (getattr(build, "__module__", None) or "?", getattr(build, "__qualname__", None) or repr(build))


def _load_plugin_stages() -> None:
    """Stage types from plugins (the ``pairmeasures_stages`` hook), once; a plugin stage named like a taken one
    is skipped with a warning."""
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    from ...plugins import PluginLoadWarning, hook_results, plugin_manager

    for plugin, types in hook_results(plugin_manager(), "pairmeasures_stages", list):
        if plugin == "builtin":
            continue
        for item in types:
            if not isinstance(item, StageType):
                warnings.warn(f"pairmeasures plugin {plugin!r}: {item!r} is not a pairmeasures StageType; skipped",
                              PluginLoadWarning, stacklevel=3)
            elif item.name in _TYPES:
                warnings.warn(f"pairmeasures plugin {plugin!r}: spec stage {item.name!r} is taken; skipped",
                              PluginLoadWarning, stacklevel=3)
            else:
                register_stage(item)


def stage_types() -> dict[str, StageType]:
    """Every stage type, built-in ones first (registered when this package is imported), by name."""
    _load_plugin_stages()
    return dict(_TYPES)


def stage_type(name: str) -> StageType:
    """The stage type called ``name``; a :class:`SpecError` suggests the nearest name for an unknown one."""
    types = stage_types()
    if name not in types:
        import difflib

        near = difflib.get_close_matches(name, list(types), n=1)
        raise SpecError(f"unknown stage {name!r}" + (f"; did you mean {near[0]!r}?" if near else "")
                        + f" Stages: {', '.join(t.syntax for t in types.values())}")
    return types[name]
