"""ctranslate2 LLM (the default): converted once into the cache, run without torch, same prompts as transformers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.llm.chat_prompt import chat_turns, render_prompt
from speech_to_speech.llm.ctranslate2_lm import CTranslate2LM, LoadedCT2, converted_for_ct2, load_ctranslate2
from speech_to_speech.llm.local_tokenizer import LocalTokenizer
from speech_to_speech.llm.weights import packaged_gguf, resolve_source
from speech_to_speech.pipeline.messages.generation import ChatMessage, GenerateResponseRequest, TokenUsage
from speech_to_speech.testing.engine import loading

pytestmark = pytest.mark.real_models
QUESTION = GenerateResponseRequest("resp_1", 0, (ChatMessage("user", "What is the capital of France?"),))
WEATHER = {"type": "function", "name": "get_weather", "description": "Current weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
CONVERSATIONS = [
    QUESTION,
    GenerateResponseRequest("r", 0, (ChatMessage("user", "Hi there."),
                                     ChatMessage("assistant", "Hello! How can I help?"),
                                     ChatMessage("user", "Tell me about café culture in Paris, s'il vous plaît."))),
    GenerateResponseRequest("r", 0, (ChatMessage("user", "Weather in Oslo?"),), tools=(WEATHER,)),
]


def test_packaged_model_is_converted_once_to_int8(ct2_lm: LoadedCT2) -> None:
    folder = Path(ct2_lm.source)
    assert folder.name.startswith(packaged_gguf().stem) and folder.name.endswith("-ct2-int8")
    assert {"model.bin", "tokenizer.json", "generation_config.json"} <= {p.name for p in folder.iterdir()}
    written = (folder / "model.bin").stat().st_mtime_ns
    assert converted_for_ct2(resolve_source(None), "int8") == folder
    assert converted_for_ct2(str(folder), "int8") == folder  # a CTranslate2 folder is used as it is
    assert (folder / "model.bin").stat().st_mtime_ns == written
    # int8 weights: about a byte per parameter of the 135M model, a quarter of float32.
    assert (folder / "model.bin").stat().st_size < 200 * 2**20


def test_serving_from_the_cache_imports_neither_torch_nor_transformers(ct2_lm: LoadedCT2) -> None:
    script = (
        "import sys\n"
        "from speech_to_speech.config import LoadContext, ServerSettings\n"
        "from speech_to_speech.llm.ctranslate2_lm import load_ctranslate2\n"
        "lm = load_ctranslate2(ServerSettings().llm, LoadContext())\n"
        "ids = lm.generator.generate_batch([lm.tokenizer.tokens('<|im_start|>user\\nHi<|im_end|>\\n')],"
        " max_length=4, include_prompt_in_result=False)[0].sequences_ids[0]\n"
        "print(len(ids), 'torch' in sys.modules, 'transformers' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["4", "False", "False"]


@pytest.mark.parametrize("request_", CONVERSATIONS, ids=["question", "history", "tools"])
def test_prompt_and_tokens_match_transformers(ct2_lm: LoadedCT2, request_: GenerateResponseRequest) -> None:
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(resolve_source(None))
    turns = chat_turns(request_, ServerSettings().llm)
    ours = render_prompt(ct2_lm.tokenizer, turns)
    assert ours == render_prompt(reference, turns)
    ids = reference(ours, add_special_tokens=False)["input_ids"]
    assert ct2_lm.tokenizer.tokens(ours) == reference.convert_ids_to_tokens(ids)
    assert ct2_lm.tokenizer.end_token_ids == (reference.convert_tokens_to_ids("<|im_end|>"),)


def test_text_stream_holds_back_partial_characters(ct2_lm: LoadedCT2) -> None:
    text = "Crème brûlée, 日本語, and emoji 🎉 too."
    tokenizer = ct2_lm.tokenizer
    ids = [tokenizer._tokenizer.token_to_id(t) for t in tokenizer.tokens(text)]
    stream = tokenizer.decode_stream()
    pieces = [stream.step(i) for i in ids]
    assert "".join(pieces) == tokenizer.decode(ids) == text
    assert not any("\ufffd" in piece for piece in pieces)  # never half a character


def test_streamed_reply_is_the_one_shot_greedy_decode(ct2_lm: LoadedCT2, make_handler: Any) -> None:
    settings = ServerSettings()
    parts = list(make_handler(CTranslate2LM, ct2_lm, settings).generate(QUESTION))
    (usage,) = [p for p in parts if isinstance(p, TokenUsage)]
    prompt = ct2_lm.tokenizer.tokens(render_prompt(ct2_lm.tokenizer, chat_turns(QUESTION, settings.llm)))
    (result,) = ct2_lm.generator.generate_batch([prompt], max_length=settings.llm.max_new_tokens, sampling_topk=1,
                                                end_token=list(ct2_lm.tokenizer.end_token_ids),
                                                include_prompt_in_result=False, return_end_token=True)
    generated = result.sequences_ids[0]
    assert "".join(p for p in parts if isinstance(p, str)) == ct2_lm.tokenizer.decode(generated)
    assert (usage.input_tokens, usage.output_tokens) == (len(prompt), len(generated))


def test_devices_it_cannot_use_are_refused_clearly(ct2_lm: LoadedCT2) -> None:
    with pytest.raises(RuntimeError, match=r"cpu or cuda.*--llm transformers"):
        load_ctranslate2(*loading("llm", ServerSettings(device="mps")))


def test_a_folder_without_tokenizer_json_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "</s>"}))
    with pytest.raises(RuntimeError, match=r"no tokenizer\.json"):
        LocalTokenizer(tmp_path)


def test_a_ct2_folder_without_its_tokenizer_is_refused(tmp_path: Path) -> None:
    (tmp_path / "model.bin").write_bytes(b"")
    with pytest.raises(RuntimeError, match=r"without its tokenizer\.json"):
        converted_for_ct2(str(tmp_path), "int8")
