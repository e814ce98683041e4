"""The audit's figures: one function per figure, each taking a tidy frame and returning a matplotlib Figure.

Figures are built on ``matplotlib.figure.Figure`` with the Agg canvas (no pyplot, no global state) and the
Okabe–Ito colour-blind-safe palette; :func:`save_png` writes them deterministically (no software or time
stamp in the PNG), so identical frames give byte-identical files. matplotlib is imported only when a figure
is drawn.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from .._atomic import write_atomically

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Okabe & Ito (2008), "Color Universal Design": distinguishable under the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
#: Markers cycled with the palette, so systems stay apart in greyscale and beyond eight colours.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")

#: Axis-label suffix per measure direction (:data:`pairmeasures.measures.base.DIRECTIONS`, plus relevance).
ARROWS = {"higher-better": "↑ higher is better", "lower-fairer": "↓ lower is fairer",
          "higher-fairer": "↑ higher is fairer", "signed": "↕ 0 is balanced", "neither": "no fair direction",
          "unknown": "direction unknown"}

#: Version of how the figures are drawn: a change to any figure bumps it, so PNGs kept by content are drawn again.
FIGURES_FORMAT = 3

SIZE = (7.0, 4.5)  # inches; saved at DPI
DPI = 120


def _plain(text) -> str:
    """``text`` shown literally: matplotlib would read ``$...$`` as mathematics."""
    return str(text).replace("$", r"\$")


def _check(frame, function: str, columns: Sequence[str], what: str = "frame") -> None:
    """One clear ValueError naming ``function`` and the missing column, or the empty frame."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{function}: {what} must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{function}: {what} lacks column(s) {', '.join(map(repr, missing))} "
                         f"(it has {', '.join(map(repr, map(str, frame.columns))) or 'none'})")
    if frame.empty:
        raise ValueError(f"{function}: {what} is empty: there is nothing to plot")


def _numeric(frame, function: str, columns: Sequence[str]) -> None:
    for column in columns:
        if frame[column].dtype.kind not in "fiu":
            raise ValueError(f"{function}: column {column!r} must be numeric, got dtype {frame[column].dtype}")


def new_figure(size: tuple[float, float] = SIZE) -> Figure:
    """A figure on its own Agg canvas (no pyplot: no global state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=size, dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def style_axes(axes: Axes) -> None:
    """The house style of every plot's axes: a light grid behind the data, no top or right spine."""
    axes.grid(True, color="#dddddd", linewidth=0.6)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def _label(measure: str, direction: str | None) -> str:
    return _plain(measure) if direction is None else f"{_plain(measure)}  ({ARROWS.get(direction, direction)})"


def _ordered(frame, function: str, low: str, high: str) -> None:
    """A percentile interval need not contain the mean, but its low end is never above its high end."""
    if (frame[low] > frame[high]).any():
        raise ValueError(f"{function}: {low} is above {high} in some rows; an interval runs from low to high")


def _bars(axes: Axes, x, y, xci, yci, colour: str, width: float) -> None:
    """Interval bars from low to high (drawn as lines, not as errors around the mean: a percentile bootstrap
    interval need not contain the mean); an interval with a NaN end (too few queries) is not drawn."""
    if xci is not None:
        axes.hlines(y, *xci, color=colour, linewidth=width)
    if yci is not None:
        axes.vlines(x, *yci, color=colour, linewidth=width)


def _unique(frame, function: str, keys: Sequence[str], what: str) -> None:
    if frame.duplicated(list(keys)).any():
        raise ValueError(f"{function}: {what} has several rows for one ({', '.join(keys)}); give one each")


def _one_direction(frame, function: str, measure: str) -> str | None:
    directions = frame.loc[frame["measure"] == measure, "direction"].dropna().unique()
    if len(directions) > 1:
        raise ValueError(f"{function}: measure {measure!r} has several directions {sorted(directions)}; give one")
    return str(directions[0]) if len(directions) else None


def _checked_summary(summary, function: str, measures: Sequence[str]):
    """The summary indexed by (system, measure), after checking its columns, intervals and ``measures``."""
    _check(summary, function, ("system", "measure", "mean", "low", "high", "direction"), "summary")
    _numeric(summary, function, ("mean", "low", "high"))
    _ordered(summary, function, "low", "high")
    for measure in measures:
        if not (summary["measure"] == measure).any():
            raise ValueError(f"{function}: summary has no rows for measure {measure!r} "
                             f"(it has {', '.join(map(repr, summary['measure'].unique()))})")
    _unique(summary, function, ("system", "measure"), "summary")
    return summary.set_index(["system", "measure"])


def _relevance_bias_panel(axes: Axes, rows, systems: Sequence[str], relevance: str, bias: str,
                          direction: str | None, names: bool) -> int:
    """One point per system with both measures, its colour and marker by its place in ``systems``; how many."""
    drawn = 0
    for i, system in enumerate(systems):
        if (system, relevance) not in rows.index or (system, bias) not in rows.index:
            continue
        x, y = rows.loc[(system, relevance)], rows.loc[(system, bias)]
        colour = PALETTE[i % len(PALETTE)]
        _bars(axes, [x["mean"]], [y["mean"]], ([x["low"]], [x["high"]]), ([y["low"]], [y["high"]]), colour, 1.2)
        axes.plot(x["mean"], y["mean"], MARKERS[i % len(MARKERS)], color=colour, markersize=7)
        if names:
            axes.annotate(_plain(system), (x["mean"], y["mean"]), xytext=(6, 6), textcoords="offset points",
                          fontsize=9, color="#222222")
        drawn += 1
    if direction == "signed":
        axes.axhline(0.0, color="#777777", linewidth=0.8, linestyle="--")
    style_axes(axes)
    return drawn


def relevance_vs_bias(summary: pd.DataFrame, relevance: str, bias: str) -> Figure:
    """One point per system at (mean relevance, mean bias) with 95% CI bars on both axes (the summary
    frame's ``low``/``high``); the bias axis carries its direction arrow, a signed measure a line at 0."""
    function = "relevance_vs_bias"
    rows = _checked_summary(summary, function, (relevance, bias))
    systems = list(dict.fromkeys(summary["system"]))
    figure = new_figure()
    axes = figure.subplots()
    drawn = _relevance_bias_panel(axes, rows, systems, relevance, bias, _one_direction(summary, function, bias), True)
    if not drawn:
        raise ValueError(f"{function}: no system has both {relevance!r} and {bias!r} in the summary")
    axes.set_xlabel(_label(relevance, "higher-better"))
    axes.set_ylabel(_label(bias, _one_direction(summary, function, bias)))
    axes.set_title(f"Relevance against bias per system (95% CI), {drawn} systems")
    return figure


def _grid(count: int, panel: tuple[float, float]) -> tuple[Figure, list]:
    """A figure of ``count`` panels of ``panel`` inches, in rows of three (four panels: two by two), with room for a
    legend below; unused places are removed."""
    columns = 2 if count == 4 else min(count, 3)
    rows = math.ceil(count / columns)
    figure = new_figure((max(SIZE[0], panel[0] * columns), max(SIZE[1], panel[1] * rows + 0.9)))
    places = list(figure.subplots(rows, columns, squeeze=False).flat)
    for unused in places[count:]:
        figure.delaxes(unused)
    return figure, places[:count]


def _system_legend(figure: Figure, systems: Sequence[str], *, line: bool = False) -> None:
    """One legend below the panels: each system's colour and marker, as every panel draws it."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=PALETTE[i % len(PALETTE)], marker=MARKERS[i % len(MARKERS)],
                      linestyle="-" if line else "", markersize=4 if line else 7) for i in range(len(systems))]
    figure.legend(handles, [_plain(s) for s in systems], loc="outside lower center", ncols=min(len(systems), 4),
                  frameon=False, fontsize=9)


def relevance_vs_biases(summary: pd.DataFrame, relevance: str, biases: Sequence[str]) -> Figure:
    """Small multiples: one panel per bias measure of ``biases``, each with one point per system at (mean relevance,
    mean bias) and 95% CI bars on both axes (the summary's ``low``/``high``), titled with the measure's direction
    arrow; systems keep one colour and marker across panels (one legend below), and every panel shares the relevance
    axis."""
    function = "relevance_vs_biases"
    if isinstance(biases, str) or not biases:
        raise ValueError(f"{function}: biases must be a non-empty list of bias measures, got {biases!r}")
    rows = _checked_summary(summary, function, (relevance, *biases))
    systems = list(dict.fromkeys(summary["system"]))
    figure, panels = _grid(len(biases), (3.9, 3.1))
    columns = 2 if len(biases) == 4 else min(len(biases), 3)
    for place, (axes, bias) in enumerate(zip(panels, biases)):
        direction = _one_direction(summary, function, bias)
        if not _relevance_bias_panel(axes, rows, systems, relevance, bias, direction, False):
            raise ValueError(f"{function}: no system has both {relevance!r} and {bias!r} in the summary")
        axes.set_title(_label(bias, direction), fontsize=10)
        if place + columns >= len(biases):  # nothing below it: the relevance axis is named here
            axes.set_xlabel(_label(relevance, "higher-better"))
    low = min(axes.get_xlim()[0] for axes in panels)
    high = max(axes.get_xlim()[1] for axes in panels)
    for axes in panels:
        axes.set_xlim(low, high)
    _system_legend(figure, systems)
    figure.suptitle(f"{_plain(relevance)} against each bias measure, per system: means with 95% intervals")
    return figure


def breakdown_heatmap(cells: pd.DataFrame, measure: str, *, direction: str | None = None) -> Figure:
    """Mean of ``measure`` per field value (rows) and system (columns), each cell labelled with its mean
    and query count n; cells with no queries stay blank. A ``signed`` measure gets a diverging scale
    centred on 0, others a sequential one (both colour-blind safe)."""
    import numpy as np

    function = "breakdown_heatmap"
    _check(cells, function, ("field", "value", "system", "measure", "mean", "n"), "cells")
    _numeric(cells, function, ("mean", "n"))
    _unique(cells, function, ("field", "value", "system", "measure"), "cells")
    chosen = cells[cells["measure"] == measure]
    if chosen.empty:
        raise ValueError(f"{function}: cells have no rows for measure {measure!r} "
                         f"(they have {', '.join(map(repr, cells['measure'].unique()))})")
    fields = chosen["field"].unique()
    if len(fields) > 1:
        raise ValueError(f"{function}: cells mix fields {sorted(map(str, fields))}; pass one field's breakdown")
    means = chosen.pivot_table(index="value", columns="system", values="mean", aggfunc="first", sort=False)
    counts = chosen.pivot_table(index="value", columns="system", values="n", aggfunc="first", sort=False)
    values = means.to_numpy(dtype=float)
    rows, columns = values.shape
    size = (max(SIZE[0], 2.5 + 1.1 * columns), max(SIZE[1], 1.2 + 0.45 * rows))
    figure = new_figure(size)
    axes = figure.subplots()
    finite = values[np.isfinite(values)]
    if not finite.size:
        raise ValueError(f"{function}: every mean of {measure!r} in cells is NaN; there is nothing to colour")
    if direction == "signed":
        bound = float(np.abs(finite).max()) or 1.0
        image = axes.imshow(values, cmap="PuOr", vmin=-bound, vmax=bound, aspect="auto")
    else:
        image = axes.imshow(values, cmap="viridis", aspect="auto")
    for r in range(rows):
        for c in range(columns):
            if not math.isfinite(values[r, c]):
                continue
            red, green, blue, _ = image.cmap(image.norm(values[r, c]))
            ink = "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.5 else "white"
            axes.text(c, r, f"{values[r, c]:.3f}\nn={int(counts.iat[r, c])}", ha="center", va="center",
                      fontsize=8, color=ink)
    axes.set_xticks(range(columns), [_plain(s) for s in means.columns], rotation=30, ha="right")
    axes.set_yticks(range(rows), [_plain(v) for v in means.index])
    axes.set_xlabel("system")
    axes.set_ylabel(_plain(fields[0]))
    figure.colorbar(image, ax=axes, label=_label(f"mean {measure}", direction))
    axes.set_title(f"{_plain(measure)} by {_plain(fields[0])} and system (cell: mean, n queries)")
    return figure


def bias_by_cutoff(curves: pd.DataFrame, *, directions: Mapping[str, str] | None = None) -> Figure:
    """Mean bias against the cut-off k, one panel per measure family (in rows of three) and one line per system
    (the shape of the TExFAIR paper's Figure 2); ``directions`` (family -> direction) adds arrows to the panels'
    axes."""
    function = "bias_by_cutoff"
    _check(curves, function, ("system", "measure", "k", "value"), "curves")
    _numeric(curves, function, ("k", "value"))
    _unique(curves, function, ("system", "measure", "k"), "curves")
    families = list(dict.fromkeys(curves["measure"]))
    systems = list(dict.fromkeys(curves["system"]))
    figure, panels = _grid(len(families), (3.9, 2.9))
    columns = 2 if len(families) == 4 else min(len(families), 3)
    for place, (axes, family) in enumerate(zip(panels, families)):
        for i, system in enumerate(systems):
            line = curves[(curves["measure"] == family) & (curves["system"] == system)].sort_values("k")
            if line.empty:
                continue
            axes.plot(line["k"], line["value"], color=PALETTE[i % len(PALETTE)], marker=MARKERS[i % len(MARKERS)],
                      markersize=3, linewidth=1.5, label=_plain(system))
        style_axes(axes)
        axes.set_title(_plain(family))
        axes.set_ylabel(_label(f"mean {family}@k", (directions or {}).get(family)), fontsize=9)
        if place + columns >= len(families):
            axes.set_xlabel("cut-off k (documents)")
    _system_legend(figure, systems, line=True)
    figure.suptitle("Bias against the cut-off k, mean over queries")
    return figure


def tradeoff(curve: pd.DataFrame, relevance: str, bias: str, *, direction: str | None = None) -> Figure:
    """Mean relevance against mean bias as ``Lambda`` varies, one line per re-ranking method (DuoGreedy,
    MMR), each point annotated with its Lambda where it covers no other label (points drawn together share one);
    CI bars where ``relevance_low``/``_high`` and
    ``bias_low``/``_high`` are given."""
    function = "tradeoff"
    _check(curve, function, ("method", "Lambda", "relevance", "bias"), "curve")
    _numeric(curve, function, ("Lambda", "relevance", "bias"))
    _unique(curve, function, ("method", "Lambda"), "curve")
    for axis in ("relevance", "bias"):
        if (f"{axis}_low" in curve.columns) != (f"{axis}_high" in curve.columns):
            raise ValueError(f"{function}: curve has only one of {axis}_low and {axis}_high; give both or neither")
        if f"{axis}_low" in curve.columns:
            _numeric(curve, function, (f"{axis}_low", f"{axis}_high"))
            _ordered(curve, function, f"{axis}_low", f"{axis}_high")
    figure = new_figure()
    axes = figure.subplots()
    for i, method in enumerate(dict.fromkeys(curve["method"])):
        line = curve[curve["method"] == method].sort_values("Lambda")
        colour = PALETTE[i % len(PALETTE)]
        xci, yci = ((line[f"{axis}_low"], line[f"{axis}_high"]) if f"{axis}_low" in line.columns else None
                    for axis in ("relevance", "bias"))
        _bars(axes, line["relevance"], line["bias"], xci, yci, colour, 0.8)
        axes.plot(line["relevance"], line["bias"], color=colour, marker=MARKERS[i % len(MARKERS)], markersize=5,
                  linewidth=1.5, label=_plain(method))
    if direction == "signed":
        axes.axhline(0.0, color="#777777", linewidth=0.8, linestyle="--")
    style_axes(axes)
    axes.set_xlabel(_label(f"mean {relevance}", "higher-better"))
    axes.set_ylabel(_label(f"mean {bias}", direction))
    axes.legend(title="re-ranker", frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes.set_title("Relevance–bias trade-off over Lambda (λ=1 keeps the input order)")
    figure.canvas.draw()  # the layout settled: labels are placed in the coordinates it will be drawn in
    labels = []
    for i, method in enumerate(dict.fromkeys(curve["method"])):
        line = curve[curve["method"] == method].sort_values("Lambda")
        labels += _lambda_labels(axes, line, PALETTE[i % len(PALETTE)])
    _place_labels(figure, axes, labels)
    return figure


def _lambda_labels(axes: Axes, line, colour: str) -> list:
    """``(x, y, text, colour)`` of a method's Lambda labels: points drawn within a few pixels of each other share one
    label (``λ=0, 0.1, 0.25``), at the first of them."""
    import numpy as np

    groups: list = []
    for row in line.itertuples(index=False):
        where = axes.transData.transform((row.relevance, row.bias))
        if groups and np.hypot(*(where - groups[-1][0])) < 7:
            groups[-1][1].append(row.Lambda)
        else:
            groups.append((where, [row.Lambda], row.relevance, row.bias))
    return [(x, y, "λ=" + ", ".join(f"{value:g}" for value in values), colour) for _, values, x, y in groups]


#: Where a label may stand beside its point: (x, y) offset in points, horizontal and vertical alignment.
_PLACES = ((5, 3, "left", "bottom"), (5, -3, "left", "top"), (-5, 3, "right", "bottom"), (-5, -3, "right", "top"),
           (0, 7, "center", "bottom"), (0, -7, "center", "top"), (8, 0, "left", "center"), (-8, 0, "right", "center"),
           (12, 12, "left", "bottom"), (-12, -12, "right", "top"), (12, -12, "left", "top"), (-12, 12, "right", "bottom"))


def _overlap(one, other) -> float:
    return max(0.0, min(one.x1, other.x1) - max(one.x0, other.x0)) * max(0.0, min(one.y1, other.y1) - max(one.y0, other.y0))


def _place_labels(figure: Figure, axes: Axes, labels: Sequence[tuple]) -> None:
    """Annotate each ``(x, y, text, colour)`` beside its point, at the first of :data:`_PLACES` where it covers no
    label placed before it, no point and nothing outside the axes (else where it covers least)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.transforms import Bbox

    renderer = cast(FigureCanvasAgg, figure.canvas).get_renderer()  # every figure here is on an Agg canvas
    frame = axes.get_window_extent(renderer)
    marks = []
    for x, y, _, _ in labels:
        px, py = axes.transData.transform((x, y))
        marks.append(Bbox.from_bounds(px - 4, py - 4, 8, 8))
    placed: list = []
    for x, y, text, colour in labels:
        tried = []
        for dx, dy, ha, va in _PLACES:
            note = axes.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, fontsize=7,
                                 color=colour)
            box = note.get_window_extent(renderer)
            outside = box.width * box.height - _overlap(box, frame)
            tried.append((sum(_overlap(box, other) for other in placed + marks) + 10 * outside, note, box))
            if tried[-1][0] == 0:
                break
        _, kept, box = min(tried, key=lambda option: option[0])
        for _, note, _ in tried:
            if note is not kept:
                note.remove()
        kept.set_in_layout(False)
        placed.append(box)


def png_bytes(figure: Figure) -> bytes:
    """``figure`` as a PNG (DPI dots per inch) with no software or time stamp in the file; the figure's contents are
    released. The figure is laid out and drawn in one pass on its Agg canvas and the pixels written as ``savefig``
    writes them (``matplotlib.image.imsave``, the same bytes): ``savefig`` would lay a constrained figure out in a
    drawing pass of its own first."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.image import imsave

    canvas = figure.canvas if isinstance(figure.canvas, FigureCanvasAgg) else FigureCanvasAgg(figure)
    if figure.dpi != DPI:
        figure.set_dpi(DPI)
    canvas.draw()
    image = io.BytesIO()
    no_stamp: dict = {"Software": None}  # imsave leaves out a key given as None, as savefig's metadata does
    imsave(image, canvas.buffer_rgba(), format="png", origin="upper", dpi=DPI, metadata=no_stamp)
    figure.clear()
    return image.getvalue()


def save_png(figure: Figure, path: str | os.PathLike) -> None:
    """Write ``figure`` to ``path`` as a PNG (:func:`png_bytes`) atomically (a temporary file beside it, then a
    rename), then release the figure's contents."""
    path = Path(path)
    if not path.parent.is_dir():
        raise ValueError(f"save_png: folder {path.parent} does not exist; create it first")
    write_atomically(path, png_bytes(figure))
