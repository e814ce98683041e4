"""``module:attr``: the user's own ``pt.Transformer``, or a zero-argument callable returning one; never cached
(its code is not known to the run cache).

The user's code runs guarded: an exception it raises or a ``sys.exit`` it calls (a script without its
``if __name__ == "__main__":`` guard, imported as a module), when the module is imported, when the callable is
called or while the transformer ranks, becomes a :class:`SpecError` naming the system, the stage, the module and the
line of the module that raised, never a traceback or a silent exit. Ctrl-C (and SIGTERM, taken as Ctrl-C by the
command line) goes through untouched."""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Optional

from .registry import SpecError, Stage, StageType, register_stage

_MODULE_ATTR = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class UserCodeError(SpecError):
    """An exception raised (or a ``sys.exit`` called) by the user's code of a ``module:attr`` stage; the message names
    the system, the stage and the module, and the exception is its ``__cause__``."""


def _what(exc: BaseException, module_name: str, when: str) -> str:
    """``module 'mod' called sys.exit(0) when imported (at FILE:LINE)``: what the user's code did, in one line."""
    if isinstance(exc, SystemExit):
        did = f"called sys.exit({exc.code!r})"
        hint = ("; a script's top-level code runs when it is imported: put it under if __name__ == '__main__':"
                if when == "when imported" else "")
    elif isinstance(exc, SyntaxError):
        return (f"module {module_name!r} cannot be read: {exc.filename}:{exc.lineno}: {exc.msg}: Python cannot parse "
                "that line; fix it and run again")
    else:
        text = " ".join(str(exc).split())
        did, hint = f"raised {type(exc).__name__}{f': {text}' if text else ''}", ""
    where = _line_in(exc, module_name)
    return f"module {module_name!r} {did} {when}{f' (at {where})' if where else ''}{hint}"


def _line_in(exc: BaseException, module_name: str) -> str:
    """``FILE:LINE`` of the innermost frame of ``exc``'s traceback that runs the module's own code, or ""."""
    found, trace = "", exc.__traceback__
    while trace is not None:
        if trace.tb_frame.f_globals.get("__name__") == module_name:
            found = f"{trace.tb_frame.f_code.co_filename}:{trace.tb_lineno}"
        trace = trace.tb_next
    return found


def build(stage: Stage, context, position: int):
    import pyterrier as pt

    module_name, attribute = stage.args
    try:
        value = importlib.import_module(module_name)
    except KeyboardInterrupt:
        raise
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module_name + ".").startswith(exc.name + "."):  # a module it imports is missing
            raise SpecError(_what(exc, module_name, "when imported")) from exc
        raise SpecError(f"cannot import module {module_name!r} ({exc}); is it on PYTHONPATH?") from None
    except (Exception, SystemExit) as exc:  # the module's own code failed, or exited, as it was imported
        raise SpecError(_what(exc, module_name, "when imported")) from exc
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
        try:
            value = value()
        except KeyboardInterrupt:
            raise
        except (Exception, SystemExit) as exc:
            raise SpecError(_what(exc, module_name, f"when {attribute}() was called")) from exc
    if not isinstance(value, pt.Transformer):
        raise SpecError(f"{stage.text} is a {type(value).__name__}, not a pt.Transformer (or a "
                        "zero-argument callable returning one)")
    return _guarded_class()(value, stage.text, module_name)


_GUARDED: list = []


def _guarded_class() -> type:
    """``UserCode``, defined on first use (it subclasses ``pt.Transformer``): the user's transformer, whose failures
    while ranking name the system (set by :meth:`~pairmeasures.pipelines.specs.System.build`), stage and module."""
    if not _GUARDED:
        import pyterrier as pt

        class UserCode(pt.Transformer):
            #: Tells System.build to set :attr:`system` to its spec.
            names_system = True

            def __init__(self, inner, text: str, module: str):
                self.inner, self.text, self.module, self.system = inner, text, module, ""

            def transform(self, inp):
                try:
                    return self.inner.transform(inp)
                except KeyboardInterrupt:
                    raise
                except UserCodeError:
                    raise
                except (Exception, SystemExit) as exc:
                    named = (f"system {self.system!r}: " if self.system else "") + \
                        ("" if self.system == self.text else f"stage {self.text!r}: ")
                    raise UserCodeError(f"{named}{_what(exc, self.module, 'while ranking')}") \
                        from exc

            def __repr__(self) -> str:
                return repr(self.inner)

        _GUARDED.append(UserCode)
    return _GUARDED[0]


def match(text: str) -> Optional[tuple]:
    return tuple(text.split(":", 1)) if _MODULE_ATTR.match(text) else None


MODULE = register_stage(StageType(
    "module", "module:attr", "your own pt.Transformer, or a zero-argument callable returning one",
    "mypackage.systems:build", build, usage="module:attr", arguments=2, required=2, place="any", fresh="always",
    identity=lambda stage: None, match=match))
