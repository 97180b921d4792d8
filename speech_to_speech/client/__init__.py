"""The packaged Realtime audio client behind ``talk`` and ``local``.

```python
from speech_to_speech.client import RealtimeAudioClientConfig, listen_and_play_realtime

await listen_and_play_realtime(RealtimeAudioClientConfig(url="ws://127.0.0.1:8765/v1/realtime"))
```
"""

from speech_to_speech.client.config import RealtimeAudioClientConfig
from speech_to_speech.client.errors import (
    AudioDeviceError,
    ClientError,
    ServerUnreachable,
    SessionLimitReached,
    SessionRejected,
    WrongURL,
)
from speech_to_speech.client.runner import SessionSummary, listen_and_play_realtime
from speech_to_speech.client.tools import ToolResult

__all__ = [
    "AudioDeviceError",
    "ClientError",
    "RealtimeAudioClientConfig",
    "ServerUnreachable",
    "SessionLimitReached",
    "SessionRejected",
    "SessionSummary",
    "ToolResult",
    "WrongURL",
    "listen_and_play_realtime",
]
