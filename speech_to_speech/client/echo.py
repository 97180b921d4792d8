"""Echo cancellation between the client's own speaker and microphone (`talk` and `local` with devices).

What the speaker's callback hands PortAudio is the reference. The speaker and
the microphone run on their own PortAudio threads, and the microphone's
chunks are cancelled later, on the event loop, so the two are matched by
their own clocks, not by when the loop gets to them: each microphone block
notes how much the speaker had been handed by the time it was captured, and
a chunk is cancelled against the reference from that point on. A late event
loop then delays both alike, and what the speaker played before the
microphone opened is dropped. The two streams' reported latencies tell the
canceller where to start looking for the echo.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import numpy.typing as npt

from speech_to_speech.audio.echo import EchoCanceller
from speech_to_speech.audio.resample import StreamResampler

Samples = npt.NDArray[np.float32]
# How far the reference may lag its place before it is moved: more than the speaker's resampler holds
# back (it hands over in bursts), so only a real backlog moves it, once.
TOLERANCE_MS = 50


class DeviceEcho:
    def __init__(self, mic_rate: int, speaker_rate: int, *, noise_suppression: bool = False) -> None:
        self._mic_rate = mic_rate
        self._canceller = EchoCanceller(mic_rate, noise_suppression=noise_suppression)
        self._to_mic_rate = StreamResampler(speaker_rate, mic_rate)  # PortAudio's output thread only
        # Handed between threads through deques (their appends and pops are atomic).
        self._played: deque[Samples] = deque()  # the speaker's blocks, at the mic rate
        self._handed = 0  # reference samples the speaker has been handed (output thread)
        self._captures: deque[tuple[int, int]] = deque()  # (mic samples captured, reference handed by then)
        self._captured = 0  # microphone samples captured, at the mic rate (input thread)
        self._fed = 0  # reference samples given to the canceller
        self._consumed = 0  # microphone samples cancelled
        self._latency_s = {"input": 0.0, "output": 0.0}

    def device_latency(self, kind: str, seconds: float) -> None:
        """A stream's reported latency (``input`` or ``output``): their sum is the echo's expected delay."""
        self._latency_s[kind] = max(0.0, float(seconds))
        self._canceller.set_delay_hint_ms(round(sum(self._latency_s.values()) * 1000))

    def played(self, block: Samples) -> None:
        """What the speaker plays now (called from its audio thread, at the speaker's rate)."""
        samples = self._to_mic_rate.process(block)
        self._played.append(samples)
        self._handed += len(samples)

    def captured(self, frames: int, device_rate: int) -> None:
        """The microphone captured ``frames`` more at ``device_rate`` (called from its audio thread)."""
        self._captured += frames * self._mic_rate // device_rate
        self._captures.append((self._captured, self._handed))

    def cancel(self, chunk: Samples) -> Samples:
        """A microphone chunk (at the mic's send rate) with the speaker's echo removed."""
        while self._played:
            samples = self._played.popleft()
            self._canceller.played(samples)
            self._fed += len(samples)
        # Where the reference stood when this chunk's first sample was captured: what the speaker had been
        # handed when the block holding that sample came in, less the samples captured after it.
        start = self._consumed
        self._consumed += len(chunk)
        while self._captures and self._captures[0][0] <= start:
            self._captures.popleft()  # blocks already cancelled
        if self._captures:
            captured, handed = self._captures[0]
            head = self._fed - self._canceller.pending_reference  # the reference sample the canceller is at
            behind = handed - (captured - start) - head
            if behind > self._mic_rate * TOLERANCE_MS // 1000:
                self._canceller.drop_reference(behind)
        return self._canceller.cancel(chunk)
