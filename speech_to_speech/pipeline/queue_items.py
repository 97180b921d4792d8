"""What travels on each queue of a pipeline unit (units/unit.py), as one type per queue.

A stage forwards every item it does not consume, so a queue carries what its
stage makes, what the stages before it let through, and the control items
every queue carries. ``tests/realtime/test_queue_items.py`` runs sessions
through a unit and checks each queue against its type.
"""

from __future__ import annotations

from typing import TypeAlias

from speech_to_speech.pipeline.messages.control import Control
from speech_to_speech.pipeline.messages.generation import (
                       AssistantTextPart,
                       AssistantToolCallPart,
                       GenerateResponseRequest,
                       LLMFirstToken,
                       Preamble,
                       PromptPrefill,
                       ResponseDone,
                       TokenUsage,
)
from speech_to_speech.pipeline.messages.input_audio import (
                       AudioChunk,
                       ClearInput,
                       CommitInput,
                       SpeculationVoided,
                       SpeechOngoing,
                       SpeechStarted,
                       SpeechStopped,
                       Utterance,
)
from speech_to_speech.pipeline.messages.speech_output import (
                       AudioOutput,
                       AudioVisemes,
                       SpokenPhonemes,
                       TranscriptText,
                       TTSFirstAudio,
                       TTSInput,
)
from speech_to_speech.pipeline.messages.transcription import (
                       SpeculativeTranscript,
                       Transcript,
                       TranscriptionCompleted,
                       TranscriptionDelta,
                       TranscriptionSnapshot,
)
from speech_to_speech.pipeline.messages.turn_taking import ProbeSpeech, ReplyReady, TurnDecision, TurnVerdict

# The VAD's input: the session's audio, its commits and clears, and what its turn decision is told
# (the detector's verdicts, a pause's words, its reply being ready).
VADInput: TypeAlias = (AudioChunk | CommitInput | ClearInput | TurnVerdict | SpeculativeTranscript | ReplyReady
                       | ProbeSpeech | Control)
# VAD -> STT: the user turns, whole, at a pause, or while the user speaks.
Utterances: TypeAlias = Utterance | Control
# STT -> the transcription notifier.
Transcripts: TypeAlias = Transcript | Control
# Every stage -> the service (on the event loop): what the user did and what was heard.
StageEvent: TypeAlias = (SpeechStarted | SpeechStopped | SpeechOngoing | SpeculationVoided | TurnDecision
                         | TranscriptionDelta | TranscriptionSnapshot | TranscriptionCompleted
                         | SpeculativeTranscript | Control)
# The service -> the LLM.
LLMRequest: TypeAlias = GenerateResponseRequest | PromptPrefill | Control
# What a response is made of after the LLM, and after the TTS (which also marks its first audio).
LLMOutput: TypeAlias = (AssistantTextPart | AssistantToolCallPart | Preamble | TokenUsage | LLMFirstToken
                        | ResponseDone | Control)
TTSQueueItem: TypeAlias = TTSInput | AssistantToolCallPart | TokenUsage | LLMFirstToken | ResponseDone | Control
# The TTS -> the service: a response's audio, its transcript in order with it, its tool calls, usage and
# terminal (with ``--enable_visemes``, the TTS -> the viseme stage, the phonemes it said told beside the audio).
TTSOutput: TypeAlias = (AudioOutput | TranscriptText | SpokenPhonemes | TTSFirstAudio | AssistantToolCallPart
                        | TokenUsage | LLMFirstToken | ResponseDone | Control)
# What reaches the service after the TTS, or after the viseme stage, which adds the visemes of each chunk.
ResponseOutput: TypeAlias = TTSOutput | AudioVisemes
