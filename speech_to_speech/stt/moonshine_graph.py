"""A merged decoder split in two: the first step, and every step with a cache.

Exporters merge a decoder's two graphs, the first step (no cache yet, the
encoder's keys and values computed) and the later steps (the cache read),
into one model whose ``If`` node picks a branch on a boolean input. Each run
then carries both branches' weights through the optimiser and the quantiser,
and a constant folder cannot look inside a branch. Inlining each branch in
its own model gives two plain graphs; each keeps only the inputs, nodes and
weights its outputs need, and the cached step drops the outputs that only
hand back an input or a constant (it returns the encoder's keys and values,
which do not change per step, as empty placeholders).
"""

from __future__ import annotations

import onnx
from onnx import helper


def split_on_cache_bit(model: onnx.ModelProto, bit: str) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    """(the first step's model, the cached steps' model) of a decoder whose ``If`` tests input ``bit``."""
    return with_branch(model, bit, False), with_branch(model, bit, True)


def with_branch(model: onnx.ModelProto, bit: str, value: bool) -> onnx.ModelProto:
    """``model`` with input ``bit`` fixed to ``value``: the ``If`` it drives replaced by that branch's nodes."""
    graph = model.graph
    switches = [n for n in graph.node if n.op_type == "If" and n.input and n.input[0] == bit]
    if len(switches) != 1:
        raise ValueError(f"expected one If node on input {bit!r}, found {len(switches)}")
    switch = switches[0]
    branch = next(a.g for a in switch.attribute if a.name == ("then_branch" if value else "else_branch"))
    clash = {t.name for t in branch.initializer} & {t.name for t in graph.initializer}
    if clash:
        raise ValueError(f"the branch's weights shadow the graph's: {sorted(clash)[:3]}")
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        if node is not switch:
            nodes.append(node)
            continue
        nodes.extend(branch.node)
        nodes.extend(helper.make_node("Identity", [inner.name], [outer], name=f"{outer}/branch_output")
                     for inner, outer in zip(branch.output, switch.output, strict=True) if inner.name != outer)
    inputs = [i for i in graph.input if i.name != bit]
    known = {i.name for i in inputs} | {t.name for t in [*graph.initializer, *branch.initializer]}
    outputs = [o for o in graph.output if not _hands_back(o.name, nodes, known)]
    inlined = helper.make_graph(nodes, graph.name, inputs, outputs,
                                initializer=[*graph.initializer, *branch.initializer])
    result = helper.make_model(_pruned(inlined), opset_imports=model.opset_import, ir_version=model.ir_version,
                               producer_name=model.producer_name)
    return result


def _hands_back(name: str, nodes: list[onnx.NodeProto], known: set[str]) -> bool:
    """Whether output ``name`` is one of the ``known`` values (inputs, constants), through Identity nodes only."""
    producer = {out: node for node in nodes for out in node.output}
    seen = set()
    while name in producer and name not in seen:
        seen.add(name)
        node = producer[name]
        if node.op_type != "Identity":
            return False
        name = node.input[0]
    return name in known


def _pruned(graph: onnx.GraphProto) -> onnx.GraphProto:
    """``graph`` without the nodes, inputs and weights none of its outputs depend on."""
    needed = {o.name for o in graph.output}
    kept: list[onnx.NodeProto] = []
    for node in reversed(graph.node):
        if needed.intersection(node.output):
            kept.append(node)
            needed.update(node.input)
            for attribute in node.attribute:  # a subgraph may read outer values by name
                for inner in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                    needed.update(value for n in inner.node for value in n.input)
    return helper.make_graph(
        list(reversed(kept)), graph.name, [i for i in graph.input if i.name in needed], list(graph.output),
        initializer=[t for t in graph.initializer if t.name in needed],
    )
