"""What the Chat Completions and Responses backends share: client, history, reasoning."""

from __future__ import annotations

from typing import Any

from speech_to_speech.config import LLMSettings, LoadContext
from speech_to_speech.llm.context_window import ModelContext, fitted_history
from speech_to_speech.openai_client import make_client
from speech_to_speech.pipeline.messages.generation import ChatMessage, GenerateResponseRequest

# A provider's context where --llm_context_tokens does not say (today's hosted and vLLM models hold at least this).
REMOTE_CONTEXT_TOKENS = 32768


def llm_client(settings: LLMSettings, context: LoadContext | None = None) -> Any:
    # Generation streams can be long; the timeout bounds silence between bytes, not the whole reply.
    return make_client(settings.base_url, settings.api_key, timeout_s=60.0)


def model_name(settings: LLMSettings) -> str:
    return settings.model or "gpt-4o-mini"


def system_prompt(request: GenerateResponseRequest, settings: LLMSettings) -> str:
    return request.instructions or settings.init_chat_prompt


def provider_history(request: GenerateResponseRequest, settings: LLMSettings) -> tuple[ChatMessage, ...]:
    """The conversation a provider is sent: as much as fits its context (``--llm_context_tokens``, else
    REMOTE_CONTEXT_TOKENS), counted by estimate, cut in blocks as a local model's is."""
    context = ModelContext.of(settings, REMOTE_CONTEXT_TOKENS)
    return fitted_history(request, settings, context, system_prompt(request, settings))


def chat_messages(request: GenerateResponseRequest, settings: LLMSettings) -> list[dict[str, Any]]:
    """History in Chat Completions shape (tool calls and results included)."""
    history = provider_history(request, settings)
    answered = {m.tool_call_id for m in history if m.role == "tool"}
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt(request, settings)}]
    for message in history:
        # Providers reject a tool call that has no result after it; drop unanswered ones.
        calls = tuple(c for c in message.tool_calls if c["call_id"] in answered)
        if message.tool_calls and not calls and not message.content:
            continue
        messages.append(_chat_message(ChatMessage(message.role, message.content, calls, message.tool_call_id)))
    return messages


def _chat_message(message: ChatMessage) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    if message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {"id": call["call_id"], "type": "function",
                 "function": {"name": call["name"], "arguments": call["arguments"] or "{}"}}
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def responses_input(request: GenerateResponseRequest, settings: LLMSettings) -> list[dict[str, Any]]:
    """History as Responses API input items."""
    items: list[dict[str, Any]] = []
    for message in provider_history(request, settings):
        if message.role == "tool":
            items.append({"type": "function_call_output", "call_id": message.tool_call_id or "",
                          "output": message.content})
            continue
        if message.content:
            items.append({"role": message.role, "content": message.content})
        for call in message.tool_calls:
            items.append({"type": "function_call", "call_id": call["call_id"], "name": call["name"],
                          "arguments": call["arguments"] or "{}"})
    return items


def tool_choice(choice: str | dict[str, Any], chat: bool) -> Any:
    if isinstance(choice, dict):
        name = choice.get("name", "")
        return {"type": "function", "function": {"name": name}} if chat else {"type": "function", "name": name}
    return choice


def reasoning_options(request: GenerateResponseRequest, settings: LLMSettings, chat: bool) -> dict[str, Any]:
    """A client's effort wins over the startup flags for this request, as the spec says."""
    effort = request.reasoning_effort or settings.responses_api_reasoning_effort
    options: dict[str, Any] = {}
    if effort:
        if chat:
            options["reasoning_effort"] = effort
        else:
            options["reasoning"] = {"effort": effort}
    if settings.responses_api_disable_thinking and not request.reasoning_effort:
        options["extra_body"] = {"chat_template_kwargs": {"enable_thinking": False}}
    return options


def sampling_options(settings: LLMSettings) -> dict[str, Any]:
    """The sampling settings that differ from the provider's defaults.

    OpenAI has no repetition penalty; vLLM takes it as an extra sampling parameter.
    """
    options: dict[str, Any] = {}
    if settings.temperature:
        options["temperature"] = settings.temperature
    if settings.top_p < 1.0:
        options["top_p"] = settings.top_p
    if settings.repetition_penalty != 1.0:
        options["extra_body"] = {"repetition_penalty": settings.repetition_penalty}
    return options


def request_options(request: GenerateResponseRequest, settings: LLMSettings, chat: bool) -> dict[str, Any]:
    """Reasoning and sampling options of one request, their ``extra_body`` parts merged."""
    reasoning, sampling = reasoning_options(request, settings, chat), sampling_options(settings)
    extra = {**reasoning.pop("extra_body", {}), **sampling.pop("extra_body", {})}
    return {**reasoning, **sampling, **({"extra_body": extra} if extra else {})}
