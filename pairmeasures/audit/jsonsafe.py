"""Values as JSON can hold them: a leaf that the audit's outputs and records share (it imports nothing of the
package)."""

from __future__ import annotations

import math

__all__ = ["json_safe"]


def json_safe(value):
    """``value`` with NaN as None, in dicts and lists too (JSON has no NaN)."""
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
