"""Chat messages for the local LLM backends (CTranslate2, llama.cpp, transformers, mlx-lm).

Local models get plain role/content turns, and consecutive turns of one role
are merged because many chat templates insist on alternating roles. A model
whose chat template knows tools (``native_tools``) gets them through the
template, its past calls as assistant ``tool_calls`` and their results as
``tool`` turns; for other models tool results become user text.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Any

from speech_to_speech.config import LLMSettings
from speech_to_speech.llm.context_window import ModelContext, fitted_history
from speech_to_speech.llm.tools import local_system_prompt, native_tools
from speech_to_speech.pipeline.messages.generation import ChatMessage, GenerateResponseRequest

log = logging.getLogger(__name__)

Turn = dict[str, Any]
def knows_tools(tokenizer: Any) -> bool:
    """Whether the model's chat template renders a ``tools`` list itself (Qwen2.5's, Hermes-style)."""
    template = getattr(tokenizer, "chat_template", None)
    return isinstance(template, str) and "tools" in template and "tool_call" in template


def _tool_names(messages: tuple[ChatMessage, ...]) -> dict[str, str]:
    return {
        call["call_id"]: call.get("name", "")
        for message in messages
        for call in message.tool_calls
        if "call_id" in call
    }


def _native_turn(message: ChatMessage) -> Turn | None:
    if message.role == "assistant" and message.tool_calls:
        # The calls alone, as the model wrote them: words said before a call are mostly the server's preamble,
        # which the 0.5B, shown it there, said again and again in the answer to the result.
        calls = [{"name": call.get("name", ""), "arguments": _arguments(call.get("arguments", ""))}
                 for call in message.tool_calls]
        return {"role": "assistant", "content": "", "tool_calls": calls}
    if message.role == "assistant" and not message.content.strip():
        return None
    return {"role": message.role, "content": message.content}


def _arguments(text: str) -> Any:
    try:
        return json.loads(text or "{}")
    except json.JSONDecodeError:
        return text


def _turn(message: ChatMessage, tool_names: dict[str, str]) -> Turn | None:
    if message.role == "tool":
        name = tool_names.get(message.tool_call_id or "")
        label = f"Tool result ({name})" if name else "Tool result"
        return {"role": "user", "content": f"{label}: {message.content}"}
    if message.role == "assistant" and not message.content.strip():
        return None  # a bare tool call: its result, rendered above, carries what the model needs
    return {"role": message.role, "content": message.content}


def chat_turns(request: GenerateResponseRequest, settings: LLMSettings, native: bool = False,
               context: ModelContext | None = None) -> list[Turn]:
    """System prompt, then the conversation as far as it fits ``context`` (llm/context_window.py).

    ``native``: the chat template renders the tools (see ``knows_tools``);
    otherwise they are written into the system prompt. Either way the
    backends split the calls back out of the reply. Raises ContextOverflow
    where the conversation does not fit and the session's truncation is disabled.
    """
    context = context or ModelContext.of(settings)
    system = local_system_prompt(request, settings.init_chat_prompt, native)
    history = fitted_history(request, settings, context, system, native_tools(request) if native else None)
    tool_names = _tool_names(request.messages)
    turns: list[Turn] = [{"role": "system", "content": system}] if system else []
    for message in history:
        turn = _native_turn(message) if native else _turn(message, tool_names)
        if turn is None:
            continue
        mergeable = turn["role"] in ("user", "assistant") and "tool_calls" not in turn
        if mergeable and turns and turns[-1]["role"] == turn["role"] and "tool_calls" not in turns[-1]:
            turns[-1] = {"role": turn["role"], "content": f"{turns[-1]['content']}\n{turn['content']}"}
        else:
            turns.append(turn)
    if native and answers_result(request):
        turns.append({"role": "user", "content": ANSWER_THE_RESULT})
    return turns


# After a tool's result, in the template's own format, the 0.5B described the JSON or said nothing. Asked this,
# it said 11 of 11 results in a sentence (times, bookings, a page, errors; "Answer my question from that
# result", tried first, was said back word for word over a booking and refused over an error).
ANSWER_THE_RESULT = "Tell me what that result says, in one short sentence."


def answers_result(request: GenerateResponseRequest) -> bool:
    """Whether the reply answers a tool's result (the conversation's last item), in words."""
    return bool(request.messages) and request.messages[-1].role == "tool" and request.tool_choice == "auto"


def _without_system(turns: list[Turn]) -> list[Turn]:
    """Fold the system prompt into the first user turn, for templates that reject a system role."""
    if not turns or turns[0]["role"] != "system":
        return turns
    system, rest = turns[0]["content"], turns[1:]
    if rest and rest[0]["role"] == "user":
        return [{"role": "user", "content": f"{system}\n\n{rest[0]['content']}"}, *rest[1:]]
    return [{"role": "user", "content": system}, *rest]


def calls_native_tools(tokenizer: Any, request: GenerateResponseRequest) -> bool:
    """Whether the reply to ``request`` may call tools in the template's own JSON format: the template knows
    tools, there are some, and it is not the answer to a tool's result (which is words, see ``prompt_for``)."""
    return knows_tools(tokenizer) and bool(native_tools(request)) and not answers_result(request)


def prompt_for(tokenizer: Any, request: GenerateResponseRequest, settings: LLMSettings,
               context: ModelContext | None = None, *, calls_ruled_out: bool = False) -> str:
    """The prompt of ``request`` for a model: its tools in the template's own format when it has one,
    the conversation as far as it fits ``context``.

    Shown its own call format, the small model answers a tool's result with
    another call or the result's JSON instead of a sentence to say. A backend
    that rules out a call where that answer begins (``calls_ruled_out``:
    llama.cpp, llm/call_grammar.py) keeps the tools in its prompt, which then
    reads like the call's own up to the call, so the context reads on from its
    KV cache; asked without them, the whole conversation is read again, and
    again at the next turn (bench tools, 2-core Xeon: ~7 s each with its
    four tools; "What time is it in Paris?" spoken in 8.1 s, now 2.5 s).
    Other backends get the answer's prompt without the tools, the result as
    user text.
    """
    native = knows_tools(tokenizer) and bool(native_tools(request))
    if native and not calls_ruled_out and not calls_native_tools(tokenizer, request):
        return render_prompt(tokenizer, chat_turns(replace(request, tools=()), settings, context=context))
    turns = chat_turns(request, settings, native, context)
    return render_prompt(tokenizer, turns, native_tools(request) if native else None)


def render_prompt(tokenizer: Any, turns: list[Turn], tools: list[dict[str, Any]] | None = None) -> str:
    """The prompt text, ending where the assistant's reply begins (``tools`` for the template, if any)."""
    if not getattr(tokenizer, "chat_template", None):
        # A base model without a template: a plain transcript is the best we can do.
        lines = [f"{turn['role'].capitalize()}: {turn['content']}" for turn in turns]
        return "\n".join([*lines, "Assistant:"])
    extra: dict[str, Any] = {"tools": tools} if tools else {}
    try:
        text = tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True, **extra)
    except Exception as error:  # noqa: BLE001 - jinja raises its own error types for unsupported roles
        log.debug("chat template rejected the turns (%s); retrying without a system role", error)
        text = tokenizer.apply_chat_template(
            _without_system(turns), tokenize=False, add_generation_prompt=True, **extra
        )
    return str(text)
