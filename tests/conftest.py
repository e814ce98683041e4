"""Shared helpers: where the golden reference cases and the real benchmark data live.

Both default to the project's ``shared/`` folder beside (or above) this checkout and can be
pointed at a copy with ``PAIRMEASURES_GOLDEN_DIR`` and ``PAIRMEASURES_DATA_DIR``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def shared_path(env: str, name: str) -> Path:
    """The folder named by ``env``, else the nearest ``shared/<name>`` above this checkout."""
    if os.environ.get(env):
        path = Path(os.environ[env])
    else:
        path = next((p / "shared" / name for p in ROOT.parents if (p / "shared" / name).is_dir()),
                    ROOT.parent / "shared" / name)
    if not path.is_dir():
        raise FileNotFoundError(f"{name} directory not found at {path}; set {env} to its location")
    return path


def load_golden(name: str) -> list[dict]:
    """Cases of one golden file (read at collection time, to parametrise tests by case)."""
    return json.loads((shared_path("PAIRMEASURES_GOLDEN_DIR", "golden") / name).read_text())["cases"]


def golden_number(value) -> float:
    """Golden files write non-finite numbers as strings."""
    return float(value.replace("Infinity", "inf")) if isinstance(value, str) else float(value)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return shared_path("PAIRMEASURES_DATA_DIR", "data")
