"""Invariants of turns and responses over random interleavings (hypothesis).

The session runs on a SteppedUnit: the real VAD (energy), STT base with its
speculation reuse, TranscriptionNotifier, LLM base, LMOutputProcessor and
TTS, with a scripted LLM that says what it was asked ("You said: …") and an
STT whose words follow the bursts of speech it hears. Hypothesis chooses
what the user says (speech, pauses shorter or longer than the end-of-turn
silence), what the STT hears (the same words, other words, nothing), what
the client sends (response.create / cancel, commit, clear, session.update of
turn_detection, create_response and interrupt_response) and, between each,
which stage moves and when the send loop delivers. Then the user falls
silent, everything runs out, and the event log must hold:

- response.created and response.done pair one to one, in that order, and no
  output of a response comes outside that pair;
- every cancelled response.done says why: turn_detected right before a
  speech_started, client_cancelled right after the client's response.cancel;
- every turn the server VAD commits while automatic responses are on and no
  response is active gets exactly one automatic response, which ends
  completed or incomplete unless it was cancelled as above, and which
  answers the final words of the user (never the words of a speculation
  that the user went past);
- nothing fails and the server reports no error of its own;
- the unit drains to idle.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import event as count_example
from hypothesis import strategies as st

from speech_to_speech.audio.chunker import VAD_CHUNK
from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.messages.input_audio import Utterance
from speech_to_speech.realtime.service.realtime_service import RealtimeService
from speech_to_speech.stt.base import STTHandler
from speech_to_speech.testing.engine import scripted_builders, speech, stage
from speech_to_speech.testing.scripted import voiced_runs
from speech_to_speech.testing.stepped import SteppedUnit

CI_EXAMPLES = int(os.environ.get("S2S_PROPERTY_EXAMPLES", "400"))
REPLY = "You said: {heard}"
CLIENT = {"source": "client"}  # metadata of the responses the client asks for
SENTENCE = "please tell me a very long story about a brave knight and a friendly dragon today"
WORDS = SENTENCE.split(" ")
SETTINGS = ServerSettings(
    vad="scripted", stt="scripted", llm="scripted", tts="scripted",
    min_silence_ms=192, speculation_silence_ms=64, min_speech_ms=96, speech_pad_ms=64,
    scripted_replies=[REPLY], scripted_tts_ms_per_char=4.0,
)
SPEECH_CHUNK = speech(VAD_CHUNK / 16000)[:VAD_CHUNK]
SILENT_CHUNK = np.zeros(VAD_CHUNK, dtype=np.float32)


HEARING = st.sampled_from(["same", "other", "nothing"])
# The final pass may reuse the transcript of the turn's last speculation (no speech since), or
# transcribe the whole turn again, as an STT that wants the final pass to see everything would.
FINAL_PASS = st.sampled_from(["reuse", "again"])


class HeardSTT(STTHandler):
    """Two words per burst of speech, as drawn (``model``): the same, the last one garbled, or nothing."""

    def _text_of(self, item: Utterance) -> tuple[str, str | None]:
        if item.reuse_speculation and self.model(FINAL_PASS) == "again":
            item = replace(item, reuses=0)
        return super()._text_of(item)

    def transcribe(self, samples: FloatAudio, language: str | None) -> tuple[str, str | None]:
        words = WORDS[: 2 * voiced_runs(samples)]
        hearing = self.model(HEARING) if words else "same"
        if hearing == "nothing":
            return "", "en"
        if hearing == "other":
            words = [*words[:-1], words[-1] + "s"]
        return " ".join(words), "en"


@dataclass
class Session:
    """A service over a stepped unit, and the timeline of what each side sent."""

    draw: Callable[[st.SearchStrategy[Any]], Any]
    unit: SteppedUnit = field(init=False)
    service: RealtimeService = field(init=False)
    timeline: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    sent: int = 0

    def __post_init__(self) -> None:
        builders = scripted_builders(SETTINGS, stt=stage(HeardSTT, SETTINGS, self.draw))
        self.unit = SteppedUnit(builders)
        self.service = RealtimeService(self.unit, SETTINGS, lambda event: self.timeline.append(("server", event)))
        self.service.start()

    def client(self, kind: str, **fields: Any) -> None:
        self.sent += 1
        event = {"type": kind, "event_id": f"evt_{self.sent}", **fields}
        self.timeline.append(("client", event))
        self.service.handle_client_event(event)

    def actions(self) -> dict[str, Callable[[], None]]:
        """What may happen next, by name (hypothesis reports the names it drew)."""
        named: dict[str, Callable[[], None]] = {
            "speak": self.speak,
            "pause": self.pause,
            "deliver": lambda: self.unit.deliver(self.service),
            "response.create": lambda: self.client("response.create", response={"metadata": CLIENT}),
            "response.cancel": lambda: self.client("response.cancel"),
            "commit": lambda: self.client("input_audio_buffer.commit"),
            "clear": lambda: self.client("input_audio_buffer.clear"),
            "type a message": self.type_message,
            "turn_detection": self.update_turn_detection,
        }
        for name in self.unit.stages_with_work():
            named[f"step {name}"] = lambda name=name: self.unit.step(name)
            named[f"run {name}"] = lambda name=name: self.run_stage(name)
        return named

    def run_stage(self, name: str) -> None:
        """A stage that gets ahead: several outputs in a row."""
        for _ in range(self.draw(st.integers(1, 20))):
            self.unit.step(name)

    def speak(self) -> None:
        for _ in range(self.draw(st.integers(1, 12))):
            self.service.push_input(SPEECH_CHUNK)

    def pause(self) -> None:
        # Mostly shorter than the end-of-turn silence (6 chunks), sometimes longer.
        for _ in range(self.draw(st.integers(1, 8))):
            self.service.push_input(SILENT_CHUNK)

    def type_message(self) -> None:
        self.client("conversation.item.create", item={
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": f"typed {self.sent}"}]})

    def update_turn_detection(self) -> None:
        turn_detection = self.draw(st.one_of(
            st.none(),
            st.fixed_dictionaries({"type": st.just("server_vad"), "create_response": st.booleans(),
                                   "interrupt_response": st.booleans()}),
        ))
        self.client("session.update", session={"type": "realtime", "audio": {"input": {"turn_detection":
                                                                                    turn_detection}}})

    def settle(self) -> None:
        """The user falls silent (long enough to end any turn) and everything runs out."""
        for _ in range(12):
            self.service.push_input(SILENT_CHUNK)
        self.unit.run_until_quiet(self.service)


# How often each kind of action is drawn, against 1 for each client event: mostly a user who
# talks and pauses, and a pipeline that moves, with the client stepping in now and then.
WEIGHTS = {"speak": 6, "pause": 6, "deliver": 3, "step": 3, "run": 2, "type": 2}


def weighted(actions: dict[str, Callable[[], None]]) -> list[str]:
    return [name for name in sorted(actions) for _ in range(WEIGHTS.get(name.split()[0], 1))]


def server_events(timeline: list[tuple[str, dict[str, Any]]]) -> Iterator[tuple[int, dict[str, Any]]]:
    return ((i, event) for i, (side, event) in enumerate(timeline) if side == "server")


def response_id_of(event: dict[str, Any]) -> str | None:
    return event.get("response_id") or (event.get("response") or {}).get("id")


def check_pairing_and_containment(timeline: list[tuple[str, dict[str, Any]]]) -> None:
    created: dict[str, int] = {}
    done: dict[str, int] = {}
    for index, event in server_events(timeline):
        rid = response_id_of(event)
        if event["type"] == "response.created":
            assert rid not in created, f"{rid} created twice"
            created[rid] = index
        elif event["type"] == "response.done":
            assert rid in created and rid not in done, f"{rid} done without created, or twice"
            done[rid] = index
        elif rid is not None:
            assert rid in created and rid not in done, f"{event['type']} of {rid} outside its response"
    assert created.keys() == done.keys(), "a response was never done"


def check_cancel_reasons(timeline: list[tuple[str, dict[str, Any]]]) -> None:
    for index, event in server_events(timeline):
        if event["type"] != "response.done":
            continue
        response = event["response"]
        assert response["status"] in ("completed", "incomplete", "cancelled"), response
        if response["status"] != "cancelled":
            continue
        reason = response["status_details"]["reason"]
        if reason == "turn_detected":
            later = [e["type"] for side, e in timeline[index + 1:] if side == "server"]
            assert "input_audio_buffer.speech_started" in later[:8]
        else:
            assert reason == "client_cancelled", response["status_details"]
            last_client = next(e for side, e in reversed(timeline[:index]) if side == "client")
            assert last_client["type"] == "response.cancel"


@dataclass
class Turn:
    item_id: str
    committed_at: int
    eligible: bool  # committed by the server VAD with automatic responses on and no response active
    transcript: str | None = None


def vad_turns(timeline: list[tuple[str, dict[str, Any]]]) -> list[Turn]:
    """The turns the server VAD committed, and whether each must get an automatic response."""
    create_response = True
    active: set[str] = set()
    turns: list[Turn] = []
    previous: dict[str, Any] = {}
    for index, (side, event) in enumerate(timeline):
        kind = event["type"]
        if side == "server" and kind == "session.updated":
            td = event["session"]["audio"]["input"]["turn_detection"]
            create_response = td is not None and td.get("create_response", True) is not False
        elif side == "server" and kind == "response.created":
            active.add(event["response"]["id"])
        elif side == "server" and kind == "response.done":
            active.discard(event["response"]["id"])
        elif side == "server" and kind == "input_audio_buffer.committed":
            by_vad = previous.get("type") == "input_audio_buffer.speech_stopped" and (
                previous.get("item_id") == event["item_id"])
            if by_vad:
                turns.append(Turn(event["item_id"], index, create_response and not active))
        elif side == "server" and kind == "conversation.item.input_audio_transcription.completed":
            for turn in turns:
                if turn.item_id == event["item_id"]:
                    turn.transcript = event["transcript"]
        if side == "server":
            previous = event
    return turns


def expected_answers(timeline: list[tuple[str, dict[str, Any]]]) -> dict[str, str | None]:
    """What each response must say: "You said: " and the last user words when it was submitted.

    A response is submitted once no committed user turn waits for its
    transcript; it answers the conversation as it stands then. An automatic
    response whose own turn was heard as nothing says nothing (None).
    """
    texts: dict[str, str | None] = {}  # user items in conversation order: their words, None until heard
    expected: dict[str, str | None] = {}
    waiting: dict[str, str | None] = {}  # open, unsubmitted responses: their turn's item id
    for _, event in server_events(timeline):
        kind = event["type"]
        if kind == "conversation.item.added" and event["item"].get("role") == "user":
            content = event["item"]["content"][0]
            texts[event["item"]["id"]] = content.get("text")
        elif kind == "conversation.item.input_audio_transcription.completed":
            texts[event["item_id"]] = event["transcript"]
        elif kind == "input_audio_buffer.committed":
            turn_item = event["item_id"]
        elif kind == "response.created":
            auto = event["response"]["metadata"] != CLIENT
            waiting[event["response"]["id"]] = turn_item if auto else None
        elif kind == "response.done":
            waiting.pop(event["response"]["id"], None)
        if waiting and all(text is not None for text in texts.values()):
            for rid, turn in waiting.items():
                heard = [text for text in texts.values() if text]
                empty_turn = turn is not None and not texts.get(turn)
                expected[rid] = None if empty_turn else REPLY.format(heard=heard[-1] if heard else "")
            waiting.clear()
    return expected


def check_answers(timeline: list[tuple[str, dict[str, Any]]]) -> None:
    """Every response says what the conversation asked when it was submitted (a cancelled one, a part)."""
    expected = expected_answers(timeline)
    spoken: dict[str, str] = {}
    for _, event in server_events(timeline):
        if event["type"] == "response.output_audio_transcript.delta":
            spoken[event["response_id"]] = spoken.get(event["response_id"], "") + event["delta"]
        elif event["type"] == "response.done":
            rid, status = event["response"]["id"], event["response"]["status"]
            said = spoken.get(rid, "").strip()
            if rid not in expected:
                assert status == "cancelled" and not said, f"{rid} spoke before it was submitted: {said!r}"
                continue
            answer = expected[rid]
            if answer is None:
                assert not said and event["response"]["output"] == [], f"{rid} answered a turn heard as nothing"
            elif status == "cancelled":
                assert answer.strip().startswith(said), f"{rid} said {said!r}, not a part of {answer!r}"
            else:
                assert said == answer.strip(), f"{rid} said {said!r} instead of {answer!r}"


def check_every_turn_answered(timeline: list[tuple[str, dict[str, Any]]]) -> None:
    """A turn the server VAD commits while automatic responses are on and none is active gets one."""
    for turn in vad_turns(timeline):
        after = [e for _, e in server_events(timeline[turn.committed_at + 1:])]
        auto = [e["response"] for e in after if e["type"] == "response.created"
                and e["response"]["metadata"] != CLIENT]
        opened_at_commit = [e for e in after[:3] if e["type"] == "response.created"
                            and e["response"]["metadata"] != CLIENT]
        if not turn.eligible:
            assert not opened_at_commit, f"an automatic response to {turn.item_id}, committed during another"
            continue
        assert opened_at_commit and opened_at_commit[0]["response"]["id"] == auto[0]["id"], (
            f"turn {turn.item_id} got no automatic response")
        done = next(e["response"] for e in after if e["type"] == "response.done"
                    and e["response"]["id"] == auto[0]["id"])
        assert done["status"] in ("completed", "incomplete", "cancelled"), done  # cancelled: see its reason


def check_no_server_errors(timeline: list[tuple[str, dict[str, Any]]]) -> None:
    expected = {"input_audio_buffer_commit_empty", "conversation_already_has_active_response"}
    for _, event in server_events(timeline):
        if event["type"] == "error":
            assert event["error"]["code"] in expected, event["error"]


def check_idle(session: Session) -> None:
    service, unit = session.service, session.unit
    assert service.response is None
    assert service.speculations.current is None
    assert not service.pending_transcriptions
    assert unit.stages_with_work() == []
    assert unit.queues.stage_events.empty() and unit.queues.response_output.empty()
    token = unit.begin_session_end()
    ended = []
    for _ in range(1000):
        for name in unit.stages_with_work():
            unit.step(name)
        for tail in (unit.queues.stage_events, unit.queues.response_output):
            while not tail.empty():
                ended.append(tail.get_nowait())
        if not unit.stages_with_work():
            break
    assert [getattr(i, "token", None) for i in ended if type(i).__name__ == "SessionEnd"] == [token, token]


@settings(max_examples=CI_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_turn_and_response_invariants_hold_for_any_interleaving(data: st.DataObject) -> None:
    session = Session(data.draw)
    for _ in range(data.draw(st.integers(10, 200), label="actions")):
        actions = session.actions()
        actions[data.draw(st.sampled_from(weighted(actions)))]()
    session.settle()
    timeline = session.timeline
    check_no_server_errors(timeline)
    check_pairing_and_containment(timeline)
    check_cancel_reasons(timeline)
    check_every_turn_answered(timeline)
    check_answers(timeline)
    check_idle(session)
    turns = vad_turns(timeline)
    count_example(f"turns committed by the VAD: {min(len(turns), 3)}{'+' if len(turns) >= 3 else ''}")
    count_example(f"answered turns: {sum(bool(t.eligible and t.transcript) for t in turns) > 0}")
    statuses = {e["response"]["status"] for _, e in server_events(timeline) if e["type"] == "response.done"}
    for status in sorted(statuses):
        count_example(f"a response ended {status}")


def scripted_draws(hearings: list[str], final_pass: str) -> Callable[[st.SearchStrategy[Any]], Any]:
    """A ``draw`` for a story: the STT hears as listed, the final pass as given."""
    heard = iter(hearings)
    return lambda strategy: final_pass if strategy is FINAL_PASS else next(heard)


def test_output_of_a_dropped_speculation_already_queued_for_the_wire_never_reaches_the_response() -> None:
    session = Session(scripted_draws(["same", "other"], final_pass="again"))
    unit, service = session.unit, session.service

    def deliver_text() -> None:
        while not unit.queues.stage_events.empty():
            service.dispatch_pipeline_item(unit.queues.stage_events.get_nowait())

    for chunk in [SPEECH_CHUNK] * 4 + [SILENT_CHUNK] * 2:
        service.push_input(chunk)
    while unit.step("vad"):
        pass
    while unit.step("stt") or unit.step("transcription_notifier"):
        pass
    deliver_text()  # speech_started, then the speculative transcript: the speculation starts
    assert service.speculations.current is not None
    for stage_name in ("llm", "lm_output_processor", "tts"):
        while unit.step(stage_name):
            pass
    assert not unit.queues.response_output.empty()  # its answer waits for the send loop
    for chunk in [SILENT_CHUNK] * 6:
        service.push_input(chunk)
    while unit.step("vad") or unit.step("stt") or unit.step("transcription_notifier"):
        pass
    deliver_text()  # the turn ends and its final transcript says other words than the speculation
    unit.run_until_quiet(service)
    timeline = session.timeline
    finals = [e["transcript"] for _, e in server_events(timeline)
              if e["type"] == "conversation.item.input_audio_transcription.completed"]
    spoken = "".join(e["delta"] for _, e in server_events(timeline)
                     if e["type"] == "response.output_audio_transcript.delta")
    assert finals == ["please tells"]
    assert spoken.strip() == "You said: please tells"
    check_pairing_and_containment(timeline)
    check_answers(timeline)
