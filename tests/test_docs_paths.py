"""Every file, folder and module the docs, docstrings and comments name exists: a path or module that moved is
caught when it moves, not by the next reader who follows it."""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import tokenize
import tomllib
from functools import cache
from pathlib import Path

import pytest

from speech_to_speech.protocol import extensions
from speech_to_speech.protocol.server_events import EVENT_TYPES

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "speech_to_speech"
# A relative path with at least one folder and a file's extension: ``realtime/service/send_loop.py``.
PATH = re.compile(r"(?<![\w/.\-])((?:[A-Za-z_][\w\-]*/)+[\w\-]+\.(?:py|md|yaml|json|sh|toml|ts|js))\b")
# A folder of two or more parts, written with its closing slash: ``pipeline/messages/``.
FOLDER = re.compile(r"(?<![\w/.\-:~])((?:[A-Za-z_][\w\-]*/){2,})(?![\w.\-/{])")
TEXTS = sorted(path for pattern in ("README.md", "docs/**/*.md", "speech_to_speech/**/*.py", "tests/**/*.py",
                                    "configs/*.yaml", "Makefile", "scripts/*")
               for path in ROOT.glob(pattern) if "node_modules" not in path.parts and path.is_file())


def exists(path: str, named_in: Path) -> bool:
    """Paths are written from the repository root, the package, tests/ or docs/, or from any folder above
    the file that names them (a module of realtime/ writes ``sessions/gate.py``); docs name the realtime
    rooms by their own folders."""
    bases = [ROOT, PACKAGE, ROOT / "tests", ROOT / "docs", PACKAGE / "realtime", *named_in.parents]
    return any((base / path).exists() for base in bases)


def missing_paths(text: str, named_in: Path) -> list[str]:
    """The files and folders ``text`` names that do not exist; a module that became a package says so."""
    missing = []
    for path in PATH.findall(text) + FOLDER.findall(text):
        if not exists(path, named_in):
            package = path.removesuffix(".py") + "/"
            missing.append(f"{path} (now the package {package})" if path.endswith(".py")
                           and exists(package, named_in) else path)
    return sorted(set(missing))


@pytest.mark.parametrize("text", TEXTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_named_paths_exist(text: Path) -> None:
    missing = missing_paths(text.read_text(errors="replace"), text)
    assert missing == [], f"{text.relative_to(ROOT)} names files or folders that do not exist: {missing}"


def test_a_stale_path_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    gone, moved, room = "realtime/service/" + "no_such_module.py", "pipeline/" + "messages.py", "realtime/" + "nowhere/"
    page.write_text(f"See `{gone}`, `llm/context_window.py`, `{moved}`, `realtime/conversation/`, `{room}` "
                    "and https://example.com/v1/realtime/calls/.")  # in pieces, or this file would name them
    assert missing_paths(page.read_text(), page) == [f"{moved} (now the package {moved[:-3]}/)", room, gone]


# A machine's own folders: a benchmark's JSON names its inputs as the README's commands do, from the checkout.
MACHINE_PATH = re.compile(r'"/(?:tmp|work|root|home|Users)/[^"]*"')


RESULTS = sorted((ROOT / "docs").glob("**/*.json"))


@pytest.mark.parametrize("result", RESULTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_benchmark_results_name_no_folder_of_the_machine_they_ran_on(result: Path) -> None:
    assert MACHINE_PATH.findall(result.read_text()) == []


# ------------------------------------------------------------ modules

# ``speech_to_speech.realtime.wire.errors``, ``speech_to_speech.turns.controller.TurnController``.
DOTTED = re.compile(r"(?<![\w.\-/])(speech_to_speech(?:\.\w+)+)")
# A Sphinx role naming a module by its name beside the file that names it, with or without a leading dot.
MODULE_ROLE = re.compile(r":mod:`~?(\.?\w+(?:\.\w+)*)`")
# A module named by its file alone: ``send_loop.py``.
# A Sphinx role naming a class, function, method or attribute: its last name is defined somewhere here.
OBJECT_ROLE = re.compile(r":(?:class|func|meth|attr|data|exc):`~?([\w.]+)`")
MODULE_FILE = re.compile(r"(?<![\w/.\-])([A-Za-z_]\w*\.py)\b")
# Wire names that look like modules: our extensions and extension events, and entry-point groups.
NOT_MODULES = (
    {value for name, value in vars(extensions).items() if name.endswith("_EXTENSION")}
    | {kind for kind in EVENT_TYPES if kind.startswith("speech_to_speech.")}
    | set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"])
)
# Files a page tells the reader to write.
EXAMPLE_FILES = {"my_voice_tools.py"}
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
MODULES = sorted(path for folder in ("speech_to_speech", "tests") for path in (ROOT / folder).rglob("*.py"))


def prose(path: Path) -> str:
    """What a reader reads of ``path``: a page whole; of a module, its docstrings and comments (its code's
    strings name modules for the code, which fails by itself when one is gone)."""
    source = path.read_text()
    if path.suffix != ".py":
        return source
    strings = [node.value.value for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
               and isinstance(node.value.value, str)]
    comments = [token.string for token in tokenize.generate_tokens(io.StringIO(source).readline)
                if token.type == tokenize.COMMENT]
    return "\n".join(strings + comments)


def module_file(parts: list[str] | tuple[str, ...], base: Path = ROOT) -> Path | None:
    folder = base.joinpath(*parts)
    return next((path for path in (folder.with_suffix(".py"), folder / "__init__.py") if path.is_file()), None)


@cache
def top_level_names(module: Path) -> tuple[frozenset[str], bool]:
    """The names ``module`` defines or imports, and whether it also imports ``*``."""
    names: set[str] = set()
    star = False
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            star = star or any(alias.name == "*" for alias in node.names)
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return frozenset(names), star


def dotted_resolves(name: str) -> bool:
    """The longest module prefix of ``name`` exists, and what follows starts with one of its names."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        module = module_file(parts[:end])
        if module is not None:
            if end == len(parts):
                return True
            names, star = top_level_names(module)
            return star or parts[end] in names
    return False


@cache
def defined_names() -> frozenset[str]:
    """Every class, function and assigned name (an attribute's too) of the package and the tests."""
    names: set[str] = set()
    for module in MODULES:
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            names.update(t.id if isinstance(t, ast.Name) else t.attr for t in targets
                         if isinstance(t, ast.Name | ast.Attribute))
    return frozenset(names)


def object_exists(name: str) -> bool:
    """Defined here, or an attribute of a module from elsewhere (``hmac.compare_digest``)."""
    head = name.split(".")[0]
    return name.split(".")[-1] in defined_names() or (
        "." in name and head not in defined_names() and importlib.util.find_spec(head) is not None)


@cache
def repository_modules() -> frozenset[str]:
    return frozenset(path.name for folder in ("speech_to_speech", "tests", "examples", "scripts", "demo")
                     for path in (ROOT / folder).rglob("*.py") if "node_modules" not in path.parts)


def missing_names(text: str, named_in: Path) -> list[str]:
    """The modules ``text`` names (as ``speech_to_speech.…``, as a ``:mod:`` beside ``named_in``, or by
    its file name) and the classes, functions and attributes its roles name, that do not exist."""
    missing = [name for name in DOTTED.findall(text) if name not in NOT_MODULES and not dotted_resolves(name)]
    for name in MODULE_ROLE.findall(text):
        if not name.startswith("speech_to_speech") and module_file(name.lstrip(".").split("."),
                                                                   named_in.parent) is None:
            missing.append(f":mod:`{name}`")
    missing += [name for name in MODULE_FILE.findall(text)
                if name not in repository_modules() and name not in EXAMPLE_FILES]
    missing += [f"`{name}`" for name in OBJECT_ROLE.findall(text) if not object_exists(name)]
    return sorted(set(missing))


@pytest.mark.parametrize("text", PAGES + MODULES, ids=lambda path: str(path.relative_to(ROOT)))
def test_named_modules_and_objects_exist(text: Path) -> None:
    missing = missing_names(prose(text), text)
    assert missing == [], f"{text.relative_to(ROOT)} names modules or objects that do not exist: {missing}"


def test_a_stale_module_is_caught(tmp_path: Path) -> None:
    module = tmp_path / "stale.py"
    gone = "speech_to_speech.realtime." + "router"  # in pieces, or this file would name them
    module.write_text(f'"""Sent by :mod:`{gone}`, typed in :mod:`speech_to_speech.protocol.server_events`."""\n'
                      f"# :class:`~speech_to_speech.turns.controller.{'NoSuchClass'}` in {'gone_module'}.py, "
                      f"beside :mod:`helper` and :mod:`stale`; :meth:`Playback.{'no_such_method'}`, "
                      ":class:`TurnController`, :func:`hmac.compare_digest`\n"
                      f'NAMED_IN_CODE = "{gone}.{"also_gone"}"\n')
    assert missing_names(prose(module), module) == [
        ":mod:`helper`", "`Playback.no_such_method`", "gone_module.py", gone,
        "speech_to_speech.turns.controller.NoSuchClass"]


def test_wire_names_are_not_taken_for_modules() -> None:
    assert missing_names(f"opt in with `{extensions.TIMINGS_EXTENSION}`", PAGES[0]) == []
