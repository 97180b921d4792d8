"""``--llm responses-api``: the OpenAI Responses API (or a compatible server), streamed."""

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


@registry.register("llm", "responses-api", common.llm_client)
class ResponsesApiLLM(LLMHandler):
    def generate(self, request: GenerateResponseRequest) -> Iterator[GeneratedPart]:
        settings: LLMSettings = self.settings
        kwargs: dict[str, Any] = {
            "model": common.model_name(settings),
            "instructions": common.system_prompt(request, settings),
            "input": common.responses_input(request, self.settings),
            "stream": True,
            "store": False,
            "max_output_tokens": request.max_output_tokens or settings.max_new_tokens,
            **common.request_options(request, settings, chat=False),
        }
        if request.tools and request.tool_choice != "none":
            kwargs["tools"] = [
                {"type": "function", "name": t["name"], "description": t.get("description", ""),
                 "parameters": t.get("parameters") or {"type": "object"}}
                for t in request.tools
            ]
            kwargs["tool_choice"] = common.tool_choice(request.tool_choice, chat=False)
        terminal_seen = False
        with self.model.responses.create(**kwargs) as stream:
            for event in stream:
                kind = event.type
                if kind == "response.output_text.delta":
                    yield event.delta
                elif kind == "response.output_item.done" and event.item.type == "function_call":
                    item = event.item
                    yield AssistantToolCallPart(request.response_id, request.generation,
                                                item.call_id, item.name, item.arguments or "{}")
                elif kind in ("response.completed", "response.incomplete", "response.failed"):
                    terminal_seen = True
                    yield from self._terminal(request, event.response)
                elif kind == "error":
                    terminal_seen = True
                    yield Terminal("failed", error=getattr(event, "message", None) or "provider error")
        if not terminal_seen:
            log.warning("responses stream ended without a terminal event; treating it as complete")

    def _terminal(self, request: GenerateResponseRequest, response: Any) -> Iterator[GeneratedPart]:
        usage = response.usage
        if usage is not None:
            yield TokenUsage(request.response_id, request.generation, usage.input_tokens or 0,
                             usage.output_tokens or 0)
        if response.status == "incomplete":
            details = response.incomplete_details
            reason = getattr(details, "reason", None) or "max_output_tokens"
            yield Terminal("incomplete", reason=reason)
        elif response.status == "failed":
            error = response.error
            yield Terminal("failed", error=getattr(error, "message", None) or "the provider reported a failure")
