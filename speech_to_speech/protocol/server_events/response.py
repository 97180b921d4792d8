"""One response's events: its lifecycle, its output items, their content parts and the deltas that fill them.

The content events point at their part with a :class:`ContentRef`. The audio
delta is the one event built for every chunk of speech: like every
constructor here it is a plain dict literal, with nothing checked at run time.
"""

from typing import Any, Literal, NotRequired, TypedDict

from speech_to_speech.protocol.server_events.shapes import ContentPart, ContentRef, Item, ResponseBody


class ResponseCreated(TypedDict):
    type: Literal["response.created"]
    response: ResponseBody


class ResponseDone(TypedDict):
    type: Literal["response.done"]
    response: ResponseBody


class ResponseOutputItemAdded(TypedDict):
    type: Literal["response.output_item.added"]
    response_id: str
    output_index: int
    item: Item


class ResponseOutputItemDone(TypedDict):
    type: Literal["response.output_item.done"]
    response_id: str
    output_index: int
    item: Item


class ResponseContentPartAdded(TypedDict):
    type: Literal["response.content_part.added"]
    response_id: str
    item_id: str
    output_index: int
    content_index: int
    part: ContentPart


class ResponseContentPartDone(TypedDict):
    type: Literal["response.content_part.done"]
    response_id: str
    item_id: str
    output_index: int
    content_index: int
    part: ContentPart


class ResponseOutputTextDelta(TypedDict):
    type: Literal["response.output_text.delta"]
    response_id: str
    item_id: str
    output_index: int
    content_index: int
    delta: str


class ResponseOutputTextDone(TypedDict):
    type: Literal["response.output_text.done"]
    response_id: str
    item_id: str
    output_index: int
    content_index: int
    text: str


class ResponseOutputAudioDelta(TypedDict):
    type: Literal["response.output_audio.delta"]
    response_id: str
    item_id: str
    output_index: int
    content_index: int
    delta: str  # base64 audio in the session's output format
    metadata: NotRequired[dict[str, Any]]  # ours: the item's audio so far, text marks, playback figures


class ResponseOutputAudioDone(TypedDict):
    type: Literal["response.output_audio.done"]
    response_id: str
    item_id: str
    output_index: int
    content_index: int


class ResponseOutputAudioTranscriptDelta(TypedDict):
    type: Literal["response.output_audio_transcript.delta"]
    response_id: str
    item_id: str
    output_index: int
    content_index: int
    delta: str


class ResponseOutputAudioTranscriptDone(TypedDict):
    type: Literal["response.output_audio_transcript.done"]
    response_id: str
    item_id: str
    output_index: int
    content_index: int
    transcript: str


class ResponseFunctionCallArgumentsDelta(TypedDict):
    type: Literal["response.function_call_arguments.delta"]
    response_id: str
    item_id: str
    output_index: int
    call_id: str
    delta: str


class ResponseFunctionCallArgumentsDone(TypedDict):
    type: Literal["response.function_call_arguments.done"]
    response_id: str
    item_id: str
    output_index: int
    call_id: str
    name: str
    arguments: str


class VisemeSpan(TypedDict):
    viseme: str  # a name of visemes/catalog.py
    start_ms: int
    duration_ms: int


class ResponseOutputAudioVisemes(TypedDict):
    """Ours (protocol/extensions.py): the mouth shapes of the audio delta that follows it (docs/visemes.md)."""

    type: Literal["speech_to_speech.output_audio.visemes"]
    response_id: str
    item_id: str
    output_index: int
    content_index: int
    audio_start_ms: int
    source: Literal["phonemes", "audio"]
    visemes: list[VisemeSpan]


def response_created(response: ResponseBody) -> ResponseCreated:
    return {"type": "response.created", "response": response}


def response_done(response: ResponseBody) -> ResponseDone:
    return {"type": "response.done", "response": response}


def response_output_item_added(response_id: str, output_index: int, item: Item) -> ResponseOutputItemAdded:
    return {"type": "response.output_item.added", "response_id": response_id, "output_index": output_index,
            "item": dict(item)}


def response_output_item_done(response_id: str, output_index: int, item: Item) -> ResponseOutputItemDone:
    return {"type": "response.output_item.done", "response_id": response_id, "output_index": output_index,
            "item": dict(item)}


def response_content_part_added(ref: ContentRef, part: ContentPart) -> ResponseContentPartAdded:
    return {"type": "response.content_part.added", "response_id": ref["response_id"], "item_id": ref["item_id"],
            "output_index": ref["output_index"], "content_index": ref["content_index"], "part": part}


def response_content_part_done(ref: ContentRef, part: ContentPart) -> ResponseContentPartDone:
    return {"type": "response.content_part.done", "response_id": ref["response_id"], "item_id": ref["item_id"],
            "output_index": ref["output_index"], "content_index": ref["content_index"], "part": part}


def response_output_text_delta(ref: ContentRef, delta: str) -> ResponseOutputTextDelta:
    return {"type": "response.output_text.delta", "response_id": ref["response_id"], "item_id": ref["item_id"],
            "output_index": ref["output_index"], "content_index": ref["content_index"], "delta": delta}


def response_output_text_done(ref: ContentRef, text: str) -> ResponseOutputTextDone:
    return {"type": "response.output_text.done", "response_id": ref["response_id"], "item_id": ref["item_id"],
            "output_index": ref["output_index"], "content_index": ref["content_index"], "text": text}


def response_output_audio_delta(ref: ContentRef, delta: str,
                                metadata: dict[str, Any] | None = None) -> ResponseOutputAudioDelta:
    event: ResponseOutputAudioDelta = {
        "type": "response.output_audio.delta", "response_id": ref["response_id"], "item_id": ref["item_id"],
        "output_index": ref["output_index"], "content_index": ref["content_index"], "delta": delta}
    if metadata is not None:
        event["metadata"] = metadata
    return event


def response_output_audio_done(ref: ContentRef) -> ResponseOutputAudioDone:
    return {"type": "response.output_audio.done", "response_id": ref["response_id"], "item_id": ref["item_id"],
            "output_index": ref["output_index"], "content_index": ref["content_index"]}


def response_output_audio_transcript_delta(ref: ContentRef, delta: str) -> ResponseOutputAudioTranscriptDelta:
    return {"type": "response.output_audio_transcript.delta", "response_id": ref["response_id"],
            "item_id": ref["item_id"], "output_index": ref["output_index"], "content_index": ref["content_index"],
            "delta": delta}


def response_output_audio_transcript_done(ref: ContentRef, transcript: str) -> ResponseOutputAudioTranscriptDone:
    return {"type": "response.output_audio_transcript.done", "response_id": ref["response_id"],
            "item_id": ref["item_id"], "output_index": ref["output_index"], "content_index": ref["content_index"],
            "transcript": transcript}


def response_function_call_arguments_delta(response_id: str, item_id: str, output_index: int, call_id: str,
                                           delta: str) -> ResponseFunctionCallArgumentsDelta:
    return {"type": "response.function_call_arguments.delta", "response_id": response_id, "item_id": item_id,
            "output_index": output_index, "call_id": call_id, "delta": delta}


def response_function_call_arguments_done(response_id: str, item_id: str, output_index: int, call_id: str,
                                          name: str, arguments: str) -> ResponseFunctionCallArgumentsDone:
    return {"type": "response.function_call_arguments.done", "response_id": response_id, "item_id": item_id,
            "output_index": output_index, "call_id": call_id, "name": name, "arguments": arguments}


def response_output_audio_visemes(ref: ContentRef, audio_start_ms: int, source: Literal["phonemes", "audio"],
                                  visemes: list[VisemeSpan]) -> ResponseOutputAudioVisemes:
    return {"type": "speech_to_speech.output_audio.visemes", "response_id": ref["response_id"],
            "item_id": ref["item_id"], "output_index": ref["output_index"], "content_index": ref["content_index"],
            "audio_start_ms": audio_start_ms, "source": source, "visemes": visemes}
