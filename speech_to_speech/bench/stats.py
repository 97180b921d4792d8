"""Summary statistics of benchmark samples: every figure gets the same p50/p95 block."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

Stats = dict[str, float | int | None]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100), linearly interpolated between samples (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def summarize(values: Iterable[float | None]) -> Stats:
    """n, p50, p95, mean, min and max (ms) of the present values; None figures when there are none."""
    present = [float(v) for v in values if v is not None]
    if not present:
        return {"n": 0, "p50": None, "p95": None, "mean": None, "min": None, "max": None}
    return {
        "n": len(present),
        "p50": round(percentile(present, 50), 2),
        "p95": round(percentile(present, 95), 2),
        "mean": round(float(np.mean(present)), 2),
        "min": round(min(present), 2),
        "max": round(max(present), 2),
    }


def summarize_fields(samples: Sequence[Mapping[str, Any]], fields: Iterable[str]) -> dict[str, Stats]:
    """One summary per field, over the samples that have a number for it."""
    return {field: summarize(sample.get(field) for sample in samples) for field in fields}


def numeric_fields(samples: Sequence[Mapping[str, Any]], suffix: str = "_ms") -> list[str]:
    """Fields ending in ``suffix`` that hold numbers, in first-seen order."""
    seen: dict[str, None] = {}
    for sample in samples:
        for key, value in sample.items():
            if key.endswith(suffix) and isinstance(value, int | float) and not isinstance(value, bool):
                seen.setdefault(key, None)
    return list(seen)
