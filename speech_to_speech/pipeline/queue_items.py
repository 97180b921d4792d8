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

# The edges that close the turn-taking loop (docs/architecture.md draws it): what comes back to the VAD about
# the turn it is in, from other threads, on its own input queue. The turn detector's verdict on a pause (its
# pool, through ``reply_to``); from the service, through the unit: the words of a pause's speculative STT pass
# (report_words), the reply to them being ready to play (report_reply_ready), and a request for the words of
# speech over its answer (probe_speech).
TurnFeedback: TypeAlias = TurnVerdict | SpeculativeTranscript | ReplyReady | ProbeSpeech
# What the VAD consumes: the session's audio, its commits and clears, and the feedback about its turn.
VADConsumed: TypeAlias = AudioChunk | CommitInput | ClearInput | TurnFeedback
VADInput: TypeAlias = VADConsumed | Control
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
