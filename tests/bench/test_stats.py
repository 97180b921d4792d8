"""Summary statistics: the p50/p95 block every figure gets."""

from __future__ import annotations

import pytest

from speech_to_speech.bench.stats import numeric_fields, percentile, summarize, summarize_fields


def test_percentiles_interpolate_between_samples() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 95) == pytest.approx(95.05)
    assert percentile([7.0], 95) == 7.0


def test_percentile_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError):
        percentile([], 50)


def test_summary_skips_missing_values_and_rounds() -> None:
    stats = summarize([10.0, None, 20.0, 30.0, 40.123456])
    assert stats == {"n": 4, "p50": 25.0, "p95": 38.6, "mean": 25.03, "min": 10.0, "max": 40.12}


def test_summary_of_no_values_keeps_its_shape() -> None:
    assert summarize([None]) == {"n": 0, "p50": None, "p95": None, "mean": None, "min": None, "max": None}


def test_every_field_is_summarised_over_the_samples_that_have_it() -> None:
    samples = [{"a_ms": 1.0, "b_ms": 5.0, "name": "x", "ok": True}, {"a_ms": 3.0}]
    assert numeric_fields(samples) == ["a_ms", "b_ms"]
    summary = summarize_fields(samples, numeric_fields(samples))
    assert summary["a_ms"]["p50"] == 2.0 and summary["a_ms"]["n"] == 2
    assert summary["b_ms"]["n"] == 1
