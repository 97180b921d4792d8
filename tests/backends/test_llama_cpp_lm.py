"""llama-cpp LLM (the default, in an extra): the packaged GGUF rewritten as Q8_0 or as it is, its own chat
template, clear errors."""

from __future__ import annotations

import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from speech_to_speech.cache import cache_root
from speech_to_speech.config import ServerSettings
from speech_to_speech.cpu.gate import CpuGate
from speech_to_speech.llm.chat_prompt import chat_turns, prompt_for, render_prompt
from speech_to_speech.llm.llama_cpp_lm import (
    DecodeThreads,
    LlamaCppLM,
    LoadedLlama,
    gguf_path,
    load_llama_cpp,
    rewritten_gguf,
)
from speech_to_speech.llm.speakable import writes_foreign_script
from speech_to_speech.llm.weights import packaged_gguf, resolve_source
from speech_to_speech.pipeline.lm_output_processor import first_chunk_ready
from speech_to_speech.pipeline.messages.generation import (
    AssistantTextPart,
    ChatMessage,
    GenerateResponseRequest,
    PromptPrefill,
)
from speech_to_speech.testing.engine import loading

pytestmark = pytest.mark.real_models


Q8_0 = 7  # llama.cpp's file type number (general.file_type) for Q8_0 weights


def test_runs_the_packaged_gguf_rewritten_once_as_q8_0(llama_lm: LoadedLlama) -> None:
    assert llama_lm.path != packaged_gguf() and llama_lm.path.is_relative_to(cache_root())
    assert int(llama_lm.llm.metadata["general.file_type"]) == Q8_0
    written = llama_lm.path.stat().st_mtime_ns
    assert rewritten_gguf(packaged_gguf(), "q8_0") == llama_lm.path  # the next start reads the cached file
    assert llama_lm.path.stat().st_mtime_ns == written


def test_llm_gguf_type_file_runs_the_packaged_gguf_in_place() -> None:
    loaded = load_llama_cpp(*loading("llm", ServerSettings(llm="llama-cpp", llm_gguf_type="file")))
    assert loaded.path == packaged_gguf()  # no conversion, no cache: llama.cpp reads Q4_1 itself
    assert int(loaded.llm.metadata["general.file_type"]) != Q8_0
    assert gguf_path(str(packaged_gguf().parent)) == packaged_gguf()


def test_the_gguf_chat_template_renders_like_the_transformers_tokenizer(llama_lm: LoadedLlama) -> None:
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(resolve_source(None))
    request = GenerateResponseRequest("r", 0, (ChatMessage("user", "Hi."), ChatMessage("assistant", "Hello!"),
                                               ChatMessage("user", "What is the capital of France?")))
    turns = chat_turns(request, ServerSettings().llm)
    assert render_prompt(llama_lm.template, turns) == render_prompt(reference, turns)


def test_a_path_without_a_gguf_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"needs a \.gguf file or a folder holding one"):
        gguf_path(str(tmp_path))


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # what an environment without the package sees
    with pytest.raises(RuntimeError, match=r"speech-to-speech\[llama-cpp\].*GGML_NATIVE=OFF"):
        load_llama_cpp(*loading("llm", ServerSettings(llm="llama-cpp")))


JAPANESE = "How do I say thank you very much in Japanese?"


def _reply(handler: LlamaCppLM, text: str, modalities: tuple[str, ...] = ("audio",)) -> str:
    request = GenerateResponseRequest("r", 0, (ChatMessage("user", text),), max_output_tokens=40,
                                      output_modalities=modalities)
    return "".join(item.text for item in handler.process(request) if isinstance(item, AssistantTextPart))


def test_a_reply_for_an_english_voice_is_written_in_words_it_can_say(llama_lm: LoadedLlama, make_handler: Any) -> None:
    """Asked for Japanese, SmolLM2 answers in Japanese script, which an English voice makes no sound of."""
    handler = make_handler(LlamaCppLM, llama_lm)
    handler.voice_languages = ("en",)
    spoken = _reply(handler, JAPANESE)
    assert spoken.strip() and not any(writes_foreign_script(c.encode()) for c in spoken)
    # The mask is what does it: a text-only reply, or a voice of unknown languages, is not masked.
    assert any(writes_foreign_script(c.encode()) for c in _reply(handler, JAPANESE, ("text",)))
    handler.voice_languages = None
    assert any(writes_foreign_script(c.encode()) for c in _reply(handler, JAPANESE))


def _streamed_with_thread_counts(handler: LlamaCppLM, monkeypatch: pytest.MonkeyPatch, text: str,
                                 modalities: tuple[str, ...] = ("audio",)) -> list[Any]:
    """The reply's text parts, in order, with every decode thread count set on the context among them.

    The shared context is given back its own counts afterwards, for the tests that follow.
    """
    import llama_cpp

    log: list[Any] = []
    real = llama_cpp.llama_set_n_threads

    def recording(ctx: Any, threads: int, batch: int) -> None:
        log.append((threads, batch))
        real(ctx, threads, batch)

    monkeypatch.setattr(llama_cpp, "llama_set_n_threads", recording)
    request = GenerateResponseRequest("r", 0, (ChatMessage("user", text),), max_output_tokens=40,
                                      output_modalities=modalities)
    try:
        log.extend(item.text for item in handler.process(request) if isinstance(item, AssistantTextPart))
    finally:
        monkeypatch.setattr(llama_cpp, "llama_set_n_threads", real)
        real(handler.model.llm.ctx, handler.model.llm.n_threads, handler.model.llm.n_threads_batch)
    return log


def test_a_reply_s_first_words_decode_on_every_core_and_the_rest_leaves_the_tts_one(
    llama_lm: LoadedLlama, make_handler: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing else runs until the TTS has the first chunk; from then on the voice needs a core."""
    lm = replace(llama_lm, threads=DecodeThreads(batch=2, first_words=2, rest=1), gate=CpuGate(lambda: 2))
    handler = make_handler(LlamaCppLM, lm)
    log = _streamed_with_thread_counts(handler, monkeypatch, "Tell me about the moon in a few sentences.")
    counts = [entry for entry in log if isinstance(entry, tuple)]
    assert log[0] == (2, 2)  # before the first word: the prompt and the first words on both cores
    assert counts == [(2, 2), (1, 1)]  # one switch in the reply
    switch = log.index((1, 1))
    before = "".join(entry for entry in log[:switch] if isinstance(entry, str))
    words = handler.settings.first_chunk_words
    # The switch comes right after the piece that completes the first chunk, not a piece sooner or later.
    assert first_chunk_ready(before, words)
    assert not first_chunk_ready("".join(entry for entry in log[:switch - 1] if isinstance(entry, str)), words)
    assert any(isinstance(entry, str) for entry in log[switch + 1:])


def test_a_reply_no_voice_speaks_decodes_on_every_core_to_its_end(
    llama_lm: LoadedLlama, make_handler: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    handler = make_handler(LlamaCppLM, replace(llama_lm, threads=DecodeThreads(batch=2, first_words=2, rest=1),
                                               gate=CpuGate(lambda: 2)))
    log = _streamed_with_thread_counts(handler, monkeypatch, "Tell me about the moon in a few sentences.", ("text",))
    assert [entry for entry in log if isinstance(entry, tuple)] == [(2, 2)]  # no switch: set once, kept
    assert isinstance(log[0], tuple)
    assert len("".join(entry for entry in log if isinstance(entry, str)).split()) > handler.settings.first_chunk_words


def test_one_thread_count_for_everything_never_switches(
    llama_lm: LoadedLlama, make_handler: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--llm_threads N: the first words, the rest and the prompt all on N."""
    one_thread = ServerSettings(llm="llama-cpp", llm_threads=1)
    assert load_llama_cpp(*loading("llm", one_thread)).threads == DecodeThreads(1, 1, 1)
    handler = make_handler(LlamaCppLM, replace(llama_lm, threads=DecodeThreads(batch=1, first_words=1, rest=1)))
    log = _streamed_with_thread_counts(handler, monkeypatch, "Tell me about the moon in a few sentences.")
    assert [entry for entry in log if isinstance(entry, tuple)] == [(1, 1)]  # set once, and kept
    assert any(isinstance(entry, str) for entry in log)


def test_with_a_cpu_taken_by_a_neighbour_every_decode_keeps_to_the_free_one(
    llama_lm: LoadedLlama, make_handler: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two threads beside a busy neighbour wait for each other at every kernel's barrier: use one."""
    lm = replace(llama_lm, threads=DecodeThreads(batch=2, first_words=2, rest=1), gate=CpuGate(lambda: 1))
    log = _streamed_with_thread_counts(make_handler(LlamaCppLM, lm), monkeypatch, "Tell me about the moon.")
    assert {entry for entry in log if isinstance(entry, tuple)} == {(1, 1)}
    assert any(isinstance(entry, str) and entry.strip() for entry in log)  # and it still answers


def test_the_default_load_sizes_its_threads_by_what_neighbours_and_other_sessions_leave(
    llama_lm: LoadedLlama,
) -> None:
    from speech_to_speech.cpu import gate as cpu_gate

    assert llama_lm.gate is cpu_gate.shared()  # the process's one gate
    one_thread = ServerSettings(llm="llama-cpp", llm_threads=1)
    assert load_llama_cpp(*loading("llm", one_thread)).gate is None  # a count asked for


def test_two_sessions_replies_decode_at_once_each_in_a_context_of_its_own(make_handler: Any) -> None:
    """With a context per unit, neither reply waits for the other's end (one shared context made it)."""
    lm = load_llama_cpp(*loading("llm", ServerSettings(llm="llama-cpp", num_pipelines=2)))
    assert len(lm.pool) == 2
    questions = {"paris": "What is the capital of France?", "blue": "What colour is the sky on a clear day?"}
    handlers = {word: make_handler(LlamaCppLM, lm) for word in questions}
    replies: dict[str, str] = {}
    both_decoding = threading.Barrier(2, timeout=60)

    def answer(word: str) -> None:
        pieces = []
        for item in handlers[word].process(GenerateResponseRequest("r", 0, (ChatMessage("user", questions[word]),),
                                                                   max_output_tokens=24)):
            if isinstance(item, AssistantTextPart):
                if not pieces:
                    both_decoding.wait()  # each reply has its first word while the other has not ended
                pieces.append(item.text)
        replies[word] = "".join(pieces)

    threads = [threading.Thread(target=answer, args=(word,)) for word in questions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert all(word in replies.get(word, "").lower() for word in questions), replies
    assert {handler._context for handler in handlers.values()} == {0, 1}
    # The next reply of each unit goes back to its own context, whose cache holds its conversation.
    before = {word: handler._context for word, handler in handlers.items()}
    for handler in handlers.values():
        list(handler.process(GenerateResponseRequest("r", 0, (ChatMessage("user", "Thanks."),), max_output_tokens=4)))
    assert {word: handler._context for word, handler in handlers.items()} == before


def test_the_words_heard_so_far_are_read_ahead_and_the_reply_reads_only_the_rest(
    llama_lm: LoadedLlama, make_handler: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    handler = make_handler(LlamaCppLM, replace(llama_lm, gate=CpuGate(lambda: 2)))
    said = "Could you tell me what the capital city of France is?"
    # 32 tokens: in 16, SmolLM2 on the AVX-512 kernels has not named France yet ("Bien sûr, I'm glad you asked.
    # The capital city of"), on the AVX2 ones it has; 32 holds either reply's answer.
    request = GenerateResponseRequest("r", 0, (ChatMessage("user", said),), max_output_tokens=32)
    # Something else first, so nothing of this prompt's user turn is in the cache.
    list(handler.process(GenerateResponseRequest("r", 0, (ChatMessage("user", "Hello there."),), max_output_tokens=2)))
    llm = llama_lm.pool.contexts[handler._context]
    full = llm.tokenize(prompt_for(llama_lm.template, request, handler.settings).encode(), add_bos=False,
                        special=True)
    heard = replace(request, messages=(ChatMessage("user", "Could you tell me what the capital city of"),))
    list(handler.process(PromptPrefill(heard)))
    ahead = llm.tokenize(prompt_for(llama_lm.template, heard, handler.settings).encode(), add_bos=False,
                         special=True)
    assert list(llm.input_ids[: llm.n_tokens]) == ahead  # read ahead: the prompt those words make, to its end
    shared = next(i for i, (a, b) in enumerate(zip(ahead, full, strict=False)) if a != b)
    reads: list[int] = []
    real = type(llm).eval
    monkeypatch.setattr(type(llm), "eval", lambda self, tokens: (reads.append(len(tokens)), real(self, tokens)))
    text = "".join(item.text for item in handler.process(request) if isinstance(item, AssistantTextPart))
    assert "paris" in text.lower() or "france" in text.lower(), text  # a reply to the whole question
    assert reads[0] == len(full) - shared  # the prompt: from the first token the words changed
    assert shared > len(full) / 2


def test_a_reply_to_the_words_read_ahead_reads_one_token_of_its_prompt(
    llama_lm: LoadedLlama, make_handler: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    handler = make_handler(LlamaCppLM, replace(llama_lm, gate=CpuGate(lambda: 2)))
    list(handler.process(GenerateResponseRequest("r", 0, (ChatMessage("user", "Hello there."),), max_output_tokens=2)))
    request = GenerateResponseRequest("r", 0, (ChatMessage("user", "What is the capital of Italy?"),),
                                      max_output_tokens=8)
    list(handler.process(PromptPrefill(request)))  # the last interim words were the pause's own
    llm = llama_lm.pool.contexts[handler._context]
    reads: list[int] = []
    real = type(llm).eval
    monkeypatch.setattr(type(llm), "eval", lambda self, tokens: (reads.append(len(tokens)), real(self, tokens)))
    text = "".join(item.text for item in handler.process(request) if isinstance(item, AssistantTextPart))
    assert text.strip()
    assert reads[0] <= 1  # nothing of the prompt, or its last token again for the first word's logits


def test_a_prefill_gives_way_to_a_request_waiting_behind_it(llama_lm: LoadedLlama, make_handler: Any) -> None:
    handler = make_handler(LlamaCppLM, replace(llama_lm, gate=CpuGate(lambda: 2)))
    list(handler.process(GenerateResponseRequest("r", 0, (ChatMessage("user", "Hi."),), max_output_tokens=2)))
    llm = llama_lm.pool.contexts[handler._context]
    before = list(llm.input_ids[: llm.n_tokens])
    handler.queue_in.put(GenerateResponseRequest("r2", 0, (ChatMessage("user", "Next question."),)))
    heard = GenerateResponseRequest("p", 0, (ChatMessage("user", "Tell me a long story about a dragon who"),))
    assert list(handler.process(PromptPrefill(heard))) == []  # nothing answered, nothing read
    assert list(llm.input_ids[: llm.n_tokens]) == before
    handler.queue_in.get_nowait()
    # Another session's urgent work holding every free CPU stops it as well.
    busy = CpuGate(lambda: 1)
    with busy.urgent(1):
        make_handler(LlamaCppLM, replace(llama_lm, gate=busy)).prefill(heard)
    assert list(llm.input_ids[: llm.n_tokens]) == before
