"""The audit's figures (pairmeasures.apps.plots) and its self-contained HTML report (pairmeasures.apps.report):
PNGs written through save_png and read back with matplotlib, the report parsed and rendered in headless
Chromium."""

from __future__ import annotations

import base64
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


def curves() -> pd.DataFrame:
    return pd.DataFrame([dict(system=system, measure=family, k=k, value=np.log1p(k) * (j + 1) / (i + 1))
                         for i, system in enumerate(SYSTEMS[:3]) for j, family in enumerate(["Duo", "rKL"])
                         for k in range(1, 51)])


def curve(intervals: bool = True) -> pd.DataFrame:
    frame = pd.DataFrame([dict(method=method, Lambda=lam, relevance=0.5 - 0.1 * (1 - lam) * (j + 1),
                               bias=0.3 * lam + 0.05 * j)
                          for j, method in enumerate(["DuoGreedy", "MMR"]) for lam in [0, 0.25, 0.5, 0.75, 1]])
    if intervals:
        for axis in ("relevance", "bias"):
            frame[f"{axis}_low"], frame[f"{axis}_high"] = frame[axis] - 0.02, frame[axis] + 0.03
    return frame


#: Every figure: (function name, a call on good frames).
FIGURES = {
    "relevance_vs_bias": lambda: plots.relevance_vs_bias(summary(), "nDCG@10", "Duo@10"),
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


#: (function, call with one column dropped from its frame, the column)
MISSING = [
    ("relevance_vs_bias", lambda c: plots.relevance_vs_bias(summary().drop(columns=c), "nDCG@10", "Duo@10"),
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

    class Broken:
        def savefig(self, *args, **kwargs):
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
