"""llama.cpp's CPU kernels: with every CPU variant built, the best one this CPU runs is loaded once, never an AMX
one unless named; a build with its kernels linked in is left as it is."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from speech_to_speech.llm import llama_backends
from speech_to_speech.llm.llama_backends import (
    AMX_VARIANTS,
    VARIANT_ENV,
    CpuKernels,
    Variant,
    choose_and_load,
    cpu_variants,
    load_cpu_kernels,
    probe_variant,
    variant_folders,
)


class FakeGgml:
    """ggml's registry as choose_and_load sees it: whether a CPU backend is registered, and what was loaded."""

    def __init__(self, has_cpu: bool = False, loads: bool = True) -> None:
        self.cpu, self.loads = has_cpu, loads
        self.loaded: list[Path] = []

    def has_cpu(self) -> bool:
        return self.cpu

    def load(self, path: Path) -> bool:
        self.loaded.append(path)
        self.cpu = self.cpu or self.loads
        return self.loads

    def load_all(self, folder: Path) -> None:
        raise AssertionError("the variants are chosen here, not by ggml's load_all")


# Scores as this AVX-512 machine's variants gave them (an AMX CPU would give sapphirerapids the most).
VARIANTS = {"x64": Variant(1, False), "haswell": Variant(64, False), "skylakex": Variant(192, False),
            "zen4": Variant(1984, False), "sapphirerapids": Variant(4032, True)}


def _package(tmp_path: Path, names: list[str] | tuple[str, ...] = tuple(VARIANTS)) -> Path:
    """A site-packages with a llama_cpp package and the variants in a bin folder beside it, as the wheel has them."""
    package = tmp_path / "site" / "llama_cpp"
    (package / "lib").mkdir(parents=True)
    (package.parent / "bin").mkdir()
    for name in names:
        (package.parent / "bin" / f"libggml-cpu-{name}.so").write_bytes(b"")
    return package


def _probe(path: Path) -> Variant:
    return VARIANTS[path.name.removeprefix("libggml-cpu-").removesuffix(".so")]


def test_a_build_with_its_kernels_linked_in_is_left_alone(tmp_path: Path) -> None:
    ggml = FakeGgml(has_cpu=True)
    assert choose_and_load(ggml, _package(tmp_path), probe=_probe) == CpuKernels(variant=None)
    assert ggml.loaded == []
    with pytest.raises(RuntimeError, match=f"{VARIANT_ENV}=haswell: .*no variant to choose"):
        choose_and_load(ggml, _package(tmp_path / "again"), forced="haswell", probe=_probe)


def test_the_best_variant_this_cpu_runs_is_loaded_and_never_an_amx_one(tmp_path: Path) -> None:
    package = _package(tmp_path)
    ggml = FakeGgml()
    kernels = choose_and_load(ggml, package, probe=_probe)
    assert (kernels.variant, kernels.amx) == ("zen4", False)  # the highest score left once AMX is out
    assert ggml.loaded == [package.parent / "bin" / "libggml-cpu-zen4.so"] == [kernels.path]
    assert kernels.scores == {name: variant.score for name, variant in VARIANTS.items()}


def test_a_variant_built_with_amx_is_skipped_whatever_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(VARIANTS, "graniterapids", Variant(8000, True))  # what a later llama.cpp might add
    ggml = FakeGgml()
    assert choose_and_load(ggml, _package(tmp_path), probe=_probe).variant == "zen4"


def test_a_variant_named_in_the_environment_is_loaded_instead(tmp_path: Path) -> None:
    package = _package(tmp_path)
    probed: list[Path] = []

    def probe(path: Path) -> Variant:
        probed.append(path)
        return _probe(path)

    ggml = FakeGgml()
    assert choose_and_load(ggml, package, forced="haswell", probe=probe).variant == "haswell"
    assert ggml.loaded == probed == [package.parent / "bin" / "libggml-cpu-haswell.so"]  # the others untouched
    # Named, even the AMX kernels are loaded (to try them on a CPU that has AMX), and said to be AMX.
    assert choose_and_load(FakeGgml(), package, forced="sapphirerapids", probe=_probe).amx


def test_a_named_variant_that_is_missing_or_that_this_cpu_cannot_run_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = _package(tmp_path)
    listed = r"no such llama\.cpp CPU variant; there are haswell, sapphirerapids, skylakex, x64, zen4$"
    with pytest.raises(RuntimeError, match=listed):
        choose_and_load(FakeGgml(), package, forced="avx10", probe=_probe)
    monkeypatch.setitem(VARIANTS, "sapphirerapids", Variant(0, True))  # no AMX here: ggml scores it 0
    ggml = FakeGgml()
    with pytest.raises(RuntimeError, match=r"cannot run llama\.cpp's sapphirerapids CPU kernels"):
        choose_and_load(ggml, package, forced="sapphirerapids", probe=_probe)
    assert ggml.loaded == []  # refused before loading: ggml would refuse it too, but it is never asked
    with pytest.raises(RuntimeError, match="did not load its zen4 CPU kernels"):
        choose_and_load(FakeGgml(loads=False), package, probe=_probe)


def test_variants_are_found_in_the_package_s_lib_folder_or_the_wheel_s_bin_folder(tmp_path: Path) -> None:
    package = _package(tmp_path, ["haswell"])
    assert cpu_variants(variant_folders(package)) == {"haswell": package.parent / "bin" / "libggml-cpu-haswell.so"}
    (package / "lib" / "libggml-cpu-zen4.so").write_bytes(b"")
    assert cpu_variants(variant_folders(package)) == {"zen4": package / "lib" / "libggml-cpu-zen4.so"}
    assert cpu_variants(variant_folders(_package(tmp_path / "none", []))) == {}


def test_threads_that_start_at_once_load_the_kernels_once(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("llama_cpp", reason="the llama-cpp extra")
    calls: list[str] = []

    def slow_choice(ggml: Any, package: Path, forced: str | None = None) -> CpuKernels:
        calls.append(str(package))
        time.sleep(0.05)  # long enough for every other thread to arrive while the first one loads
        return CpuKernels(variant="haswell", path=package / "lib" / "libggml-cpu-haswell.so")

    monkeypatch.setattr(llama_backends, "choose_and_load", slow_choice)
    monkeypatch.setattr(llama_backends, "_loaded", None)
    results: list[CpuKernels] = []
    threads = [threading.Thread(target=lambda: results.append(load_cpu_kernels())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and len(results) == 8 and all(result is results[0] for result in results)


def _dynamic_build() -> tuple[Any, Path]:
    """llama_cpp's bindings and its package folder; skips unless its build has the CPU variants."""
    pytest.importorskip("llama_cpp", reason="the llama-cpp extra")
    from llama_cpp import llama_cpp as bindings

    package = Path(bindings.__file__).parent
    if not cpu_variants(variant_folders(package)):
        pytest.skip("this llama-cpp-python has its CPU kernels linked in (built without GGML_BACKEND_DL)")
    return bindings, package


def test_the_real_loader_is_idempotent() -> None:
    pytest.importorskip("llama_cpp", reason="the llama-cpp extra")
    from llama_cpp import llama_cpp as bindings

    kernels = load_cpu_kernels()
    assert load_cpu_kernels() is kernels
    ggml = llama_backends._Ggml(bindings._lib)
    assert ggml.has_cpu()  # linked in, or loaded now
    count = bindings._lib["ggml_backend_reg_count"]
    before = count()
    # Asked again with the kernels in place, it loads nothing more: no second CPU backend is registered.
    assert choose_and_load(ggml, Path(bindings.__file__).parent) == CpuKernels(variant=None)
    assert count() == before
    if kernels.variant is not None and not os.environ.get(VARIANT_ENV):
        assert kernels.path is not None and kernels.path.is_file() and not kernels.amx
        runnable = {name: score for name, score in kernels.scores.items() if score > 0}
        assert kernels.variant in runnable


# x86-64 variants each of which has every instruction of the one before it.
LADDER = ("x64", "sse42", "sandybridge", "haswell", "skylakex", "cascadelake", "cooperlake", "zen4")


def test_the_real_variants_answer_their_score_and_whether_they_hold_amx() -> None:
    _, package = _dynamic_build()
    variants = {name: probe_variant(path) for name, path in cpu_variants(variant_folders(package)).items()}
    # The Makefile's build holds haswell, skylakex and zen4; LLAMA_KERNELS=all every x86-64 variant.
    assert {"haswell", "zen4"} <= set(variants)
    assert {name for name, variant in variants.items() if variant.amx} == set(variants) & AMX_VARIANTS
    if "x64" in variants:
        assert variants["x64"] == Variant(1, False)  # the baseline runs on any x86-64 CPU
    # Each level adds instructions to the one below it, and scores more: a CPU that runs it runs those too.
    ladder = [variants[name].score for name in LADDER if name in variants]
    runs = [score > 0 for score in ladder]
    assert runs == sorted(runs, reverse=True)  # what this CPU runs is the ladder's foot
    assert [score for score in ladder if score] == sorted({score for score in ladder if score})


@pytest.mark.real_models
def test_the_model_loads_and_answers_after_the_kernels_are_loaded(llama_lm: Any) -> None:
    assert load_cpu_kernels() is load_cpu_kernels()
    answer = llama_lm.llm.create_completion(
        "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
        max_tokens=16, temperature=0.0, top_k=1)["choices"][0]["text"]
    assert "paris" in answer.lower()


FORCED = """
import logging, sys
logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
from speech_to_speech.config import LoadContext, ServerSettings
from speech_to_speech.llm.llama_cpp_lm import load_llama_cpp
lm = load_llama_cpp(ServerSettings(llm="llama-cpp", llm_threads=1).llm, LoadContext())
prompt = "<|im_start|>user\\nWhat is the capital of France?<|im_end|>\\n<|im_start|>assistant\\n"
print("ANSWER", lm.llm.create_completion(prompt, max_tokens=16, temperature=0.0, top_k=1)["choices"][0]["text"])
"""


@pytest.mark.real_models
def test_a_variant_named_in_the_environment_runs_the_model_in_a_process_of_its_own() -> None:
    """What a test on one CPU does to try another variant's kernels: here the AVX2 ones."""
    _, package = _dynamic_build()
    if probe_variant(cpu_variants(variant_folders(package))["haswell"]).score == 0:
        pytest.skip("this CPU has no AVX2")
    result = subprocess.run([sys.executable, "-c", FORCED], capture_output=True, text=True, timeout=240,
                            env={**os.environ, VARIANT_ENV: "haswell"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "llama.cpp runs its haswell CPU kernels" in result.stdout
    assert "paris" in result.stdout.split("ANSWER", 1)[1].lower()
