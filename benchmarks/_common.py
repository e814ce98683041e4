"""Helpers shared by the benchmark scripts: timing and recording results."""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def data_option() -> dict:
    """Arguments of the ``--data`` option: the real data (laid out like shared/data), PAIRMEASURES_DATA by default."""
    folder = os.environ.get("PAIRMEASURES_DATA")
    return {"default": folder, "required": folder is None,
            "help": "a folder laid out like shared/data (default: $PAIRMEASURES_DATA)"}


def best_of(function, repeat: int = 3) -> float:
    """Fastest wall time of ``repeat`` calls, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def save(name: str, results: dict) -> Path:
    """Write ``results`` with the machine they were measured on to ``results/<name>.json``."""
    import numpy

    RESULTS.mkdir(exist_ok=True)
    record = {
        "benchmark": name,
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": sys.version.split()[0],
                    "numpy": numpy.__version__},
        "results": results,
    }
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path
