"""What ``pairmeasures measures`` and ``pairmeasures --help`` say about the registered measures."""

from __future__ import annotations

import difflib
import shlex

from ir_measures.measures.base import _NOT_PROVIDED

from ..measures import DIRECTIONS, EXPERIMENT_PLUS, PairMeasure, RangedParam
from .tables import render


def registered() -> list[PairMeasure]:
    """Every pairmeasures measure registered with ir_measures, built-ins first, then plugins'."""
    import ir_measures

    return [m for name, m in ir_measures.measures.registry.items() if isinstance(m, PairMeasure) and name == m.NAME]


def family(measure: PairMeasure) -> str:
    """A built-in measure's module name (``group``), or the top-level package of a plugin's."""
    module = type(measure).__module__
    return module.rsplit(".", 1)[-1] if module.startswith("pairmeasures.measures.") else module.split(".")[0]


def families() -> dict[str, list[str]]:
    """Measure names by family, in registration order."""
    found: dict[str, list[str]] = {}
    for measure in registered():
        found.setdefault(family(measure), []).append(str(measure.NAME))
    return found


def listing() -> list[dict]:
    """One row per registered measure: name, direction, range, description, parameters, module."""
    return [{"measure": m.NAME, "direction": m.direction(), "range": m.value_range(), "description": m.SHORT_DESC,
             "parameters": ", ".join(p for p in m.SUPPORTED_PARAMS if p != "cutoff"), "module": type(m).__module__}
            for m in registered()]


def find(text: str) -> PairMeasure:
    """The measure that a name or measure string (``'Duo(signed=True)@10'``) names; a ValueError
    naming close names when there is none."""
    import ir_measures

    if isinstance(ir_measures.measures.registry.get(text), PairMeasure):
        return ir_measures.measures.registry[text]  # a bare name: no parameter check (Measured needs of=)
    from ..measures.parsing import parse_measure

    try:
        measure = parse_measure(text)
    except NameError:
        names = {str(m.NAME).lower(): str(m.NAME) for m in registered()}
        base = text.split("(")[0].split("@")[0].strip()
        close = [names[n] for n in difflib.get_close_matches(base.lower(), names, n=3, cutoff=0.5)]
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise ValueError(f"no measure named {base!r}; {hint}'pairmeasures measures' lists them all") from None
    if not isinstance(measure, PairMeasure):
        raise ValueError(f"{measure} is an ir_measures relevance measure, not a pairmeasures one; "
                         "see https://ir-measures.readthedocs.io for its parameters")
    return measure


def _type(dtype) -> str:
    if dtype is None:
        return "any"
    return " or ".join(t.__name__ for t in (dtype if isinstance(dtype, tuple) else (dtype,)))


def parameters(measure: PairMeasure) -> list[dict]:
    """Each parameter's name, type, default, choices and description (``cutoff`` is the ``@k``)."""
    rows = []
    for name, info in measure.SUPPORTED_PARAMS.items():
        if info.required:
            default = "required"
        else:
            default = "" if info.default is _NOT_PROVIDED else repr(info.default)
        if isinstance(info, RangedParam):
            choices = info.range_text()
        else:
            choices = "" if info.choices is _NOT_PROVIDED else ", ".join(map(repr, info.choices))
        rows.append({"parameter": "cutoff (@k)" if name == "cutoff" else name, "type": _type(info.dtype),
                     "default": default, "choices": choices, "description": info.desc or ""})
    return rows


def _shell(text: str) -> str:
    """``text`` quoted for a POSIX shell, in double quotes when it holds single quotes and nothing special."""
    if "'" in text and not any(c in text for c in '"$`\\!'):
        return f'"{text}"'
    return shlex.quote(text)


def describe(measure: PairMeasure) -> dict:
    """Everything ``pairmeasures measures NAME`` shows about ``measure`` (with its parameters)."""
    direction = measure.direction()
    given = bool(measure.params) or measure.NAME != str(measure)
    example = str(measure) if given else (measure.EXAMPLE or f"{measure.NAME}@10")
    return {
        "measure": str(measure),
        "name": measure.NAME,
        "pretty_name": getattr(measure, "PRETTY_NAME", measure.NAME),
        "description": measure.SHORT_DESC,
        "direction": direction,
        "direction_meaning": DIRECTIONS.get(direction, f"not one of {', '.join(DIRECTIONS)}"),
        "experiment_plus": EXPERIMENT_PLUS.get(direction, EXPERIMENT_PLUS["unknown"]),
        "range": measure.value_range(),
        "reference": measure.REFERENCE,
        "module": type(measure).__module__,
        "parameters": parameters(measure),
        "example": f"ir_measures.parse_measure({example!r})",
        "shell_example": f"pairmeasures eval QRELS RUN {_shell(example)}",
    }


def describe_markdown(info: dict) -> str:
    """:func:`describe`'s dict as Markdown."""
    import pandas as pd

    lines = [f"## {info['measure']}: {info['pretty_name']}", "", info["description"], "",
             f"- direction: `{info['direction']}`, {info['direction_meaning']}",
             f"- range: {info['range']}",
             f"- in pt.Experiment with a baseline, the `{info['measure']} +` column counts {info['experiment_plus']}",
             f"- reference: {info['reference'] or 'none given'}",
             f"- module: `{info['module']}`", "", "### Parameters", "",
             render(pd.DataFrame(info["parameters"]), "markdown").rstrip("\n"), "", "### Example", "",
             "```python", "import ir_measures, pairmeasures", f"measure = {info['example']}",
             "# pt.Experiment(systems, topics, qrels, eval_metrics=[measure])", "```", "",
             "```sh", info["shell_example"], "```"]
    return "\n".join(lines) + "\n"
