"""``--llm chat-completions``: any OpenAI-compatible /v1/chat/completions, streamed."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from speech_to_speech import registry
from speech_to_speech.config import LLMSettings
from speech_to_speech.llm import openai_common as common
from speech_to_speech.llm.base import GeneratedPart, LLMHandler, Terminal
from speech_to_speech.pipeline.messages.generation import AssistantToolCallPart, GenerateResponseRequest, TokenUsage

log = logging.getLogger(__name__)

_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


@registry.register("llm", "chat-completions", common.llm_client)
class ChatCompletionsLLM(LLMHandler):
    def generate(self, request: GenerateResponseRequest) -> Iterator[GeneratedPart]:
        settings: LLMSettings = self.settings
        kwargs: dict[str, Any] = {
            "model": common.model_name(settings),
            "messages": common.chat_messages(request, settings),
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_completion_tokens": request.max_output_tokens or settings.max_new_tokens,
            **common.request_options(request, settings, chat=True),
        }
        if request.tools and request.tool_choice != "none":
            kwargs["tools"] = [
                {"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                                  "parameters": t.get("parameters") or {"type": "object"}}}
                for t in request.tools
            ]
            kwargs["tool_choice"] = common.tool_choice(request.tool_choice, chat=True)
        calls: dict[int, dict[str, str]] = {}
        finish: str | None = None
        with self.model.chat.completions.create(**kwargs) as stream:
            for chunk in stream:
                if chunk.usage is not None:
                    yield TokenUsage(request.response_id, request.generation,
                                     chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta is not None and delta.content:
                        yield delta.content
                    for call in (delta.tool_calls or []) if delta is not None else []:
                        entry = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                        entry["id"] = call.id or entry["id"]
                        if call.function is not None:
                            entry["name"] += call.function.name or ""
                            entry["arguments"] += call.function.arguments or ""
                    finish = choice.finish_reason or finish
        for index in sorted(calls):
            call = calls[index]
            yield AssistantToolCallPart(request.response_id, request.generation,
                                        call["id"] or f"call_{index}", call["name"], call["arguments"] or "{}")
        if finish is None:
            log.warning("chat completions stream ended without a finish reason; treating it as complete")
        elif finish in _INCOMPLETE:
            yield Terminal("incomplete", reason=_INCOMPLETE[finish])
