"""The packaged Realtime client: ``RealtimeClient`` (the library) and the audio client behind ``talk``/``local``.

```python
from speech_to_speech.client import RealtimeAudioClientConfig, listen_and_play_realtime

await listen_and_play_realtime(RealtimeAudioClientConfig(url="ws://127.0.0.1:8765/v1/realtime"))

from speech_to_speech.client import RealtimeClient

async with RealtimeClient("ws://127.0.0.1:8765/v1/realtime") as client:
    await client.stream_pcm(pcm16_24k)
    async for response in client.responses():
        print(response.transcript, len(b"".join([chunk async for chunk in response.audio()])))
        break
```
"""

from speech_to_speech.client.collector import EventCollector, TimingSummary
from speech_to_speech.client.config import RealtimeAudioClientConfig
from speech_to_speech.client.errors import (
    AudioDeviceError,
    ClientError,
    ConnectionLost,
    ProtocolError,
    RealtimeClientError,
    ResumeFailed,
    ServerUnreachable,
    SessionClosed,
    SessionLimitReached,
    SessionRejected,
    WaitTimeout,
    WrongURL,
)
from speech_to_speech.client.events import (
    AudioDelta,
    ConnectionResumed,
    ErrorEvent,
    RealtimeEvent,
    ResponseCreated,
    ResponseDone,
    SessionCreated,
    SessionEnded,
    TextDelta,
    TranscriptDelta,
)
from speech_to_speech.client.inline import InlineRealtimeClient
from speech_to_speech.client.realtime_client import RealtimeClient
from speech_to_speech.client.reconnect import ReconnectPolicy
from speech_to_speech.client.responses import ResponseHandle
from speech_to_speech.client.runner import SessionSummary, listen_and_play_realtime
from speech_to_speech.client.tools import ToolResult

__all__ = [
    "AudioDelta",
    "AudioDeviceError",
    "ClientError",
    "ConnectionLost",
    "ConnectionResumed",
    "ErrorEvent",
    "EventCollector",
    "InlineRealtimeClient",
    "ProtocolError",
    "RealtimeAudioClientConfig",
    "RealtimeClient",
    "RealtimeClientError",
    "RealtimeEvent",
    "ReconnectPolicy",
    "ResponseCreated",
    "ResponseDone",
    "ResponseHandle",
    "ResumeFailed",
    "ServerUnreachable",
    "SessionClosed",
    "SessionCreated",
    "SessionEnded",
    "SessionLimitReached",
    "SessionRejected",
    "SessionSummary",
    "TextDelta",
    "TimingSummary",
    "ToolResult",
    "TranscriptDelta",
    "WaitTimeout",
    "WrongURL",
    "listen_and_play_realtime",
]
