"""Every Python example in docs/ runs, and every built-in measure parameter is documented."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

import pairmeasures as pm

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(DOCS.glob("*.md"))


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=lambda p: p.name)
def test_examples_run(page, monkeypatch, tmp_path, request):
    if any("pair/" in block for block in python_blocks(page)):
        request.getfixturevalue("data_mirror")  # examples on the registered datasets read the real data
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        for number, block in enumerate(python_blocks(page), start=1):
            exec(compile(block, f"{page.name} (example {number})", "exec"), namespace)


@pytest.mark.parametrize("measure,page", [(pm.Duo, "duo.md"), (pm.rND, "group-fairness.md"),
                                          (pm.rKL, "group-fairness.md"), (pm.rRD, "group-fairness.md"),
                                          (pm.TExFAIR, "texfair.md"), (pm.TED, "texfair.md"), (pm.AWRF, "texfair.md"),
                                          (pm.FaiRR, "fairr.md"), (pm.NFaiRR, "fairr.md"),
                                          (pm.RaB, "rab.md"), (pm.ARaB, "rab.md")])
def test_every_parameter_is_documented(measure, page):
    text = (DOCS / page).read_text(encoding="utf-8")
    for name in measure.SUPPORTED_PARAMS:
        assert f"`{name}`" in text, f"{measure.NAME}.{name} is not documented in docs/{page}"
    assert measure.__doc__ and "math::" in measure.__doc__  # the formula is in the docstring too


def test_pages_link_to_existing_pages():
    for page in PAGES:
        for target in re.findall(r"\]\(([\w.-]+\.md)\)", page.read_text(encoding="utf-8")):
            assert (DOCS / target).is_file(), f"{page.name} links to missing {target}"
