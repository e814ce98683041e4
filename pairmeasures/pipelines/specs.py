"""System specs: short pipeline texts such as ``bm25>>dense>>duogreedy(0.5)`` parsed into PyTerrier pipelines.

A spec is stages joined by ``>>``. The first stage retrieves (``bm25``, ``dense``, ``run:PATH`` or the
user's own ``module:attr``); later stages re-rank. What a stage needs is inserted before it: document
text, the ``polarity`` column (a :class:`~pairmeasures.pipelines.polarity.PolarityScorer` with the
context's polarity model). The CLI (``pairmeasures audit --systems``) and notebooks share this parser.
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    import pyterrier as pt

    from ..sideinfo.polarity import PolarityModel

__all__ = ["SpecError", "Stage", "SystemContext", "parse_spec", "canonical_spec", "build_system", "STAGES"]

#: Stage names, with what each does (``--help`` lists them).
STAGES = {
    "bm25": "BM25 retrieval through pyterrier-pisa (first stage only)",
    "dense": "first: dense retrieval (pyterrier-dr FlexIndex); later: bi-encoder re-ranking",
    "duogreedy(LAMBDA[, k=K][, mode=exact])": "re-rank the top K for lower DUO (pm.DuoGreedy); polarity is inserted",
    "run:PATH": "a TREC or TSV run file (first stage only)",
    "module:attr": "your own pt.Transformer, or a zero-argument callable returning one",
}

_NAME = re.compile(r"^([a-z_][a-z0-9_]*)\s*(?:\((.*)\))?$", re.IGNORECASE | re.DOTALL)
_MODULE_ATTR = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class SpecError(ValueError):
    """A system spec that cannot be parsed or built; the message names the spec, the stage and the fix."""


@dataclass(frozen=True)
class Stage:
    """One stage of a spec: ``name`` (``"run"`` and ``"module"`` for the two path forms), positional
    ``args`` and keyword ``options`` as parsed literals, and the stage's text."""

    name: str
    args: tuple = ()
    options: tuple = ()  # sorted (key, value) pairs
    text: str = ""

    def canonical(self) -> str:
        if self.name in ("run", "module"):
            return self.text
        parts = [_literal_text(a) for a in self.args] + [f"{k}={_literal_text(v)}" for k, v in self.options]
        return self.name + (f"({','.join(parts)})" if parts else "")


@dataclass
class SystemContext:
    """What specs are built against: the corpus ``source`` (a pairmeasures dataset id such as ``"pair/procon"``
    or a BEIR-layout folder), its mirror ``data``, the document ``text`` field(s), the polarity model of
    inserted :class:`PolarityScorer` stages (``None``: fitted on each query's candidates), the dense ``model``
    folder (``None``: the offline default), first-stage depth ``num_results`` and the default ``k`` of
    re-rankers."""

    source: str | os.PathLike
    data: Optional[str | os.PathLike] = None
    text: str = "text"
    polarity_model: Optional["PolarityModel"] = None
    model: Optional[str] = None
    num_results: int = 100
    k: int = 10
    _shared: dict = field(default_factory=dict, init=False, repr=False)

    def shared(self, key: str, make):
        """One object per key for every system built in this context (text lookups, scorers, encoders)."""
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]


def _literal(text: str, spec: str):
    value = text.strip()
    if not value:
        raise SpecError(f"system {spec!r}: an empty argument; write e.g. duogreedy(0.5) or duogreedy(0.5, k=10)")
    try:
        number = float(value)
    except ValueError:
        return value.strip("'\"")
    return int(number) if re.fullmatch(r"[+-]?\d+", value) else number


def _literal_text(value) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _split_stages(spec: str) -> list[str]:
    """``spec`` split at the ``>>`` that are outside parentheses."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(spec):
        char = spec[i]
        depth += char == "("
        depth -= char == ")"
        if depth < 0:
            raise SpecError(f"system {spec!r}: a ')' without its '(' at character {i + 1}")
        if depth == 0 and spec.startswith(">>", i):
            parts.append(spec[start:i])
            start = i = i + 2
            continue
        i += 1
    if depth:
        raise SpecError(f"system {spec!r}: a '(' is not closed")
    return parts + [spec[start:]]


def parse_spec(spec: str) -> list[Stage]:
    """The stages of ``spec`` (syntax only: nothing is loaded); a :class:`SpecError` says what is wrong."""
    if not isinstance(spec, str) or not spec.strip():
        raise SpecError(f"a system spec must be a non-empty text such as 'bm25>>dense', got {spec!r}")
    stages = []
    for raw in _split_stages(spec):
        text = raw.strip()
        if not text:
            raise SpecError(f"system {spec!r}: an empty stage (two '>>' in a row, or one at an end)")
        if text.startswith("run:"):
            stages.append(Stage("run", (text[4:].strip(),), (), text))
            continue
        if _MODULE_ATTR.match(text):
            stages.append(Stage("module", tuple(text.split(":", 1)), (), text))
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


def _document_text(context: SystemContext):
    from .text import DocumentText

    return context.shared("text", lambda: DocumentText(context.source, text=context.text, data=context.data))


def _polarity_scorer(context: SystemContext):
    from ..sideinfo.polarity import PolarityModel
    from .polarity import PolarityScorer

    return context.shared("polarity", lambda: PolarityScorer(context.polarity_model or PolarityModel()))


def _user_transformer(stage: Stage, spec: str):
    import pyterrier as pt

    module_name, attribute = stage.args
    try:
        value = importlib.import_module(module_name)
    except ImportError as exc:
        raise SpecError(f"system {spec!r}: cannot import module {module_name!r} ({exc}); is it on PYTHONPATH?") from None
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise SpecError(f"system {spec!r}: module {module_name!r} has no attribute {attribute!r}")
        value = getattr(value, part)
    if not isinstance(value, pt.Transformer) and callable(value):
        value = value()
    if not isinstance(value, pt.Transformer):
        raise SpecError(f"system {spec!r}: {stage.text} is a {type(value).__name__}, not a pt.Transformer (or a "
                        "zero-argument callable returning one)")
    return value


def _run_file(stage: Stage, spec: str):
    import pyterrier as pt

    from ..sideinfo.runfiles import read_run_file

    path = Path(stage.args[0]).expanduser()
    if not path.is_file():
        raise SpecError(f"system {spec!r}: run file {str(path)!r} does not exist")
    run = read_run_file(str(path)).rename(columns={"query_id": "qid", "doc_id": "docno"})
    return pt.Transformer.from_df(pt.model.add_ranks(run), uniform=False)


def _options(stage: Stage, spec: str, allowed: tuple, positional: int) -> dict:
    options = dict(stage.options)
    unknown = sorted(set(options) - set(allowed))
    if unknown or len(stage.args) > positional:
        raise SpecError(f"system {spec!r}: {stage.text!r} takes at most {positional} positional argument(s) and the "
                        f"options {', '.join(allowed) or 'none'}; got {stage.text}")
    return options


def build_system(spec: str, context: SystemContext) -> "pt.Transformer":
    """The PyTerrier pipeline of ``spec`` over ``context`` (see :data:`STAGES`)."""
    from . import retrieval
    from .duogreedy import DuoGreedy

    stages = parse_spec(spec)
    pipeline: Any = None
    has_text = has_polarity = False
    for position, stage in enumerate(stages):
        first = position == 0
        if stage.name in ("bm25", "run") and not first:
            raise SpecError(f"system {spec!r}: {stage.text!r} retrieves, so it must be the first stage")
        if stage.name == "bm25":
            _options(stage, spec, (), 0)
            step = retrieval.bm25(context.source, num_results=context.num_results, text=context.text,
                                  data=context.data)
        elif stage.name == "run":
            step = _run_file(stage, spec)
        elif stage.name == "module":
            step = _user_transformer(stage, spec)
            has_text = has_polarity = False
        elif stage.name == "dense":
            _options(stage, spec, (), 0)
            from .dense import bi_encoder, dense_retriever

            if first:
                step = dense_retriever(context.source, context.model, num_results=context.num_results,
                                       text=context.text, data=context.data)
            else:
                encoder = context.shared("bi_encoder", lambda: bi_encoder(context.model))
                step = encoder if has_text else _document_text(context) >> encoder
                has_text = True
        elif stage.name == "duogreedy":
            options = _options(stage, spec, ("k", "mode"), 1)
            if not stage.args:
                raise SpecError(f"system {spec!r}: duogreedy needs its Lambda, e.g. duogreedy(0.5)")
            try:
                step = DuoGreedy(stage.args[0], options.get("k", context.k), mode=options.get("mode", "greedy"))
            except ValueError as exc:
                raise SpecError(f"system {spec!r}: {stage.text}: {exc}") from None
            if not has_polarity:
                step = _polarity_scorer(context) >> step
                if not has_text:
                    step = _document_text(context) >> step
            has_text = has_polarity = True
        else:
            raise SpecError(f"system {spec!r}: unknown stage {stage.name!r}; stages: {', '.join(STAGES)}")
        if first and stage.name not in ("bm25", "run", "dense", "module"):
            raise SpecError(f"system {spec!r}: {stage.text!r} re-ranks, so it needs a first stage that retrieves "
                            f"(e.g. bm25>>{stage.text})")
        pipeline = step if pipeline is None else pipeline >> step
    return pipeline
