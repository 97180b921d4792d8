"""The per-unit ``_send_loop``: pipeline output -> protocol events, without polling.

The unit's two output queues wake this coroutine through
``loop.call_soon_threadsafe``; each wake drains them, always taking
text-side events (speech, transcription) before response output, so a
barge-in is handled before any audio queued behind it.
"""

from __future__ import annotations

import asyncio
import queue
from typing import Any

from speech_to_speech.realtime.service.realtime_service import RealtimeService
from speech_to_speech.units.unit import PipelineUnit


def attach_wakeup(unit: PipelineUnit, loop: asyncio.AbstractEventLoop) -> asyncio.Event:
    wake = asyncio.Event()

    def notify() -> None:
        loop.call_soon_threadsafe(wake.set)

    unit.queues.stage_events.set_listener(notify)
    unit.queues.response_output.set_listener(notify)
    wake.set()  # output may already be waiting
    return wake


def detach_wakeup(unit: PipelineUnit) -> None:
    unit.queues.stage_events.set_listener(None)
    unit.queues.response_output.set_listener(None)


def next_item(unit: PipelineUnit) -> Any | None:
    for source in (unit.queues.stage_events, unit.queues.response_output):
        try:
            return source.get_nowait()
        except queue.Empty:
            continue
    return None


async def send_loop(unit: PipelineUnit, service: RealtimeService, wake: asyncio.Event) -> None:
    while True:
        await wake.wait()
        wake.clear()
        while (item := next_item(unit)) is not None:
            service.dispatch_pipeline_item(item)
