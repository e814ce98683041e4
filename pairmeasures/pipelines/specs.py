"""System specs: short pipeline texts such as ``bm25>>dense>>duogreedy(0.5)``, parsed once into a :class:`System`.

A spec is stages joined by ``>>``. The first stage retrieves (``bm25``, ``dense``, ``run:PATH`` or the
user's own ``module:attr``); later stages re-rank. What a stage needs is inserted before it: document
text, the ``polarity`` column (a :class:`~pairmeasures.pipelines.polarity.PolarityScorer` with the
context's polarity model). Each stage is declared once, in its module of :mod:`pairmeasures.pipelines.stages`;
this module holds the language (parsing, canonical text) and :class:`System`, which the audit, its run cache,
its trade-off and the SEME material read. The CLI (``pairmeasures audit --systems``) and notebooks share it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from .context import SystemContext
from .stages import SpecError, Stage, StageType, stage_type, stage_types

if TYPE_CHECKING:
    import pyterrier as pt

__all__ = ["SpecError", "Stage", "StageType", "System", "SystemContext", "parse_spec", "canonical_spec",
           "build_system", "stage_listing"]

_NAME = re.compile(r"^([a-z_][a-z0-9_]*)\s*(?:\((.*)\))?$", re.IGNORECASE | re.DOTALL)


def stage_listing() -> dict[str, str]:
    """Every stage as written (``duogreedy(LAMBDA[, k=K][, mode=exact])``) with what it does and an example."""
    return {t.syntax: t.listing for t in stage_types().values()}


def __getattr__(name: str) -> Any:
    if name == "STAGES":  # derived from the registry when asked for (plugins may add stages)
        return stage_listing()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _literal(text: str, spec: str):
    value = text.strip()
    if not value:
        raise SpecError(f"system {spec!r}: an empty argument; write e.g. duogreedy(0.5) or duogreedy(0.5, k=10)")
    try:
        number = float(value)
    except ValueError:
        return value.strip("'\"")
    return int(value) if re.fullmatch(r"[+-]?\d+", value) else number


#: What starts a stage of a form of its own whose argument may be quoted: ``run:`` (``run:'my>>run.trec'``).
_PREFIX = re.compile(r"[a-z_][a-z0-9_.]*:", re.IGNORECASE)


def _split_stages(spec: str) -> list[str]:
    """``spec`` split at the ``>>`` that are outside parentheses and outside a quoted argument of a ``prefix:``
    stage (``run:'my>>run.trec'``, ``run:"..."``: the path between the quotes, read as written)."""
    parts, depth, start, i, quote = [], 0, 0, 0, ""
    while i < len(spec):
        char = spec[i]
        if quote:
            quote = "" if char == quote else quote
            i += 1
            continue
        if char in "'\"" and depth == 0 and _PREFIX.fullmatch(spec[start:i].strip()):
            quote = char
            i += 1
            continue
        depth += char == "("
        depth -= char == ")"
        if depth < 0:
            raise SpecError(f"system {spec!r}: a ')' without its '(' at character {i + 1}")
        if depth == 0 and spec.startswith(">>", i):
            parts.append(spec[start:i])
            start = i = i + 2
            continue
        i += 1
    if quote:
        raise SpecError(f"system {spec!r}: a {quote} is not closed; write the path between two of them, e.g. "
                        f"run:{quote}my>>run.trec{quote}")
    if depth:
        raise SpecError(f"system {spec!r}: a '(' is not closed")
    return parts + [spec[start:]]


def _matched(text: str) -> Optional[Stage]:
    """The stage of a text in a form of its own (``run:PATH``, ``module:attr``), or None."""
    for kind in stage_types().values():
        args = kind.match(text) if kind.match is not None else None
        if args is not None:
            return Stage(kind.name, tuple(args), (), text)
    return None


def parse_spec(spec: str) -> list[Stage]:
    """The stages of ``spec`` (syntax only: nothing is loaded); a :class:`SpecError` says what is wrong."""
    if not isinstance(spec, str) or not spec.strip():
        raise SpecError(f"a system spec must be a non-empty text such as 'bm25>>dense', got {spec!r}")
    stages = []
    for raw in _split_stages(spec):
        text = raw.strip()
        if not text:
            raise SpecError(f"system {spec!r}: an empty stage (two '>>' in a row, or one at an end)")
        matched = _matched(text)
        if matched is not None:
            stages.append(matched)
            continue
        match = _NAME.match(text)
        if not match:
            raise SpecError(f"system {spec!r}: cannot read stage {text!r}; stages look like bm25, dense, "
                            "duogreedy(0.5, k=10), run:PATH or module:attr")
        name, inside = match.group(1).lower(), match.group(2)
        args, options = [], {}
        for item in ([] if inside is None or not inside.strip() else inside.split(",")):
            if "=" in item:
                key, value = item.split("=", 1)
                options[key.strip()] = _literal(value, spec)
            elif options:
                raise SpecError(f"system {spec!r}: in {text!r} a positional argument follows a keyword one")
            else:
                args.append(_literal(item, spec))
        stages.append(Stage(name, tuple(args), tuple(sorted(options.items())), text))
    return stages


def canonical_spec(spec: str) -> str:
    """``spec`` in one normal form (no spaces, numbers as Python writes them): a key for caches and manifests."""
    return ">>".join(stage.canonical() for stage in parse_spec(spec))


def _checked_stage(stage: Stage, spec: str, first: bool) -> StageType:
    """The declaration of ``stage``, after checking its name, place and arguments."""
    try:
        kind = stage_type(stage.name)
    except SpecError as error:
        raise SpecError(f"system {spec!r}: {error}") from None
    if kind.match is None:
        options = dict(stage.options)
        unknown = sorted(set(options) - set(kind.options))
        if unknown:
            raise SpecError(f"system {spec!r}: stage {stage.text!r} has no option {', '.join(map(repr, unknown))}; "
                            f"its options: {', '.join(kind.options) or 'none'} (e.g. {kind.usage})")
        if not kind.required <= len(stage.args) <= kind.arguments:
            count = f"{kind.arguments} argument" if kind.required == kind.arguments else f"at most {kind.arguments} argument"
            raise SpecError(f"system {spec!r}: stage {stage.text!r} takes {count}{'s' * (kind.arguments != 1)}, got "
                            f"{len(stage.args)}; write e.g. {kind.usage}")
    if kind.place == "first" and not first:
        raise SpecError(f"system {spec!r}: {stage.text!r} retrieves, so it must be the first stage")
    if first and kind.place == "later":
        raise SpecError(f"system {spec!r}: {stage.text!r} re-ranks, so it needs a first stage that retrieves "
                        f"(e.g. bm25>>{stage.text})")
    return kind


@dataclass(frozen=True)
class System:
    """A system spec parsed once: its ``stages``, each with its declaration (:attr:`Stage.type`), checked for
    name, place and arguments. What the audit, the run cache, the trade-off and the SEME material read of a spec:
    :attr:`canonical`, :meth:`identity`, :attr:`needs`, :attr:`reads_polarity`, :meth:`split_before`; and
    :meth:`check` (files on disk) and :meth:`build` (the PyTerrier pipeline)."""

    spec: str
    stages: tuple

    @classmethod
    def parse(cls, spec: "str | System") -> "System":
        """The :class:`System` of ``spec``; a :class:`SpecError` names the spec, the stage and the fix."""
        if isinstance(spec, System):
            return spec
        stages = tuple(parse_spec(spec))
        for position, stage in enumerate(stages):
            _checked_stage(stage, spec, position == 0)
        return cls(spec, stages)

    def __str__(self) -> str:
        return self.spec

    @property
    def canonical(self) -> str:
        """The spec in one normal form (no spaces, numbers as Python writes them)."""
        return ">>".join(stage.canonical() for stage in self.stages)

    def identity(self) -> Optional[str]:
        """What identifies the system's runs in the run cache: its canonical text with the content of what its stages
        read (run files by sha256, model folders by a fingerprint of their files); None when a stage cannot be
        cached (the user's own code)."""
        parts = [stage.type.cache_identity(stage) for stage in self.stages]
        return None if any(part is None for part in parts) else ">>".join(str(part) for part in parts)

    @property
    def needs(self) -> frozenset:
        """What the stages after the first need inserted (``text``, ``polarity``, ``vectors``)."""
        return frozenset(need for stage in self.stages[1:] for need in stage.type.needs)

    @property
    def reads_polarity(self) -> bool:
        """Whether a stage reorders by polarity (and so needs the audit's polarity model)."""
        return "polarity" in self.needs

    def split_before(self, name: str) -> Optional[tuple["System", Stage]]:
        """``(the system of the stages before it, the stage)`` for the first stage called ``name`` after the first
        stage; None where there is none."""
        at = next((i for i, stage in enumerate(self.stages) if i > 0 and stage.name == name), None)
        if at is None:
            return None
        return System(">>".join(stage.text for stage in self.stages[:at]), self.stages[:at]), self.stages[at]

    def check(self) -> None:
        """What must exist on disk for the stages (run files readable, model folders present), without loading
        anything; a :class:`SpecError` names the spec and the stage."""
        for stage in self.stages:
            if stage.type.check is not None:
                self._named(stage.type.check, stage)

    def _named(self, call, stage: Stage, *rest) -> Any:
        try:
            return call(stage, *rest)
        except SpecError as error:
            raise SpecError(f"system {self.spec!r}: {error}") from None

    def build(self, context: SystemContext) -> "pt.Transformer":
        """The PyTerrier pipeline over ``context``. Every stage is checked (files, argument values) before anything
        is loaded or indexed; document text and ``polarity`` are inserted where a stage needs them and an earlier
        one has not added them."""
        pipeline: Any = None
        for step in self.steps(context):
            pipeline = step if pipeline is None else pipeline >> step
        return pipeline

    def prefix(self, stages: int) -> str:
        """The canonical text of the system of the first ``stages`` stages: two systems whose steps (:meth:`steps`)
        up to there are the same have the same prefix."""
        return ">>".join(stage.canonical() for stage in self.stages[:stages])

    def steps(self, context: SystemContext) -> list:
        """The pipeline of :meth:`build` as one transformer per stage, each with what is inserted before it (the
        pipeline runs them in turn): the output of the first ``j`` depends on :meth:`prefix` ``(j)`` alone."""
        self.check()
        for stage in self.stages:
            if stage.type.validate is not None:
                try:
                    stage.type.validate(stage)
                except SpecError:
                    raise
                except ValueError as exc:
                    raise SpecError(f"system {self.spec!r}: stage {stage.text!r}: {exc}; write e.g. "
                                    f"{stage.type.usage}") from None
        steps: list = []
        has_text = has_polarity = False
        for position, stage in enumerate(self.stages):
            kind = stage.type
            step = self._named(kind.build, stage, context, position)
            if getattr(step, "names_system", False):  # user code: its failures while ranking name the system
                step.system = self.spec
            needs = kind.needs if position > 0 else frozenset()
            if "polarity" in needs and not has_polarity:
                depth = getattr(step, "polarity_depth", None)  # a re-ranker of the top k reads that deep only
                step = context.polarity_scorer(depth) >> step
                has_polarity = depth is None  # the top k scored: a later stage may read other rows
            if "text" in needs and not has_text:
                step = context.document_text() >> step
                has_text = True
            if kind.fresh == "always" or (kind.fresh == "first" and position == 0):
                has_text = has_polarity = False  # a new frame (or one we know nothing of)
            steps.append(step)
        return steps


def build_system(spec: "str | System", context: SystemContext) -> "pt.Transformer":
    """The PyTerrier pipeline of ``spec`` over ``context`` (the stages: ``pairmeasures audit --help``, or
    :func:`stage_listing`). Every stage is checked before anything is loaded or indexed; document text,
    ``polarity`` and document vectors are inserted where a stage needs them and an earlier one has not added them."""
    return System.parse(spec).build(context)
