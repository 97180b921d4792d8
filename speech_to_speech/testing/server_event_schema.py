"""What the test client accepts from a server: the GA Realtime schema of the ``openai`` package
(``RealtimeServerEvent``), with no field it lacks save those named here, or for extension events
(ours, ``speech_to_speech.*``, and the documented ones listed here) a string ``event_id``; and for
every event, the fields its ``TypedDict`` in ``speech_to_speech.protocol.server_events`` names, no more
and none missing, so the types the server is built with say what it sends.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, get_args

import pydantic
from openai.types.realtime import RealtimeServerEvent

from speech_to_speech.protocol.server_events import EVENT_TYPES

EXTENSION_PREFIX = "speech_to_speech."
# Stamped on every event as it leaves (realtime/connection/frames.py), so no event's own type names them.
ENVELOPE = frozenset({"event_id", "server_event_seq"})
_SERVER_EVENT = pydantic.TypeAdapter(RealtimeServerEvent)

# Fields outside the GA schema that a server may still send: OpenAI's own server
# sends the session's id and object, and ``extensions`` is our documented opt-in.
KNOWN_EXTRA = frozenset(
    f"{kind}:session.{name}"
    for kind in ("session.created", "session.updated")
    for name in ("id", "object", "extensions", "playback_commit_policy", "preamble_after_ms")
) | {"response.output_audio.delta:metadata"}  # audio duration, text marks, playback figures (docs/sessions.md)
# Extension events outside the GA schema (docs/sessions.md): checked, like ours, for a string event_id.
EXTENSION_EVENTS = frozenset({"playback.acknowledged"})
# The overlap policy's session fields and its decisions (docs/sessions.md, "Overlap policy").
KNOWN_EXTRA |= {f"{kind}:session.{name}" for kind in ("session.created", "session.updated")
                for name in ("overlap_policy", "overlap_short_ack_ms", "overlap_barge_in_ms")}
EXTENSION_EVENTS |= {"overlap.decision"}


def _models_by_type() -> dict[str, type[pydantic.BaseModel]]:
    union = get_args(RealtimeServerEvent)[0]
    models: dict[str, type[pydantic.BaseModel]] = {}
    for model in get_args(union):
        (literal,) = get_args(model.model_fields["type"].annotation)
        models[literal] = model
    return models


# The GA model of each server event type, by its ``type``.
GA_MODELS = _models_by_type()
# The session contract (docs/sessions.md, "Resume and replay"): every event of a session carries its
# server_event_seq; session.created names the session, its socket's generation, a resume token and
# the session's capabilities; the lifecycle events are extensions.
KNOWN_EXTRA |= {f"{kind}:server_event_seq" for kind in GA_MODELS} | {
    f"session.created:{name}"
    for name in ("session_id", "attachment_generation", "resume_token", "session.capabilities")}
EXTENSION_EVENTS |= {"session.resumed", "session.replaced", "session.heartbeat_ack", "session.closed",
                     "session.expired", "session.resync_required"}


class ProtocolViolation(AssertionError):
    """The server sent something a strict Realtime client would reject."""


def check_typed_fields(event: dict[str, Any]) -> None:
    """Raise ProtocolViolation unless ``event`` has a TypedDict and exactly the fields it allows."""
    kind = event.get("type")
    typed = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if typed is None:
        raise ProtocolViolation(f"{kind!r} has no TypedDict in speech_to_speech.protocol.server_events")
    fields = set(event) - ENVELOPE
    required: frozenset[str] = typed.__required_keys__  # type: ignore[attr-defined]
    optional: frozenset[str] = typed.__optional_keys__  # type: ignore[attr-defined]
    missing, unknown = required - fields, fields - required - optional
    if missing or unknown:
        raise ProtocolViolation(f"{kind} does not match {typed.__name__}: missing {sorted(missing)}, "
                                f"not in the type {sorted(unknown)}")


def _extra_fields(value: Any, path: str) -> list[str]:
    """Paths of fields the GA schema does not define (openai models allow extras)."""
    found: list[str] = []
    if isinstance(value, pydantic.BaseModel):
        found.extend(f"{path}.{key}" for key in value.model_extra or {})
        for name in type(value).model_fields:
            found.extend(_extra_fields(getattr(value, name), f"{path}.{name}"))
    elif isinstance(value, list | tuple):
        for index, entry in enumerate(value):
            found.extend(_extra_fields(entry, f"{path}[{index}]"))
    return found


def validate_server_event(event: Any, allowed_extra: Iterable[str] = ()) -> None:
    """Raise ProtocolViolation unless ``event`` is a valid server event.

    Standard events must validate against the GA schema and carry no field the
    schema lacks (save ``allowed_extra``, as ``"session.created:session.extensions"``
    paths); extension events need only a string ``event_id``.
    """
    if not isinstance(event, dict):
        raise ProtocolViolation(f"a server event must be a JSON object, got {event!r:.200}")
    kind = event.get("type")
    if not isinstance(event.get("event_id"), str) or not event["event_id"]:
        raise ProtocolViolation(f"{kind} has no string event_id: {event!r:.300}")
    check_typed_fields(event)
    if isinstance(kind, str) and (kind.startswith(EXTENSION_PREFIX) or kind in EXTENSION_EVENTS):
        return
    model = GA_MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise ProtocolViolation(f"{kind!r} is not a GA Realtime server event type")
    try:
        parsed = model.model_validate(event)
        _SERVER_EVENT.validate_python(event)
    except pydantic.ValidationError as error:
        raise ProtocolViolation(f"{kind} does not match the GA schema: {error}\nevent: {event!r:.600}") from None
    allowed = KNOWN_EXTRA | set(allowed_extra)
    extra = [p for p in _extra_fields(parsed, "") if f"{kind}:{p.lstrip('.')}" not in allowed]
    if extra:
        raise ProtocolViolation(f"{kind} has fields outside the GA schema: {extra}")
