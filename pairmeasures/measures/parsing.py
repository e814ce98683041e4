"""Measure strings to measure objects: ``ir_measures.parse_measure`` with the messages a user can act on.

A measure string is parsed once, here, where it enters (``pairmeasures eval``, the audit's request, a suite); from
then on the measure *object* travels (the audit's cut-off curves and trade-off derive other cut-offs from it by
calling it with ``cutoff=k``, never by writing and parsing a string again). A parameter value the parser cannot read,
measures joined by commas, a parameter given twice or one an ``ir_measures`` measure does not have get one line
naming the measure and what to write instead.
"""

from __future__ import annotations

import difflib
from typing import Optional, Sequence

from .base import PairMeasure

__all__ = ["parse_measure", "parse_measures", "split_measure_texts", "repeated_parameter", "separator_problem",
           "foreign_parameter_problem", "parameter_problem"]


def parse_measure(text: str):
    """``ir_measures.parse_measure(text)``, where a parameter value its parser cannot read (``Duo@-1``,
    ``Duo(step=-1)``, ``Duo@abc``) gets the measure's own message (:func:`parameter_problem`), measures joined by
    commas are told to be separated by spaces, and where ``ir_measures`` would let a parameter given twice
    (``Duo(ties='system', ties='trec_eval')``, ``Duo(cutoff=5)@10``) keep its last value, or leave a parameter an
    ``ir_measures`` measure does not have (``nDCG(ties='system')``) to an assertion when it is evaluated, a
    ValueError says so."""
    import ir_measures

    repeated = repeated_parameter(text)
    if repeated:
        raise ValueError(repeated)
    try:
        measure = ir_measures.parse_measure(text)
    except ValueError as exc:
        raise ValueError(parameter_problem(text) or separator_problem(text) or str(exc)) from None
    problem = None if isinstance(measure, PairMeasure) else foreign_parameter_problem(measure)
    if problem:
        raise ValueError(problem)
    return measure


def _call_of(text: str):
    """``(the measure's name, its keyword nodes, the node after @ or None)`` of a measure string, or None when it
    is not one ``name(k=v, ...)@at``."""
    import ast

    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    at = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        at, node = node.right, node.left
    keywords = []
    if isinstance(node, ast.Call):
        keywords, node = node.keywords, node.func
    return (node.id, keywords, at) if isinstance(node, ast.Name) else None


def repeated_parameter(text: str) -> Optional[str]:
    """What to say of a measure string that gives a parameter twice (``ir_measures.parse_measure`` keeps the last
    value), counting ``@k`` as the measure's cut-off parameter; None when each is given once."""
    import ast

    import ir_measures

    call = _call_of(text)
    if call is None:
        return None
    name, keywords, at = call
    given = [(k.arg, ast.unparse(k.value)) for k in keywords if k.arg]
    measure = ir_measures.measures.registry.get(name)
    if at is not None and measure is not None:
        given.append((measure.AT_PARAM, f"@{ast.unparse(at)}"))
    for position, (param, value) in enumerate(given):
        earlier = next((v for p, v in given[:position] if p == param), None)
        if earlier is not None:
            return (f"{param} is given twice ({earlier} and {value}), and only one can hold: give each parameter "
                    "once")
    return None


def separator_problem(text: str) -> Optional[str]:
    """What to say of a measure string that joins measures with commas or semicolons (``nDCG@5,P@3``), or None."""
    pieces = _top_level_pieces(text, ",;")
    if pieces == _top_level_pieces(text) or not all(_call_of(piece) is not None for piece in pieces):
        return None
    return ("measures are separated by spaces, not commas or semicolons: "
            + (f"write {' '.join(pieces)}" if len(pieces) > 1 else "leave the comma out"))


def foreign_parameter_problem(measure) -> Optional[str]:
    """What to say of an ``ir_measures`` measure (not a pairmeasures one) with a parameter it does not have or an
    invalid value (which its providers would only assert on), or None."""
    from ir_measures import measures

    unset = measures.base._NOT_PROVIDED
    supported = getattr(measure, "SUPPORTED_PARAMS", None)
    params = getattr(measure, "params", None)
    if not isinstance(supported, dict) or not isinstance(params, dict):
        return None
    unknown = sorted(set(params) - set(supported))
    if unknown:
        ties = ("; ties= orders documents of equal score for the bias measures: an ir_measures measure orders them "
                "as its provider does (trec_eval: by document id), so leave it out") if "ties" in unknown else ""
        return (f"{measure.NAME} has no parameter {', '.join(map(repr, unknown))} (its parameters: "
                f"{', '.join(supported) or 'none'}){ties}")
    for name, info in supported.items():
        value = params.get(name, unset)
        if not info.validate(value):
            if value is unset:
                return f"{measure.NAME} needs {name}= ({info.desc})"
            choices = "" if info.choices is unset else f" (one of {list(info.choices)})"
            return f"{measure.NAME}: invalid {name}={value!r}; expected {info.desc or info.dtype}{choices}"
    return None


def parse_measures(texts: list[str]) -> list:
    """Measures from measure strings, without repeats, in the order given; resources named in them are
    checked now. A ValueError names the first string that does not parse."""
    import ir_measures

    measures: list = []
    for text in texts:
        try:
            measure = parse_measure(text)
        except NameError:
            base = text.split("(")[0].split("@")[0].strip()
            close = difflib.get_close_matches(base, list(ir_measures.measures.registry), n=3, cutoff=0.5)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise ValueError(f"measure {text!r}: no measure named {base!r}{hint} ('pairmeasures measures' lists "
                             "the bias measures)") from None
        except ValueError as exc:
            raise ValueError(f"measure {text!r}: {exc}") from None
        if isinstance(measure, PairMeasure):
            measure.check_resources()
        if measure not in measures:
            measures.append(measure)
    return measures


def parameter_problem(text: str) -> Optional[str]:
    """The measure's own message about the parameter values of a measure string that ``ir_measures.parse_measure``
    rejects with its generic one: its parser takes only literal numbers and quoted text, so ``Duo@-1``,
    ``Duo(step=-1)`` and ``Duo@abc`` fail there. Read again with negative numbers as numbers and bare words as
    text, the measure checks the values as ``pm.Duo(step=-1)`` does (a bare word it accepts gets "text values need
    quotes"); None when that finds nothing (the string is malformed otherwise)."""
    import ast

    import ir_measures

    bare: list[str] = []

    def value(node: ast.expr):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = value(node.operand)
            if isinstance(inner, (int, float)) and not isinstance(inner, bool):
                return -inner if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.Name):
            bare.append(node.id)
            return node.id
        return ast.literal_eval(node)

    try:
        node = ast.parse(text.strip(), mode="eval").body
        params = {}
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            at, node = node.right, node.left
        else:
            at = None
        if isinstance(node, ast.Call) and not node.args:
            params = {keyword.arg: value(keyword.value) for keyword in node.keywords if keyword.arg}
            node = node.func
        if not isinstance(node, ast.Name) or node.id not in ir_measures.measures.registry:
            return None
        measure = ir_measures.measures.registry[node.id]
        if at is not None:
            params[measure.AT_PARAM] = value(at)
    except (SyntaxError, ValueError, TypeError):
        return None
    try:
        measure(**params)
    except (ValueError, TypeError) as exc:
        return str(exc)
    named = next((f"{k}={v!r}" for k, v in params.items() if v in bare), None)
    return f"text values need quotes: write {named}" if named else None


def split_measure_texts(texts: Sequence[str]) -> list[str]:
    """Each argument cut at whitespace outside quotes and brackets, as the ``ir_measures`` command cuts its
    arguments (``"nDCG@10 P@5"`` is two measures) while ``"rKL(group='beir:a b', protected='con')@10"`` stays one."""
    return [piece for text in texts for piece in _top_level_pieces(text)]


def _top_level_pieces(text: str, separators: str = "") -> list[str]:
    """``text`` cut at whitespace (and at ``separators``) outside quotes and brackets, empty pieces left out."""
    pieces: list[str] = []
    depth, quote = 0, ""
    current: list[str] = []
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif (char.isspace() or char in separators) and depth <= 0:
            if current:
                pieces.append("".join(current))
            current = []
            continue
        current.append(char)
    if current:
        pieces.append("".join(current))
    return pieces


