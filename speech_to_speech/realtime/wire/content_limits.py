"""What a session or a response may declare: bounded instructions, few and well-formed tools.

Checked after the pydantic models accepted the shape: the instructions are
not longer than the server allows, the tools not more numerous, and each
tool's ``parameters`` is a JSON Schema a validator can use (the LLM and the
packaged client both validate arguments against it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jsonschema import SchemaError
from jsonschema.validators import validator_for

from speech_to_speech.protocol.error_codes import INVALID_REQUEST
from speech_to_speech.realtime.wire.errors import RealtimeError

# A voice is a name: short, printable, no spaces (which names exist: realtime/wire/voices.py).
VOICE_PATTERN = r"^[A-Za-z0-9_.:-]+$"
VOICE_MAX_CHARS = 64


@dataclass(frozen=True)
class ContentLimits:
    max_instructions_chars: int = 100_000
    max_tools: int = 128

    def check(self, prefix: str, instructions: str | None, tools: Sequence[dict[str, Any]] | None,
              event_id: str | None) -> None:
        """Raise RealtimeError (param ``prefix.instructions``/``prefix.tools``) for content over the limits."""
        if instructions is not None and len(instructions) > self.max_instructions_chars:
            raise RealtimeError(INVALID_REQUEST,
                                f"'{prefix}.instructions' has {len(instructions)} characters; "
                                f"at most {self.max_instructions_chars} are allowed",
                                param=f"{prefix}.instructions", event_id=event_id)
        tools = tools or ()
        if len(tools) > self.max_tools:
            raise RealtimeError(INVALID_REQUEST, f"'{prefix}.tools' has {len(tools)} tools; at most "
                                f"{self.max_tools} are allowed", param=f"{prefix}.tools", event_id=event_id)
        for index, tool in enumerate(tools):
            schema = tool.get("parameters")
            if schema is None:
                continue
            param = f"{prefix}.tools[{index}].parameters"
            try:
                validator_for(schema).check_schema(schema)
            except SchemaError as error:
                raise RealtimeError(INVALID_REQUEST, f"'{param}' is not a valid JSON Schema: {error.message}",
                                    param=param, event_id=event_id) from None
            except RecursionError:
                raise RealtimeError(INVALID_REQUEST, f"'{param}' nests too deeply", param=param,
                                    event_id=event_id) from None
