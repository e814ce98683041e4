"""``module:attr``: the user's own ``pt.Transformer``, or a zero-argument callable returning one; never cached
(its code is not known to the run cache)."""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Optional

from .registry import SpecError, Stage, StageType, register_stage

_MODULE_ATTR = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def build(stage: Stage, context, position: int):
    import pyterrier as pt

    module_name, attribute = stage.args
    try:
        value = importlib.import_module(module_name)
    except ImportError as exc:
        raise SpecError(f"cannot import module {module_name!r} ({exc}); is it on PYTHONPATH?") from None
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise SpecError(f"module {module_name!r} has no attribute {attribute!r}")
        value = getattr(value, part)
    if not isinstance(value, pt.Transformer) and callable(value):
        try:
            inspect.signature(value).bind()
        except TypeError:
            raise SpecError(f"{stage.text} needs arguments; name a pt.Transformer or a zero-argument "
                            "callable returning one") from None
        except ValueError:  # no signature to read (some builtins): call it and see
            pass
        value = value()
    if not isinstance(value, pt.Transformer):
        raise SpecError(f"{stage.text} is a {type(value).__name__}, not a pt.Transformer (or a "
                        "zero-argument callable returning one)")
    return value


def match(text: str) -> Optional[tuple]:
    return tuple(text.split(":", 1)) if _MODULE_ATTR.match(text) else None


MODULE = register_stage(StageType(
    "module", "module:attr", "your own pt.Transformer, or a zero-argument callable returning one",
    "mypackage.systems:build", build, usage="module:attr", arguments=2, required=2, place="any", fresh="always",
    identity=lambda stage: None, match=match))
