"""The terminal transcript, captured with rich's recording console (no screenshots).

The user's partial words (deltas, snapshots) are replaced by the authoritative
completed transcript per item_id, in any order; the assistant's text comes
from deltas, or from done alone on a legacy stream, never printed twice.
"""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from speech_to_speech.client.transcript import TranscriptView

Event = dict[str, Any]


def make_view() -> tuple[TranscriptView, Console]:
    console = Console(record=True, file=io.StringIO(), width=100, force_terminal=False)
    return TranscriptView(console), console


def live_text(view: TranscriptView) -> str:
    """What the live (unfinished) area shows right now."""
    console = Console(record=True, file=io.StringIO(), width=100)
    console.print(view)
    return console.export_text()


def user_delta(item_id: str, delta: str) -> Event:
    return {"type": "conversation.item.input_audio_transcription.delta", "item_id": item_id, "delta": delta}


def completed(item_id: str, transcript: str) -> Event:
    return {"type": "conversation.item.input_audio_transcription.completed", "item_id": item_id,
            "transcript": transcript}


def assistant(kind: str, **fields: Any) -> Event:
    return {"type": f"response.output_audio_transcript.{kind}", "response_id": "r1", "item_id": "a1", **fields}


def test_deltas_are_replaced_by_the_completed_transcript() -> None:
    view, console = make_view()
    for delta in ["what", " is the", " capitol"]:
        view.handle(user_delta("u1", delta))
    assert "You: what is the capitol" in live_text(view)
    assert console.export_text(clear=False) == ""  # nothing final yet
    view.handle(completed("u1", "What is the capital of France?"))
    view.stop()
    assert console.export_text() == "You: What is the capital of France?\n"


def test_snapshots_show_speculative_words_without_duplicating_the_deltas() -> None:
    view, console = make_view()
    view.handle(user_delta("u1", "turn off"))
    view.handle({"type": "speech_to_speech.input_audio_transcription.snapshot", "item_id": "u1",
                 "transcript": "turn off the lights"})
    assert "You: turn off the lights" in live_text(view)
    view.handle({"type": "speech_to_speech.input_audio_transcription.snapshot", "item_id": "u1",
                 "transcript": "turn of the light"})  # a revision replaces the earlier snapshot
    assert "You: turn off the light" in live_text(view)
    view.handle(completed("u1", "Turn off the lights."))
    view.stop()
    assert console.export_text() == "You: Turn off the lights.\n"


def test_out_of_order_completions_go_to_their_own_items() -> None:
    view, console = make_view()
    view.handle(user_delta("u1", "first"))
    view.handle(user_delta("u2", "second"))
    view.handle(completed("u2", "Second question."))
    assert console.export_text(clear=False) == ""  # u1 still open: it keeps its place above u2
    view.handle(user_delta("u1", " one"))  # a later delta for the unresolved item still lands there
    assert "You: first one" in live_text(view)
    view.handle(completed("u1", "First question."))
    view.handle(user_delta("u1", " stale"))  # after completion: ignored
    view.stop()
    assert console.export_text() == "You: First question.\nYou: Second question.\n"


def test_an_empty_completion_removes_the_partial_line() -> None:
    view, console = make_view()
    view.handle(user_delta("u1", "uh"))
    view.handle(completed("u1", ""))
    view.stop()
    assert console.export_text() == ""


def test_assistant_deltas_then_done_print_the_reply_once() -> None:
    view, console = make_view()
    view.handle({"type": "response.created", "response": {"id": "r1"}})
    assert "thinking" in view.status()
    for delta in ["Paris is ", "the capital."]:
        view.handle(assistant("delta", delta=delta))
    assert view.status() == ""
    view.handle(assistant("done", transcript="Paris is the capital."))
    view.handle({"type": "response.done", "response": {"id": "r1", "status": "completed"}})
    view.stop()
    assert console.export_text() == "Assistant: Paris is the capital.\n"


def test_a_legacy_done_only_stream_is_shown_from_done() -> None:
    view, console = make_view()
    view.handle(assistant("done", transcript="Hello there."))
    view.stop()
    assert console.export_text() == "Assistant: Hello there.\n"


def test_an_interrupted_reply_is_marked() -> None:
    view, console = make_view()
    view.handle(assistant("delta", delta="Let me"))
    view.handle({"type": "response.done", "response": {"id": "r1", "status": "cancelled"}})
    view.stop()
    assert console.export_text() == "Assistant: Let me [interrupted]\n"


def test_tool_calls_show_as_they_run_and_the_status_says_so() -> None:
    view, console = make_view()
    view.tool_update("c1", "web_search", "running", '{"query": "news"}')
    assert view.status() == "running web_search…"
    assert 'web_search({"query": "news"}) … running' in live_text(view)
    view.tool_update("c1", "web_search", "done")
    view.stop()
    assert console.export_text() == '  ⚙ web_search({"query": "news"}) … done\n'


def test_a_full_turn_reads_in_conversation_order() -> None:
    view, console = make_view()
    view.handle({"type": "input_audio_buffer.speech_started", "item_id": "u1"})
    assert view.status() == "listening…"
    view.handle(user_delta("u1", "What"))
    view.handle({"type": "input_audio_buffer.committed", "item_id": "u1"})
    assert view.status().startswith("thinking")
    view.handle(completed("u1", "What time is it?"))
    view.handle(assistant("delta", delta="Noon."))
    view.handle({"type": "response.done", "response": {"id": "r1", "status": "completed"}})
    view.stop()
    assert console.export_text() == "You: What time is it?\nAssistant: Noon.\n"
