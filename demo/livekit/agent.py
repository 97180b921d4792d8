"""A LiveKit Agents worker whose voice is a speech-to-speech server.

The agent is a stock ``AgentSession`` with ``livekit-plugins-openai``'s
``RealtimeModel``: only ``base_url`` (and a placeholder API key) point it at
``speech-to-speech serve`` instead of OpenAI. LiveKit carries the user's audio
from the room to the worker and the answer back; our server does the rest
(VAD, turn taking, STT, LLM, TTS), and the agent's tools run here, in the
worker, when the server's LLM calls them.

    speech-to-speech serve                  # the Realtime server, ws://127.0.0.1:8765/v1/realtime
    livekit-server --dev                    # a local LiveKit server (devkey / secret)
    python demo/livekit/agent.py dev        # this worker; then join a room from any LiveKit client

Settings come from the environment (see README.md next to this file):
``S2S_URL`` (default ``http://127.0.0.1:8765/v1``), ``S2S_VOICE``,
``S2S_API_KEY``, and LiveKit's own ``LIVEKIT_URL``, ``LIVEKIT_API_KEY`` and
``LIVEKIT_API_SECRET``, which the livekit-agents CLI reads.

The pieces are small functions so that tests build exactly what the worker
runs, without a LiveKit server.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from livekit.agents import Agent, AgentServer, AgentSession, JobContext, cli, function_tool
from livekit.plugins import openai
from openai.types.realtime.realtime_audio_input_turn_detection import SemanticVad

DEFAULT_S2S_URL = "http://127.0.0.1:8765/v1"
# The server serves whatever model it was started with; the name is only echoed back.
MODEL = "speech-to-speech"
# speech-to-speech checks no API key, but the plugin refuses to start without one.
PLACEHOLDER_API_KEY = "sk-speech-to-speech-local"
# An OpenAI voice name, which every speech-to-speech server accepts: a TTS without a voice
# of that name speaks it with its default one. A name that is neither OpenAI's nor one of the
# TTS's voices is refused with invalid_value.
DEFAULT_VOICE = "alloy"

INSTRUCTIONS = (
    "You are a friendly voice assistant reached through LiveKit. "
    "Answer in one or two short spoken sentences, without lists or markup. "
    "When asked for the time or the date, call get_local_time."
)
GREETING = "Greet the user in one short sentence and offer to help."


@function_tool
async def get_local_time(timezone: str = "") -> str:
    """Get the current local date and time.

    Args:
        timezone: An IANA time zone name such as "Europe/Paris"; empty for the agent's own time zone.
    """
    try:
        now = datetime.now(ZoneInfo(timezone)) if timezone else datetime.now().astimezone()
    except (ZoneInfoNotFoundError, ValueError):
        return f"Unknown time zone {timezone!r}; use an IANA name such as Europe/Paris."
    return now.strftime("%A %d %B %Y, %H:%M %Z").strip()


def s2s_url() -> str:
    """The speech-to-speech server's HTTP base (``.../v1``); the plugin turns it into ``ws://…/v1/realtime``."""
    return os.environ.get("S2S_URL") or DEFAULT_S2S_URL


def build_realtime_model(base_url: str | None = None) -> openai.realtime.RealtimeModel:
    """The plugin's stock ``RealtimeModel``, pointed at speech-to-speech.

    Turn detection is the server's: ``semantic_vad``, where the server's Smart Turn
    model ends a turn when it sounds finished (a server without it ends turns by
    silence and says ``server_vad`` back). The server ends the turn, answers it and
    stops its answer when the user talks over it; the worker needs no VAD or turn
    detector of its own.
    """
    return openai.realtime.RealtimeModel(
        model=MODEL,
        base_url=base_url or s2s_url(),
        api_key=os.environ.get("S2S_API_KEY") or PLACEHOLDER_API_KEY,
        voice=os.environ.get("S2S_VOICE") or DEFAULT_VOICE,
        turn_detection=SemanticVad(type="semantic_vad", eagerness="auto", create_response=True,
                                   interrupt_response=True),
    )


def build_agent() -> Agent:
    """The agent: its instructions and the tools the server's LLM may call (run here, in the worker)."""
    return Agent(instructions=INSTRUCTIONS, tools=[get_local_time])


def build_session(base_url: str | None = None, **session_options: Any) -> AgentSession[None]:
    """An ``AgentSession`` whose only model is the speech-to-speech server (options: ``AgentSession``'s)."""
    return AgentSession(llm=build_realtime_model(base_url), **session_options)


async def start_session(session: AgentSession[None], **start_options: Any) -> None:
    """Start the agent in ``session`` (``room=`` in a job) and have it greet the user first."""
    await session.start(agent=build_agent(), **start_options)
    await session.generate_reply(instructions=GREETING)


async def entrypoint(ctx: JobContext) -> None:
    """One job per room: join it and talk through speech-to-speech."""
    await start_session(build_session(), room=ctx.room)


server = AgentServer()
server.rtc_session(entrypoint)


if __name__ == "__main__":
    cli.run_app(server)
