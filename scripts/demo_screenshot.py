"""The README's picture of the demo page: headless Chromium, mid-conversation, saved as a PNG.

    python scripts/demo_screenshot.py [--transport webrtc|websocket] [--out docs/demo.png]

A server with scripted backends (no models: replies, transcripts and delays are given below)
and Chromium's fake microphone playing tones; the picture is taken while the third question
is being answered, after a tool call. Needs Chromium (sudo apt-get install chromium).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from speech_to_speech.config import ServerSettings
from speech_to_speech.testing.chromium import (
    WEBRTC_LOOPBACK_FLAGS,
    chromium,
    fake_microphone_flags,
    write_question_wav,
)
from speech_to_speech.testing.scripted import FAST_SCRIPTED
from speech_to_speech.testing.server import running_server

TRANSCRIPTS = [
    "Hi! Who am I talking to?",
    "What time is it here?",
    "And where do my words go?",
]
REPLIES = [
    "I am a voice agent running on this machine.",
    "<tool_call>get_local_time {}</tool_call>",
    "Your clock says it is time for a demo.",
    "Nowhere else: speech recognition, the language model and the voice all run locally.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", choices=["webrtc", "websocket"], default="webrtc")
    parser.add_argument("--out", type=Path, default=Path("docs/demo.png"))
    args = parser.parse_args()
    settings = ServerSettings(**{
        **FAST_SCRIPTED,
        "scripted_transcripts": TRANSCRIPTS,
        "scripted_replies": REPLIES,
        # Delays of the order of the real models' on a small CPU, so the page has something to show.
        "scripted_stt_delay_ms": 250.0,
        "scripted_token_delay_ms": 30.0,
        "scripted_tts_ms_per_char": 45.0,
        "min_silence_ms": 500,
    })
    with tempfile.TemporaryDirectory() as scratch, running_server(settings) as server:
        # A question every 6.2 s (Chromium loops the file).
        microphone = write_question_wav(Path(scratch) / "mic.wav", pause_after_s=5.0)
        flags = [*WEBRTC_LOOPBACK_FLAGS, *fake_microphone_flags(microphone)]
        with chromium(flags, window=(960, 960)) as page:
            page.open(f"{server.http_url}/demo?autoconnect=1&transport={args.transport}")
            stats = "JSON.stringify(window.__demoStats)"
            page.wait_for("window.__demoStats?.tools.length > 0 && window.__demoStats.userTranscripts.length >= 3",
                          90, "the third question", explain=stats)
            page.wait_for("window.__demoStats.state === 'speaking'", 30, "the third answer", explain=stats)
            page.evaluate("new Promise(resolve => setTimeout(resolve, 1200))")  # some of its words on the page
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} kB)")


if __name__ == "__main__":
    main()
