"""Chat messages for the local LLM backends (transformers, mlx-lm).

Local models get plain role/content turns: tool results become user text for
now, and consecutive turns of one role are merged because many chat
templates insist on alternating roles.
"""

from __future__ import annotations

import logging
from typing import Any

from speech_to_speech.config import ServerSettings
from speech_to_speech.llm.tools import local_system_prompt
from speech_to_speech.pipeline.messages import ChatMessage, GenerateResponseRequest

log = logging.getLogger(__name__)

Turn = dict[str, str]


def _tool_names(messages: tuple[ChatMessage, ...]) -> dict[str, str]:
    return {
        call["call_id"]: call.get("name", "")
        for message in messages
        for call in message.tool_calls
        if "call_id" in call
    }


def _turn(message: ChatMessage, tool_names: dict[str, str]) -> Turn | None:
    if message.role == "tool":
        name = tool_names.get(message.tool_call_id or "")
        label = f"Tool result ({name})" if name else "Tool result"
        return {"role": "user", "content": f"{label}: {message.content}"}
    if message.role == "assistant" and not message.content.strip():
        return None  # a bare tool call: its result, rendered above, carries what the model needs
    return {"role": message.role, "content": message.content}


def chat_turns(request: GenerateResponseRequest, settings: ServerSettings) -> list[Turn]:
    """System prompt, then the last ``chat_size`` exchanges of the conversation."""
    # Session tools are rendered into the system prompt; the backends split calls back out.
    system = local_system_prompt(request, settings.init_chat_prompt)
    history = request.messages[-2 * settings.chat_size :]
    tool_names = _tool_names(request.messages)
    turns: list[Turn] = [{"role": "system", "content": system}] if system else []
    for message in history:
        turn = _turn(message, tool_names)
        if turn is None:
            continue
        if turns and turns[-1]["role"] == turn["role"]:
            turns[-1] = {"role": turn["role"], "content": f"{turns[-1]['content']}\n{turn['content']}"}
        else:
            turns.append(turn)
    return turns


def _without_system(turns: list[Turn]) -> list[Turn]:
    """Fold the system prompt into the first user turn, for templates that reject a system role."""
    if not turns or turns[0]["role"] != "system":
        return turns
    system, rest = turns[0]["content"], turns[1:]
    if rest and rest[0]["role"] == "user":
        return [{"role": "user", "content": f"{system}\n\n{rest[0]['content']}"}, *rest[1:]]
    return [{"role": "user", "content": system}, *rest]


def render_prompt(tokenizer: Any, turns: list[Turn]) -> str:
    """The prompt text, ending where the assistant's reply begins."""
    if not getattr(tokenizer, "chat_template", None):
        # A base model without a template: a plain transcript is the best we can do.
        lines = [f"{turn['role'].capitalize()}: {turn['content']}" for turn in turns]
        return "\n".join([*lines, "Assistant:"])
    try:
        text = tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
    except Exception as error:  # noqa: BLE001 - jinja raises its own error types for unsupported roles
        log.debug("chat template rejected the turns (%s); retrying without a system role", error)
        text = tokenizer.apply_chat_template(
            _without_system(turns), tokenize=False, add_generation_prompt=True
        )
    return str(text)
