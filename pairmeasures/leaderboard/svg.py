"""Relevance against bias on one task, with its Pareto front, as inline SVG (no library, no CDN).

A system is on the Pareto front when no other system is at least as relevant and at least as fair with one of the
two strictly better: relevance higher is better; fairness follows the bias measure's direction (lower, higher, or
closer to 0 for signed measures). Measures that no direction orders (``neither``) have no front.
"""

from __future__ import annotations

import html
import math
import re
from typing import Sequence

from .stats import RANKED, sort_key

__all__ = ["nice_ticks", "pareto_front", "scatter", "short_name"]

WIDTH, HEIGHT = 620, 400
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 24, 16, 52


def pareto_front(points: Sequence[tuple[str, float, float]], direction: str) -> list[str]:
    """The systems of ``points`` ``(system, bias, relevance)`` on the front, fairest first (none for a direction
    that does not order)."""
    if direction not in RANKED:
        return []
    keyed = [(name, sort_key(direction, x), y) for name, x, y in points]
    front = [name for name, fair, rel in keyed
             if not any(f2 <= fair and r2 >= rel and (f2 < fair or r2 > rel) for _, f2, r2 in keyed)]
    return sorted(front, key=lambda n: next(fair for name, fair, _ in keyed if name == n))


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return []
    if high - low < 1e-12:
        low, high = low - 0.5 * (abs(low) or 1) * 0.1, high + 0.5 * (abs(high) or 1) * 0.1
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    start = math.floor(low / step) * step
    ticks = []
    value = start
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    if ticks and ticks[-1] < high:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def _fmt(value: float) -> str:
    return f"{value:.3g}" if value != 0 else "0"


def scatter(points: Sequence[tuple[str, float, float]], *, x_label: str, y_label: str, direction: str,
            baseline: str = "", title: str = "") -> str:
    """An SVG scatter of ``points`` ``(system, bias value, relevance value)``: the front drawn and labelled, every
    point named in its tooltip, the baseline drawn as a square."""
    if not points:
        return ""
    xs, ys = [p[1] for p in points], [p[2] for p in points]
    x_ticks, y_ticks = nice_ticks(min(xs), max(xs)), nice_ticks(min(ys), max(ys))
    x0, x1, y0, y1 = x_ticks[0], x_ticks[-1], y_ticks[0], y_ticks[-1]
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM

    def px(x: float) -> float:
        return _LEFT + (x - x0) / ((x1 - x0) or 1) * plot_w

    def py(y: float) -> float:
        return _TOP + (1 - (y - y0) / ((y1 - y0) or 1)) * plot_h

    front = pareto_front(points, direction)
    on_front = set(front)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
             f'height="{HEIGHT}" role="img" aria-label="{html.escape(title or f"{y_label} against {x_label}")}">',
             f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}" fill="#fbfcfd" stroke="#d9dee5"/>']
    for tick in x_ticks:
        parts.append(f'<line x1="{px(tick):.1f}" y1="{_TOP}" x2="{px(tick):.1f}" y2="{_TOP + plot_h}" stroke="#eef1f5"/>'
                     f'<text x="{px(tick):.1f}" y="{_TOP + plot_h + 16}" font-size="11" text-anchor="middle" '
                     f'fill="#5f6b7a">{_fmt(tick)}</text>')
    for tick in y_ticks:
        parts.append(f'<line x1="{_LEFT}" y1="{py(tick):.1f}" x2="{_LEFT + plot_w}" y2="{py(tick):.1f}" stroke="#eef1f5"/>'
                     f'<text x="{_LEFT - 6}" y="{py(tick) + 4:.1f}" font-size="11" text-anchor="end" '
                     f'fill="#5f6b7a">{_fmt(tick)}</text>')
    if direction == "signed" and x0 < 0 < x1:
        parts.append(f'<line x1="{px(0):.1f}" y1="{_TOP}" x2="{px(0):.1f}" y2="{_TOP + plot_h}" stroke="#9aa5b4" '
                     'stroke-dasharray="4 3"/>')
    parts.append(f'<text x="{_LEFT + plot_w / 2:.1f}" y="{HEIGHT - 12}" font-size="12" text-anchor="middle" '
                 f'fill="#1d2430">{html.escape(x_label)}</text>'
                 f'<text transform="translate(16 {_TOP + plot_h / 2:.1f}) rotate(-90)" font-size="12" '
                 f'text-anchor="middle" fill="#1d2430">{html.escape(y_label)}</text>')
    where = {name: (px(x), py(y)) for name, x, y in points}
    if len(front) > 1:
        path = " ".join(f"{where[n][0]:.1f},{where[n][1]:.1f}" for n in front)
        parts.append(f'<polyline points="{path}" fill="none" stroke="#2456a6" stroke-width="1.5" opacity="0.7"/>')
    for name, x, y in points:
        cx, cy = where[name]
        tip = html.escape(f"{name}: {x_label} {x:.4f}, {y_label} {y:.4f}" + (" (Pareto front)" if name in on_front else ""))
        colour = "#2456a6" if name in on_front else "#8b96a5"
        if name == baseline:
            parts.append(f'<rect x="{cx - 4.5:.1f}" y="{cy - 4.5:.1f}" width="9" height="9" fill="#fff" '
                         f'stroke="{colour}" stroke-width="2"><title>{tip} (baseline)</title></rect>')
        else:
            parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4.5" fill="{colour}" fill-opacity="0.85">'
                         f'<title>{tip}</title></circle>')
    parts += _labels([(name, *where[name]) for name in front[:12]], _LEFT + plot_w)
    parts.append("</svg>")
    return "".join(parts)


def short_name(name: str, limit: int = 30) -> str:
    """A system's name short enough to label a point: long stage arguments become ``(…)``
    (``bm25>>ce(…)>>duogreedy(0.25)``), and what is still too long is cut."""
    if len(name) <= limit:
        return name
    short = re.sub(r"\(([^()]{11,})\)", "(…)", name)
    return short if len(short) <= limit else short[: limit - 1] + "…"


def _labels(points: Sequence[tuple[str, float, float]], right: float) -> list[str]:
    """Text labels beside points, each put where it overlaps no label placed before it (above or below, right or
    left of its point); a label with no free place is left to the point's tooltip."""
    placed: list = []
    parts = []
    for name, cx, cy in points:
        label = short_name(name)
        width = 6.3 * len(label)
        for dx, dy in ((7, -6), (7, 14), (-7, -6), (-7, 14)):
            anchor = "start" if dx > 0 else "end"
            x0 = cx + dx if dx > 0 else cx + dx - width
            box = (x0, cy + dy - 10, x0 + width, cy + dy + 2)
            if box[2] > right + 20 or box[0] < _LEFT - 20:
                continue
            if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
                placed.append(box)
                parts.append(f'<text x="{cx + dx:.1f}" y="{cy + dy:.1f}" font-size="11" text-anchor="{anchor}" '
                             f'fill="#1d2430">{html.escape(label)}</text>')
                break
    return parts
