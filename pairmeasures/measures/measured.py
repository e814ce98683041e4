"""The ``Measured`` measure: how many queries another measure actually measured (not degenerate)."""

from __future__ import annotations

from typing import Optional

import numpy as np
from ir_measures import measures
from ir_measures.measures.base import SumAgg

from .base import MeasureValues, PairMeasure, SideInput
from .ranked import RankedLists
from .registry import register_builtin
from .sideinputs import noting_left_out

__all__ = ["Measured"]


class _Measured(PairMeasure):
    r"""Per query 1 when the measure ``of`` had something to measure, 0 when the query was degenerate (or
    had no results), whether ``of`` leaves such queries out (the default) or gives them its documented value; the
    aggregate is the sum, the number of measured queries:

    .. math::  \mathrm{Measured} = \sum_{q} [\,q \text{ is not degenerate for } \mathit{of}\,]

    Put it next to the measure in the same ``pt.Experiment`` or ``calc_aggregate`` call:
    ``Measured(of=Duo(rel=4)@10)``."""

    __name__ = "Measured"
    NAME = __name__
    PRETTY_NAME = "Measured queries"
    SHORT_DESC = "How many queries a pairmeasures measure had something to measure for (sum over queries)."
    SUPPORTED_PARAMS = {
        "of": measures.ParamInfo(dtype=str, required=True, desc="the pairmeasures measure whose measured queries are counted, e.g. of='Duo(rel=4)@10'"),
    }
    DEGENERATE = 0.0
    DEGENERATE_REASON = "no results"
    DIRECTION = "neither"
    RANGE = "0 or 1 per query; the aggregate is the number of measured queries"
    EXAMPLE = "Measured(of='Duo(rel=4)@10')"
    PAGES = ("getting-started.md",)

    def __call__(self, **params) -> "PairMeasure":
        """A copy counting the measured queries of ``of`` (a measure or its string, kept as the measure's canonical
        string: ``of="Duo(degenerate='exclude')@10"`` is ``of='Duo@10'``)."""
        of = params.get("of")
        if isinstance(of, str):
            import ir_measures

            try:
                of = ir_measures.parse_measure(of)
            except (ValueError, NameError, SyntaxError, TypeError, AssertionError):
                pass  # check_params names it
        if isinstance(of, measures.Measure):
            params["of"] = str(of)
        return super().__call__(**params)

    def check_params(self) -> None:
        super().check_params()
        self.counted()

    def counted(self) -> PairMeasure:
        """The measure whose queries are counted."""
        import ir_measures

        try:
            measure = ir_measures.parse_measure(self.param("of"))
        except (ValueError, NameError, SyntaxError) as exc:
            raise ValueError(f"{self.NAME}: of={self.param('of')!r} is not a measure ({exc})") from None
        if not isinstance(measure, PairMeasure) or isinstance(measure, _Measured):
            raise ValueError(f"{self.NAME}: of={self.param('of')!r} is not a pairmeasures measure; Measured counts "
                             "the queries a pairmeasures measure (Duo, rND, ...) had something to measure for")
        return measure

    def aggregator(self):
        return SumAgg()

    def excludes_degenerate(self) -> bool:
        return False

    def needs_relevance(self) -> bool:
        return self.counted().needs_relevance()

    def side_inputs(self) -> tuple[SideInput, ...]:
        return self.counted().side_inputs()

    def check_resources(self) -> None:
        self.counted().check_resources()

    def resource_example(self, side: SideInput) -> str:
        return self.counted().resource_example(side)

    def run_columns(self) -> list[str]:
        return self.counted().run_columns()

    def optional_run_columns(self) -> list[str]:
        return self.counted().optional_run_columns()

    def depth(self) -> Optional[int]:
        return self.counted().depth()

    def tie_policy(self) -> str:
        return self.counted().tie_policy()

    def evaluate(self, lists: RankedLists) -> MeasureValues:
        with noting_left_out():  # the measure counted says what it left out; the count does not say it again
            result = self.counted().evaluate(lists)
        degenerate = np.asarray(result.degenerate, dtype=bool)
        return MeasureValues(values=(~degenerate).astype(np.float64), degenerate=np.zeros(degenerate.size, dtype=bool))


Measured = _Measured()
register_builtin(Measured)
