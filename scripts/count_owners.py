"""How a session's parts hold each other: constructor parameters per part, and writes to another part's fields.

    python scripts/count_owners.py [--json]

The parts are the classes ``RealtimeService.__init__`` builds (read from its source). Each part's
parameters are sorted by what the service passes for them there: a collaborator (another part, built
before or inline, or one of its methods; the pipeline unit or one of its members), its configuration
(the server settings, the session state, a value built from them, or a function that reads only
those), its output port (``emit``), or something else (the media track, a metrics callback, the
server's language check, a parameter left to its default). A cross-part
field write is an assignment to an attribute of a collaborator a part holds (``self._responses.tools =
...``), of a part the service holds (``responses.tools = ...``, ``service.responses.conversation_id =
...``), or to an item of the conversation outside its owner (``item["status"] = ...`` on an item got from
it, in the session restore).

An item write is a change to a conversation item's fields, or to a response's list of them, anywhere in
realtime/ outside the items' owners: the conversation (conversation/history.py) and, while a response
streams them, its ``ResponseState`` (conversation/response.py). It is read off the code's shape: an
assignment into a subscript of something named like an item (``call.item["output"] = ...``,
``content["transcript"] = ...``), or an ``append``/``extend``/``insert`` on a ``.output`` or
``.content``; a part's own table (``self._items[item_id] = ...``) is no item.
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package, not an installed one
from speech_to_speech.realtime.service import realtime_service

PACKAGE = Path(realtime_service.__file__).parents[1]  # speech_to_speech/realtime
# Where the parts and the code that acts on them live (relative to realtime/).
SCANNED = ("service", "conversation", "tools/session_tools.py", "sessions/restore.py", "sessions/live.py")
# Names a part (or the service) is held by, besides ``self._<name>``.
PART_NAMES = {"service", "responses", "tools", "user_input", "playback", "echo", "conversation", "speculations",
              "updates", "state", "turns", "output", "judge", "pipeline_events", "target"}
# Values the service builds that hold no session state of their own: not parts.
VALUES = {"EventLimits", "VoiceCatalog"}
# The modules that own conversation items (relative to realtime/): the conversation, and the response
# that streams its own output items.
ITEM_OWNERS = {"conversation/history.py", "conversation/response.py"}


def parts() -> dict[str, int]:
    """Each class the service builds, and how many parameters its constructor takes (dataclass: fields)."""
    tree = _service_init()
    names = {node.func.id for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id[:1].isupper()}
    counts = {}
    for name in sorted(names):
        cls = getattr(realtime_service, name, None)
        if not inspect.isclass(cls) or name in VALUES:
            continue
        params = [p for p in inspect.signature(cls).parameters.values()]
        counts[name] = len(params)
    return counts


# What the service passes a part, by the names it reads (besides the parts themselves).
UNIT = "unit"
CONFIGURATION = {"settings", "state", "config"}  # config: the runtime config closure of earlier rounds
OUTPUT = {"emit", "send"}
KINDS = ("collaborators", "configuration", "output", "other")


def _service_init() -> ast.AST:
    return ast.parse(inspect.getsource(realtime_service.RealtimeService.__init__).strip().replace("\n    ", "\n"))


def _bound(tree: ast.AST, classes: set[str]) -> dict[str, str]:
    """The names (``x`` and ``self.x``) the service binds to what one of ``classes`` built: name -> class."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and isinstance(
                node.value.func, ast.Name) and node.value.func.id in classes:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = node.value.func.id
                elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    bound["self." + target.attr] = node.value.func.id
    return bound


def _read(node: ast.AST, part_classes: set[str]) -> tuple[set[str], set[str]]:
    """The names an argument reads (``x``, ``self.x``), and the parts it builds inline (not looked into)."""
    names: set[str] = set()
    inline: set[str] = set()
    stack = [node]
    while stack:
        each = stack.pop()
        if isinstance(each, ast.Call) and isinstance(each.func, ast.Name) and each.func.id in part_classes:
            inline.add(each.func.id)
            continue
        if isinstance(each, ast.Attribute) and isinstance(each.value, ast.Name) and each.value.id == "self":
            names.add("self." + each.attr)
            continue
        if isinstance(each, ast.Name):
            names.add(each.id)
        stack.extend(ast.iter_child_nodes(each))
    return names, inline


def _kind(arg: ast.AST, part_classes: set[str], part_names: dict[str, str],
          value_names: set[str]) -> tuple[str, set[str]]:
    """What one argument is (one of KINDS), and the collaborators it names."""
    names, inline = _read(arg, part_classes)
    collaborators = inline | {part_names[n] for n in names if n in part_names} | (
        {"PipelineUnit"} if UNIT in names else set())
    if collaborators:
        return "collaborators", collaborators
    if names & OUTPUT:
        return "output", set()
    if names & (CONFIGURATION | value_names):
        return "configuration", set()
    return "other", set()


def kinds(counts: dict[str, int]) -> dict[str, dict[str, object]]:
    """Each part's parameters counted by KINDS, from what the service passes it, and its collaborators by class."""
    tree = _service_init()
    part_classes = set(counts)
    part_names = _bound(tree, part_classes)
    value_names = set(_bound(tree, VALUES))
    found: dict[str, dict[str, object]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in part_classes):
            continue
        name = node.func.id
        passed = inspect.signature(getattr(realtime_service, name)).bind_partial(
            *node.args, **{kw.arg: kw.value for kw in node.keywords if kw.arg is not None}).arguments
        tally = dict.fromkeys(KINDS, 0)
        collaborators: set[str] = set()
        for arg in passed.values():
            kind, named = _kind(arg, part_classes, part_names, value_names)
            tally[kind] += 1
            collaborators |= named
        tally["other"] += counts[name] - len(passed)  # left to their defaults
        found[name] = {**tally, "named": sorted(collaborators)}
    return found


def _held(node: ast.expr) -> bool:
    """``node`` names an object another part owns: ``self._x.y``, ``responses.y``, ``service.x.y``."""
    if not isinstance(node, ast.Attribute):
        return isinstance(node, ast.Name) and node.id in PART_NAMES
    base = node.value
    if isinstance(base, ast.Name) and base.id == "self":
        return node.attr.startswith("_") and node.attr.lstrip("_") in PART_NAMES
    return _held(base)


def _foreign(target: ast.expr, file: Path) -> bool:
    if isinstance(target, ast.Attribute):
        return _held(target.value)
    # The restore's own writes into a conversation item it got from the conversation.
    return (isinstance(target, ast.Subscript) and file.name == "restore.py"
            and isinstance(target.value, ast.Name) and target.value.id == "item")


def cross_writes() -> list[str]:
    found = []
    for entry in SCANNED:
        path = PACKAGE / entry
        for file in sorted(path.glob("*.py")) if path.is_dir() else [path]:
            tree = ast.parse(file.read_text())
            for node in ast.walk(tree):
                targets = node.targets if isinstance(node, ast.Assign) else (
                    [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
                for target in targets:
                    for each in target.elts if isinstance(target, ast.Tuple) else [target]:
                        if _foreign(each, file):
                            found.append(f"{file.relative_to(PACKAGE.parent)}:{node.lineno}: {ast.unparse(each)}")
    return found


def _item_like(node: ast.expr) -> bool:
    """``node`` is (a subscript of) something named like a conversation item or its content."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return False  # a part's own table of its entries
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return "item" in name or name == "content"


def _item_write(node: ast.AST) -> ast.expr | None:
    """The item field or list that ``node`` changes, if it changes one."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
            node.func.attr in ("append", "extend", "insert") and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr in ("output", "content")):
        return node.func.value
    targets = node.targets if isinstance(node, ast.Assign) else (
        [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
    return next((t for t in targets if isinstance(t, ast.Subscript) and _item_like(t.value)), None)


def item_writes() -> list[str]:
    found = []
    for file in sorted(PACKAGE.rglob("*.py")):
        if file.relative_to(PACKAGE).as_posix() in ITEM_OWNERS:
            continue
        for node in ast.walk(ast.parse(file.read_text())):
            written = _item_write(node)
            if written is not None:
                found.append(f"{file.relative_to(PACKAGE.parent)}:{node.lineno}: {ast.unparse(written)}")
    return sorted(found)


def main() -> None:
    counts, writes, items = parts(), cross_writes(), item_writes()
    by_kind = kinds(counts)
    if "--json" in sys.argv:
        print(json.dumps({"constructor_parameters": counts, "total": sum(counts.values()),
                          "parameters_by_kind": by_kind,
                          "cross_part_field_writes": writes, "item_writes_outside_owners": items}, indent=2))
        return
    print("params  collaborators  configuration  output  other  part: its collaborators")
    for name, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        each = by_kind[name]
        named = each["named"]
        assert isinstance(named, list)
        print(f"{count:6d}  {len(named):13d}  {each['configuration']:13d}  {each['output']:6d}  {each['other']:5d}  "
              f"{name}: {', '.join(named) or '-'}")
    print(f"{sum(counts.values()):6d}  in all ({len(counts)} parts)")
    print(f"cross-part field writes: {len(writes)}")
    for write in writes:
        print("  " + write)
    print(f"item writes outside their owners: {len(items)}")
    for write in items:
        print("  " + write)


if __name__ == "__main__":
    main()
