"""A model's chat template and a folder's tokenizer, read without transformers.

``tokenizer.json`` goes to the ``tokenizers`` library and the chat template
(``chat_template.jinja`` or the ``chat_template`` key of
``tokenizer_config.json``) is rendered with Jinja2 in a sandbox, the way
transformers renders it. Importing transformers would pull in torch (~3 s and
~300 MB here), which the CTranslate2 backend does not otherwise need.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer
from tokenizers.decoders import DecodeStream

# Some GGUF conversions of Qwen2.5 (the 1.5B Coder's) write the template's tool-call example with doubled
# braces, a format string's escape left unformatted: the model copies `{{"name": …}}` and its calls do not parse.
_DOUBLED_CALL_EXAMPLE = re.compile(r'\{\{(\\"name\\": <function-name>, \\"arguments\\": <args-json-object>)\}\}')


def repaired_template(source: str) -> str:
    """``source`` with a doubled-brace tool-call example written as the JSON it stands for."""
    return _DOUBLED_CALL_EXAMPLE.sub(lambda match: "{" + match.group(1) + "}", source)


def _raise_exception(message: str) -> None:
    # Chat templates call this to reject what they cannot render (e.g. a system role).
    raise ValueError(message)


def _token_text(value: Any) -> str | None:
    """``tokenizer_config.json`` writes special tokens as a string or as ``{"content": ...}``."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return data if isinstance(data, dict) else {}


class ChatTemplate:
    """A Jinja2 chat template, rendered in a sandbox with the helpers transformers gives templates."""

    def __init__(self, source: str, bos_token: str | None = None, eos_token: str | None = None) -> None:
        from jinja2.ext import loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
        environment.filters["tojson"] = lambda value, indent=None: json.dumps(value, indent=indent,
                                                                              ensure_ascii=False)
        environment.globals["raise_exception"] = _raise_exception
        environment.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        self.chat_template = source
        self._template = environment.from_string(repaired_template(source))
        self._specials = {"bos_token": bos_token or "", "eos_token": eos_token or ""}

    def apply_chat_template(
        self, conversation: list[dict[str, Any]], tokenize: bool = False, add_generation_prompt: bool = True,
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        if tokenize:
            raise ValueError("ChatTemplate renders text only")
        return str(self._template.render(messages=conversation, add_generation_prompt=add_generation_prompt,
                                         tools=tools, **self._specials))


class LocalTokenizer:
    """Encodes prompts, streams decoded text and renders the chat template of one model folder."""

    def __init__(self, folder: Path) -> None:
        tokenizer_file = folder / "tokenizer.json"
        if not tokenizer_file.exists():
            raise RuntimeError(f"{folder} has no tokenizer.json (a fast tokenizer is required)")
        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        config = _read_json(folder / "tokenizer_config.json")
        self.bos_token = _token_text(config.get("bos_token"))
        self.eos_token = _token_text(config.get("eos_token"))
        template_file = folder / "chat_template.jinja"
        template = template_file.read_text() if template_file.exists() else config.get("chat_template")
        self.chat_template: str | None = template if isinstance(template, str) else None
        self._template: ChatTemplate | None = None
        self.end_token_ids = self._end_token_ids(folder)

    def _end_token_ids(self, folder: Path) -> tuple[int, ...]:
        """Tokens that end a reply: the generation config's EOS ids, else the tokenizer's EOS token."""
        eos = _read_json(folder / "generation_config.json").get("eos_token_id")
        ids = eos if isinstance(eos, list) else [eos] if isinstance(eos, int) else []
        if not ids and self.eos_token is not None:
            token_id = self._tokenizer.token_to_id(self.eos_token)
            ids = [] if token_id is None else [token_id]
        return tuple(int(i) for i in ids)

    def apply_chat_template(
        self, conversation: list[dict[str, Any]], tokenize: bool = False, add_generation_prompt: bool = True,
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        """The prompt text; the signature follows transformers' so ``chat_prompt.render_prompt`` takes either."""
        if tokenize:
            raise ValueError("LocalTokenizer renders text only; call tokens() on it")
        if self.chat_template is None:
            raise ValueError("this model has no chat template")
        if self._template is None:
            self._template = ChatTemplate(self.chat_template, self.bos_token, self.eos_token)
        return self._template.apply_chat_template(conversation, add_generation_prompt=add_generation_prompt,
                                                  tools=tools)

    def tokens(self, text: str) -> list[str]:
        """``text`` as token strings (what CTranslate2 takes); special tokens in it are matched, none added."""
        return list(self._tokenizer.encode(text, add_special_tokens=False).tokens)

    def decode(self, ids: list[int]) -> str:
        return str(self._tokenizer.decode(ids, skip_special_tokens=True))

    def decode_stream(self) -> TextStream:
        return TextStream(self._tokenizer)


class TextStream:
    """Token ids in, text out as soon as it is whole (a multi-byte character may span tokens)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tokenizer = tokenizer
        self._stream = DecodeStream(skip_special_tokens=True)

    def step(self, token_id: int) -> str:
        return self._stream.step(self._tokenizer, token_id) or ""
