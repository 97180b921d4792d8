"""ORT-format files read back into ONNX, and a merged decoder's If split in two, on a small made-up model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from speech_to_speech.stt.moonshine_graph import split_on_cache_bit
from speech_to_speech.stt.moonshine_tokenizer import MoonshineTokenizer, read_vocabulary
from speech_to_speech.stt.ort_format import read_ort_model

WEIGHT = np.array([3, -2, 5], dtype=np.int8)
SCALE = np.float32(0.5)


def merged_decoder() -> Any:
    """x -> (y, present.k): with the bit, y = x + w and present.k a constant placeholder; without it,
    y = x * w and present.k = 2x. w is stored in int8 and dequantised in the graph, as Moonshine's are."""
    float_type = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    cached = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "cached", [], [float_type,
                                                                    helper.make_tensor_value_info(
                                                                        "present.k", TensorProto.FLOAT, [0])],
        initializer=[numpy_helper.from_array(np.zeros(0, np.float32), "present.k")],
    )
    first = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["y"]), helper.make_node("Add", ["x", "x"], ["present.k"])],
        "first", [], [float_type, helper.make_tensor_value_info("present.k", TensorProto.FLOAT, [3])],
    )
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["w_int8"], ["w_float"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["w_float", "scale"], ["w"]),
            helper.make_node("If", ["use_cache_branch"], ["y", "present.k"], then_branch=cached, else_branch=first),
        ],
        "merged",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("use_cache_branch", TensorProto.BOOL, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("present.k", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(WEIGHT, "w_int8"), numpy_helper.from_array(np.array(SCALE), "scale")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


def run(model: Any, **feed: Any) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feed), strict=True))


def as_ort_file(model: Any, tmp_path: Path) -> Path:
    """``model`` saved by onnxruntime in its own ORT format (with no optimisation, so the graph is as built)."""
    source, target = tmp_path / "model.onnx", tmp_path / "model.ort"
    onnx.save(model, str(source))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.optimized_model_filepath = str(target)
    options.add_session_config_entry("session.save_model_format", "ORT")
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    return target


X = np.array([1.0, 2.0, 3.0], np.float32)


def test_an_ort_file_reads_back_into_the_same_model(tmp_path: Path) -> None:
    read = read_ort_model(as_ort_file(merged_decoder(), tmp_path))
    onnx.checker.check_model(read)
    assert [i.name for i in read.graph.input] == ["x", "use_cache_branch"]  # the weights are no inputs
    for bit in (True, False):
        expected = run(merged_decoder(), x=X, use_cache_branch=np.array([bit]))
        got = run(read, x=X, use_cache_branch=np.array([bit]))
        assert got.keys() == expected.keys()
        for name in expected:
            np.testing.assert_array_equal(got[name], expected[name])


def test_a_file_of_another_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    onnx.save(merged_decoder(), str(path))
    with pytest.raises(ValueError, match="not an ORT-format model"):
        read_ort_model(path)


def test_the_merged_decoder_splits_into_its_two_steps(tmp_path: Path) -> None:
    first, following = split_on_cache_bit(read_ort_model(as_ort_file(merged_decoder(), tmp_path)), "use_cache_branch")
    weight = WEIGHT.astype(np.float32) * SCALE
    assert [i.name for i in first.graph.input] == ["x"]
    np.testing.assert_allclose(run(first, x=X)["y"], X * weight)
    np.testing.assert_allclose(run(first, x=X)["present.k"], 2 * X)
    # The cached step's placeholder output carries nothing: it is left out.
    assert [o.name for o in following.graph.output] == ["y"]
    np.testing.assert_allclose(run(following, x=X)["y"], X + weight)
    assert all(n.op_type != "If" for n in [*first.graph.node, *following.graph.node])


def test_a_model_with_no_such_switch_is_refused() -> None:
    with pytest.raises(ValueError, match="one If node"):
        split_on_cache_bit(merged_decoder(), "another_bit")


def test_the_vocabulary_reads_one_and_two_byte_lengths(tmp_path: Path) -> None:
    long = "\u2581" + "x" * 200  # 203 bytes: a two-byte length
    tokens = [b"<unk>", b"<s>", b"</s>", "\u2581Hello".encode(), b",", "\u2581w\u00f6rld".encode(), long.encode()]
    data = b"".join((bytes([len(t)]) if len(t) < 128 else bytes([128 + len(t) % 128, len(t) // 128])) + t
                    for t in tokens)
    assert read_vocabulary(data) == tokens
    path = tmp_path / "tokenizer.bin"
    path.write_bytes(data)
    tokenizer = MoonshineTokenizer(path)
    assert tokenizer.decode([1, 3, 4, 5, 2]) == "Hello, w\u00f6rld"
    assert tokenizer.piece(3) == " Hello"
    with pytest.raises(ValueError, match="ends inside"):
        read_vocabulary(data[:-1])
