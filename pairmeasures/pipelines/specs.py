"""System specs: short pipeline texts such as ``bm25>>dense>>duogreedy(0.5)`` parsed into PyTerrier pipelines.

A spec is stages joined by ``>>``. The first stage retrieves (``bm25``, ``dense``, ``run:PATH`` or the
user's own ``module:attr``); later stages re-rank. What a stage needs is inserted before it: document
text, the ``polarity`` column (a :class:`~pairmeasures.pipelines.polarity.PolarityScorer` with the
context's polarity model). The CLI (``pairmeasures audit --systems``) and notebooks share this parser.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    import pyterrier as pt

    from ..sideinfo.polarity import PolarityModel

__all__ = ["SpecError", "Stage", "SystemContext", "parse_spec", "canonical_spec", "build_system", "STAGES"]

#: Every stage, as written in a spec, with what it does and an example (``pairmeasures audit --help`` lists them).
STAGES = {
    "bm25": "BM25 retrieval through pyterrier-pisa (first stage only), e.g. bm25",
    "dense": "first: dense retrieval over a pyterrier-dr FlexIndex; later: bi-encoder re-ranking (text inserted); "
             "dense(PATH) uses the sentence-transformers folder PATH instead of the audit's --model, e.g. dense or "
             "bm25>>dense(models/ibbr-ts)",
    "ce(PATH)": "re-rank with the sentence-transformers CrossEncoder in folder PATH (text inserted), "
                "e.g. bm25>>ce(models/my-cross-encoder)",
    "duogreedy(LAMBDA[, k=K][, mode=exact])": "re-rank the top K for lower DUO (pm.DuoGreedy; polarity inserted), "
                                              "e.g. bm25>>duogreedy(0.5, k=20)",
    "mmr(LAMBDA[, k=K])": "re-rank the top K by maximal marginal relevance on the bi-encoder's document vectors "
                          "(pm.TopKMMR; vectors inserted), e.g. bm25>>dense>>mmr(0.5)",
    "most(+1|-1)": "the most biased ordering, toward that pole if given (pm.BiasedOrdering; polarity inserted), "
                   "e.g. bm25>>most(+1)",
    "least": "the least biased ordering, DUO = 0 (pm.BiasedOrdering; polarity inserted), e.g. bm25>>least",
    "run:PATH": "a TREC or TSV run file (first stage only), e.g. run:runs/bm25.trec",
    "module:attr": "your own pt.Transformer, or a zero-argument callable returning one, e.g. mypackage.systems:build",
}

#: name -> (positional arguments taken, how many of them are required, options, an example).
_SIGNATURES = {
    "bm25": (0, 0, (), "bm25"),
    "dense": (1, 0, (), "dense or dense(path/to/sentence-transformers-model)"),
    "ce": (1, 1, (), "ce(path/to/cross-encoder)"),
    "duogreedy": (1, 1, ("k", "mode"), "duogreedy(0.5, k=10)"),
    "mmr": (1, 1, ("k",), "mmr(0.5, k=10)"),
    "most": (1, 0, (), "most(+1)"),
    "least": (0, 0, (), "least"),
}
_FIRST_ONLY = ("bm25", "run")
_RETRIEVES = ("bm25", "run", "dense", "module")

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
    folder (``None``: the offline default), first-stage depth ``num_results``, the default ``k`` of
    re-rankers and where BM25 and dense indexes are kept (``index_dir``; ``None``: the cache directory)."""

    source: str | os.PathLike
    data: Optional[str | os.PathLike] = None
    text: str = "text"
    polarity_model: Optional["PolarityModel"] = None
    model: Optional[str] = None
    num_results: int = 100
    k: int = 10
    index_dir: Optional[str | os.PathLike] = None
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
    return int(value) if re.fullmatch(r"[+-]?\d+", value) else number


def _literal_text(value) -> str:
    """A literal as the canonical spec writes it: ``0``, ``0.0`` and ``0.`` all become ``0``."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


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

    return context.shared("polarity", lambda: PolarityScorer(context.polarity_model or PolarityModel(),
                                                                errors="skip"))


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
        try:
            inspect.signature(value).bind()
        except TypeError:
            raise SpecError(f"system {spec!r}: {stage.text} needs arguments; name a pt.Transformer or a zero-argument "
                            "callable returning one") from None
        except ValueError:  # no signature to read (some builtins): call it and see
            pass
        value = value()
    if not isinstance(value, pt.Transformer):
        raise SpecError(f"system {spec!r}: {stage.text} is a {type(value).__name__}, not a pt.Transformer (or a "
                        "zero-argument callable returning one)")
    return value


def _run_file(stage: Stage, spec: str):
    import pyterrier as pt

    from ..sideinfo.beir import DataFileError
    from ..sideinfo.runfiles import read_run_file

    path = Path(stage.args[0]).expanduser()
    if not path.is_file():
        raise SpecError(f"system {spec!r}: run file {str(path)!r} does not exist; write run:PATH with the path of a "
                        "TREC or TSV run file")
    try:
        run = read_run_file(str(path))
    except DataFileError as exc:
        raise SpecError(f"system {spec!r}: stage {stage.text!r}: {exc}") from None
    run = run.rename(columns={"query_id": "qid", "doc_id": "docno"})
    return pt.Transformer.from_df(pt.model.add_ranks(run), uniform=False)


def _check(stage: Stage, spec: str, first: bool) -> dict:
    """``stage``'s options (defaults not filled in), after checking its name, place and arguments."""
    if stage.name in ("run", "module"):
        if stage.name == "run" and not first:
            raise SpecError(f"system {spec!r}: {stage.text!r} retrieves, so it must be the first stage")
        return {}
    if stage.name not in _SIGNATURES:
        import difflib

        near = difflib.get_close_matches(stage.name, list(_SIGNATURES), n=1)
        raise SpecError(f"system {spec!r}: unknown stage {stage.name!r}" + (f"; did you mean {near[0]!r}?" if near else "")
                        + f" Stages: {', '.join(STAGES)}")
    positional, required, allowed, example = _SIGNATURES[stage.name]
    options = dict(stage.options)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise SpecError(f"system {spec!r}: stage {stage.text!r} has no option {', '.join(map(repr, unknown))}; its "
                        f"options: {', '.join(allowed) or 'none'} (e.g. {example})")
    if not required <= len(stage.args) <= positional:
        count = f"{positional} argument" if required == positional else f"at most {positional} argument"
        raise SpecError(f"system {spec!r}: stage {stage.text!r} takes {count}{'s' * (positional != 1)}, got "
                        f"{len(stage.args)}; write e.g. {example}")
    if stage.name in _FIRST_ONLY and not first:
        raise SpecError(f"system {spec!r}: {stage.text!r} retrieves, so it must be the first stage")
    if first and stage.name not in _RETRIEVES:
        raise SpecError(f"system {spec!r}: {stage.text!r} re-ranks, so it needs a first stage that retrieves "
                        f"(e.g. bm25>>{stage.text})")
    return options


def _reranker(stage: Stage, options: dict, spec: str, context: SystemContext):
    """The transformer of a re-ranking stage that needs no model loaded (DuoGreedy, TopKMMR, BiasedOrdering)."""
    from .duogreedy import BiasedOrdering, DuoGreedy
    from .mmr import TopKMMR

    example = _SIGNATURES[stage.name][3]
    try:
        if stage.name == "duogreedy":
            return DuoGreedy(stage.args[0], options.get("k", context.k), mode=options.get("mode", "greedy"))
        if stage.name == "mmr":
            return TopKMMR(stage.args[0], options.get("k", context.k))
        if stage.name == "most":
            pole = stage.args[0] if stage.args else None
            if pole not in (None, 1, -1):
                raise ValueError(f"the pole must be +1 or -1 (or none: most), got {pole!r}")
            return BiasedOrdering("most", pole=pole)
        return BiasedOrdering("least")
    except ValueError as exc:
        raise SpecError(f"system {spec!r}: stage {stage.text!r}: {exc}; write e.g. {example}") from None


def build_system(spec: str, context: SystemContext) -> "pt.Transformer":
    """The PyTerrier pipeline of ``spec`` over ``context`` (see :data:`STAGES`). Every stage is checked before
    anything is loaded or indexed; document text, ``polarity`` and document vectors are inserted where a stage
    needs them and an earlier one has not added them."""
    stages = parse_spec(spec)
    checked = [_check(stage, spec, position == 0) for position, stage in enumerate(stages)]
    rerankers = {i: _reranker(stage, options, spec, context) for i, (stage, options) in enumerate(zip(stages, checked))
                 if stage.name in ("duogreedy", "mmr", "most", "least")}
    for stage in stages:
        if stage.name == "ce" and not Path(str(stage.args[0])).expanduser().is_dir():
            raise SpecError(f"system {spec!r}: stage {stage.text!r}: cross-encoder folder {str(stage.args[0])!r} does "
                            "not exist; write ce(PATH) with the folder of a sentence-transformers CrossEncoder")
        if stage.name == "dense" and stage.args and not Path(str(stage.args[0])).expanduser().is_dir():
            raise SpecError(f"system {spec!r}: stage {stage.text!r}: model folder {str(stage.args[0])!r} does not "
                            "exist; write dense(PATH) with the folder of a sentence-transformers model (e.g. one "
                            "written by pairmeasures train-ibbr), or dense for --model")
    pipeline: Any = None
    has_text = has_polarity = False
    for position, stage in enumerate(stages):
        needs: list = []
        if stage.name == "bm25":
            from . import retrieval

            step = retrieval.bm25(context.source, num_results=context.num_results, text=context.text,
                                  data=context.data, index_dir=context.index_dir)
        elif stage.name == "run":
            step = _run_file(stage, spec)
        elif stage.name == "module":
            step = _user_transformer(stage, spec)
        elif stage.name == "dense" and position == 0:
            from .dense import dense_retriever

            step = dense_retriever(context.source, _dense_model(stage, context), num_results=context.num_results,
                                   text=context.text, data=context.data, index_dir=context.index_dir)
        elif stage.name == "dense":
            needs, step = ["text"], _bi_encoder(context, _dense_model(stage, context))
        elif stage.name == "ce":
            from .crossencoder import cross_encoder

            folder = str(Path(str(stage.args[0])).expanduser())
            needs, step = ["text"], context.shared(f"ce:{folder}", lambda folder=folder: cross_encoder(folder))
        elif stage.name == "mmr":
            needs, step = ["text"], rerankers[position]
            step.encoder = _bi_encoder(context).doc_encoder()
        else:
            needs, step = ["text", "polarity"], rerankers[position]
        if "polarity" in needs and not has_polarity:
            step = _polarity_scorer(context) >> step
            has_polarity = True
        if "text" in needs and not has_text:
            step = _document_text(context) >> step
            has_text = True
        if stage.name in _RETRIEVES and (position == 0 or stage.name == "module"):
            has_text = has_polarity = False  # a new frame (or one we know nothing of)
        pipeline = step if pipeline is None else pipeline >> step
    return pipeline


def _dense_model(stage: Stage, context: SystemContext) -> Optional[str]:
    """The model folder of a ``dense`` stage: its own ``dense(PATH)``, else the context's ``model``."""
    return str(Path(str(stage.args[0])).expanduser()) if stage.args else context.model


def _bi_encoder(context: SystemContext, model: Optional[str] = None):
    from .dense import bi_encoder

    model = model if model is not None else context.model
    return context.shared(f"bi_encoder:{model}", lambda: bi_encoder(model))
