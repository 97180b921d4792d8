from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from speech_to_speech.testing.engine import UnitFactory, running_unit
from speech_to_speech.units.unit import PipelineUnit


@pytest.fixture
def make_unit() -> Iterator[UnitFactory]:
    """Start scripted units with setting overrides; all are stopped after the test."""
    with ExitStack() as stack:

        def make(**overrides: Any) -> PipelineUnit:
            return stack.enter_context(running_unit(**overrides))

        yield make
