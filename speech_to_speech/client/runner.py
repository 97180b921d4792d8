"""listen_and_play_realtime: connect, stream audio in, play replies, run tools, until done.

With a microphone it runs until interrupted (Ctrl-C) or the server ends the
session; with ``input_wav`` it exits once the file was sent and every reply to
it has been played (or ``file_idle_timeout_s`` passed). The connection is a
``RealtimeClient``: a drop that the server can resume does not end either.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Protocol

from rich.console import Console

from speech_to_speech.audio.resample import to_int16
from speech_to_speech.client.config import RealtimeAudioClientConfig
from speech_to_speech.client.devices import Microphone, Speaker
from speech_to_speech.client.echo import DeviceEcho
from speech_to_speech.client.errors import ClientError
from speech_to_speech.client.events import ConnectionResumed, RealtimeEvent, SessionEnded
from speech_to_speech.client.files import WavRecorder, WavSource
from speech_to_speech.client.link import Connector
from speech_to_speech.client.playback import Playback, Samples
from speech_to_speech.client.realtime_client import RealtimeClient
from speech_to_speech.client.session import ClientSession
from speech_to_speech.client.streams import Subscription
from speech_to_speech.client.tool_scheduler import ToolCoordinator
from speech_to_speech.client.tools import ToolCaller, load_tool_module
from speech_to_speech.client.transcript import TranscriptView
from speech_to_speech.protocol import Event

log = logging.getLogger(__name__)

# With --input-wav: how long everything must stay idle before the last reply counts as done.
QUIET_S = 0.6
POLL_S = 0.02
# How often the play heads are looked at for playback.ack (the acks themselves are throttled per item).
ACK_POLL_S = 0.05


class AudioSource(Protocol):
    """User audio: float32 chunks at the config's send rate; the session ends when it does."""

    live: bool  # a live source's audio is dropped while the mic is blocked; a file's waits

    def chunks(self) -> AsyncIterator[Samples]: ...


class AudioSink(Protocol):
    """Plays (or records) the Playback buffer at ``rate``."""

    rate: int

    def start(self, playback: Playback) -> None: ...

    async def close(self) -> None: ...


@dataclass
class SessionSummary:
    """What happened, for callers and tests."""

    responses: list[Event] = field(default_factory=list)  # response.done bodies
    user_transcripts: list[str] = field(default_factory=list)
    sent: list[Event] = field(default_factory=list)  # client events except audio appends
    followups: list[list[str]] = field(default_factory=list)  # call ids of each automatic create (refused too)
    recorded_seconds: float = 0.0
    resumes: int = 0  # dropped connections the session survived


def _with_tool_module(config: RealtimeAudioClientConfig) -> RealtimeAudioClientConfig:
    """``config`` with the tools, executor and default of its --tool-module, if it names one."""
    if not config.tool_module:
        return config
    module = load_tool_module(config.tool_module)
    return config.model_copy(update={"tools": module.tools, "tool_executor": module.execute_tool,
                                     "tool_response_create": module.create_response})


def _tool_coordinator(config: RealtimeAudioClientConfig, view: TranscriptView | None,
                      send: Callable[[Event], str]) -> ToolCoordinator | None:
    if config.tool_executor is None:
        if config.tools:
            raise ClientError("tools were declared without a tool_executor to run them")
        return None
    on_update = view.tool_update if view is not None else None
    caller = ToolCaller(config.tools, config.tool_executor, config.tool_response_create)
    return ToolCoordinator(caller, send, on_update)


def _devices(config: RealtimeAudioClientConfig) -> tuple[Microphone, Speaker]:
    """The microphone and the speaker; with echo cancellation, the speaker's sound is taken out of the mic's."""
    microphone = Microphone(config.input_device, config.send_rate, config.chunk_size)
    speaker = Speaker(config.output_device)
    if config.echo_cancellation:
        microphone.echo = speaker.echo = DeviceEcho(config.send_rate, speaker.rate,
                                                    noise_suppression=config.noise_suppression)
    return microphone, speaker


async def listen_and_play_realtime(config: RealtimeAudioClientConfig, *, console: Console | None = None,
                                   source: AudioSource | None = None, sink: AudioSink | None = None,
                                   on_event: Callable[[Event], None] | None = None,
                                   connect: Connector | None = None) -> SessionSummary:
    """Talk to a Realtime server with ``config``'s audio in and out; see the module doc for when it ends.

    ``source``/``sink`` replace the microphone/speaker (or WAV files) with your own audio I/O;
    ``on_event`` sees every server event after the client handled it; ``connect`` replaces the
    WebSocket (e.g. ``inline.asgi_connector(app)``). The connection is a ``RealtimeClient``: when
    it drops and the server can resume the session, the conversation carries on.
    """
    config = _with_tool_module(config)
    if source is None and sink is None and config.input_wav is None and config.output_wav is None:
        source, sink = _devices(config)
    if source is None:
        source = (WavSource(config.input_wav, config.send_rate, config.chunk_size, config.trailing_silence_ms)
                  if config.input_wav else Microphone(config.input_device, config.send_rate, config.chunk_size))
    if sink is None:
        sink = WavRecorder(config.output_wav) if config.output_wav else Speaker(config.output_device)
    playback = Playback(config.recv_rate, sink.rate, config.jitter_ms)
    view = TranscriptView(console) if config.show_transcript else None
    summary = SessionSummary()
    serial = itertools.count(1)

    def send(event: Event) -> str:
        event = {"event_id": f"evt_client_{next(serial)}", **event}
        if event["type"] != "input_audio_buffer.append":
            summary.sent.append(event)
        if client.ended is None:  # after the end (a tool finishing late) there is nobody to tell
            client.send_nowait(event)
        return str(event["event_id"])

    tools = _tool_coordinator(config, view, send)
    session = ClientSession(config, playback, send, view=view, tools=tools, on_event=on_event)
    client = RealtimeClient(config.url, model=config.model, api_key=config.api_key,
                            handshake_timeout_s=config.connect_timeout_s, connect=connect,
                            keep_responses=0)  # the session plays audio from the events, not from handles
    events = client.events()  # before connecting: nothing the server says can slip past
    try:
        async with client:
            session.start()  # queued first, so the server applies it before any audio
            sink.start(playback)
            if view is not None:
                view.start()
            await _run(client, events, session, source, config)
    finally:
        if tools is not None:
            await tools.close()
        await sink.close()
        if view is not None:
            view.stop()
    summary.responses = session.responses
    summary.user_transcripts = list(session.user_transcripts.values())
    summary.followups = tools.followups_sent if tools is not None else []
    summary.recorded_seconds = sink.seconds if isinstance(sink, WavRecorder) else 0.0
    summary.resumes = client.resumes
    return summary


async def _run(client: RealtimeClient, events: Subscription[RealtimeEvent], session: ClientSession,
               source: AudioSource, config: RealtimeAudioClientConfig) -> None:
    tasks = [
        asyncio.create_task(_read(events, session), name="client-reader"),
        asyncio.create_task(_stream_audio(source, session, client), name="client-audio"),
        asyncio.create_task(_report_playback(session), name="client-playback-acks"),
    ]
    if isinstance(source, WavSource):
        tasks.append(asyncio.create_task(_until_answered(source, session, client, config), name="client-file-done"))
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()  # a ClientError (or a bug) ends the session loudly
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _read(events: Subscription[RealtimeEvent], session: ClientSession) -> None:
    """Hand every server event to the session; a resumed connection is only a log line here."""
    ended = "the server ended the session"
    async for event in events:  # a connection lost for good raises ConnectionLost (a ClientError)
        if isinstance(event, ConnectionResumed):
            log.info("the connection dropped and was resumed (attempt %d)", event.attempt)
            continue
        if isinstance(event, SessionEnded):
            ended = f"the server ended the session ({event.reason or event.type})"
        session.handle(event.to_dict())
    # We never get here on our own shutdown (this task is cancelled first).
    raise ClientError(ended)


async def _report_playback(session: ClientSession) -> None:
    """Tell the server how far each reply was heard, as the speaker (or --output-wav) plays it."""
    while True:
        await asyncio.sleep(ACK_POLL_S)
        session.report_playback()


async def _stream_audio(source: AudioSource, session: ClientSession, client: RealtimeClient) -> None:
    async for chunk in source.chunks():
        if source.live and not client.connected:
            continue  # while reconnecting: what the mic hears now would reach the server seconds late
        if session.mic_blocked():
            if source.live:
                continue  # a blocked microphone drops what it hears
            while session.mic_blocked():
                await asyncio.sleep(POLL_S)  # a file waits for the assistant to finish
        audio = base64.b64encode(to_int16(chunk).astype("<i2").tobytes()).decode("ascii")
        session.send({"type": "input_audio_buffer.append", "audio": audio})


async def _until_answered(source: WavSource, session: ClientSession, client: RealtimeClient,
                          config: RealtimeAudioClientConfig) -> None:
    """File mode: return once the file was sent and the session stayed idle (and connected) for QUIET_S.

    A file's audio sent while reconnecting waits in the client and goes out after the resume.
    """
    await source.finished.wait()
    deadline = time.monotonic() + config.file_idle_timeout_s
    quiet_since: float | None = None
    while True:
        now = time.monotonic()
        if session.idle and client.connected:  # an answer may be on its way in a replay
            quiet_since = quiet_since or now
            if now - quiet_since >= QUIET_S:
                return
        else:
            quiet_since = None
        if now > deadline:
            log.warning("gave up waiting for the reply after %.0fs", config.file_idle_timeout_s)
            return
        await asyncio.sleep(POLL_S)
