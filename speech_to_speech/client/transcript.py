"""The live terminal transcript (rich).

Lines appear in conversation order and are printed for good once they are
final; only the unfinished tail is redrawn. The user's words come from the
append-only deltas plus opt-in snapshots (speculative, dimmed) and are
replaced, per ``item_id`` and in any order, by the authoritative
``completed`` transcript. The assistant's come from transcript deltas; a
legacy server that sends only ``done`` is shown from that, and a ``done``
after deltas finalizes without printing the text a second time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from speech_to_speech.protocol import SNAPSHOT_EXTENSION, Event


@dataclass
class _User:
    item_id: str
    committed: str = ""  # concatenated deltas: stable words
    snapshot: str = ""  # latest speculative hypothesis
    final: str | None = None

    @property
    def done(self) -> bool:
        return self.final is not None

    @property
    def empty(self) -> bool:
        return self.final is None and not self.committed and not self.snapshot

    def render(self) -> Text:
        text = Text("You: ", style="bold cyan")
        if self.final is not None:
            return text.append(self.final)
        text.append(self.committed)
        extra = self.snapshot.split()[len(self.committed.split()) :]
        if extra:
            text.append((" " if self.committed else "") + " ".join(extra), style="dim")
        return text


@dataclass
class _Assistant:
    item_id: str
    response_id: str
    text: str = ""
    streamed: bool = False  # deltas were shown: the terminal transcript is not re-rendered
    done: bool = False
    interrupted: bool = False

    def render(self) -> Text:
        text = Text("Assistant: ", style="bold green").append(self.text)
        return text.append(" [interrupted]", style="dim") if self.interrupted else text


@dataclass
class _Tool:
    call_id: str
    name: str
    state: str = "running"
    arguments: str = ""

    @property
    def done(self) -> bool:
        return self.state != "running"

    def render(self) -> Text:
        style = {"running": "yellow", "done": "green", "error": "red", "cancelled": "dim"}[self.state]
        return Text(f"  ⚙ {self.name}({self.arguments}) … {self.state}", style=style)


@dataclass
class _Status:
    listening: bool = False
    waiting_since: float | None = None  # a turn ended or a response began, nothing heard yet
    tools: set[str] = field(default_factory=set)


class TranscriptView:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()
        self._lines: list[_User | _Assistant | _Tool] = []
        self._users: dict[str, _User] = {}  # unresolved user items, until their completed
        self._completed: set[str] = set()  # late deltas for these are ignored
        self._assistants: dict[str, _Assistant] = {}
        self._tools: dict[str, _Tool] = {}
        self._status = _Status()
        self._live: Live | None = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._live = Live(self, console=self.console, refresh_per_second=8, transient=True)
        self._live.start()

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        for line in self._lines:
            self.console.print(line.render())
        self._lines.clear()

    def __rich__(self) -> RenderableType:
        parts: list[RenderableType] = [line.render() for line in self._lines]
        status = self.status()
        if status:
            parts.append(Spinner("dots", Text(status, style="dim")))
        return Group(*parts)

    def status(self) -> str:
        """The one-line status: what the assistant is doing while nothing is being said."""
        if self._status.listening:
            return "listening…"
        if self._status.tools:
            return "running " + ", ".join(sorted(self._status.tools)) + "…"
        if self._status.waiting_since is not None:
            return f"thinking… {time.monotonic() - self._status.waiting_since:.0f}s"
        return ""

    # ------------------------------------------------------------ events

    def handle(self, event: Event) -> None:
        kind = str(event.get("type"))
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, event)
            self._flush()

    def tool_update(self, call_id: str, name: str, state: str, arguments: str = "") -> None:
        tool = self._tools.get(call_id)
        if tool is None:
            tool = self._tools[call_id] = _Tool(call_id, name, arguments=arguments)
            self._lines.append(tool)
        tool.state = state
        (self._status.tools.add if state == "running" else self._status.tools.discard)(name)
        self._flush()

    def _user(self, item_id: str) -> _User | None:
        if item_id in self._completed:
            return None
        user = self._users.get(item_id)
        if user is None:
            user = self._users[item_id] = _User(item_id)
        if user not in self._lines:  # new, or set aside while it had no words
            self._lines.append(user)
        return user

    def _assistant(self, event: Event) -> _Assistant:
        item_id = str(event.get("item_id"))
        line = self._assistants.get(item_id)
        if line is None:
            line = self._assistants[item_id] = _Assistant(item_id, str(event.get("response_id")))
            self._lines.append(line)
        self._status.waiting_since = None
        return line

    def _speech_started(self, event: Event) -> None:
        self._status.listening = True  # the user's line appears with their first words

    def _committed(self, event: Event) -> None:
        self._status.listening = False
        self._status.waiting_since = self._status.waiting_since or time.monotonic()

    def _user_delta(self, event: Event) -> None:
        user = self._user(str(event.get("item_id")))
        if user is not None:
            user.committed += str(event.get("delta") or "")

    def _user_snapshot(self, event: Event) -> None:
        user = self._user(str(event.get("item_id")))
        if user is not None:
            user.snapshot = str(event.get("transcript") or "")

    def _user_completed(self, event: Event) -> None:
        user = self._user(str(event.get("item_id")))
        if user is None:
            return
        user.final = str(event.get("transcript") or "").strip()
        user.committed = user.snapshot = ""  # the authoritative text replaces all partial state
        if not user.final:
            self._lines.remove(user)  # an empty turn: nothing was said
        del self._users[user.item_id]
        self._completed.add(user.item_id)

    def _response_created(self, event: Event) -> None:
        self._status.waiting_since = self._status.waiting_since or time.monotonic()

    def _assistant_delta(self, event: Event) -> None:
        line = self._assistant(event)
        if not line.done:
            line.text += str(event.get("delta") or "")
            line.streamed = True

    def _assistant_done(self, event: Event) -> None:
        line = self._assistant(event)
        if not line.streamed:  # a legacy done-only stream
            line.text = str(event.get("transcript") or event.get("text") or "")
        line.done = True

    def _response_done(self, event: Event) -> None:
        response = event.get("response") or {}
        self._status.waiting_since = None
        for line in self._assistants.values():
            if line.response_id == response.get("id"):
                line.done = True
                line.interrupted = response.get("status") == "cancelled"

    def _flush(self) -> None:
        """Print the finished prefix for good; the live area keeps the rest."""
        while self._lines and (self._lines[0].done or _empty_user(self._lines[0])):
            line = self._lines.pop(0)
            if isinstance(line, _User) and not line.done:
                continue  # no words yet: it must not hold back the lines after it
            if isinstance(line, _Assistant):
                self._assistants.pop(line.item_id, None)
            if not (isinstance(line, _Assistant) and not line.text.strip()):
                self.console.print(line.render())
        if self._live is not None:
            self._live.refresh()


def _empty_user(line: _User | _Assistant | _Tool) -> bool:
    return isinstance(line, _User) and line.empty


_HANDLERS = {
    "input_audio_buffer.speech_started": TranscriptView._speech_started,
    "input_audio_buffer.committed": TranscriptView._committed,
    "conversation.item.input_audio_transcription.delta": TranscriptView._user_delta,
    SNAPSHOT_EXTENSION: TranscriptView._user_snapshot,
    "conversation.item.input_audio_transcription.completed": TranscriptView._user_completed,
    "response.created": TranscriptView._response_created,
    "response.output_audio_transcript.delta": TranscriptView._assistant_delta,
    "response.output_text.delta": TranscriptView._assistant_delta,
    "response.output_audio_transcript.done": TranscriptView._assistant_done,
    "response.output_text.done": TranscriptView._assistant_done,
    "response.done": TranscriptView._response_done,
}
