"""The audit's figures (pairmeasures.apps.plots) and its self-contained HTML report (pairmeasures.apps.report):
PNGs written through save_png and read back with matplotlib, the report parsed and rendered in headless
Chromium."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pairmeasures.apps import plots
from pairmeasures.apps.report import Section, render_report, write_report

pytestmark = pytest.mark.filterwarnings("error")  # a missing glyph or a bad errorbar warns: fail on it

SYSTEMS = ["bm25", "bm25>>dense", "<script>alert(1)</script>", "price $5 $x$"]


def summary() -> pd.DataFrame:
    rows = []
    for i, system in enumerate(SYSTEMS):
        rows.append(dict(system=system, measure="nDCG@10", mean=0.3 + 0.1 * i, low=0.25 + 0.1 * i,
                         high=0.36 + 0.1 * i, direction="higher-better"))
        rows.append(dict(system=system, measure="Duo@10", mean=0.2 - 0.03 * i, low=0.15 - 0.03 * i,
                         high=0.23 - 0.03 * i, direction="lower-fairer"))
        rows.append(dict(system=system, measure="RaB@10", mean=0.1 - 0.06 * i, low=0.05 - 0.06 * i,
                         high=0.14 - 0.06 * i, direction="signed"))
    return pd.DataFrame(rows)


def cells() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame([dict(field="domain", value=value, system=system, measure="Duo@10",
                              mean=rng.uniform(-0.5, 1), n=int(rng.integers(1, 40)))
                         for value in ["sports", "politics", "health", "(none)"] for system in SYSTEMS[:3]])


def curves(families=("Duo", "rKL")) -> pd.DataFrame:
    return pd.DataFrame([dict(system=system, measure=family, k=k, value=np.log1p(k) * (j + 1) / (i + 1))
                         for i, system in enumerate(SYSTEMS[:3]) for j, family in enumerate(families)
                         for k in range(1, 51)])


def curve(intervals: bool = True) -> pd.DataFrame:
    frame = pd.DataFrame([dict(method=method, Lambda=lam, relevance=0.5 - 0.1 * (1 - lam) * (j + 1),
                               bias=0.3 * lam + 0.05 * j)
                          for j, method in enumerate(["DuoGreedy", "MMR"]) for lam in [0, 0.25, 0.5, 0.75, 1]])
    if intervals:
        for axis in ("relevance", "bias"):
            frame[f"{axis}_low"], frame[f"{axis}_high"] = frame[axis] - 0.02, frame[axis] + 0.03
    return frame


#: Seven bias measures of three directions, as an audit with gold labels shows them.
BIASES = {"Duo@10": "lower-fairer", "rND@10": "lower-fairer", "rKL@10": "lower-fairer", "EXP@10": "lower-fairer",
          "TExFAIR@10": "higher-fairer", "NFaiRR@10": "higher-fairer", "RaB@10": "signed"}


def wide_summary() -> pd.DataFrame:
    rows = [dict(system=system, measure="nDCG@10", mean=0.3 + 0.1 * i, low=0.25 + 0.1 * i, high=0.36 + 0.1 * i,
                 direction="higher-better") for i, system in enumerate(SYSTEMS)]
    rows += [dict(system=system, measure=measure, mean=0.1 * j - 0.02 * i, low=0.1 * j - 0.02 * i - 0.05,
                  high=0.1 * j - 0.02 * i + 0.04, direction=direction)
             for j, (measure, direction) in enumerate(BIASES.items()) for i, system in enumerate(SYSTEMS)]
    return pd.DataFrame(rows)


#: Every figure: (function name, a call on good frames).
FIGURES = {
    "relevance_vs_bias": lambda: plots.relevance_vs_bias(summary(), "nDCG@10", "Duo@10"),
    "relevance_vs_biases": lambda: plots.relevance_vs_biases(summary(), "nDCG@10", ["Duo@10", "RaB@10"]),
    "relevance_vs_biases seven": lambda: plots.relevance_vs_biases(wide_summary(), "nDCG@10", list(BIASES)),
    "bias_by_cutoff seven": lambda: plots.bias_by_cutoff(curves(list(BIASES))),
    "relevance_vs_bias signed": lambda: plots.relevance_vs_bias(summary(), "nDCG@10", "RaB@10"),
    "breakdown_heatmap": lambda: plots.breakdown_heatmap(cells(), "Duo@10"),
    "breakdown_heatmap signed": lambda: plots.breakdown_heatmap(cells(), "Duo@10", direction="signed"),
    "bias_by_cutoff": lambda: plots.bias_by_cutoff(curves(), directions={"Duo": "lower-fairer"}),
    "tradeoff": lambda: plots.tradeoff(curve(), "nDCG@10", "Duo@10", direction="lower-fairer"),
    "tradeoff without CIs": lambda: plots.tradeoff(curve(intervals=False), "nDCG@10", "Duo@10"),
}


def image_stats(path: Path) -> tuple[float, int, float]:
    """(pixel variance, distinct colours, share of white pixels) of a PNG read by matplotlib."""
    from matplotlib.image import imread

    pixels = imread(str(path))[..., :3]
    flat = np.round(pixels.reshape(-1, 3) * 255).astype(np.int64)
    distinct = len(np.unique(flat[:, 0] * 65536 + flat[:, 1] * 256 + flat[:, 2]))
    return float(pixels.var()), distinct, float((flat == 255).all(axis=1).mean())


@pytest.mark.parametrize("name", FIGURES)
def test_figure_is_a_readable_non_trivial_png(name, tmp_path):
    path = tmp_path / "figure.png"
    plots.save_png(FIGURES[name](), path)
    variance, distinct, white = image_stats(path)
    assert variance > 0.01 and distinct >= 50 and white < 0.95, (variance, distinct, white)
    from matplotlib.image import imread

    height, width = imread(str(path)).shape[:2]
    assert width >= 7 * plots.DPI * 0.95 and height >= 4.5 * plots.DPI * 0.95  # report size, not a thumbnail
    assert [p.name for p in tmp_path.iterdir()] == ["figure.png"]  # the temporary file was renamed


@pytest.mark.parametrize("name", FIGURES)
def test_identical_frames_give_byte_identical_pngs_without_stamps(name, tmp_path):
    plots.save_png(FIGURES[name](), tmp_path / "a.png")
    plots.save_png(FIGURES[name](), tmp_path / "b.png")
    data = (tmp_path / "a.png").read_bytes()
    assert data == (tmp_path / "b.png").read_bytes()
    assert b"tIME" not in data and b"matplotlib" not in data.lower()


def test_figures_label_axes_with_direction_arrows_and_show_names_literally():
    figure = plots.relevance_vs_bias(summary(), "nDCG@10", "Duo@10")
    axes = figure.axes[0]
    assert "↓" in axes.get_ylabel() and "↑" in axes.get_xlabel() and axes.get_title()
    labels = [text.get_text() for text in axes.texts]
    assert len(labels) == len(SYSTEMS) and r"price \$5 \$x\$" in labels  # '$' is not read as mathematics
    assert "↕" in plots.relevance_vs_bias(summary(), "nDCG@10", "RaB@10").axes[0].get_ylabel()
    panels = plots.bias_by_cutoff(curves()).axes
    assert [axes.get_title() for axes in panels] == ["Duo", "rKL"]
    assert all(len(axes.lines) == 3 for axes in panels)  # one line per system in each family's panel
    trade = plots.tradeoff(curve(), "nDCG@10", "Duo@10").axes[0]
    assert {text.get_text() for text in trade.texts} == {f"λ={lam:g}" for lam in [0, 0.25, 0.5, 0.75, 1]}
    assert [t.get_text() for t in trade.get_legend().get_texts()] == ["DuoGreedy", "MMR"]
    heat = plots.breakdown_heatmap(cells(), "Duo@10").axes[0]
    assert len(heat.texts) == 12 and all("n=" in text.get_text() for text in heat.texts)


def test_intervals_are_drawn_from_low_to_high_even_off_the_mean_and_skipped_when_nan():
    frame = summary()
    frame.loc[0, ["low", "high"]] = [0.31, 0.4]  # a percentile interval beside its mean (skewed values)
    frame.loc[1, ["low", "high"]] = float("nan")  # too few queries for an interval
    axes = plots.relevance_vs_bias(frame, "nDCG@10", "Duo@10").axes[0]
    horizontal, vertical = axes.collections[0].get_segments()[0], axes.collections[1].get_segments()[0]
    assert horizontal.tolist() == [[0.31, 0.2], [0.4, 0.2]]
    assert vertical.size == 0  # the NaN interval draws nothing; the point is still there
    assert axes.lines[0].get_xydata().tolist() == [[0.3, 0.2]]


def test_small_multiples_put_each_bias_measure_in_a_grid_with_one_legend_and_one_relevance_axis():
    figure = plots.relevance_vs_biases(wide_summary(), "nDCG@10", list(BIASES))
    panels = figure.axes
    assert [axes.get_title().split("  (")[0] for axes in panels] == list(BIASES)  # one panel each, in order
    assert "↓" in panels[0].get_title() and "↑" in panels[4].get_title() and "↕" in panels[6].get_title()
    places = [(axes.get_subplotspec().rowspan.start, axes.get_subplotspec().colspan.start) for axes in panels]
    assert places == [(r, c) for r in range(3) for c in range(3)][:7]  # rows of three, not a strip of seven
    assert len({axes.get_xlim() for axes in panels}) == 1  # every panel on the same relevance axis
    assert [axes.get_xlabel() != "" for axes in panels] == [False] * 4 + [True] * 3  # named where nothing is below
    assert all(len(axes.lines) == len(SYSTEMS) + (measure == "RaB@10") for axes, measure in zip(panels, BIASES))
    (legend,) = figure.legends
    assert [text.get_text() for text in legend.get_texts()] == [s.replace("$", r"\$") for s in SYSTEMS]
    assert not any(axes.texts for axes in panels)  # systems are told apart by the legend, not by labels in the panels
    four = plots.relevance_vs_biases(wide_summary(), "nDCG@10", list(BIASES)[:4]).axes
    assert [(a.get_subplotspec().rowspan.start, a.get_subplotspec().colspan.start) for a in four] == \
        [(0, 0), (0, 1), (1, 0), (1, 1)]
    with pytest.raises(ValueError, match="relevance_vs_biases: biases must be a non-empty list"):
        plots.relevance_vs_biases(wide_summary(), "nDCG@10", [])
    with pytest.raises(ValueError, match="relevance_vs_biases: summary has no rows for measure 'ARP@10'"):
        plots.relevance_vs_biases(wide_summary(), "nDCG@10", ["Duo@10", "ARP@10"])


def test_bias_by_cutoff_is_a_grid_of_panels_with_one_legend():
    figure = plots.bias_by_cutoff(curves(list(BIASES)), directions={"Duo@10": "lower-fairer"})
    assert [axes.get_title() for axes in figure.axes] == list(BIASES)
    assert max(axes.get_subplotspec().colspan.start for axes in figure.axes) == 2  # three panels to a row
    assert max(axes.get_subplotspec().rowspan.start for axes in figure.axes) == 2
    assert len(figure.legends) == 1 and len(figure.legends[0].get_texts()) == 3


def test_lambda_labels_never_overlap_and_points_drawn_together_share_one():
    frame = curve()
    frame.loc[(frame["method"] == "MMR") & (frame["Lambda"] <= 0.25), ["relevance", "bias"]] = [0.3, 0.05]
    frame.loc[(frame["method"] == "DuoGreedy") & (frame["Lambda"] >= 0.75), ["relevance", "bias"]] = [0.5, 0.3]
    figure = plots.tradeoff(frame, "nDCG@10", "Duo@10")
    axes = figure.axes[0]
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    texts = [text.get_text() for text in axes.texts]
    assert sorted(texts) == sorted(["λ=0, 0.25", "λ=0.5", "λ=0.75", "λ=1", "λ=0", "λ=0.25", "λ=0.5", "λ=0.75, 1"])
    boxes = [text.get_window_extent(renderer) for text in axes.texts]
    frame_box = axes.get_window_extent(renderer)
    for i, one in enumerate(boxes):
        assert frame_box.x0 - 1 <= one.x0 and one.x1 <= frame_box.x1 + 1, texts[i]  # inside the axes
        for j, other in enumerate(boxes[:i]):
            assert not one.overlaps(other), (texts[i], texts[j])


#: (function, call with one column dropped from its frame, the column)
MISSING = [
    ("relevance_vs_bias", lambda c: plots.relevance_vs_bias(summary().drop(columns=c), "nDCG@10", "Duo@10"),
     ["system", "measure", "mean", "low", "high", "direction"]),
    ("relevance_vs_biases", lambda c: plots.relevance_vs_biases(summary().drop(columns=c), "nDCG@10", ["Duo@10"]),
     ["system", "measure", "mean", "low", "high", "direction"]),
    ("breakdown_heatmap", lambda c: plots.breakdown_heatmap(cells().drop(columns=c), "Duo@10"),
     ["field", "value", "system", "measure", "mean", "n"]),
    ("bias_by_cutoff", lambda c: plots.bias_by_cutoff(curves().drop(columns=c)), ["system", "measure", "k", "value"]),
    ("tradeoff", lambda c: plots.tradeoff(curve().drop(columns=c), "nDCG@10", "Duo@10"),
     ["method", "Lambda", "relevance", "bias"]),
]


@pytest.mark.parametrize("function, call, column",
                         [(f, call, c) for f, call, columns in MISSING for c in columns])
def test_a_missing_column_names_the_function_and_the_column(function, call, column):
    with pytest.raises(ValueError, match=rf"^{function}: .*lacks column\(s\) '{column}'"):
        call(column)


@pytest.mark.parametrize("function, call", [
    ("relevance_vs_bias", lambda: plots.relevance_vs_bias(summary().iloc[:0], "nDCG@10", "Duo@10")),
    ("relevance_vs_biases", lambda: plots.relevance_vs_biases(summary().iloc[:0], "nDCG@10", ["Duo@10"])),
    ("breakdown_heatmap", lambda: plots.breakdown_heatmap(cells().iloc[:0], "Duo@10")),
    ("bias_by_cutoff", lambda: plots.bias_by_cutoff(curves().iloc[:0])),
    ("tradeoff", lambda: plots.tradeoff(curve().iloc[:0], "nDCG@10", "Duo@10")),
])
def test_an_empty_frame_is_a_clear_error(function, call):
    with pytest.raises(ValueError, match=rf"^{function}: .* is empty: there is nothing to plot"):
        call()


def test_wrong_measures_types_and_shapes_are_clear_errors():
    with pytest.raises(ValueError, match=r"relevance_vs_bias: summary has no rows for measure 'rKL@10'.*'Duo@10'"):
        plots.relevance_vs_bias(summary(), "nDCG@10", "rKL@10")
    with pytest.raises(ValueError, match="breakdown_heatmap: cells have no rows for measure 'nDCG@10'"):
        plots.breakdown_heatmap(cells(), "nDCG@10")
    with pytest.raises(ValueError, match=r"relevance_vs_bias: summary has several rows for one \(system, measure\)"):
        plots.relevance_vs_bias(pd.concat([summary(), summary()]), "nDCG@10", "Duo@10")
    with pytest.raises(ValueError, match=r"bias_by_cutoff: curves has several rows for one \(system, measure, k\)"):
        plots.bias_by_cutoff(pd.concat([curves(), curves()]))
    with pytest.raises(ValueError, match=r"tradeoff: curve has several rows for one \(method, Lambda\)"):
        plots.tradeoff(pd.concat([curve(), curve()]), "nDCG@10", "Duo@10")
    with pytest.raises(ValueError, match=r"breakdown_heatmap: cells has several rows for one \(field, value"):
        plots.breakdown_heatmap(pd.concat([cells(), cells()]), "Duo@10")
    with pytest.raises(ValueError, match="breakdown_heatmap: every mean of 'Duo@10' in cells is NaN"):
        plots.breakdown_heatmap(cells().assign(mean=float("nan")), "Duo@10", direction="signed")
    with pytest.raises(ValueError, match="tradeoff: column 'bias' must be numeric"):
        plots.tradeoff(curve().assign(bias="high"), "nDCG@10", "Duo@10")
    with pytest.raises(ValueError, match="tradeoff: curve has only one of bias_low and bias_high"):
        plots.tradeoff(curve().drop(columns="bias_high"), "nDCG@10", "Duo@10")
    with pytest.raises(ValueError, match="relevance_vs_bias: low is above high in some rows"):
        plots.relevance_vs_bias(summary().assign(low=1.0), "nDCG@10", "Duo@10")
    with pytest.raises(ValueError, match="tradeoff: relevance_low is above relevance_high in some rows"):
        plots.tradeoff(curve().assign(relevance_low=1.0), "nDCG@10", "Duo@10")
    with pytest.raises(ValueError, match="breakdown_heatmap: cells mix fields"):
        plots.breakdown_heatmap(pd.concat([cells(), cells().assign(field="topic")]), "Duo@10")
    with pytest.raises(ValueError, match="bias_by_cutoff: curves must be a pandas DataFrame, got list"):
        plots.bias_by_cutoff([])  # type: ignore[arg-type]


def test_save_png_needs_an_existing_folder_and_keeps_the_old_file_on_failure(tmp_path):
    with pytest.raises(ValueError, match="save_png: folder .*missing does not exist"):
        plots.save_png(FIGURES["tradeoff"](), tmp_path / "missing" / "x.png")
    path = tmp_path / "x.png"
    path.write_bytes(b"old")

    class Broken:  # drawing it fails half-way
        @property
        def canvas(self):
            raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        plots.save_png(Broken(), path)  # type: ignore[arg-type]
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["x.png"]


def test_importing_the_modules_loads_neither_matplotlib_nor_pandas():
    code = ("import sys, pairmeasures.apps.plots, pairmeasures.apps.report; "
            "print(sorted(m for m in ('matplotlib', 'pandas') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


class Page(HTMLParser):
    """Every tag with its attributes, and the visible text, of an HTML page."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture
def report(tmp_path) -> tuple[Path, list[Section]]:
    (tmp_path / "figures").mkdir()
    images = []
    for name in ("relevance_vs_bias", "breakdown_heatmap", "tradeoff"):
        plots.save_png(FIGURES[name](), tmp_path / "figures" / f"{name}.png")
        images.append((f"<b>{name}</b>", tmp_path / "figures" / f"{name}.png"))
    table = summary().assign(n=[40, 38, 40] * len(SYSTEMS), reject=[True, False, False] * len(SYSTEMS))
    table.loc[0, "low"] = float("nan")
    sections = [Section("Leaderboard <of> systems", "First paragraph & <i>more</i>.\n\nSecond one.",
                        tables=[("Summary <table>", table)], images=images[:1]),
                Section("Breakdown", images=images[1:])]
    return tmp_path, sections


def test_report_is_self_contained_and_escapes_every_text(report):
    folder, sections = report
    page = render_report("Audit of <script>alert('x')</script>", sections, subtitle="pair/procon & more")
    assert "<script" not in page.lower() and "&lt;script&gt;" in page  # system names and the title escaped
    outside_images = re.sub(r"data:image/png;base64,[A-Za-z0-9+/]+=*", "data:", page)  # base64 has '//' in it
    assert not re.search(r"https?:|//|url\(|@import", outside_images, re.IGNORECASE), "external reference"
    parsed = Page()
    parsed.feed(page)
    sources = [attrs["src"] for tag, attrs in parsed.tags if "src" in attrs]
    assert not [attrs for tag, attrs in parsed.tags if "href" in attrs or tag in ("link", "script", "iframe")]
    assert len(sources) == 3 and all(src.startswith("data:image/png;base64,") for src in sources)
    assert base64.b64decode(sources[0].split(",", 1)[1]) == (folder / "figures" / "relevance_vs_bias.png").read_bytes()
    text = "".join(parsed.text)
    assert "Leaderboard <of> systems" in text and "First paragraph & <i>more</i>." in text
    assert "<b>tradeoff</b>" in text and "<script>alert(1)</script>" in text  # shown literally, as text
    assert [tag for tag, _ in parsed.tags].count("p") == 3  # subtitle + two paragraphs
    assert [tag for tag, _ in parsed.tags if tag in ("h1", "h2")] == ["h1", "h2", "h2"]


def test_report_tables_align_numbers_right_and_leave_nan_empty(report):
    _, sections = report
    page = render_report("Audit", sections)
    header = re.search(r"<thead><tr>(.*?)</tr></thead>", page).group(1)
    assert re.findall(r"<th( class=num)? scope=\"col\">(\w+)</th>", header) == [
        ("", "system"), ("", "measure"), (" class=num", "mean"), (" class=num", "low"), (" class=num", "high"),
        ("", "direction"), (" class=num", "n"), ("", "reject")]
    first = re.search(r"<tbody>\n<tr>(.*?)</tr>", page).group(1)
    assert first == ("<td>bm25</td><td>nDCG@10</td><td class=num>0.3000</td><td class=num></td>"
                     "<td class=num>0.3600</td><td>higher-better</td><td class=num>40</td><td>True</td>")
    assert "td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }" in page


def test_report_errors_name_what_to_fix(report):
    folder, sections = report
    with pytest.raises(ValueError, match=r"render_report: cannot read image '.*nowhere.png'.*save_png"):
        render_report("Audit", [Section("x", images=[("x", folder / "nowhere.png")])])
    (folder / "fake.png").write_text("not a png")
    with pytest.raises(ValueError, match=r"render_report: image '.*fake.png' is not a PNG file"):
        render_report("Audit", [Section("x", images=[("x", folder / "fake.png")])])
    with pytest.raises(ValueError, match="render_report: table 'Summary' must be a pandas DataFrame, got dict"):
        render_report("Audit", [Section("x", tables=[("Summary", {"a": [1]})])])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"render_report: section 'x': tables must be \(caption, DataFrame\) pairs"):
        render_report("Audit", [Section("x", tables=[summary()])])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"render_report: section 'x': images must be \(caption, PNG path\) pairs"):
        render_report("Audit", [Section("x", images=[folder / "figures" / "tradeoff.png"])])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="render_report: sections must be Section objects, got str"):
        render_report("Audit", ["Leaderboard"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="write_report: folder .*absent does not exist"):
        write_report(folder / "absent" / "report.html", "Audit", sections)


def test_write_report_is_atomic(report):
    folder, sections = report
    path = folder / "report.html"
    write_report(path, "Audit", sections)
    before = path.read_text(encoding="utf-8")
    assert before == render_report("Audit", sections) and before.startswith("<!DOCTYPE html>")
    with pytest.raises(ValueError, match="cannot read image"):
        write_report(path, "Audit", [*sections, Section("late", images=[("x", folder / "gone.png")])])
    assert path.read_text(encoding="utf-8") == before  # an interrupted write leaves the old report whole
    assert sorted(p.name for p in folder.iterdir()) == ["figures", "report.html"]


def test_report_renders_in_headless_chromium(report):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("needs Debian's headless browser: apt-get install chromium")
    folder, sections = report
    path = folder / "report.html"
    write_report(path, "Audit of pair/procon", sections)
    shot = folder / "screenshot.png"
    command = [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--user-data-dir={folder / 'profile'}", f"--screenshot={shot}", "--window-size=1200,1600",
               path.as_uri()]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    variance, distinct, white = image_stats(shot)
    assert distinct >= 200 and white < 0.9 and variance > 0.01, (variance, distinct, white)


def test_small_numbers_are_never_shown_as_zero_and_cells_carry_marks_notes_and_hints():
    from pairmeasures.apps.report import Cell, number_text

    assert [number_text(v) for v in (3.1e-7, 4e-5, 1e-4, 0.0, 0.01234, float("nan"), 7, "x")] == \
        ["3.1e-07", "4.0e-05", "0.0001", "0.0000", "0.0123", "", "7", "x"]
    assert number_text(-2e-9) == "-2.0e-09" and number_text(0.04, digits=1) == "4.0e-02"
    table = pd.DataFrame({"system": ["a <b>", "c"], "p": [Cell(2e-12, mark="†"), Cell(0.3)],
                          "Duo@10 ↓": [Cell(0.25, note="35", strong=True, hint="95% CI [0.2, 0.3]"), Cell(0.5, note="37")]})
    page = render_report("Audit", [Section("Leaderboard", tables=[("bias", table)])])
    assert "<td class=num>2.0e-12<sup>†</sup></td>" in page and "<td class=num>0.3000</td>" in page
    assert '<td class=num title="95% CI [0.2, 0.3]"><strong>0.2500</strong><span class="note">35</span></td>' in page
    assert '<th class=num scope="col">Duo@10 ↓</th>' in page and "<td>a &lt;b&gt;</td>" in page
    assert "0.0000" not in page


# --- the report of a real audit, read in a browser -------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
#: Write the demo report's screenshots here (``PAIRMEASURES_REPORT_SCREENSHOTS=DIR``), e.g. to look at them.
REPORT_SCREENSHOTS = os.environ.get("PAIRMEASURES_REPORT_SCREENSHOTS")


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict:
    """``pairmeasures audit`` of the embedded demo corpus, run as a user runs it under nohup: a new cache (so it
    embeds), stderr to a log file; ``TQDM_DELAY=0`` so that even work shorter than two seconds writes its lines."""
    folder = tmp_path_factory.mktemp("demo-audit")
    out, log = folder / "out", folder / "audit.log"
    env = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(folder / "cache"), "PYTHONPATH": str(ROOT), "TQDM_DELAY": "0"}
    env.pop("TQDM_MININTERVAL", None)
    with open(log, "w", encoding="utf-8") as stderr:
        done = subprocess.run([sys.executable, "-m", "pairmeasures", "audit", "--out", str(out), "--resamples", "1000"],
                              stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=900, env=env)
    assert done.returncode == 0, log.read_text(encoding="utf-8")[-3000:]
    import json

    return {"out": out, "log": log.read_text(encoding="utf-8"), "html": (out / "report.html").read_text(encoding="utf-8"),
            "stdout": done.stdout,
            "manifest": json.loads((out / "manifest.json").read_text()),
            "board": json.loads((out / "leaderboard.json").read_text()), "summary": pd.read_csv(out / "summary.csv")}


def test_an_audit_logging_to_a_file_writes_its_progress_as_lines(demo):
    """stderr to a file (nohup, a batch job): the embedding and the systems show progress there, a line each time."""
    log = demo["log"]
    assert "\r" not in log and "\x1b" not in log and log.endswith("\n")
    lines = log.splitlines()
    embedding = [line for line in lines if line.startswith("embedding with all-MiniLM-L6-v2:")]
    assert embedding and any("100%" in line for line in embedding), log[-2000:]
    assert any(line.startswith("systems:") and "0/3" in line for line in lines)
    assert any(line.startswith("systems:") and "3/3" in line for line in lines)


def test_the_demo_prints_a_leaderboard_that_fits_100_columns_with_the_reports_marks(demo):
    """What ``make demo`` prints through a pipe: no line over 100 columns (the header of the whole table is 450), every
    measure with its mean and a † exactly where the report has one, and where the whole table is."""
    from pairmeasures.audit.plan import label

    printed, summary, board = demo["stdout"], demo["summary"], demo["board"]
    assert max(len(line) for line in printed.splitlines()) <= 100, printed
    assert len((demo["out"] / "leaderboard.md").read_text().splitlines()[0]) > 300  # the file keeps every column
    for measure, facts in board["measures"].items():
        assert label(measure, facts["direction"]) in printed
    shown = summary[summary["measure"].isin(board["measures"])]
    table = re.split(r"\n\n(?:† |Duo axis)", printed)[0]  # the legend and notes follow the blocks
    assert table.count("†") == int(shown["reject"].sum()) > 0
    assert table.count("<sup>†</sup>") == 0 and section_of(demo["html"], "Leaderboard").count("<sup>†</sup>") == \
        table.count("†")
    rows = [line for line in table.splitlines() if line.startswith("bm25>>dense>>duogreedy(0.5) ")]
    duo = summary[(summary.system == "bm25>>dense>>duogreedy(0.5)") & (summary.measure == "Duo@10")].iloc[0]
    assert any(f"{duo['mean']:.4f}† ({int(duo['n'])})" in row for row in rows)
    assert f"Every column, with intervals: {demo['out'] / 'leaderboard.md'}" in " ".join(printed.split())


def test_the_manifest_records_what_ran_every_input_and_embedding_as_its_own_step(demo):
    from importlib import metadata

    manifest = demo["manifest"]
    versions = manifest["versions"]
    assert versions["pyterrier"] == metadata.version("pyterrier") and "python-terrier" not in versions
    for name in ("ir_datasets", "ir_measures", "transformers", "sentence-transformers", "torch", "numpy", "pandas"):
        assert versions[name] == metadata.version(name), name
    timings = manifest["timings_s"]
    steps = {name: seconds for name, seconds in timings.items() if name not in ("embedding", "total")}
    assert timings["embedding"] > 0 and {"run bm25", "run bm25>>dense"} <= set(steps)
    # each step leaves out the embedding done in it: the steps and the embedding add up to no more than the audit
    assert sum(steps.values()) + timings["embedding"] <= timings["total"] + 0.05, timings
    assert set(manifest["dataset"]["files_sha256"]) == {"corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "labels.tsv"}
    assert manifest["systems"]["bm25>>dense"]["identity"] == "bm25>>dense"


def section_of(html: str, heading: str) -> str:
    found = re.search(rf"<section>\n<h2>{re.escape(heading)}</h2>(.*?)</section>", html, re.DOTALL)
    assert found, heading
    return found.group(1)


def test_the_demo_report_reads_as_named_tables_marks_sentences_and_one_figure_each(demo):
    from pairmeasures.audit.plan import label

    html, board, summary, out = demo["html"], demo["board"], demo["summary"], demo["out"]
    assert "<title>pairmeasures audit: debates</title>" in html and "<h1>pairmeasures audit: debates</h1>" in html
    assert re.findall(r"<h2>(.*?)</h2>", html) == ["Leaderboard", "How good are DUO&#x27;s polarity axes",
                                                   "Relevance against bias", "Bias by cut-off",
                                                   "DuoGreedy vs MMR", "Statistics", "Provenance"]
    leaderboard = section_of(html, "Leaderboard")
    captions = re.findall(r"<caption>(.*?)</caption>", leaderboard)
    assert captions[:3] == ["Relevance", "Bias by polarity", "Bias between gold-label groups"]
    assert [c.startswith("Bias over the ") and c.endswith("queries every system measured, to compare across rows")
            or c.endswith("queries every system measured (n), to compare across rows") for c in captions[3:]] in ([True], [True] * 2)
    headers = re.findall(r'<th(?: class=num)? scope="col">(.*?)</th>', leaderboard)
    for measure, facts in board["measures"].items():
        assert html_escape(label(measure, facts["direction"])) in headers  # every measure, each in one table
    assert max(table.count('scope="col"') - 1 for table in leaderboard.split("<table>")[1:]) <= 6  # 6 measures at most
    shown = summary[summary["measure"].isin(board["measures"])]
    assert leaderboard.count("<sup>†</sup>") == int(shown["reject"].sum()) > 0  # the significant ones, marked
    statistics = section_of(html, "Statistics")
    tiny = shown[shown["p_corrected"] < 5e-5]
    assert len(tiny) and all(f"{p:.1e}<sup>†</sup>" in statistics for p in tiny["p_corrected"])  # not 0.0000
    assert all(f"<td class=num>{p:.1e}</td>" in statistics for p in tiny["p_value"])  # uncorrected: no mark
    assert not re.search(r">0\.0000(<sup>|</td>)", statistics.split("p holm-corrected")[1].split("</tr>")[0])
    trade = section_of(html, "DuoGreedy vs MMR")
    assert re.search(r"Losing at most 0.01 nDCG@10: DuoGreedy reaches Duo@10 \d\.\d{3} \(λ = [\d.]+, nDCG@10 \d\.\d{3}"
                     r"(; no λ loses more)?\) and MMR \d\.\d{3} \(λ = ", trade)
    assert "Lambda = 0.0000" not in html
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["bias_by_cutoff.png", "relevance_vs_bias.png", "tradeoff.png"]  # one small-multiples figure
    assert html.count("data:image/png;base64,") == len(pngs)


def html_escape(text: str) -> str:
    import html

    return html.escape(text)


def test_the_demo_report_shows_every_leaderboard_column_at_1400_pixels(demo):
    """The report in headless Chromium at 1,400 px: no leaderboard column reaches past the page's right edge, no table
    or figure scrolls sideways, and every figure is decoded."""
    chromium = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if chromium is None:
        pytest.skip("needs Debian's headless browser: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto((demo["out"] / "report.html").as_uri())
            seen = page.evaluate("""() => {
                const width = document.documentElement.clientWidth;
                const board = [...document.querySelectorAll('section')].find(s => s.querySelector('h2').textContent === 'Leaderboard');
                const right = el => el.getBoundingClientRect().right;
                return {width,
                        headers: [...board.querySelectorAll('th')].map(th => [th.textContent, right(th)]),
                        scrolling: [...document.querySelectorAll('.scroll')].filter(d => d.scrollWidth > d.clientWidth).length,
                        images: [...document.images].map(i => [i.complete && i.naturalWidth > 0, right(i)]),
                        page: document.documentElement.scrollWidth};
            }""")
            if REPORT_SCREENSHOTS:
                Path(REPORT_SCREENSHOTS).mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(Path(REPORT_SCREENSHOTS) / "demo-report-1400.png"), full_page=True)
        finally:
            browser.close()
    width = seen["width"]
    assert len(seen["headers"]) >= 1 + len(demo["board"]["measures"])
    beyond = [text for text, edge in seen["headers"] if edge > width]
    assert not beyond, f"leaderboard columns past the right edge ({width} px): {beyond}"
    assert seen["scrolling"] == 0 and seen["page"] <= width
    assert seen["images"] and all(decoded and edge <= width for decoded, edge in seen["images"])


def test_equal_cost_points_are_sentences_that_name_the_fairer_method_in_the_measures_direction():
    from pairmeasures.apps.audit.report_tables import equal_cost_text
    from pairmeasures.audit.result import Tradeoff

    line = curve(intervals=False).assign(system="s", base="bm25>>dense")
    cost = pd.DataFrame([dict(system="s", relevance_drop=0.01, method="DuoGreedy", Lambda=0.0, relevance=0.45, bias=0.1),
                         dict(system="s", relevance_drop=0.01, method="MMR", Lambda=0.675, relevance=0.49, bias=0.2)])
    trade = Tradeoff(curve=line, equal_cost=cost, relevance="nDCG@10", bias="Duo@10", lambdas=(), bases=())
    text = equal_cost_text(trade, "lower-fairer")
    assert text == ("s: nDCG@10 starts at 0.500 (λ = 1, the order of bm25>>dense). Losing at most 0.01 nDCG@10: "
                    "DuoGreedy reaches Duo@10 0.100 (λ = 0, nDCG@10 0.450) and MMR 0.200 (λ = 0.68, nDCG@10 0.490): "
                    "DuoGreedy is fairer by 0.100.")
    assert text.replace("DuoGreedy is", "MMR is") == equal_cost_text(trade, "higher-fairer")
    assert equal_cost_text(trade, "unknown").endswith("nDCG@10 0.490).")
    cost.loc[0, "relevance"] = 0.495  # DuoGreedy's lowest Lambda still costs less than the drop
    assert "(λ = 0, nDCG@10 0.495; no λ loses more)" in equal_cost_text(trade, "lower-fairer")


def test_leaderboard_tables_hold_six_measures_at_most_and_keep_the_leaderboards_other_columns():
    from pairmeasures.apps.audit.report_tables import leaderboard_tables
    from pairmeasures.measures.parsing import parse_measures

    names = ["nDCG@10", "rND@10", "rKL@10", "rRD@10", "EXP@10", "NDKL@10", "ARP@10", "ARP@5"]
    shown = dict(zip(names, parse_measures(names)))
    directions = {n: "higher-better" if n.startswith("nDCG") else "lower-fairer" for n in names}
    systems = ["base", "other"]
    summary = pd.DataFrame([dict(system=s, measure=m, mean=0.5 + 0.1 * i, n=30 - i, excluded=i, low=0.4, high=0.7,
                                 diff=float("nan") if i == 0 else 0.1, diff_low=0.0, diff_high=0.2,
                                 p_value=float("nan") if i == 0 else 1e-9, reject=i == 1)
                            for m in names for i, s in enumerate(systems)])
    board = pd.DataFrame({"system": systems, "|ΔA-PRF| ↓": [0.01, 0.02]})
    tables = leaderboard_tables(board, summary, shown, directions, "holm")
    assert [caption for caption, _ in tables] == ["Relevance", "Bias between gold-label groups (1 of 2)",
                                                  "Bias between gold-label groups (2 of 2)", "Dataset-level figures"]
    assert [len(frame.columns) - 1 for _, frame in tables] == [1, 6, 1, 1]
    cell = tables[1][1].iloc[1, 1]
    assert cell.value == 0.6 and cell.mark == "†" and cell.note == "29" and cell.strong is False
    assert "t-test p = 1e-09 uncorrected" in cell.hint and tables[0][1].iloc[1, 1].strong and tables[0][1].iloc[1, 1].note == ""
    assert list(tables[3][1].columns) == ["system", "|ΔA-PRF| ↓"]
