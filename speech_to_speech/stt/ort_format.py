"""ORT-format model files read back into ONNX protobufs.

Some packages ship a model only as an ORT-format file (a flatbuffer that
onnxruntime runs as it is). No tool optimises or quantises that format, but
it is a serialisation of the same graph ONNX describes (nodes, initializers,
value types, subgraphs, with the same enum numbers for attribute and tensor
types), so it maps back one field at a time. The flatbuffer accessors are the
ones onnxruntime's wheel ships for its own tools; only the mapping is ours.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import onnx
from onnx import helper

T = TypeVar("T")


def _fbs() -> Any:
    """onnxruntime's generated flatbuffer classes (imported late: only a conversion needs them)."""
    from onnxruntime.tools.ort_format_model.ort_flatbuffers_py import fbs

    return fbs


def _items(get: Callable[[int], T], count: int) -> list[T]:
    return [get(i) for i in range(count)]


def _text(value: bytes | None) -> str:
    return value.decode() if value else ""


def read_ort_model(path: Path) -> onnx.ModelProto:
    """The ONNX model an ORT-format file holds, its nodes in an order that runs."""
    fbs = _fbs()
    data = bytearray(path.read_bytes())
    if not fbs.InferenceSession.InferenceSession.InferenceSessionBufferHasIdentifier(data, 0):
        raise ValueError(f"{path} is not an ORT-format model (no ORTM identifier)")
    model = fbs.InferenceSession.InferenceSession.GetRootAsInferenceSession(data, 0).Model()
    opsets = [helper.make_opsetid(_text(o.Domain()), o.Version())
              for o in _items(model.OpsetImport, model.OpsetImportLength())]
    graph = _graph(model.Graph(), _text(model.ProducerName()) or path.stem, main=True)
    return helper.make_model(graph, opset_imports=opsets, ir_version=model.IrVersion(),
                             producer_name=_text(model.ProducerName()), producer_version=_text(model.ProducerVersion()))


def _graph(graph: Any, name: str, *, main: bool = False) -> onnx.GraphProto:
    initializers = [_tensor(t) for t in _items(graph.Initializers, graph.InitializersLength())]
    constant = {t.name for t in initializers}
    types = {_text(v.Name()): v for v in _items(graph.NodeArgs, graph.NodeArgsLength())}
    # A graph input that is also an initializer could be overridden at run time, so nothing folds it:
    # the main graph's inputs are only the values a caller really feeds.
    inputs = [_text(n) for n in _items(graph.Inputs, graph.InputsLength())]
    inputs = [n for n in inputs if not (main and n in constant)]
    outputs = [_text(n) for n in _items(graph.Outputs, graph.OutputsLength())]
    nodes = _in_running_order(_items(graph.Nodes, graph.NodesLength()), available=set(inputs) | constant)
    return helper.make_graph(
        [_node(n) for n in nodes], name,
        [_value_info(n, types.get(n)) for n in inputs], [_value_info(n, types.get(n)) for n in outputs],
        initializer=initializers,
    )


def _in_running_order(nodes: list[Any], available: set[str]) -> list[Any]:
    """The nodes, each after those making its inputs (and the outer values its subgraphs read)."""
    needs = [
        {_text(n.Inputs(i)) for i in range(n.InputsLength())}
        | {_text(n.ImplicitInputs(i)) for i in range(n.ImplicitInputsLength())}
        for n in nodes
    ]
    made = {_text(n.Outputs(i)) for n in nodes for i in range(n.OutputsLength())}
    ready = set(available) | {""}  # "" marks an optional input left out
    ordered: list[Any] = []
    waiting = list(range(len(nodes)))
    while waiting:
        runnable = [i for i in waiting if all(v in ready or v not in made for v in needs[i])]
        if not runnable:
            raise ValueError("the graph has a cycle")
        for i in runnable:
            ordered.append(nodes[i])
            ready.update(_text(nodes[i].Outputs(j)) for j in range(nodes[i].OutputsLength()))
        waiting = [i for i in waiting if i not in set(runnable)]
    return ordered


def _node(node: Any) -> onnx.NodeProto:
    proto = helper.make_node(
        _text(node.OpType()),
        [_text(node.Inputs(i)) for i in range(node.InputsLength())],
        [_text(node.Outputs(i)) for i in range(node.OutputsLength())],
        name=_text(node.Name()) or None,
        domain=_text(node.Domain()) or None,
    )
    proto.attribute.extend(_attribute(a) for a in _items(node.Attributes, node.AttributesLength()))
    return proto


def _attribute(attribute: Any) -> onnx.AttributeProto:
    kind = attribute.Type()  # the ORT enum numbers its types as ONNX's AttributeProto does
    proto = onnx.AttributeProto(name=_text(attribute.Name()), type=kind)
    types = onnx.AttributeProto
    if kind == types.FLOAT:
        proto.f = attribute.F()
    elif kind == types.INT:
        proto.i = attribute.I()
    elif kind == types.STRING:
        proto.s = attribute.S() or b""
    elif kind == types.TENSOR:
        proto.t.CopyFrom(_tensor(attribute.T()))
    elif kind == types.GRAPH:
        proto.g.CopyFrom(_graph(attribute.G(), proto.name))
    elif kind == types.FLOATS:
        proto.floats.extend(_floats(attribute))
    elif kind == types.INTS:
        proto.ints.extend(int(i) for i in _items(attribute.Ints, attribute.IntsLength()))
    elif kind == types.STRINGS:
        proto.strings.extend(_items(attribute.Strings, attribute.StringsLength()))
    elif kind == types.TENSORS:
        proto.tensors.extend(_tensor(t) for t in _items(attribute.Tensors, attribute.TensorsLength()))
    elif kind == types.GRAPHS:
        proto.graphs.extend(_graph(g, proto.name) for g in _items(attribute.Graphs, attribute.GraphsLength()))
    else:
        raise ValueError(f"attribute {proto.name!r} has a type ONNX has no field for ({kind})")
    return proto


def _floats(attribute: Any) -> Iterable[float]:
    return (float(f) for f in _items(attribute.Floats, attribute.FloatsLength()))


def _tensor(tensor: Any) -> onnx.TensorProto:
    proto = onnx.TensorProto(name=_text(tensor.Name()), data_type=tensor.DataType())
    proto.dims.extend(int(d) for d in _items(tensor.Dims, tensor.DimsLength()))
    if tensor.DataType() == onnx.TensorProto.STRING:
        proto.string_data.extend(_items(tensor.StringData, tensor.StringDataLength()))
    elif tensor.RawDataLength():
        proto.raw_data = tensor.RawDataAsNumpy().tobytes()
    return proto


def _value_info(name: str, value: Any | None) -> onnx.ValueInfoProto:
    """A graph input's or output's declared element type and shape (symbolic dimensions kept)."""
    fbs = _fbs()
    info = onnx.ValueInfoProto(name=name)
    kind = value.Type() if value is not None else None
    if kind is None or kind.ValueType() != fbs.TypeInfoValue.TypeInfoValue.tensor_type:
        return info  # no declared type: onnxruntime infers it
    tensor = fbs.TensorTypeAndShape.TensorTypeAndShape()
    tensor.Init(kind.Value().Bytes, kind.Value().Pos)
    info.type.tensor_type.elem_type = tensor.ElemType()
    shape = tensor.Shape()
    if shape is None:
        return info
    info.type.tensor_type.shape.SetInParent()  # a shape with no dimensions declares a scalar
    for dimension in _items(shape.Dim, shape.DimLength()):
        dim = info.type.tensor_type.shape.dim.add()
        value_ = dimension.Value()
        if value_ is None:
            continue
        if value_.DimType() == fbs.DimensionValueType.DimensionValueType.VALUE:
            dim.dim_value = value_.DimValue()
        elif value_.DimType() == fbs.DimensionValueType.DimensionValueType.PARAM:
            dim.dim_param = _text(value_.DimParam())
    return info
