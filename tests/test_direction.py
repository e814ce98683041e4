"""Every measure says which way is fair: built-ins, their docs pages, the README, plugins."""

from __future__ import annotations

from pathlib import Path

import ir_measures
import pytest

import pairmeasures as pm
from pairmeasures.measures import BUILTIN_MEASURES, DIRECTIONS, EXPERIMENT_PLUS

ROOT = Path(__file__).resolve().parents[1]
def row(measure, value_range: str) -> str:
    return f"| `{measure}` | `{measure.direction()}` | {value_range} |"


@pytest.mark.parametrize("measure", BUILTIN_MEASURES, ids=lambda m: m.NAME)
def test_every_builtin_declares_direction_range_and_reference(measure):
    assert measure.direction() in DIRECTIONS and measure.direction() != "unknown"
    assert measure.RANGE and measure.RANGE != "unknown"
    assert measure.REFERENCE or measure.direction() == "neither"
    assert measure.PAGES, f"{measure.NAME} names no documentation page (PAGES)"
    for page in {measure.PAGES[0], "getting-started.md"}:  # the same words as the metadata, on its own page
        assert row(measure, measure.RANGE) in (ROOT / "docs" / page).read_text(encoding="utf-8"), page
    if measure.NAME != "Measured":  # the README's table lists the bias measures
        readme_line = next(line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
                           if line.startswith("| `") and f"`{measure.NAME}`" in line.split("|")[1])
        assert f"`{measure.direction()}`" in readme_line


@pytest.mark.parametrize("text,direction,value_range", [
    ("Duo(signed=True)@10", "signed", "[-1, 1]"),
    ("RaB(component='male')@10", "neither", ">= 0"),
    ("RaB(contrast='female-male', variant='bool')@10", "signed", "[-1, 1], 0 = balanced, + = female-leaning"),
    ("TExFAIR(targets='female=0.3,male=0.7')@10", "higher-fairer", "[0, 1.4]"),
    ("AWRF(distance='jsd')@10", "lower-fairer", "[0, 1]"),
])
def test_direction_and_range_follow_the_parameters(text, direction, value_range):
    measure = ir_measures.parse_measure(text)
    assert (measure.direction(), measure.value_range()) == (direction, value_range)


#: Rows of getting-started.md's table for a parameter that changes a measure's direction or range.
PARAMETER_ROWS = [(pm.Duo(signed=True), "[-1, 1]")]


def test_the_getting_started_table_is_the_measures_metadata():
    """docs/getting-started.md's direction/range table holds one row per built-in measure (and PARAMETER_ROWS), each
    as the metadata says: no row missing, none left over from a measure renamed or gone."""
    text = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    start = text.index("| measure | direction | range |")
    table = [line for line in text[start:].split("\n\n")[0].splitlines()[2:]]
    expected = [row(measure, measure.RANGE) for measure in BUILTIN_MEASURES]
    expected += [row(measure, value_range) for measure, value_range in PARAMETER_ROWS]
    assert sorted(table) == sorted(expected), "docs/getting-started.md 'Which way is fair' should read:\n" + \
        "\n".join(expected)


def test_parameter_dependent_rows_are_documented():
    assert row(pm.Duo(signed=True), "[-1, 1]") in (ROOT / "docs" / "duo.md").read_text(encoding="utf-8")
    assert row(pm.RaB(component="male"), ">= 0") in (ROOT / "docs" / "rab.md").read_text(encoding="utf-8")


def test_a_measure_that_does_not_say_is_unknown():
    class _Silent(pm.PairMeasure):
        NAME = "Silent"

    assert (_Silent().direction(), _Silent().value_range()) == ("unknown", "unknown")
    assert set(EXPERIMENT_PLUS) == set(DIRECTIONS)


def test_example_plugin_declares_a_direction():
    source = (ROOT / "plugins" / "pairmeasures-exposure" / "pairmeasures_exposure" / "__init__.py").read_text()
    namespace: dict = {}
    exec(compile(source, "pairmeasures_exposure", "exec"), namespace)
    entropy = namespace["ExposureEntropy"]
    assert entropy.direction() == "higher-fairer" and entropy.value_range() == "[0, 1]"


def test_dir_lists_the_lazy_names():
    names = dir(pm)
    assert {"PolarityScorer", "Embedder", "crbo", "Duo", "clear_caches"} <= set(names)
    assert names == sorted(names)
