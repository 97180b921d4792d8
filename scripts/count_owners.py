"""How a session's parts hold each other: constructor parameters per part, and writes to another part's fields.

    python scripts/count_owners.py [--json]

The parts are the classes ``RealtimeService.__init__`` builds (read from its source). A cross-part
field write is an assignment to an attribute of a collaborator a part holds (``self._responses.tools =
...``), of a part the service holds (``responses.tools = ...``, ``service.responses.conversation_id =
...``), or to an item of the conversation outside its owner (``item["status"] = ...`` on an item got from
it, in the session restore).
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


def parts() -> dict[str, int]:
    """Each class the service builds, and how many parameters its constructor takes (dataclass: fields)."""
    tree = ast.parse(inspect.getsource(realtime_service.RealtimeService.__init__).strip().replace("\n    ", "\n"))
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


def main() -> None:
    counts, writes = parts(), cross_writes()
    if "--json" in sys.argv:
        print(json.dumps({"constructor_parameters": counts, "total": sum(counts.values()),
                          "cross_part_field_writes": writes}, indent=2))
        return
    for name, count in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"{count:3d}  {name}")
    print(f"{sum(counts.values()):3d}  in all ({len(counts)} parts)")
    print(f"cross-part field writes: {len(writes)}")
    for write in writes:
        print("  " + write)


if __name__ == "__main__":
    main()
